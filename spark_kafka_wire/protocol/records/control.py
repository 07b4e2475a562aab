"""Control records and read_committed filtering of aborted transactions.

A transaction ends with a control batch holding one record whose key is (int16 version, int16
type): type 0 aborts, 1 commits (KIP-98; Kafka's ``ControlRecordType``). A read_committed
reader drops the data batches of aborted transactions, which the Fetch response lists.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from .varint import Malformed, read_varint

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
