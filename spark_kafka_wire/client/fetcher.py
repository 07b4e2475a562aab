"""Read one partition's fixed offset range [start, end) in bounded chunks.

Each Fetch returns whole batches from the leader; the decoder drops records outside the range
and reports the offset after the last complete batch, which is where the next Fetch starts
(control batches, compaction gaps and a cut-off trailing batch all follow from that rule, so
none of them is data loss).

Under read_committed (``isolation_level`` 1) a Fetch stops at the partition's last stable
offset and the planned end is at or below it, so every transaction with records in the range
has ended in the log. Its records are returned only if it committed, decided two ways (see
``protocol/records/control.py``; KIP-98 and the record batch section of Kafka's protocol guide,
https://kafka.apache.org/documentation/#recordbatch): transactions the broker lists as aborted
in the Fetch response are dropped at once, as the Java consumer drops them; every other
transactional batch is held until its producer's next control marker (COMMIT keeps it, ABORT
drops it), so the read is exact on a broker that lists nothing (Tansu). Which rule decided
how many batches is counted (``TransactionCounts``): on Kafka every aborted batch is dropped by
the list, on Tansu by its marker. A marker may lie at or
past the planned end (another transaction kept the last stable offset down, or the range was
split inside a transaction by minPartitions / maxRecordsPerPartition): the reader then goes on
fetching past the end, walking batch headers only (records past the end are never returned),
until every waiting producer's marker is read. Those Fetches read uncommitted: a marker above
the last stable offset is still in the log, up to the high watermark. Reaching the high
watermark with a producer still waiting cannot happen on a correct broker and fails the read.

Data loss is what Spark's kafka source calls it: offsets of the planned range that the log no
longer holds (deleted by retention: OFFSET_OUT_OF_RANGE below the log start; the partition now
ends before the planned end: truncated, or the topic deleted and re-created; the topic or
partition gone). With ``fail_on_data_loss`` the read fails naming topic, partition and the lost
offsets; without it the lost offsets are logged as a warning and skipped, and what still exists
is read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial

from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.connection import BrokerConnection, InFlight
from spark_kafka_wire.client.empty_answers import EmptyAnswers
from spark_kafka_wire.client.errors import DataLossError
from spark_kafka_wire.client.offsets import (
    EARLIEST,
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    fetch_body,
    resolve_offsets,
)
from spark_kafka_wire.protocol.bodies import FetchResponse
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    ErrorSpec,
    KafkaWireError,
    OffsetOutOfRangeError,
    ProtocolError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from spark_kafka_wire.protocol.messages import FETCH
from spark_kafka_wire.protocol.records import (
    CommittedFilter,
    DecodedRecords,
    TransactionCounts,
    TransactionEvents,
    decode_record_batches,
    next_batch_offset,
)
from spark_kafka_wire.protocol.records.entries import decompression_limit

log = logging.getLogger(__name__)

MAX_FETCH_BYTES_LIMIT = 256 << 20
# How often one offset may come back out of range while the log says it exists before the read
# gives up (a topic deleted and re-created while being read can do that briefly).
MAX_DISAPPEARED = 3
# Metadata answers in a row saying a planned topic or partition does not exist before it is
# taken as deleted (with the retry backoff, about 1.5 s at the default settings).
MAX_UNKNOWN_TOPIC = 5

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
    # kafka.fetch.max.decompressed.bytes; None: derived from the fetch size (entries.py)
    max_decompressed_bytes: int | None = None

    def decompression_limit(self, fetch_bytes: int) -> int:
        """What the records of an answer to a Fetch of ``fetch_bytes`` may decompress to, and
        what a task may hold decompressed at once."""
        return decompression_limit(fetch_bytes, self.max_decompressed_bytes)


@dataclass
class FetchAnswer:
    records: memoryview | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    broker: str
    aborted: list[tuple[int, int]] | None
    throttle_ms: int = 0  # KIP-219 throttle time the connection honours (empty_answers.py)
    throttled: bool = False  # a quota's answer without the partition: ask again (read_answer)


@dataclass
class SentFetch:
    """A Fetch sent and not read yet: the one in flight while the previous answer decodes."""
    conn: BrokerConnection
    inflight: InFlight[FetchResponse]
    offset: int
    max_bytes: int


def send_fetch(
    client: KafkaClient, topic: str, partition: int, offset: int, max_bytes: int, s: FetchSettings
) -> SentFetch:
    """Send one single-partition Fetch to the partition's leader without waiting for it (the
    reader sends the next one before decoding the previous answer; the benchmark's limit
    source sends the same request)."""
    conn = client.leader_connection(topic, partition)
    # One partition per request: its budget is the request's too. (Same answer from Kafka;
    # Tansu ignores the partition budget and honours only the request's.)
    inflight = conn.send(FETCH, fetch_body({(topic, partition): offset}, max_bytes, max_bytes,
                                           s.max_wait_ms, s.min_bytes, s.isolation_level))
    return SentFetch(conn, inflight, offset, max_bytes)


def read_answer(sent: SentFetch, topic: str, partition: int, s: FetchSettings) -> FetchAnswer:
    """Wait for the answer to ``sent`` and check its errors: the partition's records, or a
    typed error naming topic, partition and broker."""
    conn, offset = sent.conn, sent.offset
    resp = conn.receive(sent.inflight)
    if resp["error_code"]:
        raise error_for_code(resp["error_code"], topic=topic, partition=partition,
                             broker=conn.name, context="Fetch", principal=conn.config.principal)
    for t in resp["responses"]:
        if t["topic"] != topic:
            continue
        for p in t["partitions"]:
            if p["partition_index"] == partition:
                if p["error_code"]:
                    raise error_for_code(
                        p["error_code"], topic=topic, partition=partition, offset=offset,
                        broker=conn.name, context="Fetch", principal=conn.config.principal)
                aborted = None
                if s.isolation_level == READ_COMMITTED:  # the decoder drops aborted data
                    aborted = [(a["producer_id"], a["first_offset"])
                               for a in p["aborted_transactions"] or ()]
                return FetchAnswer(
                    p["records"], p["high_watermark"], p["last_stable_offset"],
                    p["log_start_offset"], conn.name, aborted, sent.inflight.throttle_ms,
                )
    if sent.inflight.throttle_ms > 0 and not resp["responses"]:
        # KIP-219: a client over its quota gets an answer at once, without any topic
        # (Kafka's getThrottledResponse); the connection holds the next Fetch until the
        # throttle time has passed, and the reader asks again. (An answer that names other
        # partitions than the one asked for is damaged, throttled or not.)
        return FetchAnswer(None, -1, -1, -1, conn.name, None, sent.inflight.throttle_ms,
                           throttled=True)
    raise ProtocolError("Fetch response lacks the requested partition", topic=topic,
                        partition=partition, offset=offset, broker=conn.name)


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
    counts: TransactionCounts | None = None,
) -> Iterator[DecodedRecords]:
    """Yield the records with start <= offset < end, in offset order, in decoded chunks.

    The next Fetch is sent before an answer is decoded (its offset is read from the batch
    headers), so the broker serves it while this process decodes and the caller consumes the
    chunk. Memory is bounded by two fetches: the answer being decoded and the one in flight;
    under read_committed, also by the chunks held while a transaction in them is open (see
    the module docstring and ``CommittedFilter``). Offsets of the range that the log no longer
    holds are data loss (see the module docstring).

    ``counts`` (read_committed): filled as the read goes with which rule decided each
    transactional batch of the range, the broker's aborted list or the markers (the rows are
    the same either way; the counts show which path a broker made the read take).
    """
    fetches = _Fetches(client, topic, partition, settings)
    progress = _Progress(start)
    try:
        answers = _range_answers(client, topic, partition, end, settings, fail_on_data_loss,
                                 fetches, progress)
        if settings.isolation_level != READ_COMMITTED:
            for decoded, _ in answers:
                if decoded.num_records:
                    yield decoded
            return
        committed = CommittedFilter(counts)
        for decoded, events in answers:
            committed.add(decoded, events, {"topic": topic, "partition": partition,
                                            "broker": progress.broker})
            yield from committed.ready()
        if committed.undecided:
            _find_markers(client, topic, partition, start, end, settings, fail_on_data_loss,
                          fetches, progress, committed)
        yield from committed.ready()
        log.debug("%s-%d [%d, %d) read_committed: %s", topic, partition, start, end,
                  committed.counts)
    finally:
        fetches.abandon()  # the caller stopped early: nobody reads the answer sent ahead


@dataclass
class _Progress:
    """Where a range read is: the next offset to fetch, whether it stopped early on data loss
    it was told to skip (``stopped``), whether it skipped any (``lost``), the last broker."""
    offset: int
    stopped: bool = False
    lost: bool = False
    broker: str | None = None


class _Fetches:
    """One partition's Fetches, with at most one sent ahead of the answer being used.

    Past the range (read_committed looking for markers) Fetches read uncommitted: a marker may
    lie above the last stable offset. Those are not sent ahead: what they carry is headers
    to walk, not records to decode, so there is little to overlap, and the walk stops as
    soon as the last marker is found.
    """

    def __init__(self, client: KafkaClient, topic: str, partition: int,
                 settings: FetchSettings) -> None:
        self.client, self.topic, self.partition, self.settings = client, topic, partition, settings
        self.beyond = replace(settings, isolation_level=READ_UNCOMMITTED)
        self.ahead: SentFetch | None = None
        self.unknown = 0  # metadata answers in a row that the topic or partition is unknown

    def answer(self, offset: int, max_bytes: int, beyond: bool = False) -> FetchAnswer:
        """The answer for ``offset``: the one sent ahead when it matches, else a new Fetch."""
        settings = self.beyond if beyond else self.settings
        sent, self.ahead = self.ahead, None
        if sent is None or beyond or sent.offset != offset or sent.max_bytes != max_bytes:
            if sent is not None:
                sent.conn.abandon(sent.inflight)
            try:
                sent = send_fetch(self.client, self.topic, self.partition, offset, max_bytes,
                                  settings)
            except UnknownTopicOrPartitionError as exc:
                raise self._unknown(exc) from None
        self.unknown = 0
        return read_answer(sent, self.topic, self.partition, settings)

    def _unknown(self, exc: UnknownTopicOrPartitionError) -> UnknownTopicOrPartitionError:
        """Metadata says the planned topic or partition does not exist. It existed when the
        read was planned, so after a few answers in a row (time for a new topic to reach every
        broker's metadata) it was deleted: not retriable any more, so the read reports the
        data loss at once instead of retrying for the whole request.timeout.ms."""
        self.unknown += 1
        if self.unknown < MAX_UNKNOWN_TOPIC:
            return exc
        return UnknownTopicOrPartitionError(
            ErrorSpec.of(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), topic=exc.topic,
            partition=exc.partition, broker=exc.broker, context=exc.context,
            message=f"metadata said so {self.unknown} times in a row")

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


def _grown(max_bytes: int, topic: str, partition: int, offset: int, broker: str) -> int:
    """The budget for a Fetch whose answer held bytes but no complete batch: the first batch is
    larger than the budget (possible with old brokers). Doubled, as the Kafka design document
    describes (https://kafka.apache.org/documentation/#impl_reads), up to a limit."""
    if max_bytes >= MAX_FETCH_BYTES_LIMIT:
        raise ProtocolError(f"a record batch is larger than {MAX_FETCH_BYTES_LIMIT} bytes",
                            topic=topic, partition=partition, offset=offset, broker=broker)
    return min(max_bytes * 2, MAX_FETCH_BYTES_LIMIT)


def _range_answers(
    client: KafkaClient, topic: str, partition: int, end: int, settings: FetchSettings,
    fail_on_data_loss: bool, fetches: _Fetches, progress: _Progress,
) -> Iterator[tuple[DecodedRecords, TransactionEvents]]:
    """Each answer of [progress.offset, end) decoded, with its transaction events (filled
    under read_committed only); the records may be none (markers, gaps). Data loss is
    reported here; a read that stops on it sets ``progress.stopped``, one that gets to the
    end leaves ``progress.offset`` where the batches read end (at or past ``end``)."""
    offset = progress.offset
    max_bytes = min(settings.max_partition_fetch_bytes, settings.fetch_max_bytes)
    empty = EmptyAnswers(client.config, client.current_deadline)
    disappeared = 0
    committed = settings.isolation_level == READ_COMMITTED

    def lost(start: int, stop: int, reason: str, broker: str | None,
             code: int = ErrorCode.OFFSET_OUT_OF_RANGE) -> None:
        report_data_loss(topic, partition, start, stop, reason, fail_on_data_loss, broker, code)
        progress.lost = True

    while offset < end:
        try:
            answer = client.retry(
                partial(fetches.answer, offset, max_bytes),
                f"Fetch {topic}-{partition} at offset {offset}",
            )
        except UnknownTopicOrPartitionError as exc:
            lost(offset, end, "the topic or partition no longer exists (it was deleted)",
                 exc.broker, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            progress.stopped = True
            return
        except OffsetOutOfRangeError as exc:
            available = _available(client, topic, partition, settings.isolation_level)
            if available is None:
                lost(offset, end, "the topic or partition no longer exists (it was deleted)",
                     exc.broker, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                progress.stopped = True
                return
            lo, hi = available
            if offset < lo:
                lost(offset, min(lo, end),
                     f"the log now starts at offset {lo} (older records were deleted, e.g. by "
                     "retention)", exc.broker)
                offset = lo
            elif offset >= hi:
                lost(offset, end,
                     f"the partition now ends at offset {hi} but offsets up to {end} were "
                     "planned; the log was truncated or the topic re-created", exc.broker)
                progress.stopped = True
                return
            else:
                disappeared += 1
                if disappeared > MAX_DISAPPEARED:
                    lost(offset, end,
                         f"the broker keeps answering OFFSET_OUT_OF_RANGE although the log "
                         f"holds offsets [{lo}, {hi})", exc.broker)
                    progress.stopped = True
                    return
            continue
        progress.broker = answer.broker
        if answer.throttled:  # no data: the same Fetch again, once the throttle has passed
            continue
        data = answer.records
        ahead = next_batch_offset(data)
        if ahead is not None and offset < ahead < end:
            fetches.send_ahead(ahead, max_bytes)
        events = TransactionEvents()
        decoded = decode_record_batches(
            data if data is not None else b"",
            start_offset=offset, end_offset=end, check_crcs=settings.check_crcs,
            topic=topic, partition=partition, broker=answer.broker,
            max_decompressed_size=settings.decompression_limit(max_bytes),
            aborted_transactions=answer.aborted, transactions=events if committed else None,
        )
        if decoded.next_offset is None:
            if data is not None and len(data) > 0:
                max_bytes = _grown(max_bytes, topic, partition, offset, answer.broker)
                continue
            limit = answer.high_watermark
            if committed and answer.last_stable_offset >= 0:
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
                lost(offset, end, reason, answer.broker, code)
                progress.stopped = True
                return
            empty.wait(topic=topic, partition=partition, offset=offset, broker=answer.broker,
                       why=f"the partition ends at {limit}", throttle_ms=answer.throttle_ms)
            continue
        empty.progressed()
        if (decoded.num_records and int(decoded.offsets[0]) > offset
                and answer.log_start_offset > offset):
            # The log start moved past the offset asked for: the records in between are gone
            # (a gap above the log start is compaction or transaction markers, not loss).
            lost(offset, min(answer.log_start_offset, int(decoded.offsets[0])),
                 f"the log now starts at offset {answer.log_start_offset} (older records were "
                 "deleted, e.g. by retention)", answer.broker)
        if decoded.next_offset <= offset:
            raise ProtocolError(
                f"fetch made no progress (next offset {decoded.next_offset})",
                topic=topic, partition=partition, offset=offset, broker=answer.broker,
            )
        offset = decoded.next_offset
        del data, answer  # decoded (copied out): while the caller works, only the Fetch sent
        # ahead holds a response in memory
        yield decoded, events
    progress.offset = offset


def _find_markers(
    client: KafkaClient, topic: str, partition: int, start: int, end: int,
    settings: FetchSettings, fail_on_data_loss: bool, fetches: _Fetches, progress: _Progress,
    committed: CommittedFilter,
) -> None:
    """Decide the transactions still open at the end of the range read: fetch on from where
    the range read ended (uncommitted, batch headers only) until each waiting producer's
    marker is read. Markers lost with the log (a read that stopped on data loss, or skipped
    some) leave their records undecided: dropped with a warning when failOnDataLoss is false,
    else the read fails; so does reaching the end of the partition without them."""
    offset = progress.offset
    max_bytes = min(settings.max_partition_fetch_bytes, settings.fetch_max_bytes)
    empty = EmptyAnswers(client.config, client.current_deadline)
    where = {"topic": topic, "partition": partition}

    def undecided(reason: str, broker: str | None, skippable: bool) -> None:
        waiting = committed.undecided
        held = ", ".join(f"producer {pid} from offset {first}"
                         for pid, first in sorted(waiting.items(), key=lambda w: w[1]))
        if skippable and not fail_on_data_loss:
            committed.abort_undecided()
            log.warning(
                "Skipping the records of %s-%d in [%d, %d) whose transactions have no marker "
                "left to read (%s): %s. Whether they were committed cannot be known "
                "(failOnDataLoss is false)", topic, partition, start, end, held, reason)
            return
        raise ProtocolError(
            f"read_committed: records in the range [{start}, {end}) belong to transactions "
            f"with no COMMIT or ABORT marker in the log ({held}): {reason}. Whether they were "
            "committed cannot be known, so none is returned. A read_committed range ends at "
            "or below the last stable offset, below which every transaction has ended, so the "
            "log or the broker is inconsistent: check the partition with another "
            "read_committed client, or read it with kafka.isolation.level=read_uncommitted",
            topic=topic, partition=partition, offset=min(waiting.values()), broker=broker)

    if progress.stopped:
        undecided("the read stopped at the data loss reported above", progress.broker, True)
        return
    while committed.undecided:
        try:
            answer = client.retry(
                partial(fetches.answer, offset, max_bytes, True),
                f"Fetch {topic}-{partition} at offset {offset} (transaction markers)",
            )
        except (UnknownTopicOrPartitionError, OffsetOutOfRangeError) as exc:
            undecided(f"fetching markers past the range at offset {offset} failed: "
                      f"{exc}", exc.broker, True)
            return
        data = answer.records
        events = TransactionEvents()
        decoded = decode_record_batches(
            data if data is not None else b"",
            start_offset=offset, end_offset=end, check_crcs=settings.check_crcs,
            topic=topic, partition=partition, broker=answer.broker,
            max_decompressed_size=settings.decompression_limit(max_bytes),
            aborted_transactions=[], transactions=events,
        )
        if decoded.next_offset is None:
            if data is not None and len(data) > 0:
                max_bytes = _grown(max_bytes, topic, partition, offset, answer.broker)
                continue
            if answer.high_watermark <= offset:
                undecided(f"the partition ends at offset {answer.high_watermark} (its high "
                          "watermark) without them", answer.broker, progress.lost)
                return
            empty.wait(topic=topic, partition=partition, offset=offset, broker=answer.broker,
                       why=f"the partition ends at {answer.high_watermark} (looking for "
                       "transaction markers)", throttle_ms=answer.throttle_ms)
            continue
        empty.progressed()
        if decoded.next_offset <= offset:
            raise ProtocolError(
                f"fetch made no progress (next offset {decoded.next_offset})",
                topic=topic, partition=partition, offset=offset, broker=answer.broker)
        committed.add(decoded, events, {**where, "broker": answer.broker})
        offset = decoded.next_offset
