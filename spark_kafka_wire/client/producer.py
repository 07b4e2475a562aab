"""Send encoded record batches to partition leaders and check every partition's answer.

Produce v3+ carries one batch per partition per request, so batches are packed into requests
per leader (at most one per partition, at most max.request.size bytes). A retriable error
(stale leader, timeout, socket failure) re-routes only the failed batches after a metadata
refresh, until the retries or the delivery timeout run out; anything else fails the write
naming topic, partition and the Kafka error.
"""

from __future__ import annotations

import logging
import random
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..protocol.compression import CODEC_ZSTD
from ..protocol.errors import KafkaError, RecordTooLargeError, error_for_code
from ..protocol.messages import PRODUCE
from ..protocol.records import encode_message_set, encode_record_batch
from .cluster import KafkaClient, is_retriable
from .errors import BrokerConnectionError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProduceSettings:
    acks: int = -1
    timeout_ms: int = 30_000
    compression: int = 0
    batch_size: int = 512 << 10
    max_request_size: int = 1 << 20
    retries: int = 2_147_483_647
    delivery_timeout_ms: int = 120_000
    retry_backoff_ms: int = 100


@dataclass
class PendingBatch:
    topic: str
    partition: int
    data: bytes
    records: int


def _pack(batches: list[PendingBatch], max_request_size: int) -> list[list[PendingBatch]]:
    """Group batches into requests: one batch per partition each, bounded in size."""
    requests: list[list[PendingBatch]] = []
    for b in batches:
        for req in requests:
            if all((x.topic, x.partition) != (b.topic, b.partition) for x in req) and (
                sum(len(x.data) for x in req) + len(b.data) <= max_request_size
            ):
                req.append(b)
                break
        else:
            requests.append([b])
    return requests


class Producer:
    """Delivers batches; ``records_sent`` counts records the brokers acknowledged."""

    def __init__(self, client: KafkaClient, settings: ProduceSettings) -> None:
        self.client = client
        self.settings = settings
        self.records_sent = 0
        self.requests_sent = 0

    def record_magic(self, topic: str) -> int:
        """The record format to write to ``topic``, from the Produce version its leaders
        speak; fails before sending when the configured codec needs a newer broker."""
        info = self.client.topic(topic)
        first = min(info.partitions)
        version = self.client.leader_connection(topic, first).version(PRODUCE)
        if self.settings.compression == CODEC_ZSTD and version < ZSTD_MIN_PRODUCE_VERSION:
            raise error_for_code(
                76, topic=topic, context="Produce",
                message=(
                    f"kafka.compression.type=zstd needs Produce v{ZSTD_MIN_PRODUCE_VERSION}+ "
                    f"(Kafka 2.1+), but the broker speaks v{version}; choose gzip, snappy or lz4"
                ),
            )
        return magic_for_produce_version(version)

    def send(self, batches: list[PendingBatch]) -> None:
        s = self.settings
        deadline = time.monotonic() + s.delivery_timeout_ms / 1000
        attempt = 0
        backoff = s.retry_backoff_ms / 1000
        pending = list(batches)
        while pending:
            failed: list[tuple[PendingBatch, BaseException]] = []
            by_leader: dict[int, list[PendingBatch]] = defaultdict(list)
            for b in pending:
                try:
                    by_leader[self.client.leader(b.topic, b.partition)].append(b)
                except (KafkaError, BrokerConnectionError) as exc:
                    failed.append((b, exc))
            for leader, group in by_leader.items():
                for req in _pack(group, s.max_request_size):
                    failed.extend(self._send_request(leader, req))
            if not failed:
                return
            fatal = [(b, e) for b, e in failed if not is_retriable(e)]
            attempt += 1
            if fatal or attempt > s.retries or time.monotonic() + backoff > deadline:
                b, exc = (fatal or failed)[0]
                if not fatal:
                    raise error_for_code(
                        7, topic=b.topic, partition=b.partition, context="Produce",
                        message=(
                            f"delivery failed after {attempt} attempts within "
                            f"kafka.delivery.timeout.ms={s.delivery_timeout_ms}: {exc}"
                        ),
                    ) from exc
                raise exc
            log.info("retrying %d batches after: %s", len(failed), failed[0][1])
            time.sleep(backoff * (0.8 + 0.4 * random.random()))
            backoff = min(backoff * 2, 1.0)
            self.client.refresh_metadata({b.topic for b, _ in failed})
            pending = [b for b, _ in failed]

    def _send_request(
        self, leader: int, req: list[PendingBatch]
    ) -> list[tuple[PendingBatch, BaseException]]:
        s = self.settings
        topics: dict[str, list[dict]] = defaultdict(list)
        for b in req:
            topics[b.topic].append({"index": b.partition, "records": b.data})
        body = {
            "transactional_id": None,
            "acks": s.acks,
            "timeout_ms": s.timeout_ms,
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in topics.items()],
        }
        try:
            conn = self.client.broker(leader)
            inflight = conn.send(PRODUCE, body, expect_response=s.acks != 0)
            resp = conn.receive(inflight)
        except (KafkaError, BrokerConnectionError) as exc:
            return [(b, exc) for b in req]
        self.requests_sent += 1
        if s.acks == 0:
            self.records_sent += sum(b.records for b in req)
            return []
        answered: dict[tuple[str, int], tuple[int, str | None]] = {}
        for t in resp["responses"]:
            for p in t["partition_responses"]:
                answered[(t["name"], p["index"])] = (p["error_code"], p["error_message"])
        failed: list[tuple[PendingBatch, BaseException]] = []
        for b in req:
            code, message = answered.get((b.topic, b.partition), (-1, "no answer for the partition"))
            if code == 0:
                self.records_sent += b.records
                continue
            exc = error_for_code(
                code, topic=b.topic, partition=b.partition, broker=conn.name,
                context="Produce", message=message,
            )
            if isinstance(exc, RecordTooLargeError):
                exc = error_for_code(
                    code, topic=b.topic, partition=b.partition, broker=conn.name,
                    context="Produce",
                    message=f"a batch of {b.records} records is {len(b.data)} bytes",
                )
            failed.append((b, exc))
        return failed


