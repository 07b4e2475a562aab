"""Turn earliest / latest into concrete offsets, on the driver (timestamps: ``timestamps``).

"Latest" is the high watermark (read_uncommitted) or the last stable offset (read_committed).
"Earliest" is the log start offset. ListOffsets is not trusted alone for either: Tansu answers
ListOffsets(-1) with the start of the last batch + 1 instead of the log end, and ListOffsets(-2)
with the start of the batch it *stored* first, which under concurrent producers can be a later
batch than offset 0 (its offsets are assigned before the batches are stored, so two producers'
batches can be stored out of offset order). Either would silently drop acknowledged records: the
tail of a partition, or its head. So a partition's ListOffsets answer is followed by a Fetch,
whose partition header carries the high watermark, the last stable offset and the log start
offset as the broker's fetch path sees them: latest is the larger of the two answers, earliest
the smaller. (On Kafka both answers agree: the Fetch comes later, and the log start only moves
forward.) An earliest of 0 needs no Fetch: no log starts below 0.

The Fetch is placed where a right answer costs nothing (tests/integration/
test_kafka_workaround_costs.py): latest at the answer, the high watermark on Kafka, where
nothing is returned (and, with max_wait_ms 0 first, nothing is waited for: see
``fetch_watermarks``); earliest at the offset before the answer, below Kafka's log start, which
Kafka answers OFFSET_OUT_OF_RANGE without records (the ListOffsets answer stands). At the
answer itself Kafka would return the partition's first batch, up to a batch size of records
nobody reads. Where the answer is wrong (Tansu), the offset before it is in the log, and the
header of that Fetch carries the log start.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping

from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.bodies import (
    FetchRequest,
    ListOffsetsRequest,
    ListOffsetsRequestTopics,
)
from spark_kafka_wire.protocol.errors import ErrorCode, ProtocolError, check_error, error_for_code
from spark_kafka_wire.protocol.messages import FETCH, LIST_OFFSETS

EARLIEST = -2
LATEST = -1
READ_UNCOMMITTED = 0
READ_COMMITTED = 1
# kafka.isolation.level's values
ISOLATION_LEVELS = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
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


def fetch_body(offsets: Mapping[TopicPartition, int], partition_max_bytes: int,
               max_bytes: int, max_wait_ms: int, min_bytes: int,
               isolation_level: int) -> FetchRequest:
    """The fields of a Fetch request for the partitions of ``offsets`` (each from its offset,
    with one per-partition budget), nested by topic in sorted order: the layout of every Fetch
    kafkawire sends (a range's reads, a task's shared Fetch, the watermark probe)."""
    return {
        "max_wait_ms": max_wait_ms,
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "topics": [
            {"topic": t, "partitions": [
                {"partition": p, "fetch_offset": offsets[(t, p)],
                 "partition_max_bytes": partition_max_bytes} for p in parts]}
            for t, parts in by_topic(offsets).items()
        ],
    }


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
            topics: list[ListOffsetsRequestTopics] = [
                {
                    "name": t,
                    "partitions": [
                        {"partition_index": p, "timestamp": timestamps[(t, p)], "max_num_offsets": 1}
                        for p in parts
                    ],
                }
                for t, parts in nested.items()
            ]
            body: ListOffsetsRequest = {
                "replica_id": -1, "isolation_level": isolation_level, "topics": topics}
            resp = conn.request(LIST_OFFSETS, body, version)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    if p["error_code"]:
                        raise error_for_code(
                            p["error_code"], topic=t["name"], partition=p["partition_index"],
                            broker=conn.name, context="ListOffsets",
                            principal=conn.config.principal)
                    if version == 0:
                        olds = p["old_style_offsets"]
                        answer = (olds[0] if olds else -1, -1)
                    else:
                        answer = (p["offset"], p["timestamp"])
                    result[(t["name"], p["partition_index"])] = answer
        missing = set(timestamps) - set(result)
        if missing:
            topic, partition = sorted(missing)[0]
            check_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic=topic, partition=partition,
                        context="ListOffsets (partition missing from response)")
        return result

    return client.retry(attempt, "ListOffsets")


def fetch_watermarks(
    client: KafkaClient,
    offsets: Mapping[TopicPartition, int],
    isolation_level: int = READ_UNCOMMITTED,
) -> dict[TopicPartition, tuple[int, int, int]]:
    """(high_watermark, last_stable_offset, log_start_offset) per partition, read from a Fetch
    at the given offsets (at or next to ListOffsets answers: ``resolve_offsets``) with a
    minimal byte budget (log_start_offset is -1 before Fetch v5).

    The Fetch is first sent with max_wait_ms 0: Kafka then answers at once for every
    partition, also for one whose offset is its end (the usual case: "latest" answered right),
    so the check costs one round trip without records and without waiting. Tansu leaves every
    partition out of a max_wait_ms=0 answer, and of a min_bytes=0 one: the partitions left out
    are asked again with min_bytes 1 and max_wait_ms PROBE_WAIT_MS, which a partition at its
    end waits out. (Sending the wait at once, as before, cost every "latest" on Kafka
    PROBE_WAIT_MS: a broker waits that long at the high watermark for data that does not
    come.) A partition missing from the second answer, or answered OFFSET_OUT_OF_RANGE
    (retention moved the log start past the offset since ListOffsets answered), is left out of the result: the caller keeps its ListOffsets
    value, and the read itself meets what happened to the log. An answer naming a partition
    that was not asked for, or one partition twice, or a negative high watermark, is damaged
    (a flipped partition index or topic name would otherwise pass for a partition left out):
    ProtocolError.
    """

    def attempt() -> dict[TopicPartition, tuple[int, int, int]]:
        result: dict[TopicPartition, tuple[int, int, int]] = {}
        for conn, nested in _per_leader(client, offsets):
            group = {(t, p): offsets[(t, p)] for t, parts in nested.items() for p in parts}
            answered = probe(conn, group, 0, result)
            left_out = {tp: o for tp, o in group.items() if tp not in answered}
            if left_out:
                probe(conn, left_out, PROBE_WAIT_MS, result)
        return result

    def probe(conn: BrokerConnection, group: dict[TopicPartition, int], wait_ms: int,
              result: dict[TopicPartition, tuple[int, int, int]]) -> set[TopicPartition]:
        """One Fetch of ``group``'s watermarks into ``result``; the partitions answered."""
        resp = conn.request(FETCH, fetch_body(group, 1, 1, wait_ms, 1, isolation_level))
        check_error(resp["error_code"], broker=conn.name, context="Fetch")
        answered: set[TopicPartition] = set()
        for t in resp["responses"]:
            for p in t["partitions"]:
                tp = (t["topic"], p["partition_index"])
                if tp not in group or tp in answered:
                    raise _damaged(tp, conn.name)
                answered.add(tp)
                if p["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE:
                    continue
                # an error answer carries high watermark -1 (Kafka's Fetch for a partition
                # it refuses, e.g. TOPIC_AUTHORIZATION_FAILED): the error is the answer
                if p["error_code"]:
                    raise error_for_code(
                        p["error_code"], topic=t["topic"], partition=p["partition_index"],
                        offset=group.get(tp), broker=conn.name, context="Fetch",
                        principal=conn.config.principal)
                if p["high_watermark"] < 0:
                    raise _damaged(tp, conn.name)
                result[(t["topic"], p["partition_index"])] = (
                    p["high_watermark"], p["last_stable_offset"], p["log_start_offset"]
                )
        return answered

    return client.retry(attempt, "Fetch (watermarks)")


def _damaged(tp: TopicPartition, broker: str) -> ProtocolError:
    """Not a partition left out: a damaged answer, whose values for the partitions asked for
    cannot be trusted either."""
    return ProtocolError(
        "the Fetch answer (watermarks) lists a partition that was not asked for, twice, or "
        "without an error but with a negative high watermark: it is damaged",
        topic=tp[0], partition=tp[1], broker=broker)


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
    # One Fetch checks every answer that could be wrong (see the module docstring): latest at
    # the answer, earliest at the offset before it.
    probe = {tp: listed[tp] if o == LATEST else listed[tp] - 1
             for tp, o in special.items() if o == LATEST or listed[tp] > 0}
    marks = fetch_watermarks(client, probe, isolation_level) if probe else {}
    for tp, o in special.items():
        offset = listed[tp]
        if tp in marks:
            hw, lso, log_start = marks[tp]
            if o == LATEST:
                end = lso if isolation_level == READ_COMMITTED and lso >= 0 else hw
                offset = max(offset, end)
            elif 0 <= log_start < offset:
                offset = log_start
        result[tp] = offset
    return result
