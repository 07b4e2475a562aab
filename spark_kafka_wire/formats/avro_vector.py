"""A vectorized Avro decoder for flat records of primitive fields: numpy over all records.

fastavro spends about 3-4 us per 10-field record building a dict (bench/avro_formats.py),
which caps a task near 300,000 records/s whatever the Arrow side does. Most topics carry flat
records (numbers, strings, enums, timestamps, nullable ones of those), and for those the
fields can be decoded one at a time across every record at once: the positions of all
records advance together, a varint column is decoded from a (records x 10) byte matrix, a
string column is gathered by one index. Records this path cannot decode exactly (a varint
too long, a value cut short, an enum index out of range, a union branch that is not there)
are marked and handed back, so the caller decodes those with fastavro, which stays the
reference for every value (tests/unit/formats/test_avro_vector.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from spark_kafka_wire.formats.avro_types import Node
from spark_kafka_wire.formats.binary import binary_parts

#: the most bytes a 64-bit varint takes
MAX_VARINT = 10
_LEAVES = ("boolean", "int", "long", "float", "double", "string", "bytes", "enum", "fixed")
_RAW = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
        "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(),
        "enum": pa.string(), "fixed": pa.binary()}
_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
               ("long", "double"), ("float", "double"), ("string", "bytes"),
               ("bytes", "string")}


@dataclass(frozen=True)
class Leaf:
    """One field of a flat record: its primitive type, whether it is [null, T] (and which
    branch index is null), the node (enum symbols, fixed size)."""

    name: str
    kind: str
    node: Node
    null_branch: int  # -1: not a union


def _leaf(name: str, node: Node) -> Leaf | None:
    if node["type"] in _LEAVES:
        return Leaf(name, node["type"], node, -1)
    if node["type"] == "union" and len(node["branches"]) == 2:
        kinds = [b["type"] for b in node["branches"]]
        if "null" in kinds:
            other = node["branches"][1 - kinds.index("null")]
            if other["type"] in _LEAVES:
                return Leaf(name, other["type"], other, kinds.index("null"))
    return None


def flat_leaves(node: Node) -> list[Leaf] | None:
    """The fields of a flat record of primitive (or nullable primitive) fields, else None."""
    if node["type"] != "record":
        return None
    leaves = [_leaf(f["name"], f["type"]) for f in node["fields"]]
    if any(leaf is None for leaf in leaves):
        return None
    return [leaf for leaf in leaves if leaf is not None]


@dataclass(frozen=True)
class Column:
    """What a reader field is made of: the writer field it comes from (with a promotion or
    an enum's symbols remapped) or the reader's default."""

    reader: Leaf
    writer: Leaf | None
    default: Any


def flat_plan(writer: Node, reader: Node) -> list[Column] | None:
    """How each reader field is built from a flat writer record, when both are flat and
    every field resolves by a rule this path implements (same type, a promotion, an enum,
    a default of a primitive field); else None and fastavro decodes every record."""
    w_leaves, r_leaves = flat_leaves(writer), flat_leaves(reader)
    if w_leaves is None or r_leaves is None:
        return None
    if writer["name"].rpartition(".")[2] != reader["name"].rpartition(".")[2]:
        return None
    by_name = {leaf.name: leaf for leaf in w_leaves}
    fields = {f["name"]: f for f in reader["fields"]}
    columns = []
    for r in r_leaves:
        field = fields[r.name]
        names = [r.name, *field.get("aliases", [])]
        w = next((by_name[n] for n in names if n in by_name), None)
        if w is None:
            if "default" not in field or r.kind in ("bytes", "fixed"):
                return None
            columns.append(Column(r, None, field["default"]))
            continue
        if w.kind != r.kind and (w.kind, r.kind) not in _PROMOTIONS:
            return None
        if w.kind in ("enum", "fixed") and \
                w.node["name"].rpartition(".")[2] != r.node["name"].rpartition(".")[2]:
            return None
        if w.kind == "fixed" and w.node["size"] != r.node["size"]:
            return None
        columns.append(Column(r, w, None))
    return columns


class _Cursor:
    """The read position of every record, advanced field by field; ``bad`` marks records
    this path gives up on (fastavro decodes them)."""

    def __init__(self, data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.data = data
        self.pos = starts.copy()
        self.ends = ends
        self.bad = np.zeros(len(starts), dtype=bool)

    def varints(self, rows: np.ndarray) -> np.ndarray:
        """Zigzag varints at ``rows``' positions, as int64; advances those rows.

        Byte k of every varint still going is read in one step, so the work follows the
        varints' lengths (a string's length is one byte, a timestamp six); a varint that
        runs past its record or beyond 10 bytes marks the record bad."""
        pos = self.pos[rows]
        ends = self.ends[rows]
        unsigned = np.zeros(len(rows), dtype=np.uint64)
        length = np.zeros(len(rows), dtype=np.int64)
        active = np.arange(len(rows))
        for k in range(MAX_VARINT):
            at = pos[active] + k
            inside = at < ends[active]
            if not inside.all():
                self.bad[rows[active[~inside]]] = True
                active, at = active[inside], at[inside]
            byte = self.data[at]
            unsigned[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
            done = byte < 0x80
            length[active[done]] = k + 1
            active = active[~done]
            if not len(active):
                break
        else:
            self.bad[rows[active]] = True
        self.pos[rows] = pos + length
        return ((unsigned >> np.uint64(1)).astype(np.int64)
                ^ -(unsigned & np.uint64(1)).astype(np.int64))

    def fixed_bytes(self, rows: np.ndarray, size: int) -> np.ndarray:
        """``size`` bytes at each row's position as a (rows x size) matrix; advances."""
        pos = self.pos[rows]
        # ``size > ends - pos``, never ``pos + size > ends``: see ``spans``
        over = size > self.ends[rows] - pos
        self.bad[rows[over]] = True
        at = np.minimum(pos[:, None] + np.arange(size), max(len(self.data) - 1, 0))
        self.pos[rows] = pos + size
        return self.data[at] if len(self.data) else np.zeros((len(rows), size), np.uint8)

    def spans(self, rows: np.ndarray, lengths: np.ndarray) -> pa.Array:
        """A binary array of ``lengths[i]`` bytes at each row's position; advances."""
        pos = self.pos[rows]
        # A length is the record's (a zigzag varint up to 2**63 - 1) or the writer schema's
        # (a fixed size): ``pos + lengths`` would wrap negative in int64 for one near 2**63
        # and pass the bound, and the lengths' sum could then wrap to a few bytes, so numpy
        # would gather past its buffer (issue 45). ``ends - pos`` cannot wrap (both are
        # positions in ``data``, pos at most a few bytes past its end), so the bound is
        # taken that way round, negative lengths first.
        over = (lengths < 0) | (lengths > self.ends[rows] - pos)
        self.bad[rows[over]] = True
        lengths = np.where(over, 0, lengths)
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # one index per byte: int32 where the data allows (half the memory traffic)
        small = len(self.data) < 2**31 and offsets[-1] < 2**31
        kind = np.int32 if small else np.int64
        index = np.repeat((pos - offsets[:-1]).astype(kind), lengths) \
            + np.arange(offsets[-1], dtype=kind)
        self.pos[rows] = pos + lengths
        return pa.Array.from_buffers(pa.binary(), len(rows), [
            None, pa.py_buffer(offsets.astype(np.int32)),
            pa.py_buffer(self.data[index] if len(index) else np.zeros(0, np.uint8))])