RECORD_OVERHEAD = 21  # worst-case varint framing of one record without headers
BATCH_OVERHEAD = 61


def magic_for_produce_version(version: int) -> int:
    """Record format a Produce version carries: v3+ record batches (magic 2), v2 message sets
    with timestamps (magic 1), v0-1 message sets (magic 0)."""
    return 2 if version >= 3 else (1 if version == 2 else 0)


ZSTD_MIN_PRODUCE_VERSION = 7


def encode_partitioned(
    topic: str,
    keys: pa.Array | None,
    values: pa.Array,
    partitions: np.ndarray,
    settings: ProduceSettings,
    timestamp_ms: int,
    magic: int = 2,
) -> list[PendingBatch]:
    """Record batches (or legacy message sets, ``magic`` < 2) for rows already assigned to
    partitions, each at most ~batch.size bytes (a single larger record gets a batch of its
    own); rows keep their order per partition."""
    n = len(values)
    if n == 0:
        return []
    sizes = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    if keys is not None:
        sizes += pc.fill_null(pc.binary_length(keys), 0).to_numpy(zero_copy_only=False)
    sizes += RECORD_OVERHEAD
    biggest = int(sizes.max())
    if biggest + BATCH_OVERHEAD > settings.max_request_size:
        row = int(sizes.argmax())
        raise RecordTooLargeError(
            error_for_code(10).spec, topic=topic, partition=int(partitions[row]),
            context="Produce",
            message=(
                f"a record of about {biggest} bytes can never fit in a request of "
                f"kafka.max.request.size={settings.max_request_size} bytes; raise that "
                "setting (and the broker's message.max.bytes) or write smaller records"
            ),
        )
    order = np.argsort(partitions, kind="stable")
    sorted_parts = partitions[order]
    cuts = np.flatnonzero(np.diff(sorted_parts)) + 1
    out: list[PendingBatch] = []
    for rows in np.split(order, cuts):
        partition = int(partitions[rows[0]])
        csum = np.cumsum(sizes[rows])
        # chunk boundaries: start a new batch whenever the running size passes batch.size
        chunk_ids = (csum - 1) // max(settings.batch_size, 1)
        bounds = np.flatnonzero(np.diff(chunk_ids)) + 1
        idx = pa.array(rows)
        k_all = keys.take(idx) if keys is not None else None
        v_all = values.take(idx)
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(rows)], strict=True):
            k = k_all.slice(lo, hi - lo) if k_all is not None else [None] * int(hi - lo)
            if magic == 2:
                data = encode_record_batch(
                    k, v_all.slice(lo, hi - lo), timestamps=timestamp_ms,
                    compression=settings.compression,
                )
            else:
                data = encode_message_set(
                    k, v_all.slice(lo, hi - lo), magic=magic, timestamps=timestamp_ms,
                    compression=settings.compression,
                )
            out.append(PendingBatch(topic, partition, data, int(hi - lo)))
    return out
