"""Turn earliest / latest / timestamps into concrete offsets, on the driver.

"Latest" is the high watermark (read_uncommitted) or the last stable offset (read_committed).
ListOffsets(-1) is not trusted alone: some brokers (Tansu) answer the start of the last batch
+ 1 instead of the log end, which would silently drop the tail of a partition. So latest is
resolved as ListOffsets(-1) followed by a Fetch at that offset, whose response carries the
high watermark and last stable offset as the broker's fetch path sees them; the larger wins.

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
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping

from ..protocol.errors import ErrorCode, check_error, error_for_code
from ..protocol.messages import FETCH, LIST_OFFSETS
from .cluster import KafkaClient
from .connection import BrokerConnection
from .fetcher import FetchSettings, fetch_range

log = logging.getLogger(__name__)

EARLIEST = -2
LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
PROBE_WAIT_MS = 100

TopicPartition = tuple[str, int]


def _by_leader(client: KafkaClient, tps: Iterable[TopicPartition]) -> dict[int, list[TopicPartition]]:
    groups: dict[int, list[TopicPartition]] = defaultdict(list)
    for tp in tps:
        groups[client.leader(*tp)].append(tp)
    return groups


def by_topic(tps: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """Partitions grouped by topic, sorted, as requests nest them."""
    out: dict[str, list[int]] = defaultdict(list)
    for t, p in sorted(tps):
        out[t].append(p)
    return out


def _per_leader(
    client: KafkaClient, tps: Iterable[TopicPartition]
) -> Iterator[tuple[BrokerConnection, dict[str, list[int]]]]:
    """The partitions grouped by leader, with a connection to each leader."""
    for leader, group in _by_leader(client, tps).items():
        yield client.broker(leader), by_topic(group)


def list_offsets(
    client: KafkaClient,
    timestamps: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[TopicPartition, int]:
    """ListOffsets for each partition: -2 earliest, -1 latest (as the broker answers it),
    otherwise the first offset whose timestamp is >= the given ms (-1 when there is none)."""
    return {tp: o for tp, (o, _) in _list_offsets(client, timestamps, isolation_level).items()}


def _list_offsets(
    client: KafkaClient,
    timestamps: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
    by_time: bool = False,
) -> dict[TopicPartition, tuple[int, int]]:
    """(offset, timestamp) per partition as the broker answers ListOffsets (timestamp -1
    before v1). ``by_time``: the queries are record timestamps, which need v1+."""
    if not timestamps:
        return {}

    def attempt() -> dict[TopicPartition, tuple[int, int]]:
        result: dict[TopicPartition, tuple[int, int]] = {}
        for conn, nested in _per_leader(client, timestamps):
            version = conn.version(LIST_OFFSETS)
            if by_time and version == 0:
                raise error_for_code(
                    ErrorCode.UNSUPPORTED_VERSION, broker=conn.name, context="ListOffsets",
                    message="finding offsets by timestamp needs ListOffsets v1 (Kafka 0.10.1 or "
                    "later); this broker speaks only v0, whose answers are log segment starts, "
                    "not record timestamps. Use startingOffsets/endingOffsets instead",
                )
            topics = [
                {
                    "name": t,
                    "partitions": [
                        {"partition_index": p, "timestamp": timestamps[(t, p)], "max_num_offsets": 1}
                        for p in parts
                    ],
                }
                for t, parts in nested.items()
            ]
            resp = conn.request(
                LIST_OFFSETS,
                {"replica_id": -1, "isolation_level": isolation_level, "topics": topics},
                version,
            )
            for t in resp["topics"]:
                for p in t["partitions"]:
                    check_error(
                        p["error_code"], topic=t["name"], partition=p["partition_index"],
                        broker=conn.name, context="ListOffsets",
                    )
                    if version == 0:
                        olds = p["old_style_offsets"]
                        answer = (olds[0] if olds else -1, -1)
                    else:
                        answer = (p["offset"], p["timestamp"])
                    result[(t["name"], p["partition_index"])] = answer
        missing = set(timestamps) - set(result)
        if missing:
            t, p = sorted(missing)[0]
            check_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic=t, partition=p,
                        context="ListOffsets (partition missing from response)")
        return result

    return client.retry(attempt, "ListOffsets")


def fetch_watermarks(
    client: KafkaClient,
    offsets: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[TopicPartition, tuple[int, int, int]]:
    """(high_watermark, last_stable_offset, log_start_offset) per partition, read from a Fetch
    at the given offsets (which must be valid) with a minimal byte budget.

    min_bytes is 1, not 0: Tansu leaves every partition out of a min_bytes=0 answer. A
    partition at its end makes the broker wait up to PROBE_WAIT_MS. A partition missing from
    the answer is left out of the result (the caller keeps its ListOffsets value).
    """

    def attempt() -> dict[TopicPartition, tuple[int, int, int]]:
        result: dict[TopicPartition, tuple[int, int, int]] = {}
        for conn, nested in _per_leader(client, offsets):
            topics = [
                {
                    "topic": t,
                    "partitions": [
                        {"partition": p, "fetch_offset": offsets[(t, p)], "partition_max_bytes": 1}
                        for p in parts
                    ],
                }
                for t, parts in nested.items()
            ]
            resp = conn.request(
                FETCH,
                {
                    "max_wait_ms": PROBE_WAIT_MS, "min_bytes": 1, "max_bytes": 1,
                    "isolation_level": isolation_level, "topics": topics,
                },
            )
            check_error(resp["error_code"], broker=conn.name, context="Fetch")
            for t in resp["responses"]:
                for p in t["partitions"]:
                    check_error(
                        p["error_code"], topic=t["topic"], partition=p["partition_index"],
                        offset=offsets.get((t["topic"], p["partition_index"])),
                        broker=conn.name, context="Fetch",
                    )
                    result[(t["topic"], p["partition_index"])] = (
                        p["high_watermark"], p["last_stable_offset"], p["log_start_offset"]
                    )
        return result

    return client.retry(attempt, "Fetch (watermarks)")


def resolve_offsets(
    client: KafkaClient,
    wanted: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[TopicPartition, int]:
    """Concrete offsets for a map of partition → offset, where -2 means earliest and -1 latest;
    other values are returned unchanged."""
    result = {tp: o for tp, o in wanted.items() if o >= 0}
    special = {tp: o for tp, o in wanted.items() if o < 0}
    if not special:
        return result
    listed = list_offsets(client, special, isolation_level)
    latest = {tp: listed[tp] for tp, o in special.items() if o == LATEST}
    if latest:
        marks = fetch_watermarks(client, latest, isolation_level)
        for tp, listed_offset in latest.items():
            if tp not in marks:
                continue
            hw, lso, _ = marks[tp]
            end = lso if isolation_level == READ_COMMITTED and lso >= 0 else hw
            latest[tp] = max(listed_offset, end)
    for tp, o in special.items():
        result[tp] = latest[tp] if o == LATEST else listed[tp]
    return result


def offsets_for_times(
    client: KafkaClient,
    timestamps: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
    settings: FetchSettings | None = None,
) -> dict[TopicPartition, int | None]:
    """The first offset whose record timestamp is >= the given ms, per partition, among the
    offsets a reader of ``isolation_level`` can see; None where no record qualifies.

    The broker's ListOffsets answer is checked against the records around it (see the module
    docstring); an answer that contradicts them is replaced by a scan of the partition.
    """
    if not timestamps:
        return {}
    if any(ts < 0 for ts in timestamps.values()):
        raise ValueError("timestamps must be >= 0 (negative values are ListOffsets' special "
                         "queries)")
    tps = list(timestamps)
    earliest = resolve_offsets(client, {tp: EARLIEST for tp in tps}, isolation_level)
    latest = resolve_offsets(client, {tp: LATEST for tp in tps}, isolation_level)
    answers = _list_offsets(client, timestamps, isolation_level, by_time=True)
    # Small fetches: the broker still returns the whole first batch (Fetch v3+ always does).
    probe = settings or FetchSettings(max_wait_ms=PROBE_WAIT_MS,
                                      max_partition_fetch_bytes=16 << 10)
    result: dict[TopicPartition, int | None] = {}
    for tp in tps:
        target, (offset, found_ts) = timestamps[tp], answers[tp]
        lo, hi = earliest[tp], latest[tp]
        problem = timestamp_answer_problem(client, tp, target, offset, found_ts, lo, hi, probe)
        if problem is None:
            result[tp] = offset if offset >= 0 else None
            continue
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
