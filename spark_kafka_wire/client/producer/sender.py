"""Produce requests to partition leaders: packing, pipelining, answers, retries.

Produce v3+ carries one batch per partition per request, so batches are packed into requests
per leader (at most one per partition, at most max.request.size bytes). Up to
``max.in.flight.requests.per.connection`` requests are in flight per leader; their responses
are read in order.

Failures: a retriable error (stale leader, timeout, socket failure, no broker reachable) is
retried after a metadata refresh, with exponential backoff from retry.backoff.ms to
retry.backoff.max.ms, until kafka.retries attempts or delivery.timeout.ms (from the batch's
creation) run out; finding leaders and reconnecting are bounded by the same delivery timeout,
so a broker restart shorter than it is waited for, as by the Java producer. A retry
drains every in-flight request first and re-sends the failed batches in their original order;
later batches of a partition whose batch failed wait for it. So with one request in flight, or
with idempotence, each partition keeps its order; without idempotence and with several in
flight a retried batch may land after a later one (as with the Java client).

With idempotence (KIP-98) the broker accepts each sequence once: a re-sent batch that was
already written is answered DUPLICATE_SEQUENCE_NUMBER (treated as written), a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER (retried when an earlier batch of the partition failed). A gap no
earlier failure explains, or UNKNOWN_PRODUCER_ID, means the broker lost the producer's state:
the epoch is bumped and unacknowledged batches re-numbered (``idempotence.py``), once per
batch; the same answer to a re-numbered batch is fatal.
"""

from __future__ import annotations

import itertools
import logging
import random
import time
from collections import defaultdict, deque
from dataclasses import dataclass

from spark_kafka_wire.client.errors import (
    BrokerConnectionError,
    DeliveryFailedError,
    DeliveryTimeoutError,
    NoBrokersAvailableError,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient, is_retriable
from spark_kafka_wire.client.producer.accumulator import PendingBatch, split_batch
from spark_kafka_wire.client.producer.idempotence import (
    ProducerIdentity,
    init_producer_id,
    next_sequence,
)
from spark_kafka_wire.client.producer.settings import ProduceSettings
from spark_kafka_wire.client.producer.transactions import (
    explain_transaction_error,
    offers_v2,
    request_version,
)
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.wire.hooks import CloseReason
from spark_kafka_wire.client.wire.session import InFlight
from spark_kafka_wire.protocol.bodies import (
    ProduceRequest,
    ProduceRequestTopicDataPartitionData,
    ProduceResponse,
)
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    KafkaError,
    KafkaWireError,
    ProtocolError,
    RecordTooLargeError,
    error_for_code,
)
from spark_kafka_wire.protocol.messages import PRODUCE
from spark_kafka_wire.protocol.records import restamp_batch

log = logging.getLogger(__name__)


class _Wait(Exception):
    """Not an error: the batch waits for the retry of an earlier batch of its partition."""


_WAIT = _Wait()
DELIVERY_TIMEOUT = "kafka.delivery.timeout.ms"  # the deadline of every wait of a write
# Answers meaning the broker has no (or other) state for this idempotent producer.
_STATE_LOST = (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID)


@dataclass
class _Request:
    conn: BrokerConnection
    inflight: InFlight[ProduceResponse]
    batches: list[PendingBatch]


def _pack(batches: list[PendingBatch], max_request_size: int) -> list[list[PendingBatch]]:
    """Group batches into requests: one batch per partition each, bounded in size, keeping
    each partition's batches in order across requests."""
    requests: list[list[PendingBatch]] = []
    sizes: list[int] = []
    members: list[set[tuple[str, int]]] = []
    last_request: dict[tuple[str, int], int] = {}
    for b in batches:
        key = (b.topic, b.partition)
        start = last_request.get(key, -1) + 1  # after the request holding its previous batch
        for i in range(start, len(requests)):
            if key not in members[i] and sizes[i] + len(b.data) <= max_request_size:
                break
        else:
            requests.append([])
            sizes.append(0)
            members.append(set())
            i = len(requests) - 1
        requests[i].append(b)
        sizes[i] += len(b.data)
        members[i].add(key)
        last_request[key] = i
    return requests


