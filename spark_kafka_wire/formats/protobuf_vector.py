"""A vectorized Protobuf decoder for flat messages (singular scalar fields): numpy over all
records at once.

Why: parsing each record with upb and walking it in Python costs 4-10 us per 10-field
record (bench/protobuf_decode.py), well below the JVM's ``from_protobuf``. Most topics carry
flat messages, and for those the wire format can be scanned for every record together: one
step reads the next tag of every record still going, notes where the value of each known
field starts (the last occurrence wins, protobuf's merge rule for singular scalars) and
skips to the next tag; afterwards each field's values are decoded as one column. Records
this path cannot decode exactly (a wire type that does not match, a value cut short, a
group, an enum number the enum does not name, invalid UTF-8, a missing required field, a
message index other than the reader's) are marked and handed back, so the caller parses
those with upb, which stays the reference for every value and every error
(tests/unit/formats/test_protobuf_vector.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from spark_kafka_wire.formats.binary import binary_parts

#: the most bytes a 64-bit varint takes
MAX_VARINT = 10
#: The largest table of field numbers' slots (32 KiB), indexed by a number's low bits
#: (``_slots``): a speed choice, not a bound (the cost follows the schema's field count,
#: whatever its largest number)
FIELD_TABLE_SIZE = 4096

_T = FieldDescriptor
#: field type -> (wire type, kind of decoding)
_KINDS: dict[int, tuple[int, str]] = {
    _T.TYPE_INT32: (0, "i32"), _T.TYPE_UINT32: (0, "i32"), _T.TYPE_ENUM: (0, "enum"),
    _T.TYPE_SINT32: (0, "s32"), _T.TYPE_INT64: (0, "i64"), _T.TYPE_UINT64: (0, "i64"),
    _T.TYPE_SINT64: (0, "s64"), _T.TYPE_BOOL: (0, "bool"),
    _T.TYPE_FIXED32: (5, "f32i"), _T.TYPE_SFIXED32: (5, "f32i"), _T.TYPE_FLOAT: (5, "f32"),
    _T.TYPE_FIXED64: (1, "f64i"), _T.TYPE_SFIXED64: (1, "f64i"), _T.TYPE_DOUBLE: (1, "f64"),
    _T.TYPE_STRING: (2, "str"), _T.TYPE_BYTES: (2, "bin"),
}


@dataclass(frozen=True)
class FlatField:
    """One singular scalar field: its number, expected wire type, decoding kind, whether it
    tracks presence (else a default value reads as null, as Spark) and is required, and
    for enums the names by number."""

    number: int
    wire: int
    kind: str
    presence: bool
    required: bool
    enum_names: tuple[tuple[int, str], ...] = ()


def flat_fields(desc: Descriptor) -> list[FlatField] | None:
    """The plan for ``desc`` when every field is a singular scalar outside a real oneof
    (proto3 ``optional`` is a one-field oneof), else None (upb decodes it)."""
    out: list[FlatField] = []
    for fd in desc.fields:
        if fd.is_repeated or fd.type not in _KINDS:
            return None
        oneof = fd.containing_oneof
        if oneof is not None and len(oneof.fields) > 1:
            return None
        wire, kind = _KINDS[fd.type]
        names: tuple[tuple[int, str], ...] = ()
        if kind == "enum":
            names = tuple((v.number, v.name) for v in fd.enum_type.values)
        out.append(FlatField(fd.number, wire, kind, fd.has_presence, fd.is_required, names))
    return out or None


def _slots(numbers: list[int]) -> Callable[[np.ndarray], np.ndarray]:
    """The lookup of field numbers' slots (their places in ``numbers``; -1 for a number the
    schema does not have). Numbers go up to 2**29 - 1: a table indexed by number would cost
    4 GiB a batch for one schema field at 536,870,911 (issue 45). So the table is indexed by a
    number's low bits, the fewest that tell the schema's numbers apart (all of them below
    ``FIELD_TABLE_SIZE``), each hit checked against the number itself: one gather a tag, as
    a table by number; a schema whose numbers share their low 12 bits falls back to a
    binary search in its sorted numbers. Memory and time follow the field count only."""
    count = len(numbers)
    known = np.array([*numbers, -1], dtype=np.int64)  # -1: the slot of no field
    size = next((size for size in (1 << b for b in range(4, FIELD_TABLE_SIZE.bit_length()))
                 if len(np.unique(known[:count] & (size - 1))) == count), 0)
    if size:
        mask = size - 1
        table = np.full(size, count, dtype=np.int64)
        table[known[:count] & mask] = np.arange(count)

        def by_low_bits(number: np.ndarray) -> np.ndarray:
            found = table[number & mask]
            return np.where(known[found] == number, found, -1)
        return by_low_bits
    order = np.argsort(known[:count])
    ordered = known[order]

    def by_search(number: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(ordered, number), count - 1)
        return np.where(ordered[at] == number, order[at], -1)
    return by_search


def _varints(data: np.ndarray, pos: np.ndarray, ends: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unsigned varints at ``pos``: values (uint64), lengths and a mask of those that run
    past their record or beyond 10 bytes / 64 bits (left for upb). Byte k of every varint
    still going is read in one step, so the work follows the varints' lengths."""
    n = len(pos)
    bad = pos >= ends
    # the first byte of every varint in one step (most tags and lengths are one byte)
    byte = data[np.where(bad, 0, pos)] if len(data) else np.zeros(n, dtype=np.uint8)
    value = (byte & 0x7F).astype(np.uint64)
    length = np.where(bad, 0, 1).astype(np.int64)
    active = np.flatnonzero((byte >= 0x80) & ~bad)
    if not len(active):
        return value, length, bad
    length[active] = 0
    for k in range(1, MAX_VARINT):
        at = pos[active] + k
        inside = at < ends[active]
        if not inside.all():
            bad[active[~inside]] = True
            active, at = active[inside], at[inside]
        byte = data[at]
        if k == MAX_VARINT - 1:
            bad[active[byte > 1]] = True
        value[active] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        done = byte < 0x80
        length[active[done]] = k + 1
        active = active[~done]
        if not len(active):
            break
    else:
        bad[active] = True
    return value, length, bad


