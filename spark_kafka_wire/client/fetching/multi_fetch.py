"""Read several offset ranges with one Fetch per leader instead of one per range.

A Spark task that holds many small ranges (planning packs them: ``source/planning.py``) would
otherwise pay a round trip per range, one after another: 16 partitions of a micro-batch in one
task are 16 Fetches in a row. Kafka's Fetch names any number of partitions (the protocol guide,
https://kafka.apache.org/protocol#The_Messages_Fetch; ``fetch.max.bytes`` bounds the answer,
``max.partition.fetch.bytes`` each partition's share, KIP-74), so this reader asks a leader for
every range it leads that has nothing waiting to be read, in one request, and hands the ranges'
records out in the order of the ranges, so a task's rows come out as they would range by range.

The multi-partition Fetch is the common path only. Whatever is not plainly a step forward
(an error code, an answer with no complete batch, a log start past the offset asked for) is
left to ``fetcher.fetch_range`` from the offset reached, which owns every rule about retries,
data loss, growing the budget and empty answers; the same happens to the range being handed
out when its answer carried nothing, and to all ranges of a request that failed as a whole. A
partition left empty because the answer's byte budget was spent elsewhere simply waits for the
next request. Under read_committed every range goes to ``fetch_range``: its transactions are
held per partition until their markers are read, which a shared request would not speed up.

Memory: a range is only asked for again once what was read for it has been handed out, so at
most one answer per range is held, and each request is bounded by ``fetch.max.bytes``. What a
task holds decoded is bounded too (``kafka.fetch.max.decompressed.bytes``, for a Fetch of the
partition share): the answers of one request are decoded head first, each within what the
records already held leave of that limit, and one that does not fit is dropped and asked for
again once earlier ranges are handed out. A head range that does not fit, or that must be read
alone, gets the whole limit: the records held for later ranges are dropped first (those ranges
rewind to where they were and read them again), so 64 answers of compressible data never sit
decompressed side by side.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import READ_COMMITTED, fetch_body
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.protocol.bodies import FetchResponseResponsesPartitions
from spark_kafka_wire.protocol.compression import DecompressionLimitError
from spark_kafka_wire.protocol.errors import ErrorCode, KafkaWireError, check_error
from spark_kafka_wire.protocol.messages import FETCH
from spark_kafka_wire.protocol.records import DecodedRecords, decode_record_batches

# Partitions named in one Fetch: Kafka accepts many more, but the answer of a request is held
# until its ranges are handed out, and a few dozen partitions already make it one round trip
# where there were dozens.
MAX_PARTITIONS_PER_FETCH = 64


@dataclass
class _Range:
    """One range's state: the next offset to read, what was read and not handed out yet, and
    whether it was handed to ``fetch_range`` for the rest."""
    topic: str
    partition: int
    offset: int
    end: int
    chunks: list[DecodedRecords] = field(default_factory=list)
    alone: bool = False
    chunks_from: int = 0  # the offset the chunks start at: where to read again if dropped

    @property
    def open(self) -> bool:
        """Still to be asked for in a shared Fetch."""
        return not self.alone and not self.chunks and self.offset < self.end


def fetch_ranges(
    client: KafkaClient,
    ranges: Sequence[tuple[str, int, int, int]],
    settings: FetchSettings | None = None,
    fail_on_data_loss: bool = True,
) -> Iterator[tuple[int, DecodedRecords]]:
    """Yield ``(i, chunk)``: the records of ``ranges[i]`` = (topic, partition, start, end), in
    the order of the ranges and in offset order within each, exactly as ``fetch_range`` would
    read each range alone (see the module docstring)."""
    settings = settings or FetchSettings()
    states = [_Range(t, p, s, e) for t, p, s, e in ranges]
    shared = len(states) > 1 and settings.isolation_level != READ_COMMITTED
    for i, r in enumerate(states):
        while True:
            if shared and r.open:
                if _fetch_together(client, states, i, settings):
                    continue  # throttled (KIP-219): asked again once the throttle passed
                if not r.chunks and r.open:  # its own answer held nothing to hand out
                    r.alone = True
            for chunk in r.chunks:
                if chunk.num_records:
                    yield i, chunk
            r.chunks = []
            if not shared or r.alone or r.offset >= r.end:
                break
        if r.offset < r.end:
            if shared:
                _drop_held(states[i + 1:])  # the range read alone may use the whole limit
            for chunk in fetch_range(client, r.topic, r.partition, r.offset, r.end, settings,
                                     fail_on_data_loss):
                yield i, chunk


def _fetch_together(client: KafkaClient, states: list[_Range], head: int,
                    settings: FetchSettings) -> bool:
    """One Fetch to the leader of ``states[head]`` for it and the following open ranges that
    leader leads (one range per partition), each answer decoded into its range. True when
    the answer was a quota's throttle without any partition (KIP-219: Kafka answers a client
    over its quota at once, with no data; the connection holds the next Fetch meanwhile)."""
    try:
        leader = client.leader(states[head].topic, states[head].partition)
        group = [states[head]]
        named = {(states[head].topic, states[head].partition)}
        for r in states[head + 1:]:
            if len(group) == MAX_PARTITIONS_PER_FETCH:
                break
            tp = (r.topic, r.partition)
            if r.open and tp not in named and client.leader(*tp) == leader:
                group.append(r)
                named.add(tp)
        conn = client.broker(leader)
        part_bytes = min(settings.max_partition_fetch_bytes, settings.fetch_max_bytes)
        wanted = {(r.topic, r.partition): r for r in group}
        resp = conn.request(FETCH, fetch_body(
            {tp: r.offset for tp, r in wanted.items()}, part_bytes,
            min(settings.fetch_max_bytes, part_bytes * len(group)), settings.max_wait_ms,
            settings.min_bytes, settings.isolation_level))
        check_error(resp["error_code"], broker=conn.name, context="Fetch")
    except KafkaWireError:
        # The whole request failed (no leader known, connection lost, ...): each range's own
        # reader retries under the client's rules, or reports what is wrong, naming the range.
        states[head].alone = True
        return False
    answers: list[tuple[_Range, FetchResponseResponsesPartitions]] = []
    for t in resp["responses"]:
        for p in t["partitions"]:
            tp = (t["topic"], p["partition_index"])
            if tp in wanted:  # a partition not asked for, or named twice, is ignored
                answers.append((wanted.pop(tp), p))
    if not answers and resp.get("throttle_time_ms", 0) > 0:
        return True
    answers.sort(key=lambda a: a[0] is not states[head])  # the head's answer first
    limit = settings.decompression_limit(part_bytes)
    held = _held(states)
    for r, p in answers:
        if held >= limit and r is not states[head]:
            continue  # no room left: asked for again once earlier ranges are handed out
        try:
            _take(r, p, settings, conn.name, limit - held)
        except DecompressionLimitError:
            if r is states[head]:
                r.alone = True  # read alone with the whole limit (others dropped first)
            continue  # another range: asked for again later, with more room
        held += _held([r])
    return False


def _held(states: list[_Range]) -> int:
    """Bytes of the records decoded and not handed out yet (keys and values)."""
    return sum(c.keys.nbytes + c.values.nbytes for r in states for c in r.chunks)


def _drop_held(states: list[_Range]) -> None:
    """Forget the records decoded for ``states`` and not handed out: each range reads them
    again from where they started, so a range read alone can use the task's whole limit."""
    for r in states:
        if r.chunks:
            r.chunks = []
            r.offset = r.chunks_from


def _take(r: _Range, answer: FetchResponseResponsesPartitions, settings: FetchSettings, broker: str,
          max_decompressed: int) -> None:
    """Decode one partition's answer into its range if it is plainly a step forward; anything
    else makes the range read the rest alone (see the module docstring). Its compressed
    records may decompress to ``max_decompressed`` bytes (DecompressionLimitError past it)."""
    if answer["error_code"] != ErrorCode.NONE:
        r.alone = True
        return
    data = answer["records"]
    if data is None or len(data) == 0:
        return  # the answer's budget went to other partitions: ask again
    decoded = decode_record_batches(
        data, start_offset=r.offset, end_offset=r.end, check_crcs=settings.check_crcs,
        topic=r.topic, partition=r.partition, broker=broker,
        max_decompressed_size=max(max_decompressed, 0))
    if decoded.next_offset is None or decoded.next_offset <= r.offset or (
            decoded.num_records and int(decoded.offsets[0]) > r.offset
            and answer["log_start_offset"] > r.offset):
        r.alone = True  # a batch larger than the budget, no progress, or records deleted
        return
    r.chunks_from = r.offset
    r.chunks.append(decoded)
    r.offset = decoded.next_offset
