"""Turn earliest / latest into concrete offsets, on the driver (timestamps: ``timestamps``).

"Latest" is the high watermark (read_uncommitted) or the last stable offset (read_committed).
ListOffsets(-1) is not trusted alone: some brokers (Tansu) answer the start of the last batch
+ 1 instead of the log end, which would silently drop the tail of a partition. So latest is
resolved as ListOffsets(-1) followed by a Fetch at that offset, whose response carries the
high watermark and last stable offset as the broker's fetch path sees them; the larger wins.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping

from spark_kafka_wire.client.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.connection import BrokerConnection
from spark_kafka_wire.protocol.errors import ErrorCode, check_error, error_for_code
from spark_kafka_wire.protocol.messages import FETCH, LIST_OFFSETS

EARLIEST = -2
LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
PROBE_WAIT_MS = 100


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
    return {tp: o for tp, (o, _) in
            list_offsets_with_timestamps(client, timestamps, isolation_level).items()}


def list_offsets_with_timestamps(
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
