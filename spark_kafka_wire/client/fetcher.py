"""Read one partition's fixed offset range [start, end) in bounded chunks.

Each Fetch returns whole batches from the leader; the decoder drops records outside the range
and reports the offset after the last complete batch, which is where the next Fetch starts
(control batches, compaction gaps and a cut-off trailing batch all follow from that rule, so
none of them is data loss).

Data loss is what Spark's kafka source calls it: offsets of the planned range that the log no
longer holds (deleted by retention: OFFSET_OUT_OF_RANGE below the log start; the partition now
ends before the planned end: truncated, or the topic deleted and re-created; the topic or
partition gone). With ``fail_on_data_loss`` the read fails naming topic, partition and the lost
offsets; without it the lost offsets are logged as a warning and skipped, and what still exists
is read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.connection import BrokerConnection, InFlight
from spark_kafka_wire.client.errors import DataLossError
from spark_kafka_wire.client.offsets import (
    EARLIEST,
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    resolve_offsets,
)
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    KafkaWireError,
    OffsetOutOfRangeError,
    ProtocolError,
    UnknownTopicOrPartitionError,
    check_error,
)
from spark_kafka_wire.protocol.messages import FETCH
from spark_kafka_wire.protocol.records import (
    ATTR_CODEC_MASK,
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    BATCH_HEADER,
    CONTROL_ABORT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    DecodedRecords,
    control_type,
    decode_record_batches,
    next_batch_offset,
)

log = logging.getLogger(__name__)

MAX_FETCH_BYTES_LIMIT = 256 << 20
# How often one offset may come back out of range while the log says it exists before the read
# gives up (a topic deleted and re-created while being read can do that briefly).
MAX_DISAPPEARED = 3

def report_data_loss(topic: str, partition: int, start: int, end: int, reason: str,
                     fail: bool, broker: str | None = None,
                     code: int = ErrorCode.OFFSET_OUT_OF_RANGE) -> None:
    """Raise DataLossError, or (``fail`` false) log the lost range as a warning."""
    if fail:
        raise DataLossError(topic, partition, start, end, reason, broker, code)
    log.warning("Skipping offsets [%d, %d) of %s-%d: %s. Some data may have been lost because "
                "they are not available in Kafka any more (failOnDataLoss is false)",
                start, end, topic, partition, reason)


@dataclass(frozen=True)
class FetchSettings:
    max_partition_fetch_bytes: int = 1 << 20
    fetch_max_bytes: int = 50 << 20
    max_wait_ms: int = 500
    min_bytes: int = 1
    isolation_level: int = READ_UNCOMMITTED
    check_crcs: bool = True
    max_empty_fetches: int = 20


@dataclass
class FetchAnswer:
    records: memoryview | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    broker: str
    aborted: list[tuple[int, int]] | None


@dataclass
class SentFetch:
    """A Fetch sent and not read yet: the one in flight while the previous answer decodes."""
    conn: BrokerConnection
    inflight: InFlight
    offset: int
    max_bytes: int


def send_fetch(
    client: KafkaClient, topic: str, partition: int, offset: int, max_bytes: int, s: FetchSettings
) -> SentFetch:
    """Send one single-partition Fetch to the partition's leader without waiting for it (the
    reader sends the next one before decoding the previous answer; the benchmark's limit
    source sends the same request)."""
    conn = client.leader_connection(topic, partition)
    inflight = conn.send(
        FETCH,
        {
            "max_wait_ms": s.max_wait_ms,
            "min_bytes": s.min_bytes,
            # One partition per request: its budget is the request's too. (Same answer from
            # Kafka; Tansu ignores the partition budget and honours only this one.)
            "max_bytes": max_bytes,
            "isolation_level": s.isolation_level,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes}
                    ],
                }
            ],
        },
    )
    return SentFetch(conn, inflight, offset, max_bytes)


def read_answer(sent: SentFetch, topic: str, partition: int, s: FetchSettings) -> FetchAnswer:
    """Wait for the answer to ``sent`` and check its errors: the partition's records, or a
    typed error naming topic, partition and broker."""
    conn, offset = sent.conn, sent.offset
    resp = conn.receive(sent.inflight)
    check_error(resp["error_code"], topic=topic, partition=partition, broker=conn.name, context="Fetch")
    for t in resp["responses"]:
        if t["topic"] != topic:
            continue
        for p in t["partitions"]:
            if p["partition_index"] == partition:
                check_error(
                    p["error_code"], topic=topic, partition=partition, offset=offset,
                    broker=conn.name, context="Fetch",
                )
                aborted = None
                if s.isolation_level == READ_COMMITTED:  # the decoder drops aborted data
                    aborted = [(a["producer_id"], a["first_offset"])
                               for a in p["aborted_transactions"] or ()]
                return FetchAnswer(
                    p["records"], p["high_watermark"], p["last_stable_offset"],
                    p["log_start_offset"], conn.name, aborted,
                )
    raise ProtocolError("Fetch response lacks the requested partition", topic=topic,
                        partition=partition, offset=offset, broker=conn.name)


class _CommittedCheck:
    """Catches a broker that returns aborted data to a read_committed reader.

    Such a broker must list each aborted transaction overlapping a Fetch's data in the response
    (producer id, first offset); the decoder drops those transactions' batches. Walking the
    batch headers of each response, a transactional data batch of a producer the response
    did not list is returned to the reader; if that producer's next control marker is an ABORT
    the broker has handed out aborted data, and the read fails rather than return it silently.
    With a broker that lists its aborted transactions this never fires. (Markers beyond the
    bytes of the responses read are not looked for.)
    """

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.pending: dict[int, int] = {}  # producer id -> first offset returned unchecked

    def walk(self, data: memoryview | bytes, aborted: list[tuple[int, int]] | None,
             broker: str) -> None:
        listed = {pid for pid, _ in aborted or ()}
        view = memoryview(data)
        pos, n = 0, len(view)
        while n - pos >= HEADER_SIZE:
            (base, length, _, magic, _, attrs, last_delta, _, _, pid, _, _,
             count) = BATCH_HEADER.unpack_from(view, pos)
            end = pos + LOG_OVERHEAD + length
            if magic != 2 or length < HEADER_SIZE - LOG_OVERHEAD or end > n:
                return  # legacy data has no transactions; a partial tail ends the walk
            if attrs & ATTR_TRANSACTIONAL and pid >= 0:
                if not attrs & ATTR_CONTROL:
                    last = base + last_delta
                    if pid not in listed and last >= self.start and base < self.end:
                        self.pending.setdefault(pid, max(base, self.start))
                elif pid in self.pending and not attrs & ATTR_CODEC_MASK:
                    first = self.pending.pop(pid)
                    try:
                        ctype = control_type(view[pos + HEADER_SIZE:end], count)
                    except Exception:  # noqa: BLE001 - the decoder reports corrupt markers
                        ctype = -1
                    if ctype == CONTROL_ABORT:
                        raise ProtocolError(
                            "read_committed: the broker returned records of producer "
                            f"{pid} from offset {first} whose transaction was aborted (marker "
                            f"at offset {base}) without listing that transaction in the Fetch "
                            "response's aborted transactions, so they cannot be dropped. The "
                            "broker does not implement read_committed; refusing to return "
                            "aborted data",
                            topic=self.topic, partition=self.partition, offset=first,
                            broker=broker,
                        )
            pos = end


def _available(client: KafkaClient, topic: str, partition: int, isolation_level: int
               ) -> tuple[int, int] | None:
    """(earliest, latest) offsets of the partition now, or None when it no longer exists."""
    tp = (topic, partition)
    try:
        if partition not in client.topic(topic, refresh=True).partitions:
            return None
        lo = resolve_offsets(client, {tp: EARLIEST}, isolation_level)[tp]
        hi = resolve_offsets(client, {tp: LATEST}, isolation_level)[tp]
    except UnknownTopicOrPartitionError:
        return None
    return lo, hi


def fetch_range(
    client: KafkaClient,
    topic: str,
    partition: int,
    start: int,
    end: int,
    settings: FetchSettings = FetchSettings(),
    fail_on_data_loss: bool = True,
) -> Iterator[DecodedRecords]:
    """Yield the records with start <= offset < end, one decoded chunk per Fetch.

    The next Fetch is sent before an answer is decoded (its offset is read from the batch
    headers), so the broker serves it while this process decodes and the caller consumes the
    chunk. Memory is bounded by two fetches: the answer being decoded and the one in flight.
    Offsets of the range that the log no longer holds are data loss (see the module docstring).
    """
    fetches = _Fetches(client, topic, partition, settings)
    try:
        yield from _fetch_chunks(client, topic, partition, start, end, settings,
                                 fail_on_data_loss, fetches)
    finally:
        fetches.abandon()  # the caller stopped early: nobody reads the answer sent ahead


class _Fetches:
    """One partition's Fetches, with at most one sent ahead of the answer being used."""

    def __init__(self, client: KafkaClient, topic: str, partition: int,
                 settings: FetchSettings) -> None:
        self.client, self.topic, self.partition, self.settings = client, topic, partition, settings
        self.ahead: SentFetch | None = None

    def answer(self, offset: int, max_bytes: int) -> FetchAnswer:
        """The answer for ``offset``: the one sent ahead when it matches, else a new Fetch."""
        sent, self.ahead = self.ahead, None
        if sent is None or sent.offset != offset or sent.max_bytes != max_bytes:
            if sent is not None:
                sent.conn.abandon(sent.inflight)
            sent = send_fetch(self.client, self.topic, self.partition, offset, max_bytes,
                               self.settings)
        return read_answer(sent, self.topic, self.partition, self.settings)

    def send_ahead(self, offset: int, max_bytes: int) -> None:
        try:
            self.ahead = send_fetch(self.client, self.topic, self.partition, offset, max_bytes,
                                     self.settings)
        except KafkaWireError:
            pass  # not sent ahead: answer() sends it, under the retry rule

    def abandon(self) -> None:
        if self.ahead is not None:
            self.ahead.conn.abandon(self.ahead.inflight)
            self.ahead = None