def _read_leaf(cursor: _Cursor, rows: np.ndarray, leaf: Leaf) -> pa.Array:
    """The values of one non-null field at ``rows``, as the raw Arrow type of its kind
    (enums as their writer index, int32, converted by the caller)."""
    kind = leaf.kind
    if kind in ("int", "long", "enum"):
        values = cursor.varints(rows)
        if kind == "int":
            out_of_range = (values < -(2**31)) | (values >= 2**31)
            cursor.bad[rows[out_of_range]] = True
            return pa.array(np.where(out_of_range, 0, values).astype(np.int32))
        if kind == "enum":
            # an enum index is a zigzag int too
            out_of_range = (values < 0) | (values >= len(leaf.node["symbols"]))
            cursor.bad[rows[out_of_range]] = True
            return pa.array(np.where(out_of_range, 0, values).astype(np.int32))
        return pa.array(values)
    if kind == "boolean":
        byte = cursor.fixed_bytes(rows, 1)[:, 0]
        cursor.bad[rows[byte > 1]] = True
        return pa.array(byte == 1)
    if kind == "float":
        return pa.array(np.ascontiguousarray(cursor.fixed_bytes(rows, 4)).view("<f4")[:, 0])
    if kind == "double":
        return pa.array(np.ascontiguousarray(cursor.fixed_bytes(rows, 8)).view("<f8")[:, 0])
    if kind in ("string", "bytes"):
        return cursor.spans(rows, cursor.varints(rows))
    if kind == "fixed":
        return cursor.spans(rows, np.full(len(rows), leaf.node["size"], dtype=np.int64))
    raise ValueError(f"not a flat leaf: {kind}")


