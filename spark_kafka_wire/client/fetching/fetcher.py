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

Every one of these decisions is made by ``fetch_plan.RangeFetch``, without I/O; this module is
the loop around it: connections, retries, metadata and the Fetch sent ahead.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial

from spark_kafka_wire.client.fetching.fetch_plan import (
    FetchAnswer,
    FetchRequest,
    LogBoundsRequest,
    RangeFetch,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.offsets import (
    EARLIEST,
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    fetch_body,
    resolve_offsets,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.wire.session import InFlight
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
from spark_kafka_wire.protocol.records import DecodedRecords, TransactionCounts

# Metadata answers in a row saying a planned topic or partition does not exist before it is
# taken as deleted (with the retry backoff, about 1.5 s at the default settings).
MAX_UNKNOWN_TOPIC = 5
_DEFAULT_SETTINGS = FetchSettings()


@dataclass
class SentFetch:
    """A Fetch sent and not read yet: the one in flight while the previous answer decodes."""
    conn: BrokerConnection
    inflight: InFlight[FetchResponse]
    offset: int
    max_bytes: int


def send_fetch(
    client: KafkaClient, topic: str, partition: int, offset: int, max_bytes: int, s: FetchSettings,
    max_wait_ms: int | None = None,
) -> SentFetch:
    """Send one single-partition Fetch to the partition's leader without waiting for it (the
    reader sends the next one before decoding the previous answer; the benchmark's limit
    source sends the same request). ``max_wait_ms``: instead of the settings' (the longer
    wait empty answers grew, ``empty_answers``)."""
    conn = client.leader_connection(topic, partition)
    wait_ms = s.max_wait_ms if max_wait_ms is None else max_wait_ms
    # One partition per request: its budget is the request's too. (Same answer from Kafka;
    # Tansu ignores the partition budget and honours only the request's.)
    inflight = conn.send(FETCH, fetch_body({(topic, partition): offset}, max_bytes, max_bytes,
                                           wait_ms, s.min_bytes, s.isolation_level))
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
    settings: FetchSettings = _DEFAULT_SETTINGS,
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

    This is the I/O loop: ``RangeFetch`` decides what to ask and what the answers mean, this
    sends what it says (through ``PartitionFetches``, which keeps the one sent ahead) and
    feeds it what came back.
    """
    plan = RangeFetch(topic, partition, start, end, settings, fail_on_data_loss, client.config,
                      client.current_deadline, counts)
    fetches = PartitionFetches(client, topic, partition, settings)
    try:
        while (want := plan.next_request()) is not None:
            if isinstance(want, LogBoundsRequest):
                yield from plan.log_bounds(
                    _available(client, topic, partition, settings.isolation_level))
                continue
            if want.pause_s > 0:  # empty answers: back off (empty_answers.py)
                time.sleep(want.pause_s)
            try:
                answer = client.retry(
                    partial(fetches.answer, want.offset, want.max_bytes, want.past_end,
                            want.max_wait_ms),
                    f"Fetch {topic}-{partition} at offset {want.offset}"
                    + (" (transaction markers)" if want.past_end else ""),
                )
            except (UnknownTopicOrPartitionError, OffsetOutOfRangeError) as exc:
                yield from plan.fetch_failed(exc)
                continue
            ahead = plan.prefetch(answer)
            if ahead is not None:
                fetches.send_ahead(ahead)
            chunks = plan.receive(answer, time.monotonic())
            del answer  # decoded (copied out): while the caller works, only the Fetch sent
            # ahead holds a response in memory
            yield from chunks
    finally:
        fetches.abandon()  # the caller stopped early: nobody reads the answer sent ahead


class PartitionFetches:
    """One partition's Fetches, with at most one sent ahead of the answer being used.

    Past the range (read_committed looking for markers) Fetches read uncommitted: a marker may
    lie above the last stable offset. Those are not sent ahead: what they carry is headers
    to walk, not records to decode, so there is little to overlap, and the walk stops as
    soon as the last marker is found.
    """

    def __init__(self, client: KafkaClient, topic: str, partition: int,
                 settings: FetchSettings) -> None:
        self.client, self.topic, self.partition, self.settings = client, topic, partition, settings
        self.past_end_settings = replace(settings, isolation_level=READ_UNCOMMITTED)
        self.ahead: SentFetch | None = None
        self.unknown = 0  # metadata answers in a row that the topic or partition is unknown

    def answer(self, offset: int, max_bytes: int, past_end: bool = False,
               max_wait_ms: int | None = None) -> FetchAnswer:
        """The answer for ``offset``: the one sent ahead when it matches, else a new Fetch
        (``past_end``: as in ``FetchRequest``; ``max_wait_ms``: as in ``send_fetch``)."""
        settings = self.past_end_settings if past_end else self.settings
        sent, self.ahead = self.ahead, None
        if sent is None or past_end or sent.offset != offset or sent.max_bytes != max_bytes:
            if sent is not None:
                sent.conn.abandon(sent.inflight)
            try:
                sent = send_fetch(self.client, self.topic, self.partition, offset, max_bytes,
                                  settings, max_wait_ms)
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

    def send_ahead(self, request: FetchRequest) -> None:
        """Send ``request`` now, for ``answer`` to use when it is asked for next."""
        try:
            self.ahead = send_fetch(self.client, self.topic, self.partition, request.offset,
                                    request.max_bytes, self.settings, request.max_wait_ms)
        except KafkaWireError:
            pass  # not sent ahead: answer() sends it, under the retry rule

    def abandon(self) -> None:
        if self.ahead is not None:
            self.ahead.conn.abandon(self.ahead.inflight)
            self.ahead = None
