"""Offsets for timestamps: ListOffsets by time, checked against the records around each answer.

Timestamps: Kafka's contract for ListOffsets(t) (v1+) is "the first offset whose record
timestamp is >= t, below the high watermark (last stable offset under read_committed), or -1".
Because records before that offset all have smaller timestamps and the record at it does not,
every answer can be checked with one small Fetch around it (``offsets_for_times``). A real
Kafka answer always passes; a broker that answers something else (Tansu looks up its own
append time, not the records' timestamps, and answers offset 0 instead of -1 when nothing
matches) is caught, and the offset is then found by reading the partition's records, which is
exact by definition and costs a scan of the data before the match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import (
    EARLIEST,
    LATEST,
    PROBE_WAIT_MS,
    READ_UNCOMMITTED,
    list_offsets_with_timestamps,
    resolve_offsets,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition

log = logging.getLogger(__name__)


def offsets_for_times(
    client: KafkaClient,
    timestamps: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
    settings: FetchSettings | None = None,
    on_contradiction: Callable[[TopicPartition, str], None] | None = None,
) -> dict[TopicPartition, int | None]:
    """The first offset whose record timestamp is >= the given ms, per partition, among the
    offsets a reader of ``isolation_level`` can see; None where no record qualifies.

    The broker's ListOffsets answer is checked against the records around it (see the module
    docstring); an answer that contradicts them is replaced by a scan of the partition, with a
    warning per partition, or, given ``on_contradiction``, a call to it with the partition and
    the reason instead (a command line sums them up in one line). A partition without readable
    records has no such offset whatever the broker answers: None, without a check or a word
    (Tansu answers 0 there, which is no contradiction worth reporting).
    """
    if not timestamps:
        return {}
    if any(ts < 0 for ts in timestamps.values()):
        raise ValueError("timestamps must be >= 0 (negative values are ListOffsets' special "
                         "queries)")
    tps = list(timestamps)
    earliest = resolve_offsets(client, {tp: EARLIEST for tp in tps}, isolation_level)
    latest = resolve_offsets(client, {tp: LATEST for tp in tps}, isolation_level)
    answers = list_offsets_with_timestamps(client, timestamps, isolation_level,
                                           by_time=True)
    # Small fetches: the broker still returns the whole first batch (Fetch v3+ always does).
    probe = settings or FetchSettings(max_wait_ms=PROBE_WAIT_MS,
                                      max_partition_fetch_bytes=16 << 10)
    result: dict[TopicPartition, int | None] = {}
    for tp in tps:
        target, (offset, found_ts) = timestamps[tp], answers[tp]
        lo, hi = earliest[tp], latest[tp]
        if hi <= lo:
            result[tp] = None
            continue
        problem = timestamp_answer_problem(client, tp, target, offset, found_ts, lo, hi, probe)
        if problem is None:
            result[tp] = offset if offset >= 0 else None
            continue
        if on_contradiction is not None:
            on_contradiction(tp, problem)
        else:
            log.warning(
                "ListOffsets(timestamp=%d) for %s-%d answered offset %d (timestamp %d), which "
                "contradicts the records: %s. Finding the offset by reading offsets [%d, %d) "
                "instead", target, tp[0], tp[1], offset, found_ts, problem, lo, hi)
        result[tp] = scan_for_timestamp(client, tp, target, lo, hi, settings)
    return result


def timestamp_answer_problem(
    client: KafkaClient, tp: TopicPartition, target: int, offset: int, found_ts: int,
    lo: int, hi: int, probe: FetchSettings,
) -> str | None:
    """Why the broker's answer cannot be Kafka's, or None if the records agree with it."""
    t, p = tp
    if offset < 0:
        if hi <= lo:
            return None
        # "No record at or after target": the last record below the bound must be older.
        for chunk in fetch_range(client, t, p, hi - 1, hi, probe):
            late = chunk.timestamps >= target
            if late.any():
                o = int(chunk.offsets[late.argmax()])
                return f"no match was answered, but offset {o} has timestamp " \
                       f"{int(chunk.timestamps[late.argmax()])}"
        return None
    if not lo <= offset < hi:
        return f"the offset is outside the readable offsets [{lo}, {hi})"
    if found_ts < target:
        return f"the answered timestamp {found_ts} is before {target}"
    for chunk in fetch_range(client, t, p, max(lo, offset - 1), offset + 1, probe):
        for o, ts in zip(chunk.offsets.tolist(), chunk.timestamps.tolist(), strict=True):
            if o < offset and ts >= target:
                return f"the earlier offset {o} already has timestamp {ts}"
            if o == offset and ts < target:
                return f"offset {o} has timestamp {ts}"
    return None


def scan_for_timestamp(
    client: KafkaClient, tp: TopicPartition, target: int, lo: int, hi: int,
    settings: FetchSettings | None = None,
) -> int | None:
    """The first offset in [lo, hi) whose record timestamp is >= target, by reading them."""
    for chunk in fetch_range(client, tp[0], tp[1], lo, hi, settings or FetchSettings()):
        late = chunk.timestamps >= target
        if late.any():
            return int(chunk.offsets[late.argmax()])
    return None
