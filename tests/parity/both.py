"""What every parity test does: run one query through Spark's ``kafka`` format and through
``kafkawire`` with the same options, and compare what comes back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from chispa import assert_df_equality

#: The two formats, the oracle first.
FORMATS = ("kafka", "kafkawire")


def read(spark: Any, fmt: str, bootstrap: str, **options: str) -> Any:
    return (spark.read.format(fmt).option("kafka.bootstrap.servers", bootstrap)
            .options(**options).load())


def read_both(spark: Any, bootstrap: str, **options: str) -> tuple[Any, Any]:
    """(Spark's DataFrame, kafkawire's DataFrame) for the same batch read."""
    return tuple(read(spark, fmt, bootstrap, **options) for fmt in FORMATS)  # type: ignore[return-value]


def assert_same_rows(spark_df: Any, wire_df: Any, *, order: bool = False) -> None:
    """Schema (names, types, nullability) and rows equal; row order ignored unless ``order``
    (Spark promises no order across partitions or tasks)."""
    assert spark_df.schema == wire_df.schema, (spark_df.schema, wire_df.schema)
    assert_df_equality(spark_df, wire_df, ignore_row_order=not order,
                       ignore_nullable=False)


def read_same(spark: Any, bootstrap: str, **options: str) -> list[Any]:
    """Asserts that both formats return the same rows for these options; the rows."""
    spark_df, wire_df = read_both(spark, bootstrap, **options)
    assert_same_rows(spark_df, wire_df)
    return wire_df.collect()


def fail_both(run: Callable[[str], Any]) -> tuple[BaseException, BaseException]:
    """``run(fmt)`` must raise for both formats; the two exceptions (oracle first)."""
    errors = []
    for fmt in FORMATS:
        with pytest.raises(Exception) as caught:
            run(fmt)
        errors.append(caught.value)
    return errors[0], errors[1]
