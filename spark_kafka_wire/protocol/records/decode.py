"""The records field of a Fetch response, decoded into columns whatever formats it mixes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.limits import DEFAULT_MAX_DECOMPRESSED_SIZE
from spark_kafka_wire.protocol.records.batch import BatchDecoding, decode_batches
from spark_kafka_wire.protocol.records.columns import DecodedRecords
from spark_kafka_wire.protocol.records.control import AbortedTransactions, TransactionEvents
from spark_kafka_wire.protocol.records.entries import (
    DecompressionBudget,
    peek_magic,
)
from spark_kafka_wire.protocol.records.legacy import decode_message_sets


def decode_record_batches(
    data: bytes | memoryview,
    *,
    start_offset: int,
    end_offset: int | None = None,
    check_crcs: bool = True,
    topic: str | None = None,
    partition: int | None = None,
    broker: str | None = None,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    aborted_transactions: Sequence[tuple[int, int]] | None = None,
    transactions: TransactionEvents | None = None,
) -> DecodedRecords:
    """Decode the records field of a Fetch response partition into columns.

    Keeps data records with ``start_offset <= offset < end_offset``; skips control batches;
    ignores a partial trailing batch or message (the broker cuts the last one at its byte
    limit). Record batches (magic 2) and legacy message sets (magic 0/1, see
    :mod:`.legacy`) may follow each other in one response: each entry is decoded by
    its own format, in order.

    ``aborted_transactions``: None reads uncommitted; a list of (producer id, first offset),
    as the Fetch response gives it for read_committed, drops aborted transactional data.
    ``transactions`` (read_committed): filled, in log order, with the transactional batches
    kept and every marker met, past ``end_offset`` too, for a
    :class:`~.control.CommittedFilter` to decide by the markers what the list leaves out.
    Legacy message sets (magic 0/1) predate transactions and add nothing to it.

    ``max_decompressed_size`` bounds the bytes every compressed batch and wrapper of ``data``
    decompress to together, checked before each one and enforced by the decompressors as
    they go (:class:`~spark_kafka_wire.protocol.compression.DecompressionLimitError` past it).

    Damaged data raises ProtocolError (CorruptRecordError for a CRC mismatch or an
    inconsistent structure) naming ``topic``, ``partition`` and ``broker`` when given, and the
    base offset of the batch or message at fault.
    """
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1 or view.format != "B":
        view = view.cast("B")
    # Index the original object when it is bytes (slightly faster), else the view.
    buf: Any = data if isinstance(data, bytes) else view
    n = len(view)
    where = {"topic": topic, "partition": partition, "broker": broker}
    aborted = AbortedTransactions(aborted_transactions or ()) \
        if aborted_transactions is not None or transactions is not None else None

    budget = DecompressionBudget(max_decompressed_size)
    batches = BatchDecoding(start_offset, end_offset, check_crcs, budget, where, aborted,
                            transactions)
    parts: list[DecodedRecords] = []
    next_offset: int | None = None
    pos = 0
    while True:
        magic = peek_magic(view, pos, n, where)
        if magic is None:
            break
        if magic == 2:
            part, pos, next_offset = decode_batches(view, buf, pos, next_offset, batches)
        else:
            part, pos, next_offset = decode_message_sets(
                view, pos, next_offset, start_offset=start_offset, end_offset=end_offset,
                check_crcs=check_crcs, budget=budget, where=where)
        if part is not None and part.num_records:
            parts.append(part)
    return _concat(parts, next_offset, where)


def _concat(parts: list[DecodedRecords], next_offset: int | None,
            where: dict[str, Any]) -> DecodedRecords:
    """One result from the runs of batches / legacy messages of a mixed response."""
    if not parts:
        return _empty(next_offset)
    if len(parts) == 1:
        parts[0].next_offset = next_offset
        return parts[0]
    headers: list | None = None
    if any(p.headers is not None for p in parts):
        headers = []
        for p in parts:
            headers.extend(p.headers if p.headers is not None else [None] * p.num_records)
    try:
        keys = pa.concat_arrays([p.keys for p in parts])
        values = pa.concat_arrays([p.values for p in parts])
    except (pa.ArrowInvalid, pa.ArrowCapacityError) as exc:
        raise ProtocolError(f"the records of one fetch do not fit one Arrow binary column "
                            f"({exc}); lower the fetch size", **where) from None
    return DecodedRecords(
        offsets=np.concatenate([p.offsets for p in parts]),
        timestamps=np.concatenate([p.timestamps for p in parts]),
        timestamp_types=np.concatenate([p.timestamp_types for p in parts]),
        keys=keys, values=values, headers=headers, next_offset=next_offset)


def _empty(next_offset: int | None) -> DecodedRecords:
    return DecodedRecords(
        offsets=np.zeros(0, np.int64), timestamps=np.zeros(0, np.int64),
        timestamp_types=np.zeros(0, np.int32), keys=pa.array([], pa.binary()),
        values=pa.array([], pa.binary()), headers=None, next_offset=next_offset)
