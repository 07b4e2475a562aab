"""``spans_to_binary``: every path (one common length gathered by numpy, large or varying
spans through Arrow's view cast, nulls) gives the bytes of the spans, as a plain Python
slice of each does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.protocol.records import columns
from spark_kafka_wire.protocol.records.columns import spans_to_binary


def _expected(arr: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> pa.Array:
    raw = arr.tobytes()
    return pa.array([None if n < 0 else raw[s:s + n] for s, n in zip(starts, lens, strict=True)],
                    pa.binary())


@pytest.mark.parametrize("case", ["one-length", "one-length-large", "varying", "nulls",
                                  "short", "empty"])
def test_spans_are_gathered_exactly(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    arr = rng.integers(0, 256, 200_000, dtype=np.uint8)
    n = 150
    if case.startswith("one-length"):
        lens = np.full(n, 1000, np.int64)
        if case == "one-length-large":  # past the strided path's limit: the view cast
            monkeypatch.setattr(columns, "_STRIDED_MAX", 10_000)
    elif case == "short":
        lens = rng.integers(0, 13, n).astype(np.int64)
    elif case == "empty":
        lens = np.zeros(n, np.int64)
    else:
        lens = rng.integers(0, 1200, n).astype(np.int64)
    starts = rng.integers(0, len(arr) - 1300, n).astype(np.int64)
    if case == "nulls":
        lens[::7] = -1
    got = spans_to_binary(arr, starts, lens)
    assert got.type == pa.binary()
    assert got.equals(_expected(arr, starts, lens))