def _gather(data: np.ndarray, pos: np.ndarray, size: int) -> np.ndarray:
    """``size`` bytes at each position as a (rows x size) matrix (bounds already checked)."""
    if not len(pos):
        return np.zeros((0, size), dtype=np.uint8)
    return data[pos[:, None] + np.arange(size)]


def _spans(data: np.ndarray, pos: np.ndarray, lengths: np.ndarray) -> pa.BinaryArray:
    """A binary array of ``lengths[i]`` bytes at ``pos[i]``: one gather of every byte."""
    offsets = np.zeros(len(pos) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    kind = np.int32 if len(data) < 2**31 and offsets[-1] < 2**31 else np.int64
    index = np.repeat((pos - offsets[:-1]).astype(kind), lengths) \
        + np.arange(offsets[-1], dtype=kind)
    body = data[index] if len(index) else np.zeros(0, np.uint8)
    if offsets[-1] >= 2**31:
        return pa.Array.from_buffers(pa.large_binary(), len(pos), [
            None, pa.py_buffer(offsets), pa.py_buffer(body)])
    return pa.Array.from_buffers(pa.binary(), len(pos), [
        None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(body)])


def _scatter(values: pa.Array, rows: np.ndarray, n: int) -> pa.Array:
    """``values`` placed at ``rows`` of an ``n``-long column, null elsewhere."""
    if len(rows) == n:
        return values
    position = np.full(n, -1, dtype=np.int64)
    position[rows] = np.arange(len(rows))
    return values.take(pa.array(position, mask=position < 0))


def _column(data: np.ndarray, at: np.ndarray, word: np.ndarray, field: FlatField,
            arrow: pa.DataType, bad: np.ndarray) -> pa.Array:
    """One field's column: values where ``at >= 0`` (its last occurrence's value starts
    there; ``word`` holds a varint's value or a body's length, read while scanning), null
    elsewhere and where a proto3 implicit field holds its default (Spark's null)."""
    n = len(at)
    rows = np.flatnonzero(at >= 0)
    pos = at[rows]
    kind = field.kind
    keep = np.ones(len(rows), dtype=bool)  # False: null (an implicit default)
    values: pa.Array
    if field.wire == 0:
        raw = word[rows]
        if kind in ("i32", "enum"):
            ints = (raw & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
        elif kind == "s32":
            low = (raw & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            ints = ((low >> np.uint32(1)).view(np.int32) ^ -(low & np.uint32(1)).view(np.int32))
        elif kind == "s64":
            ints = ((raw >> np.uint64(1)).view(np.int64) ^ -(raw & np.uint64(1)).view(np.int64))
        else:
            ints = raw.view(np.int64)
        if not field.presence:
            keep = raw != 0 if kind not in ("i32", "enum", "s32") else ints != 0
        if kind == "bool":
            values = pa.array(raw != 0)
        elif kind == "enum":
            first: dict[int, str] = {}  # the first name declared for a number (aliases)
            for number, name in field.enum_names:
                first.setdefault(number, name)
            numbers = np.array(sorted(first), dtype=np.int32)
            index = np.minimum(np.searchsorted(numbers, ints), max(len(numbers) - 1, 0))
            known = numbers[index] == ints if len(numbers) else np.zeros(len(ints), bool)
            # an unknown number: open enums read UNRECOGNIZED, closed ones keep it as an
            # unknown field; upb decides both
            bad[rows[~known]] = True
            table = pa.array([first[int(k)] for k in numbers], pa.string())
            values = table.take(pa.array(np.where(known, index, 0)))
        else:
            values = pa.array(ints)
    elif field.wire in (1, 5):
        size = 8 if field.wire == 1 else 4
        raw_bytes = np.ascontiguousarray(_gather(data, pos, size))
        dtype = {"f32": "<f4", "f64": "<f8", "f32i": "<i4", "f64i": "<i8"}[kind]
        nums = raw_bytes.view(dtype)[:, 0] if len(pos) else np.zeros(0, dtype)
        if not field.presence:
            keep = nums != 0  # -0.0 is a default too; NaN is not
        values = pa.array(nums)
    else:
        length = word[rows].astype(np.int64)
        spans = _spans(data, pos, length)
        if not field.presence:
            keep = length != 0
        if kind == "str":
            try:
                values = spans.cast(pa.large_string() if pa.types.is_large_binary(spans.type)
                                    else pa.string())
            except pa.ArrowInvalid:
                ok = np.array([_utf8(v) for v in spans.to_pylist()], dtype=bool)
                bad[rows[~ok]] = True
                values = pc.if_else(pa.array(ok), spans, pa.nulls(len(spans), spans.type)) \
                    .cast(pa.string())
        else:
            values = spans
    if not keep.all():
        values = pc.if_else(pa.array(keep), values, pa.nulls(len(values), values.type))
    out = _scatter(values, rows, n)
    return out.cast(arrow) if out.type != arrow else out


def _utf8(v: bytes | None) -> bool:
    try:
        (v or b"").decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode_flat(payloads: pa.BinaryArray | pa.LargeBinaryArray, fields: list[FlatField],
                arrow: pa.StructType, *, skip: int = 0, index_byte: bool = False
                ) -> tuple[pa.StructArray, np.ndarray]:
    """Every payload scanned tag by tag across all records: a struct column of ``arrow``
    (null where the payload is null or this path gave up) and the mask of records it gave
    up on (for upb). ``skip``: bytes before each payload (Confluent's header); with
    ``index_byte`` a single 0 byte (message indexes [0]) must follow it."""
    parts = binary_parts(payloads)
    offsets, data, valid = parts.offsets, parts.data, parts.valid
    n = len(valid)
    starts, ends = offsets[:-1] + skip, offsets[1:]
    bad = valid & (starts > ends)
    if index_byte:
        has = valid & (starts < ends)
        bad |= valid & ~has
        first = np.ones(n, dtype=np.uint8)
        first[has] = data[starts[has]]
        bad |= valid & (first != 0)
        starts = starts + 1
    slot_of = _slots([f.number for f in fields])
    wire_by_slot = np.array([f.wire for f in fields], dtype=np.int64)
    str_by_slot = np.array([f.kind == "str" for f in fields], dtype=bool)
    replaced: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    at = np.full((len(fields), n), -1, dtype=np.int64)
    word = np.zeros((len(fields), n), dtype=np.uint64)
    pos = starts.copy()
    live = np.flatnonzero(valid & ~bad & (pos < ends))
    while len(live):
        p, e = pos[live], ends[live]
        tag, tag_len, over = _varints(data, p, e)
        wt = (tag & np.uint64(7)).astype(np.int64)
        number = (tag >> np.uint64(3)).astype(np.int64)
        p = p + tag_len
        # wire type 3/4 (groups), 6/7, field number 0 or beyond 2**29 - 1: upb says what
        # they are
        over |= (wt == 3) | (wt == 4) | (wt > 5) | (number == 0) | (number >= 2**29)
        size = np.zeros(len(live), dtype=np.int64)
        fixed8, fixed4 = wt == 1, wt == 5
        size[fixed8], size[fixed4] = 8, 4
        value = np.zeros(len(live), dtype=np.uint64)  # a varint, or a body's length
        var = np.flatnonzero((wt == 0) & ~over)
        if len(var):
            value[var], vlen, vbad = _varints(data, p[var], e[var])
            size[var] = vlen
            over[var[vbad]] = True
        ld = np.flatnonzero((wt == 2) & ~over)
        if len(ld):
            length, llen, lbad = _varints(data, p[ld], e[ld])
            lbad |= length > np.uint64(2**31)
            value[ld] = np.where(lbad, 0, length)
            size[ld] = llen + value[ld].astype(np.int64)
            over[ld[lbad]] = True
            p[ld] += llen  # a body's position (size counts from there)
            size[ld] -= llen
        # ``size > e - p``, never ``p + size > e``: a sum near 2**63 would wrap (issue 45;
        # a body's length is capped at 2**31 above, but the bound must not rely on it)
        over |= size > e - p
        k = np.flatnonzero(~over)
        sk = slot_of(number[k])
        k, sk = k[sk >= 0], sk[sk >= 0]
        mismatch = wire_by_slot[sk] != wt[k]
        over[k[mismatch]] = True
        k, sk = k[~mismatch], sk[~mismatch]
        # upb checks the UTF-8 of every occurrence of a string; the last one is checked with
        # its column, the ones it replaces are kept here (rare)
        strs = str_by_slot[sk]
        s, ss = k[strs], sk[strs]
        if len(s):
            before = at[ss, live[s]]
            again = before >= 0
            if again.any():
                gone = s[again]
                replaced.append((live[gone], before[again], word[ss[again], live[gone]]))
        at[sk, live[k]] = p[k]
        word[sk, live[k]] = value[k]
        bad[live[over]] = True
        pos[live] = p + size
        live = live[~over & (pos[live] < e)]
    if replaced:
        rows = np.concatenate([r for r, _, _ in replaced])
        spans = _spans(data, np.concatenate([q for _, q, _ in replaced]),
                       np.concatenate([ln for _, _, ln in replaced]).astype(np.int64))
        try:
            spans.cast(pa.large_string() if pa.types.is_large_binary(spans.type)
                       else pa.string())
        except pa.ArrowInvalid:
            ok = np.array([_utf8(v) for v in spans.to_pylist()], dtype=bool)
            bad[rows[~ok]] = True
    for i, f in enumerate(fields):
        if f.required:
            bad |= valid & (at[i] < 0)
    children = [_column(data, at[i], word[i], f, arrow[i].type, bad)
                for i, f in enumerate(fields)]
    mask = pa.array(~valid | bad)
    return pa.StructArray.from_arrays(children, fields=list(arrow), mask=mask), bad & valid
