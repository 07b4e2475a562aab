"""The Producer: record format and idempotence per topic, rows accumulated into batches and
handed to the sender.

Idempotence (KIP-98, ``idempotence.py``): one InitProducerId per Producer (a Spark task) gives
a producer id and epoch; every batch carries them and a per-partition base sequence. A
re-executed Spark task is a new Producer with a new producer id, so idempotence removes
duplicates from network retries inside a task (reconnects and broker restarts included), not
from task re-execution.

Transactions (``settings.transactional_id``, ``transactions.py``): the producer id comes from
the transaction coordinator for that id, every partition is added to the transaction before
its first batch is sent, batches carry the transactional flag, and the transaction is left
open: ``open_transaction()`` says what to end, and whoever holds it (the Spark driver) commits
or aborts it with ``end_transaction``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pyarrow as pa

from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.producer.accumulator import (
    Accumulator,
    PendingBatch,
    Rows,
    batch_limit,
    check_record_sizes,
    chunk_bounds,
    encode_chunk,
    record_sizes,
)
from spark_kafka_wire.client.producer.idempotence import (
    ProducerIdentity,
    init_producer_id,
    next_sequence,
)
from spark_kafka_wire.client.producer.sender import DELIVERY_TIMEOUT, Sender
from spark_kafka_wire.client.producer.settings import ProduceSettings
from spark_kafka_wire.client.producer.transactions import (
    OpenTransaction,
    add_partitions,
    commit_offsets_in_transaction,
    end_transaction,
    init_transactions,
    offers_v2,
    uses_transaction_v2,
)
from spark_kafka_wire.protocol.compression import CODEC_ZSTD
from spark_kafka_wire.protocol.errors import ErrorCode, error_for_code
from spark_kafka_wire.protocol.messages import INIT_PRODUCER_ID, PRODUCE

log = logging.getLogger(__name__)

def magic_for_produce_version(version: int) -> int:
    """Record format a Produce version carries: v3+ record batches (magic 2), v2 message sets
    with timestamps (magic 1), v0-1 message sets (magic 0)."""
    return 2 if version >= 3 else (1 if version == 2 else 0)


ZSTD_MIN_PRODUCE_VERSION = 7


class Producer(Sender):
    """Delivers records; ``records_sent`` counts records the brokers acknowledged (with acks=0:
    records handed to the socket)."""

    def __init__(self, client: KafkaClient, settings: ProduceSettings) -> None:
        super().__init__(client, settings)
        self._idempotent: bool | None = None  # decided at the first prepare()
        self._magic: dict[str, int] = {}
        self._accumulator = Accumulator(settings)
        self._in_transaction: list[TopicPartition] = []  # partitions added, in order
        self._ended = False

    @property
    def idempotent(self) -> bool:
        return bool(self._idempotent)

    # -- preparation ---------------------------------------------------------------------------
    def record_magic(self, topic: str) -> int:
        """The record format to write to ``topic``, from the Produce version its leaders
        speak; fails before sending when the configured codec needs a newer broker."""
        info = self.client.topic(topic)
        first = min(info.partitions)
        version = self.client.leader_connection(topic, first).version(PRODUCE)
        if self.settings.compression == CODEC_ZSTD and version < ZSTD_MIN_PRODUCE_VERSION:
            raise error_for_code(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, topic=topic, context="Produce",
                message=(
                    f"kafka.compression.type=zstd needs Produce v{ZSTD_MIN_PRODUCE_VERSION}+ "
                    f"(Kafka 2.1+), but the broker speaks v{version}; choose gzip, snappy or lz4"
                ),
            )
        return magic_for_produce_version(version)

    def prepare(self, topic: str) -> int:
        """``record_magic`` once per topic; at the first topic also decides idempotence and
        asks for a producer id. Brokers that cannot be reached are retried for up to
        ``delivery.timeout.ms``, as the sends that follow would be."""
        magic = self._magic.get(topic)
        if magic is None:
            with self.client.deadline(self.delivery_deadline(time.monotonic()),
                                      DELIVERY_TIMEOUT):
                magic = self._prepare(topic)
        return magic

    def _prepare(self, topic: str) -> int:
        magic = self.record_magic(topic)
        self._magic[topic] = magic
        if self._idempotent is None:
            self._idempotent = self._init_idempotence(topic, magic)
        elif self._idempotent and magic < 2:
            self._idempotence_unsupported(topic, "its leader speaks a Produce version "
                                          "before record batches (Kafka 0.11)")
        return magic

    def _idempotence_unsupported(self, topic: str, why: str) -> bool:
        if self.settings.enable_idempotence:
            raise ConfigurationError.of(
                CONFIGURATION, "IDEMPOTENCE_UNSUPPORTED_BY_TOPIC", topic=topic, why=why)
        log.info("idempotence is off for this write: %s", why)
        return False

    def _init_idempotence(self, topic: str, magic: int) -> bool:
        if not self.settings.idempotence_wanted:
            return False
        if self.settings.transactional_id is not None and magic < 2:
            raise ConfigurationError.of(
                CONFIGURATION, "TRANSACTIONS_UNSUPPORTED_BY_TOPIC", topic=topic)
        if magic < 2:
            return self._idempotence_unsupported(
                topic, "its leader speaks a Produce version before record batches")
        conn = self.client.leader_connection(topic, min(self.client.topic(topic).partitions))
        if INIT_PRODUCER_ID.key not in conn.api_versions:
            return self._idempotence_unsupported(
                topic, f"broker {conn.name} does not offer InitProducerId")

        if self.settings.transactional_id is not None:
            identity = init_transactions(self.client, self.settings.transactional_id,
                                         self.settings.transaction_timeout_ms)
            self.transaction_v2 = uses_transaction_v2(self.client,
                                                      self.settings.transactional_id)
        else:
            identity = init_producer_id(self.client)
        self.producer_id, self.producer_epoch = identity.producer_id, identity.epoch
        log.info("idempotent producer id %d epoch %d", self.producer_id, self.producer_epoch)
        return True

    # -- accumulating --------------------------------------------------------------------------
    def append(
        self,
        topic: str,
        keys: pa.Array | None,
        values: pa.Array,
        partitions: np.ndarray,
        timestamps: int | np.ndarray,
        headers: np.ndarray | None = None,
        header_bytes: np.ndarray | None = None,
    ) -> None:
        """Buffer rows (already assigned to partitions) and send whatever batches are ready.
        Checks that cannot pass (a record too large, headers for a broker without them) fail
        before any of these rows is buffered."""
        n = len(values)
        if n == 0:
            return
        magic = self.prepare(topic)
        if magic < 2 and headers is not None and any(h for h in headers):
            row = next(i for i, h in enumerate(headers) if h)
            raise ConfigurationError.of(
                CONFIGURATION, "HEADERS_UNSUPPORTED_BY_TOPIC", row=row, topic=topic, magic=magic)
        sizes = record_sizes(keys, values, header_bytes)
        check_record_sizes(topic, sizes, partitions, self.settings)
        ts = np.broadcast_to(np.asarray(timestamps, dtype=np.int64), (n,))
        now = time.monotonic()
        self._accumulator.add(topic, keys, values, partitions, ts, headers, sizes, now)
        self._send_ready(now)

    def _send_ready(self, now: float, force: bool = False) -> None:
        if self.has_failures:  # settle them (an epoch bump, re-numbering) before numbering more
            super().flush()
        batches: list[PendingBatch] = []
        for topic, partition, rows in self._accumulator.ready(now, force):
            batches += self._encode(topic, partition, rows)
        if batches:
            if self.settings.transactional_id is not None:
                self._join_transaction({(b.topic, b.partition) for b in batches})
            self.dispatch(batches)

    def _join_transaction(self, partitions: set[TopicPartition]) -> None:
        """AddPartitionsToTxn for partitions not in the transaction yet, before any batch of
        theirs is sent (a broker may accept an unadded partition's batch and never mark it).
        Under the v2 protocol the Produce v12 of a partition adds it (KIP-890): only those
        whose leader does not speak v12 are added here (and written with a classic Produce)."""
        new = partitions.difference(self._in_transaction)
        if new:
            assert self.settings.transactional_id is not None
            explicit = new
            if self.transaction_v2:
                explicit = {tp for tp in new
                            if not offers_v2(self.client.leader_connection(*tp), PRODUCE)}
            if explicit:
                add_partitions(self.client, self.settings.transactional_id, self.identity,
                               explicit)
            self._in_transaction += sorted(new)

    @property
    def identity(self) -> ProducerIdentity:
        return ProducerIdentity(self.producer_id, self.producer_epoch)

    # -- transactions --------------------------------------------------------------------------
    def open_transaction(self) -> OpenTransaction | None:
        """The transaction written so far (call after ``flush``), or None when nothing was
        written: what the driver needs to commit or abort it."""
        if self.settings.transactional_id is None or not self._in_transaction:
            return None
        return OpenTransaction(self.settings.transactional_id, self.producer_id,
                               self.producer_epoch, tuple(self._in_transaction),
                               self.transaction_v2)

    def commit_offsets(self, group: str, offsets: dict[TopicPartition, tuple[int, str]]
                       ) -> None:
        """Commit (offset, metadata) for ``group`` inside the transaction."""
        assert self.settings.transactional_id is not None and self.producer_id >= 0
        commit_offsets_in_transaction(self.client, self.settings.transactional_id,
                                      self.identity, group, offsets, self.transaction_v2)

    def end_own_transaction(self, commit: bool) -> None:
        """End the open transaction from this producer (call after ``flush``) and make it
        ready to write the next one without a new InitProducerId: under the v2 protocol with
        the producer id and epoch EndTxn v5 answered (the epoch bumped at every end, KIP-890;
        sequences start again at 0), classic with the same ones. (The exactly-once sink does
        not do this: its driver ends each task's transaction, and the next task initialises
        the id again.)"""
        txn = self.open_transaction()
        if txn is None:
            return
        identity = end_transaction(self.client, txn, commit)
        if identity != self.identity:
            self.producer_id, self.producer_epoch = identity.producer_id, identity.epoch
            self.sequences.clear()
        self._in_transaction = []

    def abort_transaction(self) -> None:
        """Abort the open transaction, best effort (a task failing): whatever this leaves
        open is aborted when the transactional id is next initialised."""
        txn = self.open_transaction()
        if txn is None or self._ended:
            return
        self._ended = True
        try:
            end_transaction(self.client, txn, commit=False)
        except Exception as exc:  # noqa: BLE001 - the original failure is what matters
            log.warning("could not abort the transaction of %r: %s", txn.transactional_id, exc)

    def _encode(self, topic: str, partition: int, rows: Rows) -> list[PendingBatch]:
        magic = self._magic[topic]
        idempotent = self.idempotent and magic == 2
        out = []
        now = time.monotonic()
        for lo, hi in chunk_bounds(rows.sizes, batch_limit(self.settings)):
            chunk = rows.slice(lo, hi)
            seq = -1
            if idempotent:
                seq = self.sequences.get((topic, partition), 0)
                self.sequences[(topic, partition)] = next_sequence(seq, hi - lo)
            data = encode_chunk(chunk, magic, self.settings, self.producer_id if idempotent
                                 else -1, self.producer_epoch if idempotent else -1, seq)
            out.append(PendingBatch(topic, partition, data, hi - lo, seq, now,
                                    generation=self.epoch_bumps))
        return out

    def flush(self) -> None:
        """Send everything buffered and wait for every answer, retrying failures."""
        try:
            self._send_ready(time.monotonic(), force=True)
        except BaseException:
            self.abort()
            raise
        super().flush()

    def abort(self) -> None:
        """Forget buffered rows and close connections with requests still in flight (so a
        pooled connection never carries unread responses into the next task)."""
        super().abort()
        self._accumulator.clear()