class Sender:
    """Sends encoded batches to their leaders and sees each one acknowledged, or fails.

    ``records_sent`` counts records the brokers acknowledged (with acks=0: records handed to
    the socket); ``producer_id`` is the idempotent producer id the batches carry (-1: none),
    ``sequences`` the next base sequence of each partition and ``epoch_bumps`` how often the
    epoch was bumped because a broker lost the producer's state.
    """

    def __init__(self, client: KafkaClient, settings: ProduceSettings) -> None:
        self.client = client
        self.settings = settings
        self.records_sent = 0
        self.requests_sent = 0
        self.producer_id = -1
        self.producer_epoch = -1
        self.sequences: dict[tuple[str, int], int] = {}
        self.epoch_bumps = 0
        # a transaction of the v2 protocol (KIP-890): Produce v12 to leaders that speak it
        self.transaction_v2 = False
        self._windows: dict[int, deque[_Request]] = defaultdict(deque)
        self._failed: list[tuple[PendingBatch, BaseException]] = []
        self._blocked: set[tuple[str, int]] = set()
        self._counter = itertools.count()
        self.max_in_flight_seen = 0

    def send(self, batches: list[PendingBatch]) -> None:
        """Send encoded batches and wait until every one is acknowledged (or fail).

        The batches go as they were encoded: a producer id and sequence numbers are written
        into them only by ``Producer.append``, so batches from ``encode_partitioned`` are
        written without idempotence (a retry after a lost answer can store one twice), even
        by a Producer whose settings ask for it."""
        self.dispatch(batches)
        self.flush()

    def dispatch(self, batches: list[PendingBatch]) -> None:
        """Send encoded batches, pipelined; returns once each was handed to a connection
        (waiting only for room in the in-flight window). ``flush`` waits for the answers."""
        now = time.monotonic()
        for b in batches:
            b.order = next(self._counter)
            if not b.created:
                b.created = now
        try:
            with self.client.deadline(self.delivery_deadline(now), DELIVERY_TIMEOUT):
                self._route_and_transmit(batches, recovering=False)
        except BaseException:
            self.abort()
            raise

    def delivery_deadline(self, created: float) -> float:
        """When a batch created at monotonic ``created`` (or a write begun then) must be
        delivered: every wait of the write is bounded by it (``KafkaClient.deadline``)."""
        return created + self.settings.delivery_timeout_ms / 1000

    def _oldest_deadline(self, batches: list[PendingBatch]) -> float:
        return self.delivery_deadline(min(b.created for b in batches))

    @property
    def has_failures(self) -> bool:
        """Batches failed (or wait for a failed one) and are not re-sent yet."""
        return bool(self._failed)

    def flush(self) -> None:
        """Wait for every answer, retrying failures."""
        try:
            self._recover()
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Close connections with requests still in flight (so a pooled connection never
        carries unread responses into the next task) and forget failed batches."""
        for window in self._windows.values():
            for r in window:
                r.conn.close(CloseReason.CLIENT_CLOSED)
            window.clear()
        self._failed.clear()
        self._blocked.clear()

    def _fail(self, batch: PendingBatch, exc: BaseException) -> None:
        self._failed.append((batch, exc))
        self._blocked.add((batch.topic, batch.partition))

    def _route_and_transmit(self, batches: list[PendingBatch], recovering: bool) -> None:
        by_leader: dict[int, list[PendingBatch]] = defaultdict(list)
        for b in batches:
            try:
                by_leader[self.client.leader(b.topic, b.partition)].append(b)
            except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
                self._fail(b, exc)
        for leader, group in by_leader.items():
            for req in _pack(group, self.settings.max_request_size):
                self._transmit(leader, req, recovering)

    def _transmit(self, leader: int, req: list[PendingBatch], recovering: bool) -> None:
        s = self.settings
        window = self._windows[leader]
        while len(window) >= s.max_in_flight:
            self._complete(window.popleft())
        if self._failed and not recovering:
            self._recover()
        if self._blocked:  # a partition whose earlier batch failed waits for its retry
            waiting = [b for b in req if (b.topic, b.partition) in self._blocked]
            for b in waiting:
                self._failed.append((b, _WAIT))
            if waiting:
                req = [b for b in req if (b.topic, b.partition) not in self._blocked]
            if not req:
                return
        topics: dict[str, list[ProduceRequestTopicDataPartitionData]] = defaultdict(list)
        for b in req:
            if b.base_sequence >= 0 and b.generation != self.epoch_bumps:
                self._stamp(b)
            topics[b.topic].append({"index": b.partition, "records": b.data})
        body: ProduceRequest = {
            "transactional_id": s.transactional_id,
            "acks": s.acks,
            "timeout_ms": s.timeout_ms,
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in topics.items()],
        }
        try:
            conn = self.client.broker(leader)
            version = request_version(conn, PRODUCE,
                                      self.transaction_v2 and offers_v2(conn, PRODUCE))
            inflight = conn.send(PRODUCE, body, version, expect_response=s.acks != 0)
        except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
            for b in req:
                self._fail(b, exc)
            return
        self.requests_sent += 1
        if s.acks == 0:
            self.records_sent += sum(b.records for b in req)
            return
        window.append(_Request(conn, inflight, req))
        self.max_in_flight_seen = max(self.max_in_flight_seen, len(window))

    def _complete(self, r: _Request) -> None:
        # The answer is awaited no longer than its oldest batch may take to be delivered.
        try:
            with self.client.deadline(self._oldest_deadline(r.batches), DELIVERY_TIMEOUT):
                resp = r.conn.receive(r.inflight)
        except (KafkaError, BrokerConnectionError, ProtocolError) as exc:
            for b in r.batches:
                self._fail(b, exc)
            return
        answered: dict[tuple[str, int], tuple[int, str | None]] = {}
        for t in resp["responses"]:
            for p in t["partition_responses"]:
                answered[(t["name"], p["index"])] = (p["error_code"], p["error_message"])
        for b in r.batches:
            if (b.topic, b.partition) not in answered:  # damaged, or not an answer to this
                self._fail(b, ProtocolError("the Produce answer lacks a partition the request "
                                            "wrote to", topic=b.topic, partition=b.partition,
                                            broker=r.conn.name))
                continue
            code, message = answered[(b.topic, b.partition)]
            if code == ErrorCode.NONE or (code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER
                                          and b.base_sequence >= 0):
                self.records_sent += b.records  # a duplicate: written by an earlier try
                continue
            if code == ErrorCode.MESSAGE_TOO_LARGE:
                message = (f"a batch of {b.records} record{'s' if b.records > 1 else ''} is "
                           f"{len(b.data)} bytes, more than the topic's max.message.bytes")
            elif isinstance(error_for_code(code), RecordTooLargeError):
                message = f"a batch of {b.records} records is {len(b.data)} bytes"
            self._fail(b, error_for_code(code, topic=b.topic, partition=b.partition,
                                         broker=r.conn.name, context="Produce", message=message,
                                         principal=r.conn.config.principal))

    def _drain(self) -> None:
        for window in self._windows.values():
            while window:
                self._complete(window.popleft())

    def _recover(self) -> None:
        """Wait for every in-flight answer; re-send failed batches in order until all are
        written, or raise when one cannot be (fatal error, retries or delivery time spent)."""
        s = self.settings
        backoff = s.retry_backoff_ms / 1000
        while True:
            self._drain()
            if not self._failed:
                self._blocked.clear()
                return
            failed = sorted(self._failed, key=lambda fe: fe[0].order)
            self._failed = []
            self._blocked = set()
            retry: list[PendingBatch] = []
            earlier: set[tuple[str, int]] = set()  # partitions with an earlier failed batch
            bump = False
            now = time.monotonic()
            for b, exc in failed:
                key = (b.topic, b.partition)
                halves = self._split(b, exc)
                if halves is not None:  # too large for the topic: sent again as two batches
                    retry += halves
                    earlier.add(key)
                    continue
                if exc is not _WAIT:
                    code = exc.code if isinstance(exc, KafkaError) else None
                    if isinstance(exc, KafkaError):
                        b.last_broker_error = exc
                    state_lost = code in _STATE_LOST and b.base_sequence >= 0
                    explained = (state_lost and key in earlier
                                 and code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
                    if state_lost and not explained:
                        if b.renumbered or s.transactional_id is not None:
                            raise self._fatal(b, exc)
                        bump = True
                    elif not explained and not is_retriable(exc):
                        raise self._fatal(b, exc)
                    b.attempts += 1
                    if b.attempts > s.retries:
                        raise self._gave_up(b, exc, timed_out=False)
                if now + backoff > self.delivery_deadline(b.created):
                    last = exc if exc is not _WAIT else (
                        b.last_broker_error or "an earlier batch of the partition failed")
                    raise self._gave_up(b, last, timed_out=True)
                retry.append(b)
                earlier.add(key)
            first = next((e for _, e in failed if e is not _WAIT), None)
            log.info("retrying %d batches after: %s", len(retry), first)
            time.sleep(backoff * (0.8 + 0.4 * random.random()))
            backoff = min(backoff * 2, max(s.retry_backoff_max_ms, s.retry_backoff_ms) / 1000)
            deadline = self._oldest_deadline(retry)
            with self.client.deadline(deadline, DELIVERY_TIMEOUT):
                try:
                    self.client.refresh_metadata({b.topic for b in retry})
                except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
                    if not is_retriable(exc):
                        raise
                    if time.monotonic() >= deadline:  # it used up the oldest batch's time
                        # what a broker said of the batch (a partition it does not have,
                        # say) tells more than the refresh that ran out of time after it
                        oldest = min(retry, key=lambda b: b.created)
                        raise self._gave_up(oldest, oldest.last_broker_error or exc,
                                            timed_out=True) from None
                    log.info("metadata refresh before a retry failed: %s", exc)
                if bump:
                    self._bump_epoch(first)
                self._route_and_transmit(retry, recovering=True)

    def _split(self, b: PendingBatch, exc: BaseException) -> list[PendingBatch] | None:
        """A batch of several records refused as MESSAGE_TOO_LARGE, in two halves (as the
        Java producer splits it; a half still too large is split again when refused);
        None for any other failure, or a batch that cannot be split (one record: the error
        stands)."""
        if not (isinstance(exc, KafkaError) and exc.code == ErrorCode.MESSAGE_TOO_LARGE):
            return None
        halves = split_batch(b, self.settings, self.producer_id, self.producer_epoch)
        if halves is not None:
            log.info("%s-%d refused a batch of %d records (%d bytes) as too large; sending "
                     "it again as batches of %d and %d records", b.topic, b.partition,
                     b.records, len(b.data), halves[0].records, halves[1].records)
        return halves

    def _bump_epoch(self, why: BaseException | None) -> None:
        """A new epoch (or producer id) for this producer (see idempotence.py). Nothing is in
        flight here: every answer has been read. Batches stamped under the old epoch are
        re-numbered from sequence 0 as they are sent again (``_stamp``), in dispatch order."""
        old = ProducerIdentity(self.producer_id, self.producer_epoch)
        new = init_producer_id(self.client, old)
        log.warning("a broker lost the state of idempotent producer id %d epoch %d (%s); "
                    "continuing as producer id %d epoch %d, unacknowledged batches "
                    "re-numbered", old.producer_id, old.epoch, why, new.producer_id, new.epoch)
        self.producer_id, self.producer_epoch = new.producer_id, new.epoch
        self.epoch_bumps += 1
        self.sequences.clear()

    def _stamp(self, b: PendingBatch) -> None:
        """Re-number a batch stamped before the last epoch bump: the current producer id and
        epoch, and the partition's next sequence."""
        key = (b.topic, b.partition)
        seq = self.sequences.get(key, 0)
        b.data = restamp_batch(b.data, self.producer_id, self.producer_epoch, seq)
        b.base_sequence = seq
        b.generation = self.epoch_bumps
        b.renumbered = True
        self.sequences[key] = next_sequence(seq, b.records)

    def _fatal(self, b: PendingBatch, exc: BaseException) -> BaseException:
        self.abort()
        tid = self.settings.transactional_id
        if isinstance(exc, KafkaError) and tid is not None and exc.code not in _STATE_LOST:
            return explain_transaction_error(exc, tid)
        if (isinstance(exc, KafkaError) and exc.code in _STATE_LOST
                and self.settings.transactional_id is not None):
            return error_for_code(
                exc.code, topic=b.topic, partition=b.partition, broker=exc.broker,
                context="Produce",
                message=(f"the broker lost the state of transactional producer "
                         f"{self.settings.transactional_id!r} (producer id {self.producer_id} "
                         f"epoch {self.producer_epoch}) in the middle of its transaction, "
                         "which cannot continue; the write fails and its retry starts the "
                         "transaction again"),
            )
        if isinstance(exc, KafkaError) and exc.code in _STATE_LOST:
            return error_for_code(
                exc.code, topic=b.topic, partition=b.partition, broker=exc.broker,
                context="Produce",
                message=(f"the broker refused sequence {b.base_sequence} of producer id "
                         f"{self.producer_id} epoch {self.producer_epoch} although the epoch "
                         "had been bumped and the batch re-numbered after it lost the "
                         "producer's state; the broker's producer state is inconsistent"),
            )
        return exc

    def _gave_up(self, b: PendingBatch, last: BaseException | str, timed_out: bool
                 ) -> KafkaWireError:
        """The error of a batch given up on after kafka.retries attempts or, ``timed_out``,
        once kafka.delivery.timeout.ms passed: the last broker's error code when a broker
        answered one; else the producer's own DeliveryTimeoutError / DeliveryFailedError,
        never a broker code no broker sent (a lost connection is no REQUEST_TIMED_OUT)."""
        self.abort()
        s = self.settings
        broker = getattr(last, "broker", None)
        if isinstance(last, KafkaError):
            how = (f"within kafka.delivery.timeout.ms={s.delivery_timeout_ms} ({b.attempts} "
                   "attempts)" if timed_out
                   else f"after {b.attempts} attempts (kafka.retries={s.retries})")
            return error_for_code(
                last.code, topic=b.topic, partition=b.partition, broker=broker,
                context="Produce",
                message=f"delivery of a batch of {b.records} records failed {how}: {last}",
            )
        if timed_out:
            return DeliveryTimeoutError(b.topic, b.partition, b.records, b.attempts, last,
                                        broker, timeout_ms=s.delivery_timeout_ms)
        return DeliveryFailedError(b.topic, b.partition, b.records, b.attempts, last, broker,
                                   retries=s.retries)

