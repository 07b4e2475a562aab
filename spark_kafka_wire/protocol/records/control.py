"""Control records and read_committed filtering of transactions.

A transaction ends with a control batch of its producer holding one record whose key is (int16
version, int16 type): type 0 aborts, 1 commits (KIP-98, "Exactly Once Delivery and
Transactional Messaging"; Kafka's ``ControlRecordType``; the record batch layout of the
protocol guide, https://kafka.apache.org/documentation/#recordbatch). A producer has at most
one transaction open per partition, so each transactional data batch (attribute bit 4 set, not
a control batch, producer id >= 0) belongs to the transaction that its producer's *next*
control batch in the partition ends.

A read_committed reader keeps a transaction's records only if that marker commits. Two rules
decide, and a record is dropped when either says so:

- the Fetch response's ``aborted_transactions`` (producer id, first offset), as the Java
  consumer uses them (:class:`AbortedTransactions`): a listed transaction's batches are dropped
  by the decoder at once;
- the markers themselves (:class:`CommittedFilter`): every other transactional batch is held
  until its producer's next marker is read, then kept (COMMIT) or dropped (ABORT). This needs
  nothing from the broker but the log, so it is exact on a broker that lists no aborted
  transactions (Tansu) and agrees with the list on one that does.

The decoder reports the batches and markers it meets (:class:`TransactionEvents`); the filter
holds decoded chunks until they are decided and gives them back in offset order, and counts
which rule decided each transactional batch (:class:`TransactionCounts`): the two rules agree
on the rows, so only the counts tell whether a broker's list was used (and how much was held
waiting for markers instead).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spark_kafka_wire.protocol.errors import CorruptRecordError
from spark_kafka_wire.protocol.records.columns import DecodedRecords
from spark_kafka_wire.protocol.records.varint import Malformed, read_varint

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


class AbortedTransactions:
    """READ_COMMITTED filtering, as the Java consumer does it (CompletedFetch).

    The broker lists aborted transactions as (producer id, first offset). Walking the batches
    in order, a producer becomes "aborted" once a batch reaches that first offset, and stays
    so until its ABORT control marker; its transactional data batches in between are
    dropped. Non-transactional batches of the same producer id are kept.
    """

    def __init__(self, aborted: Sequence[tuple[int, int]]) -> None:
        self._pending = sorted((int(first), int(pid)) for pid, first in aborted)
        self._next = 0
        self.active: set[int] = set()

    def advance(self, last_offset: int) -> None:
        """Open every aborted transaction that starts at or before ``last_offset``."""
        pending = self._pending
        while self._next < len(pending) and pending[self._next][0] <= last_offset:
            self.active.add(pending[self._next][1])
            self._next += 1


def control_type(records: Any, count: int) -> int:
    """Control type (0 abort, 1 commit) from the key of a control batch's first record.

    Key = int16 version, int16 type. Like Java, a key shorter than 4 bytes or with a
    negative version is corrupt; -1 stands for "no record".
    """
    if count <= 0:
        return -1
    end = len(records)
    length, p = read_varint(records, 0, end)
    end = min(end, p + length)
    p += 1  # attributes
    for _ in range(10):  # timestampDelta: varlong
        if p >= end:
            raise Malformed("control record is truncated")
        p += 1
        if records[p - 1] < 0x80:
            break
    else:
        raise Malformed("control record timestamp varint is longer than 10 bytes")
    _, p = read_varint(records, p, end)  # offsetDelta
    key_len, p = read_varint(records, p, end)
    if key_len < 4 or p + key_len > end:
        raise Malformed(f"control record key of {key_len} bytes (needs 4: version, type)")
    version, ctype = struct.unpack_from(">hh", records, p)
    if version < 0:
        raise Malformed(f"invalid control record version {version}")
    return ctype


@dataclass
class TransactionCounts:
    """How a read_committed read decided its transactional data batches (of the range read),
    per rule: ``listed_aborted`` dropped at once because the Fetch answer listed their
    transaction as aborted (Kafka's brokers do, KIP-98); ``marker_committed`` kept and
    ``marker_aborted`` dropped when their producer's marker was read (what a broker that
    lists nothing, such as Tansu, leaves to the markers). Batches whose marker was lost with
    the log are in neither. A read on Kafka with ``marker_aborted`` > 0 held aborted records
    that the broker's list should have dropped."""

    listed_aborted: int = 0
    marker_committed: int = 0
    marker_aborted: int = 0


class TransactionEvents:
    """What one decoded Fetch answer tells about transactions, in log order.

    The decoder (given one of these) appends each transactional data batch whose records it
    kept (producer id, first offset it may return, last offset) and each control batch of a
    producer (producer id, offset, control type), markers past the end of the range included:
    a transaction with records in the range may end after it. A marker whose record cannot be
    read carries the reason instead of a type; it fails the read only if a transaction waits
    for it (a damaged marker nobody needs must not fail a read of other records).
    """

    __slots__ = ("entries", "listed")

    def __init__(self) -> None:
        # (producer id, first offset, last offset, control type or None for data, problem)
        self.entries: list[tuple[int, int, int, int | None, str | None]] = []
        self.listed = 0  # data batches dropped because the answer listed them as aborted

    def data(self, producer_id: int, first: int, last: int) -> None:
        self.entries.append((producer_id, first, last, None, None))

    def marker(self, producer_id: int, offset: int, control: int,
               problem: str | None = None) -> None:
        self.entries.append((producer_id, offset, offset, control, problem))


