"""What a read_committed reader would see in a topic, decided from the raw log by code that is
independent of spark_kafka_wire.

Why not librdkafka's read_committed consumer: a consumer drops aborted records using the list
of aborted transactions the broker puts in each Fetch response, and Tansu never fills that
list, so librdkafka returns aborted records from Tansu. The log itself is right, though: Tansu
writes a control batch (a COMMIT or ABORT marker) into every partition a transaction touched
when the transaction ends. So this oracle fetches every batch with read_uncommitted (Fetch v4
over a plain socket, request and response coded by kafka-python's generated protocol classes,
batches parsed by kafka-python's ``MemoryRecords``) and applies the rule of the log itself:

- a non-transactional batch's records are visible;
- a transactional batch's records belong to its producer's open transaction in that partition,
  which the producer's next control batch there ends: COMMIT makes them visible, ABORT drops
  them (a control record's key is int16 version, int16 type: 0 abort, 1 commit);
- records of a producer with no marker after them yet are in an *open* transaction, reported
  apart: at the end of a test that is a failure in itself, since a read_committed reader stops
  at the first open transaction's offset (the last stable offset) until it ends.

Transactions are told apart by producer id, whatever the epoch: a Kafka coordinator that
fences an old epoch (InitProducerId on the same transactional id) writes the ABORT with the
new one. Batches are ordered by offset before judging (Tansu can store a partition's batches
out of offset order, so a Fetch may answer a later batch before an earlier one).
"""

from __future__ import annotations

import socket
import struct
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from tests.support.id_oracle import IdCount, tally
from tests.support.raw_kafka import read_frame

FETCH_VERSION = 4  # the first with isolation_level and last_stable_offset; not flexible
METADATA_VERSION = 1
READ_UNCOMMITTED = 0
FETCH_BYTES = 4 << 20
CLIENT_ID = "txn-log-oracle"
ABORT, COMMIT = 0, 1
_CONTROL_KEY = struct.Struct(">hh")


@dataclass
class PartitionLog:
    """One partition's log, judged. ``committed`` holds the visible values, a transaction's
    at the place of its COMMIT marker."""

    partition: int
    high_watermark: int = 0
    last_stable_offset: int = -1  # as the broker reports it, for the record
    committed: list[bytes | None] = field(default_factory=list)
    aborted: int = 0  # records dropped by an ABORT marker
    open: dict[int, int] = field(default_factory=dict)  # producer id -> records not ended
    open_values: list[bytes | None] = field(default_factory=list)  # their values
    markers: Counter[str] = field(default_factory=Counter)  # "commit"/"abort" -> count
    non_transactional: int = 0
    # the offset of the first record of each transaction still open: where a read_committed
    # reader would stop
    open_from: dict[int, int] = field(default_factory=dict)


@dataclass
class TopicLog:
    topic: str
    partitions: list[PartitionLog]

    @property
    def committed(self) -> list[bytes | None]:
        return [v for p in self.partitions for v in p.committed]

    @property
    def aborted(self) -> int:
        return sum(p.aborted for p in self.partitions)

    @property
    def open_records(self) -> int:
        return sum(sum(p.open.values()) for p in self.partitions)

    @property
    def open_values(self) -> list[bytes | None]:
        return [v for p in self.partitions for v in p.open_values]

    @property
    def open_transactions(self) -> list[tuple[int, int, int]]:
        """(partition, producer id, offset of its first open record) of every open one."""
        return [(p.partition, pid, p.open_from[pid]) for p in self.partitions for pid in p.open]

    @property
    def markers(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for p in self.partitions:
            total.update(p.markers)
        return total

    def tally(self, expected_ids: Iterable[int]) -> IdCount:
        """The committed values counted against the ids written (id_oracle.tally)."""
        return tally(self.committed, expected_ids)

    def summary(self) -> str:
        return (f"{len(self.committed)} committed, {self.aborted} aborted, "
                f"{self.open_records} in {len(self.open_transactions)} open transactions, "
                f"markers {dict(self.markers)}")

    def assert_no_open_transaction(self) -> None:
        assert not self.open_transactions, (
            "transactions left open (partition, producer id, first offset): "
            f"{self.open_transactions}; a read_committed reader stops there. {self.summary()}")


class _Connection:
    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation = 0

    def request(self, request, response_class, version: int):
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id=CLIENT_ID)
        self.sock.sendall(bytes(request.encode(version=version, header=True, framed=True)))
        frame = read_frame(self.sock)
        if frame is None:
            raise ConnectionError("the broker closed the connection before answering")
        response = response_class.decode(frame, version=version, header=True, framed=True)
        assert response.header.correlation_id == self.correlation, "answer to another request"
        return response

    def close(self) -> None:
        self.sock.close()


