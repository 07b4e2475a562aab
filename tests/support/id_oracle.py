"""Exactly-once bookkeeping for the fault tests: every record carries a unique id.

A fault test writes ids 0..n-1 (the value, and the key, is the id in decimal ASCII, which is
also what Spark's ``CAST(id AS STRING)`` gives), then reads the whole topic back with
librdkafka and counts each id. Lost and duplicated records are different failures (a retry
that was not idempotent versus an acknowledgement that was not durable) and a run can show
both, so the check reports both, with examples, instead of stopping at the first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from tests.support.librdkafka import consume_all

EXAMPLES = 5


def id_bytes(record_id: int) -> bytes:
    return str(record_id).encode("ascii")


def id_records(n: int, start: int = 0) -> list[tuple[bytes, bytes]]:
    """(key, value) pairs for ids ``start`` .. ``start + n - 1``, for a librdkafka producer."""
    return [(id_bytes(i), id_bytes(i)) for i in range(start, start + n)]


def id_dataframe(spark, n: int, start: int = 0, partitions: int | None = None):
    """A DataFrame with string columns ``key`` and ``value`` holding ids ``start`` ..
    ``start + n - 1``, ready for kafkawire's sink (add a ``topic`` column or option)."""
    frame = spark.range(start, start + n, numPartitions=partitions)
    return frame.selectExpr("CAST(id AS STRING) AS key", "CAST(id AS STRING) AS value")


@dataclass(frozen=True)
class IdCount:
    """How often each expected id was read back."""

    expected: int
    read: int  # records read in all
    lost: int  # expected ids never read
    duplicated: int  # extra copies of ids read more than once
    unexpected: int  # records whose value is no expected id
    lost_examples: tuple[int, ...]
    duplicated_examples: tuple[tuple[int, int], ...]  # (id, times read)
    unexpected_examples: tuple[bytes | None, ...]

    @property
    def exactly_once(self) -> bool:
        return self.lost == 0 and self.duplicated == 0 and self.unexpected == 0

    def summary(self) -> str:
        return (f"{self.read} records read for {self.expected} ids: lost {self.lost} "
                f"(e.g. {list(self.lost_examples)}), duplicated {self.duplicated} "
                f"(e.g. id x times {list(self.duplicated_examples)}), unexpected "
                f"{self.unexpected} (e.g. {list(self.unexpected_examples)})")

    def assert_exactly_once(self) -> None:
        assert self.exactly_once, self.summary()

    def assert_none_lost(self) -> None:
        """At-least-once: duplicates allowed (a producer without idempotence that retried)."""
        assert self.lost == 0 and self.unexpected == 0, self.summary()


def tally(values: Iterable[bytes | None], expected_ids: Iterable[int]) -> IdCount:
    """Count record values (decimal ids) against the ids that were written."""
    expected = set(expected_ids)
    seen: Counter[int] = Counter()
    unexpected: list[bytes | None] = []
    read = 0
    for value in values:
        read += 1
        try:
            record_id = int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            record_id = None
        if record_id is None or record_id not in expected:
            unexpected.append(value)
        else:
            seen[record_id] += 1
    lost = sorted(expected - seen.keys())
    dups = sorted((i, c) for i, c in seen.items() if c > 1)
    return IdCount(
        expected=len(expected), read=read, lost=len(lost),
        duplicated=sum(c - 1 for _, c in dups), unexpected=len(unexpected),
        lost_examples=tuple(lost[:EXAMPLES]), duplicated_examples=tuple(dups[:EXAMPLES]),
        unexpected_examples=tuple(unexpected[:EXAMPLES]))


def count_ids(bootstrap: str, topic: str, expected_ids: Iterable[int],
              conf: dict | None = None, timeout_s: float = 60) -> IdCount:
    """Read every partition of ``topic`` to its end with librdkafka and count the ids."""
    records = consume_all({"bootstrap.servers": bootstrap, **(conf or {})}, topic, timeout_s)
    return tally((msg.value() for msg in records), expected_ids)


def assert_exactly_once(bootstrap: str, topic: str, expected_ids: Iterable[int],
                        conf: dict | None = None, timeout_s: float = 60) -> IdCount:
    """count_ids, then fail naming both the lost and the duplicated ids if either is not 0."""
    count = count_ids(bootstrap, topic, expected_ids, conf, timeout_s)
    count.assert_exactly_once()
    return count