class _Held:
    """One decoded chunk and the transactional batches in it that wait for a marker."""

    __slots__ = ("records", "firsts", "lasts", "keep", "undecided")

    def __init__(self, records: DecodedRecords) -> None:
        self.records = records
        self.firsts: list[int] = []  # per transactional batch, in log (= offset) order
        self.lasts: list[int] = []
        self.keep: list[bool] = []
        self.undecided = 0

    def hold(self, first: int, last: int) -> int:
        self.firsts.append(first)
        self.lasts.append(last)
        self.keep.append(True)
        self.undecided += 1
        return len(self.keep) - 1

    def decide(self, batch: int, keep: bool) -> None:
        self.keep[batch] = keep
        self.undecided -= 1

    def result(self) -> DecodedRecords:
        """The chunk without the rows of its aborted batches (all batches decided)."""
        dropped = [i for i, k in enumerate(self.keep) if not k]  # per batch, not per row
        if not dropped:
            return self.records
        firsts = np.array(self.firsts, np.int64)[dropped]
        lasts = np.array(self.lasts, np.int64)[dropped]
        offsets = self.records.offsets
        # The dropped batches are disjoint and sorted: the one a row may fall in is the last
        # that starts at or before it.
        batch = np.searchsorted(firsts, offsets, side="right") - 1
        inside = (batch >= 0) & (offsets <= lasts[np.maximum(batch, 0)])
        return self.records.filter(~inside)


class CommittedFilter:
    """read_committed by markers: holds decoded chunks until their transactions are decided.

    Feed it every decoded chunk of a partition in offset order with the events the decoder
    reported for it (:meth:`add`); :meth:`ready` gives back, in the same order, the chunks
    whose every transactional batch has met its producer's marker, without the rows of
    aborted ones. A chunk waits while any of its batches is undecided, and every later chunk
    waits behind it, so rows come out in offset order, as Spark expects of one partition.

    Memory: what is held is the log from the first undecided transactional record to its
    producer's marker, i.e. the rest of one open transaction and what other producers wrote
    while it was open. A transaction stays open at most ``transaction.max.timeout.ms`` (15
    minutes by default on Kafka brokers), which bounds it; the records of the range that lie
    in such a stretch are held once, as decoded columns.
    """

    def __init__(self, counts: TransactionCounts | None = None) -> None:
        self._waiting: dict[int, list[tuple[_Held, int]]] = {}  # producer id -> its batches
        self._queue: deque[_Held] = deque()
        self.counts = counts if counts is not None else TransactionCounts()

    @property
    def undecided(self) -> dict[int, int]:
        """Producer id -> the first offset of its records still waiting for a marker."""
        return {pid: held[0][0].firsts[held[0][1]] for pid, held in self._waiting.items()}

    def add(self, records: DecodedRecords, events: TransactionEvents,
            where: dict[str, Any]) -> None:
        """One decoded chunk (it may have no rows: a stretch of markers, or data past the
        range) and the events of the answer it came from."""
        held = _Held(records)
        self.counts.listed_aborted += events.listed
        for pid, first, last, control, problem in events.entries:
            if control is None:
                self._waiting.setdefault(pid, []).append((held, held.hold(first, last)))
            elif pid in self._waiting:
                if problem is not None:
                    raise CorruptRecordError(
                        f"the control batch ending producer {pid}'s transaction cannot be "
                        f"read ({problem})", offset=first, **where)
                if control in (CONTROL_ABORT, CONTROL_COMMIT):
                    decided = self._waiting.pop(pid)
                    for h, batch in decided:
                        h.decide(batch, control == CONTROL_COMMIT)
                    if control == CONTROL_COMMIT:
                        self.counts.marker_committed += len(decided)
                    else:
                        self.counts.marker_aborted += len(decided)
                # Other control types (none is written to data partitions) end nothing.
        if held.undecided or records.num_records:
            self._queue.append(held)

    def ready(self) -> list[DecodedRecords]:
        """The decided chunks at the front of the queue, filtered; empty ones are left out."""
        out = []
        while self._queue and not self._queue[0].undecided:
            records = self._queue.popleft().result()
            if records.num_records:
                out.append(records)
        return out

    def abort_undecided(self) -> dict[int, int]:
        """Decide every waiting batch as aborted (its marker is lost with the log); returns
        what :attr:`undecided` was, for the warning."""
        undecided = self.undecided
        for waiting in self._waiting.values():
            for h, batch in waiting:
                h.decide(batch, False)
        self._waiting.clear()
        return undecided
