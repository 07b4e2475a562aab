"""What a task holds decoded from shared Fetches (client/fetching/multi_fetch.py) stays within
kafka.fetch.max.decompressed.bytes: answers that do not fit next to the records already held
are asked for again later, and a head range that does not fit is read alone with the whole
limit after the records held for later ranges are dropped (issue 27, item 3)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import zstandard

from spark_kafka_wire.client.fetching import multi_fetch
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.protocol.records import DecodedRecords, decode_record_batches
from tests.unit.protocol.test_decompression_limits import _record_parts, v2_batch

KiB = 1 << 10
TOPIC = "t"


def zstd_batch(base: int, count: int, value_size: int) -> bytes:
    """``count`` records of ``value_size`` zero bytes at ``base``, compressed with zstandard."""
    records = b"".join(_record_parts(value_size, i)[0] + bytes(value_size)
                       + _record_parts(value_size, i)[1] for i in range(count))
    return v2_batch(4, zstandard.ZstdCompressor().compress(records), count, base)


class _Conn:
    name = "b1:9092"

    def __init__(self, log: dict[int, dict[int, bytes]], asked: list[list[int]]) -> None:
        self.log, self.asked = log, asked

    def request(self, spec: Any, body: dict) -> dict:
        parts = [(t["topic"], p["partition"], p["fetch_offset"]) for t in body["topics"]
                 for p in t["partitions"]]
        self.asked.append([p for _, p, _ in parts])
        return {"error_code": 0, "responses": [{"topic": TOPIC, "partitions": [
            {"partition_index": p, "error_code": 0, "log_start_offset": 0,
             "records": self.log[p].get(o, b"")} for _, p, o in parts]}]}


class _Client:
    def __init__(self, conn: _Conn) -> None:
        self.conn = conn

    def leader(self, topic: str, partition: int) -> int:
        return 1

    def broker(self, node: int) -> _Conn:
        return self.conn


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[dict, list, list]]:
    """(log: partition -> {offset: answer}, the partitions each shared Fetch named, the
    fetch_range calls); fetch_range reads the same log."""
    log: dict[int, dict[int, bytes]] = {}
    asked: list[list[int]] = []
    alone: list[tuple[int, int, int]] = []

    def fetch_range(client: Any, topic: str, partition: int, start: int, end: int,
                    settings: FetchSettings, fail: bool) -> Iterator[DecodedRecords]:
        alone.append((partition, start, end))
        offset = start
        while offset < end:
            d = decode_record_batches(
                log[partition][offset], start_offset=offset, end_offset=end,
                max_decompressed_size=settings.decompression_limit(1 << 20))
            assert d.next_offset is not None
            offset = d.next_offset
            yield d

    monkeypatch.setattr(multi_fetch, "fetch_range", fetch_range)
    yield log, asked, alone


def _read(log: dict, asked: list, limit: int, ranges: list[tuple[str, int, int, int]]
          ) -> list[tuple[int, int, int]]:
    settings = FetchSettings(max_decompressed_bytes=limit)
    client: Any = _Client(_Conn(log, asked))
    return [(i, off, len(v)) for i, c in multi_fetch.fetch_ranges(client, ranges, settings)
            for off, v in zip(c.offsets.tolist(), c.values.to_pylist(), strict=True)]


def test_answers_that_do_not_fit_next_to_those_held_are_asked_for_again(broker) -> None:
    log, asked, alone = broker
    for p in range(4):
        log[p] = {0: zstd_batch(0, 4, 100 * KiB)}  # 400 KiB decompressed per partition
    ranges = [(TOPIC, p, 0, 4) for p in range(4)]
    rows = _read(log, asked, 1000 * KiB, ranges)
    assert rows == [(i, o, 100 * KiB) for i in range(4) for o in range(4)]
    # Two answers fit in 1000 KiB; the other two wait for the next request.
    assert asked == [[0, 1, 2, 3], [2, 3]] and alone == []


def test_a_head_that_does_not_fit_is_read_alone_after_dropping_what_later_ranges_hold(
        broker) -> None:
    log, asked, alone = broker
    log[0] = {0: zstd_batch(0, 2, 10), 2: zstd_batch(2, 8, 100 * KiB)}  # then 800 KiB
    log[1] = {0: zstd_batch(0, 4, 100 * KiB)}  # 400 KiB
    rows = _read(log, asked, 1000 * KiB, [(TOPIC, 0, 0, 10), (TOPIC, 1, 0, 4)])
    assert rows == ([(0, o, 10) for o in range(2)] + [(0, o, 100 * KiB) for o in range(2, 10)]
                    + [(1, o, 100 * KiB) for o in range(4)])
    # Range 0's second answer does not fit beside range 1's 400 KiB: range 1's records are
    # dropped, range 0 reads on alone, then range 1 is asked for again.
    assert asked == [[0, 1], [0], [1]] and alone == [(0, 2, 10)]