def _partition_count(conn: _Connection, topic: str) -> int:
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)])
    response = conn.request(request, MetadataResponse, METADATA_VERSION)
    (found,) = [t for t in response.topics if t.name == topic]
    assert found.error_code == 0, f"Metadata for {topic!r}: error {found.error_code}"
    return len(found.partitions)


def _fetch(conn: _Connection, topic: str, partition: int, offset: int):
    request = FetchRequest(
        replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=FETCH_BYTES,
        isolation_level=READ_UNCOMMITTED, topics=[FetchRequest.FetchTopic(
            topic=topic, partitions=[FetchRequest.FetchTopic.FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=FETCH_BYTES)])])
    response = conn.request(request, FetchResponse, FETCH_VERSION)
    (data,) = [p for t in response.responses for p in t.partitions]
    assert data.error_code == 0, f"Fetch {topic}[{partition}]@{offset}: error {data.error_code}"
    return data


def _judge(log: PartitionLog, batches: Iterable[DefaultRecordBatch]) -> None:
    """Apply the marker rule (module docstring) to one partition's batches, in log order."""
    pending: dict[int, list[bytes | None]] = {}
    for batch in batches:
        if not batch.is_transactional:
            values = [r.value for r in batch]
            log.non_transactional += len(values)
            log.committed += values
            continue
        pid = batch.producer_id
        if batch.is_control_batch:
            for record in batch:
                _, kind = _CONTROL_KEY.unpack(record.key[:_CONTROL_KEY.size])
                ended = pending.pop(pid, [])
                log.open_from.pop(pid, None)
                if kind == COMMIT:
                    log.markers["commit"] += 1
                    log.committed += ended
                elif kind == ABORT:
                    log.markers["abort"] += 1
                    log.aborted += len(ended)
                else:
                    raise AssertionError(f"partition {log.partition}: control record of "
                                         f"unknown type {kind} at offset {record.offset}")
            continue
        if pid not in pending:
            pending[pid] = []
            log.open_from[pid] = batch.base_offset
        pending[pid] += [r.value for r in batch]
    log.open = {pid: len(values) for pid, values in pending.items()}
    log.open_values = [v for values in pending.values() for v in values]


def _covered_to(batches: dict[int, DefaultRecordBatch]) -> int:
    """The first offset from 0 that no batch holds (Tansu may store a partition's batches out
    of offset order, so a Fetch can skip one and answer a later one first)."""
    offset = 0
    for base in sorted(batches):
        batch = batches[base]
        if base > offset:
            break
        offset = max(offset, base + batch.last_offset_delta + 1)
    return offset


def _read_partition(conn: _Connection, topic: str, partition: int) -> PartitionLog:
    log = PartitionLog(partition)
    batches: dict[int, DefaultRecordBatch] = {}
    offset = 0
    while True:
        data = _fetch(conn, topic, partition, offset)
        log.high_watermark = data.high_watermark
        log.last_stable_offset = data.last_stable_offset
        new = 0
        for batch in MemoryRecords(bytes(data.records)):
            assert isinstance(batch, DefaultRecordBatch), \
                f"{topic}[{partition}]: a message set of magic {batch.magic}, not a v2 batch"
            if batch.base_offset in batches:
                continue
            assert batch.validate_crc(), \
                f"{topic}[{partition}]: CRC error in the batch at {batch.base_offset}"
            batches[batch.base_offset] = batch
            new += 1
        offset = _covered_to(batches)
        if offset >= data.high_watermark:
            break
        assert new, (f"{topic}[{partition}]: no batch at offset {offset}, below the high "
                     f"watermark {data.high_watermark}")
    _judge(log, (batches[base] for base in sorted(batches)))
    return log


def read_log(bootstrap: str, topic: str, timeout_s: float = 30) -> TopicLog:
    """Every partition of ``topic`` fetched from offset 0 to its high watermark and judged.
    ``bootstrap`` is one host:port of a single-broker cluster (Tansu), which leads every
    partition."""
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = _Connection(host, int(port), timeout_s)
    try:
        count = _partition_count(conn, topic)
        return TopicLog(topic, [_read_partition(conn, topic, p) for p in range(count)])
    finally:
        conn.close()


def committed_ids(bootstrap: str, topic: str, expected_ids: Iterable[int],
                  timeout_s: float = 30) -> tuple[IdCount, TopicLog]:
    """The ids a read_committed reader sees, counted, and the judged log (for its summary and
    its open transactions)."""
    log = read_log(bootstrap, topic, timeout_s)
    return log.tally(expected_ids), log


def assert_committed_exactly_once(bootstrap: str, topic: str, expected_ids: Iterable[int]
                                  ) -> tuple[IdCount, TopicLog]:
    """Every id exactly once among committed records, and no transaction left open."""
    count, log = committed_ids(bootstrap, topic, expected_ids)
    assert count.exactly_once, f"{count.summary()}; log: {log.summary()}"
    log.assert_no_open_transaction()
    return count, log