def _scatter(values: pa.Array, rows: np.ndarray, n: int) -> pa.Array:
    """``values`` placed at ``rows`` of an ``n``-long column, null elsewhere."""
    if len(rows) == n:
        return values
    position = np.full(n, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    return values.take(pa.array(position, mask=position < 0))


def decode_flat(payloads: pa.BinaryArray, writer: Node, columns: list[Column],
                raw_type: pa.StructType, skip: int = 0) -> tuple[pa.StructArray, np.ndarray]:
    """Every payload decoded field by field across all records: a struct column of the
    reader's raw Arrow type (null where the payload is null or this path gave up) and the
    mask of records it gave up on. ``skip``: bytes before each payload (a header)."""
    parts = binary_parts(payloads)
    offsets, data, valid = parts.offsets, parts.data, parts.valid
    n = len(valid)
    cursor = _Cursor(data, np.minimum(offsets[:-1] + skip, offsets[1:]), offsets[1:])
    live = np.flatnonzero(valid)
    by_writer: dict[str, pa.Array] = {}
    leaves = flat_leaves(writer)
    assert leaves is not None
    for leaf in leaves:
        if leaf.null_branch < 0:
            by_writer[leaf.name] = _scatter(_read_leaf(cursor, live, leaf), live, n)
            continue
        branch = cursor.varints(live)
        cursor.bad[live[(branch != 0) & (branch != 1)]] = True
        present = live[branch == 1 - leaf.null_branch]
        by_writer[leaf.name] = _scatter(_read_leaf(cursor, present, leaf), present, n)
    children = []
    for column, field in zip(columns, raw_type, strict=True):
        values = _reader_column(column, by_writer, cursor, n)
        numeric = column.writer is not None and column.writer.kind in ("int", "long", "float")
        # a promotion (int -> double ...) is Avro's and may round; a binary -> string cast
        # checks UTF-8 (ArrowInvalid: the caller lets fastavro decide)
        children.append(values.cast(field.type, safe=not numeric))
    failed = cursor.bad & valid
    mask = pa.array(~valid | failed)
    return pa.StructArray.from_arrays(children, fields=list(raw_type), mask=mask), failed


def _reader_column(column: Column, by_writer: dict[str, pa.Array], cursor: _Cursor,
                   n: int) -> pa.Array:
    reader, writer = column.reader, column.writer
    if writer is None:
        return pa.array([column.default] * n, _RAW[reader.kind])
    values = by_writer[writer.name]
    if writer.null_branch >= 0 and reader.null_branch < 0:
        # a null the reader's type cannot hold: fastavro fails that record
        cursor.bad[np.asarray(values.is_null().to_numpy(zero_copy_only=False))] = True
    if writer.kind == "enum":
        symbols = reader.node["symbols"]
        index = {s: i for i, s in enumerate(symbols)}
        default = reader.node.get("default")
        table = np.array([index.get(s, index.get(default, -1)) if default is not None
                          else index.get(s, -1) for s in writer.node["symbols"]],
                         dtype=np.int64)
        idx = np.asarray(values.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        mapped = table[idx] if len(table) else np.full(n, -1)
        unknown = (mapped < 0) & np.asarray(values.is_valid().to_numpy(zero_copy_only=False))
        cursor.bad[unknown] = True
        strings = pa.array(symbols, pa.string()).take(pa.array(np.where(mapped < 0, 0,
                                                                        mapped)))
        return pa.array(np.where(values.is_null().to_numpy(zero_copy_only=False), None,
                                 strings.to_numpy(zero_copy_only=False)), pa.string()) \
            if values.null_count else strings
    if writer.kind == "string":
        # fastavro refuses a string that is not UTF-8 (ArrowInvalid: the caller lets
        # fastavro decide every record), even where the reader wants bytes
        values.cast(pa.string())
    return values


# ---------------------------------------------------------------------------- encoding


class _NotVectorizable(Exception):
    """A column the vectorized encoder leaves to fastavro (which names the row at fault)."""


def _zigzag_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes per value, the bytes in order) of Avro's zigzag varints of int64 ``values``."""
    v = values.astype(np.int64)
    z = ((v << 1) ^ (v >> 63)).astype(np.uint64)
    lengths = np.ones(len(z), dtype=np.int64)
    for k in range(1, MAX_VARINT):
        lengths += z >= np.uint64(1) << np.uint64(7 * k)
    shifts = (7 * np.arange(MAX_VARINT)).astype(np.uint64)
    groups = ((z[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    column = np.arange(MAX_VARINT)[None, :]
    groups |= np.where(column < lengths[:, None] - 1, 0x80, 0).astype(np.uint8)
    return lengths, groups[column < lengths[:, None]]


def _leaf_bytes(values: pa.Array, leaf: Leaf) -> list[tuple[np.ndarray, np.ndarray]]:
    """The Avro bytes of one field's non-null raw values: pieces of (bytes per row, bytes)."""
    kind = leaf.kind
    n = len(values)
    if kind in ("int", "long"):
        return [_zigzag_varints(np.asarray(values.cast(pa.int64())))]
    if kind == "enum":
        index = pa.compute.index_in(values, value_set=pa.array(leaf.node["symbols"]))
        if index.null_count:
            raise _NotVectorizable("a symbol the enum does not have")
        return [_zigzag_varints(np.asarray(index.cast(pa.int64())))]
    if kind == "boolean":
        return [(np.ones(n, dtype=np.int64),
                 np.asarray(values.cast(pa.uint8()), dtype=np.uint8))]
    if kind in ("float", "double"):
        width, dtype = (4, "<f4") if kind == "float" else (8, "<f8")
        data = np.ascontiguousarray(np.asarray(values, dtype=dtype)).view(np.uint8)
        return [(np.full(n, width, dtype=np.int64), data)]
    # string, bytes, fixed: the values' own data buffer, contiguous in row order
    binary = values.cast(pa.binary())
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int32)[
        binary.offset:binary.offset + n + 1].astype(np.int64)
    data = np.frombuffer(binary.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]] \
        if binary.buffers()[2] is not None else np.zeros(0, dtype=np.uint8)
    lengths = np.diff(offsets)
    if kind == "fixed":
        if (lengths != leaf.node["size"]).any():
            raise _NotVectorizable("a value of another size than the fixed type's")
        return [(lengths, data)]
    return [_zigzag_varints(lengths), (lengths, data)]


def encode_flat(raw: pa.StructArray, leaves: list[Leaf]) -> pa.BinaryArray | None:
    """Avro binary of every row of a struct column of raw values (``raw_arrow``'s types),
    field by field across all rows; rows null in ``raw`` stay null. None when a value does
    not fit the schema (an enum symbol it lacks, a null it cannot hold, a fixed of another
    size): fastavro then writes row by row and names the row at fault."""
    try:
        return _encode_flat(raw, leaves)
    except (_NotVectorizable, pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _encode_flat(raw: pa.StructArray, leaves: list[Leaf]) -> pa.BinaryArray:
    n = len(raw)
    valid = raw.is_valid().to_numpy(zero_copy_only=False) if raw.null_count \
        else np.ones(n, dtype=bool)
    rows = np.flatnonzero(valid)
    live = raw.filter(pa.array(valid)) if raw.null_count else raw
    m = len(rows)
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    for i, leaf in enumerate(leaves):
        column = live.field(i)
        if column.null_count and leaf.null_branch < 0:
            raise _NotVectorizable("a null where the Avro type has no null")
        if leaf.null_branch < 0:
            pieces.extend(_leaf_bytes(column, leaf))
            continue
        present = column.is_valid().to_numpy(zero_copy_only=False) if column.null_count \
            else np.ones(m, dtype=bool)
        pieces.append(_zigzag_varints(np.where(present, 1 - leaf.null_branch,
                                               leaf.null_branch)))
        for lengths, data in _leaf_bytes(column.filter(pa.array(present)), leaf):
            full = np.zeros(m, dtype=np.int64)
            full[present] = lengths
            pieces.append((full, data))
    totals = np.zeros(m, dtype=np.int64)
    for lengths, _ in pieces:
        totals += lengths
    out_offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(totals, out=out_offsets[1:])
    if out_offsets[-1] > np.iinfo(np.int32).max:
        raise _NotVectorizable("more than 2 GiB of values")
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    at = out_offsets[:-1].copy()  # where the next piece of each row goes
    for lengths, data in pieces:
        local = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(lengths, out=local[1:])
        dest = np.repeat((at - local[:-1]).astype(np.int32), lengths) \
            + np.arange(local[-1], dtype=np.int32)
        out[dest] = data
        at += lengths
    encoded = pa.Array.from_buffers(pa.binary(), m, [
        None, pa.py_buffer(out_offsets.astype(np.int32)), pa.py_buffer(out)])
    return _scatter(encoded, rows, n)
