"""The Producer: record format and idempotence per topic, rows accumulated into batches and
handed to the sender.

Idempotence (KIP-98, ``idempotence.py``): one InitProducerId per Producer (a Spark task) gives
a producer id and epoch; every batch carries them and a per-partition base sequence. A
re-executed Spark task is a new Producer with a new producer id, so idempotence removes
duplicates from network retries inside a task (reconnects and broker restarts included), not
from task re-execution.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pyarrow as pa

from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.errors import ConfigurationError
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
from spark_kafka_wire.client.producer.idempotence import init_producer_id, next_sequence
from spark_kafka_wire.client.producer.sender import DELIVERY_TIMEOUT, Sender
from spark_kafka_wire.client.producer.settings import ProduceSettings
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
            raise ConfigurationError(
                f"kafka.enable.idempotence=true cannot be honoured for topic {topic!r}: {why}; "
                "idempotent produce needs Kafka 0.11+ (InitProducerId). Remove the setting "
                "(or set it to false) to write without idempotence"
            )
        log.info("idempotence is off for this write: %s", why)
        return False

    def _init_idempotence(self, topic: str, magic: int) -> bool:
        if not self.settings.idempotence_wanted:
            return False
        if magic < 2:
            return self._idempotence_unsupported(
                topic, "its leader speaks a Produce version before record batches")
        conn = self.client.leader_connection(topic, min(self.client.topic(topic).partitions))
        if INIT_PRODUCER_ID.key not in conn.api_versions:
            return self._idempotence_unsupported(
                topic, f"broker {conn.name} does not offer InitProducerId")

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
            raise ConfigurationError(
                f"row {row} has headers, but the leader of topic {topic!r} speaks a Produce "
                f"version with message format v{magic}, which has no headers (Kafka 0.11+ "
                "brokers store them); drop the 'headers' column or write to a newer broker"
            )
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
            self.dispatch(batches)

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
