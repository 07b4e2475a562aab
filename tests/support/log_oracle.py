"""An oracle for read_committed that walks a partition's log independently of kafkawire.

Nothing of kafkawire's codecs is used: kafka-python's protocol classes (generated from Kafka's
JSON message specs) encode the Metadata and Fetch requests and decode their answers, and its
record reader (``MemoryRecords`` / ``DefaultRecordBatch``) walks the batches and reads the
control records. The log is fetched read_uncommitted from offset 0 to the high watermark, so
every batch and every marker is seen, whatever the broker's last stable offset or aborted
transaction lists say.

The committed records then follow from the rule of KIP-98 (and the record batch section of
Kafka's protocol guide, https://kafka.apache.org/documentation/#recordbatch): a transactional
data batch belongs to its producer's open transaction, which the producer's next control batch
in the partition ends: ABORT (type 0) drops the batch, COMMIT (type 1) keeps it.
Non-transactional batches are always kept.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

from kafka.protocol.consumer import FetchRequest, FetchResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from tests.support.legacy_broker import kafka_message

FETCH_VERSION = 4  # the first with isolation_level and the last stable offset
METADATA_VERSION = 1
ABORT, COMMIT = 0, 1

Record = tuple[int, bytes | None, bytes | None]  # offset, key, value


@dataclass(frozen=True)
class LogBatch:
    """One record batch of the log, as kafka-python reads it."""

    base_offset: int
    last_offset: int
    producer_id: int
    transactional: bool
    control: bool
    control_type: int | None  # control batches: the first record's type (0 abort, 1 commit)
    records: tuple[Record, ...]  # data batches' records


class _Connection:
    """One socket to one broker speaking kafka-python-encoded requests."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def request(self, request_cls: Any, response_cls: Any, version: int, body: dict) -> Any:
        self.correlation += 1
        req = kafka_message(request_cls, version, body)
        req.with_header(correlation_id=self.correlation, client_id="log-oracle")
        self.sock.sendall(bytes(req.encode(header=True, framed=True)))
        size = struct.unpack(">i", self._exactly(4))[0]
        resp = response_cls.decode(self._exactly(size), version=version, header=True)
        assert resp.header.correlation_id == self.correlation
        return resp

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            assert chunk, "the broker closed the connection"
            buf += chunk
        return buf


def _leader(bootstrap: str, topic: str, partition: int) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = _Connection(host, int(port))
    try:
        resp = conn.request(MetadataRequest, MetadataResponse, METADATA_VERSION,
                            {"topics": [{"name": topic}]})
    finally:
        conn.close()
    brokers = {b.node_id: (b.host, b.port) for b in resp.brokers}
    (t,) = [t for t in resp.topics if t.name == topic]
    (p,) = [p for p in t.partitions if p.partition_index == partition]
    assert t.error_code == 0 and p.error_code == 0, (t.error_code, p.error_code)
    return brokers[p.leader_id]


def read_log(bootstrap: str, topic: str, partition: int) -> tuple[list[LogBatch], int]:
    """Every batch of the partition (read_uncommitted, from offset 0) and its high watermark."""
    conn = _Connection(*_leader(bootstrap, topic, partition))
    batches: list[LogBatch] = []
    offset, high_watermark = 0, 1
    try:
        while offset < high_watermark:
            resp = conn.request(FetchRequest, FetchResponse, FETCH_VERSION, {
                # min_bytes 0 makes Tansu answer without the partition: wait for 1 byte (the
                # loop stops at the high watermark, so the wait never runs out)
                "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20,
                "isolation_level": 0,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": partition, "fetch_offset": offset,
                     "partition_max_bytes": 1 << 20}]}],
            })
            (t,) = resp.responses
            (p,) = t.partitions
            assert p.error_code == 0, p.error_code
            high_watermark = p.high_watermark
            before = offset
            for batch in MemoryRecords(bytes(p.records or b"")):
                assert isinstance(batch, DefaultRecordBatch), "a legacy message set"
                if batch.next_offset <= offset:
                    continue  # a batch before the one asked for (the answer starts at it)
                batches.append(_summary(batch))
                offset = batch.next_offset
            assert offset > before or offset >= high_watermark, \
                f"no batch at offset {offset} below the high watermark {high_watermark}"
    finally:
        conn.close()
    return batches, high_watermark


def _summary(batch: DefaultRecordBatch) -> LogBatch:
    assert batch.validate_crc(), f"CRC mismatch in the batch at {batch.base_offset}"
    records = list(batch)
    control_type = None
    if batch.is_control_batch:
        control_type = records[0].type if records else None
    return LogBatch(
        base_offset=batch.base_offset, last_offset=batch.last_offset,
        producer_id=batch.producer_id, transactional=batch.is_transactional,
        control=batch.is_control_batch, control_type=control_type,
        records=() if batch.is_control_batch else tuple(
            (r.offset, r.key, r.value) for r in records))


def decisions(batches: list[LogBatch]) -> dict[int, bool | None]:
    """Base offset of each transactional data batch -> kept (COMMIT), dropped (ABORT), or None
    when its producer has no later marker (a transaction still open)."""
    decided: dict[int, bool | None] = {}
    open_batches: dict[int, list[int]] = {}  # producer id -> base offsets awaiting its marker
    for b in batches:
        if b.control:
            if b.control_type in (ABORT, COMMIT):
                for base in open_batches.pop(b.producer_id, []):
                    decided[base] = b.control_type == COMMIT
        elif b.transactional:
            open_batches.setdefault(b.producer_id, []).append(b.base_offset)
            decided[b.base_offset] = None
    return decided


def committed_records(batches: list[LogBatch], start: int, end: int) -> list[Record]:
    """The records a read_committed reader returns for [start, end), in offset order."""
    decided = decisions(batches)
    out: list[Record] = []
    for b in batches:
        if b.control:
            continue
        keep = decided.get(b.base_offset, True)
        in_range = [r for r in b.records if start <= r[0] < end]
        assert keep is not None or not in_range, \
            f"records of producer {b.producer_id} at {b.base_offset} in [{start}, {end}) have " \
            "no marker"
        if keep:
            out.extend(in_range)
    return out


def all_records(batches: list[LogBatch], start: int, end: int) -> list[Record]:
    """What read_uncommitted returns for [start, end): every data record."""
    return [r for b in batches if not b.control for r in b.records if start <= r[0] < end]