def _fetch_chunks(
    client: KafkaClient, topic: str, partition: int, start: int, end: int,
    settings: FetchSettings, fail_on_data_loss: bool, fetches: _Fetches,
) -> Iterator[DecodedRecords]:
    offset = start
    max_bytes = min(settings.max_partition_fetch_bytes, settings.fetch_max_bytes)
    empty = 0
    disappeared = 0
    committed = _CommittedCheck(topic, partition, start, end) \
        if settings.isolation_level == READ_COMMITTED else None
    while offset < end:
        try:
            answer = client.retry(
                partial(fetches.answer, offset, max_bytes),
                f"Fetch {topic}-{partition} at offset {offset}",
            )
        except UnknownTopicOrPartitionError as exc:
            report_data_loss(topic, partition, offset, end,
                             "the topic or partition no longer exists (it was deleted)",
                             fail_on_data_loss, exc.broker,
                             code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return
        except OffsetOutOfRangeError as exc:
            available = _available(client, topic, partition, settings.isolation_level)
            if available is None:
                report_data_loss(topic, partition, offset, end,
                                 "the topic or partition no longer exists (it was deleted)",
                                 fail_on_data_loss, exc.broker,
                                 code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                return
            lo, hi = available
            if offset < lo:
                report_data_loss(
                    topic, partition, offset, min(lo, end),
                    f"the log now starts at offset {lo} (older records were deleted, e.g. by "
                    "retention)", fail_on_data_loss, exc.broker)
                offset = lo
            elif offset >= hi:
                report_data_loss(
                    topic, partition, offset, end,
                    f"the partition now ends at offset {hi} but offsets up to {end} were "
                    "planned; the log was truncated or the topic re-created",
                    fail_on_data_loss, exc.broker)
                return
            else:
                disappeared += 1
                if disappeared > MAX_DISAPPEARED:
                    report_data_loss(
                        topic, partition, offset, end,
                        f"the broker keeps answering OFFSET_OUT_OF_RANGE although the log "
                        f"holds offsets [{lo}, {hi})", fail_on_data_loss, exc.broker)
                    return
            continue
        data = answer.records
        ahead = next_batch_offset(data)
        if ahead is not None and offset < ahead < end:
            fetches.send_ahead(ahead, max_bytes)
        decoded = decode_record_batches(
            data if data is not None else b"",
            start_offset=offset, end_offset=end, check_crcs=settings.check_crcs,
            topic=topic, partition=partition, broker=answer.broker,
            aborted_transactions=answer.aborted,
        )
        if committed is not None and data is not None:
            committed.walk(data, answer.aborted, answer.broker)
        if decoded.next_offset is None:
            if data is not None and len(data) > 0:
                # Bytes but no complete batch: the first batch is larger than our budget
                # (possible with old brokers). Ask for more, doubling the budget, as the Kafka
                # design document describes (https://kafka.apache.org/documentation/#impl_reads).
                if max_bytes >= MAX_FETCH_BYTES_LIMIT:
                    raise ProtocolError(
                        f"a record batch is larger than {MAX_FETCH_BYTES_LIMIT} bytes",
                        topic=topic, partition=partition, offset=offset, broker=answer.broker,
                    )
                max_bytes = min(max_bytes * 2, MAX_FETCH_BYTES_LIMIT)
                continue
            limit = answer.high_watermark
            if settings.isolation_level == READ_COMMITTED and answer.last_stable_offset >= 0:
                limit = answer.last_stable_offset
            if limit <= offset:
                if _available(client, topic, partition, settings.isolation_level) is None:
                    reason = "the topic or partition no longer exists (it was deleted)"
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    reason, code = (
                        f"the partition now ends at offset {limit} but offsets up to {end} were "
                        "planned; the log was truncated or the topic re-created",
                        ErrorCode.OFFSET_OUT_OF_RANGE)
                report_data_loss(topic, partition, offset, end, reason, fail_on_data_loss,
                                 answer.broker, code)
                return
            empty += 1
            if empty > settings.max_empty_fetches:
                raise ProtocolError(
                    f"{empty} fetches returned no data although the partition ends at {limit}",
                    topic=topic, partition=partition, offset=offset, broker=answer.broker,
                )
            time.sleep(min(0.05 * empty, 1.0))
            continue
        empty = 0
        if (decoded.num_records and int(decoded.offsets[0]) > offset
                and answer.log_start_offset > offset):
            # The log start moved past the offset asked for: the records in between are gone
            # (a gap above the log start is compaction or transaction markers, not loss).
            report_data_loss(
                topic, partition, offset, min(answer.log_start_offset, int(decoded.offsets[0])),
                f"the log now starts at offset {answer.log_start_offset} (older records were "
                "deleted, e.g. by retention)", fail_on_data_loss, answer.broker)
        if decoded.next_offset <= offset:
            raise ProtocolError(
                f"fetch made no progress (next offset {decoded.next_offset})",
                topic=topic, partition=partition, offset=offset, broker=answer.broker,
            )
        offset = decoded.next_offset
        del data, answer  # decoded (copied out): while the caller works, only the Fetch sent
        # ahead holds a response in memory
        if decoded.num_records:
            yield decoded
