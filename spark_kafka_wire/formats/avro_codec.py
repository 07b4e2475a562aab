"""Avro record values decoded into Arrow columns, and encoded from them, as Spark does.

``AvroDecoder`` is built once on the driver from the query's reader schema and pickled into
the tasks; a task decodes each batch of payloads with the writer schema their schema id names,
resolved to the reader schema by Avro's rules (fastavro reads each record), and builds the
Arrow column field by field from the decoded values (one ``pa.array`` per leaf column rather
than one per record), with the values Spark's ``from_avro`` gives: timestamps in microseconds
UTC, dates in days, exact decimals, enums and uuids as strings, complex unions as structs with
the taken branch set. fastavro is given the schemas without their logical types, so it
returns the raw ints and bytes and the conversions run once per column, vectorized.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from spark_kafka_wire.formats.avro_bounds import RecordBounds, record_bounds
from spark_kafka_wire.formats.avro_resolution import resolution_problem
from spark_kafka_wire.formats.avro_types import Mapped, Node, parse_schema, to_spark
from spark_kafka_wire.formats.avro_vector import (
    Column,
    decode_flat,
    encode_flat,
    flat_leaves,
    flat_plan,
)
from spark_kafka_wire.formats.confluent import FRAME_HEADER_SIZE, split_frames

#: writer schemas parsed per decoder (a task sees few schema ids; the bound keeps a stream
#: whose producers register schema after schema from growing without end)
MAX_CACHED_WRITER_SCHEMAS = 256


@dataclass(frozen=True)
class Decoded:
    """A decoded column: ``array`` (null where the payload is null or failed), ``failed``
    (which records could not be decoded) and ``errors`` (index -> why, for failed ones)."""

    array: pa.Array
    failed: np.ndarray
    errors: dict[int, str]


class _RecordFailed(Exception):
    """A value that decoded but cannot become the reader's type (a decimal too wide)."""


# ---------------------------------------------------------------------------- schemas


def plain_schema(node: Node, emitted: set[str] | None = None) -> Any:
    """``node`` as a schema for fastavro without logical types (so it returns raw ints and
    bytes, converted here column-wise); each named type defined once, then named."""
    emitted = set() if emitted is None else emitted
    kind = node["type"]
    if kind == "union":
        return [plain_schema(b, emitted) for b in node["branches"]]
    if kind in ("record", "enum", "fixed"):
        if node["name"] in emitted:
            return node["name"]
        emitted.add(node["name"])
        out: dict[str, Any] = {"type": kind, "name": node["name"]}
        if node.get("aliases"):
            out["aliases"] = node["aliases"]
        if kind == "fixed":
            out["size"] = node["size"]
        elif kind == "enum":
            out["symbols"] = node["symbols"]
            if "default" in node:
                out["default"] = node["default"]
        else:
            out["fields"] = []
            for f in node["fields"]:
                entry = {"name": f["name"], "type": plain_schema(f["type"], emitted)}
                if f.get("aliases"):
                    entry["aliases"] = f["aliases"]
                if "default" in f:
                    entry["default"] = _default(f["default"], f["type"])
                out["fields"].append(entry)
        return out
    if kind == "array":
        return {"type": "array", "items": plain_schema(node["items"], emitted)}
    if kind == "map":
        return {"type": "map", "values": plain_schema(node["values"], emitted)}
    return kind


def _default(value: Any, node: Node) -> Any:
    """A field's default as fastavro should hand it back: a bytes or fixed default is a
    JSON string of code points 0-255 (the Avro specification), given to fastavro as the
    bytes it stands for (a union's default is of its first branch)."""
    if node["type"] == "union" and node["branches"]:
        node = node["branches"][0]
    if node["type"] in ("bytes", "fixed") and isinstance(value, str):
        try:
            return value.encode("latin-1")
        except UnicodeEncodeError:
            return value  # not a valid bytes default: left as written
    return value


def _fastavro_schema(node: Node) -> Any:
    return fastavro.parse_schema(plain_schema(node), _ignore_default_error=True)


# ---------------------------------------------------------------------------- values -> Arrow


def _unwrap(values: list[Any]) -> list[Any]:
    """fastavro tags a union's named branch as (name, value); the value alone."""
    return [v[1] if type(v) is tuple else v for v in values]


def _as_bytes(v: Any) -> Any:
    # a bytes/fixed default is a JSON string of code points 0-255 (the Avro specification)
    return v.encode("latin-1") if isinstance(v, str) else v


def _decimal_array(values: list[Any], arrow: pa.Decimal128Type) -> pa.Array:
    """Big-endian two's complement unscaled values -> decimal128, exact; a value wider than
    the precision fails its record (Spark's Decimal refuses it too)."""
    precision = arrow.precision
    limit = 10 ** precision
    out = bytearray()
    valid = []
    for v in values:
        if v is None:
            out += bytes(16)
            valid.append(False)
            continue
        unscaled = int.from_bytes(_as_bytes(v), "big", signed=True)
        if not -limit < unscaled < limit:
            raise _RecordFailed(f"decimal {unscaled} (unscaled) exceeds precision {precision}")
        out += unscaled.to_bytes(16, "little", signed=True)
        valid.append(True)
    mask = None if all(valid) else pa.py_buffer(np.packbits(np.array(valid, dtype=bool),
                                                            bitorder="little"))
    return pa.Array.from_buffers(arrow, len(values), [mask, pa.py_buffer(bytes(out))],
                                 null_count=valid.count(False))


def decimals_from_binary(raw: pa.Array, arrow: pa.Decimal128Type) -> pa.Array:
    """A binary column of big-endian two's complement unscaled values -> decimal128, with
    numpy: each value sign-extended to 16 bytes and byte-reversed is Arrow's little-endian
    decimal128 already. A value wider than the precision raises _RecordFailed (the caller
    finds the record); values longer than 16 bytes go through Python ints."""
    n = len(raw)
    binary = raw.cast(pa.binary())
    offsets = np.frombuffer(binary.buffers()[1], dtype=np.int32)[
        binary.offset:binary.offset + n + 1].astype(np.int64)
    data = np.frombuffer(binary.buffers()[2], dtype=np.uint8) \
        if binary.buffers()[2] is not None and n else np.zeros(1, dtype=np.uint8)
    valid = binary.is_valid().to_numpy(zero_copy_only=False) if binary.null_count \
        else np.ones(n, dtype=bool)
    lengths = np.where(valid, np.diff(offsets), 0)
    if (lengths > 16).any() or not len(data):
        return _decimal_array(binary.to_pylist(), arrow)
    starts = offsets[:-1]
    k = np.arange(16)[None, :]
    pad = 16 - lengths[:, None]
    source = np.clip(starts[:, None] + k - pad, 0, len(data) - 1)
    first = data[np.clip(starts, 0, len(data) - 1)]
    sign = np.where((lengths > 0) & (first >= 0x80), 0xFF, 0).astype(np.uint8)
    big_endian = np.where(k >= pad, data[source], sign[:, None]).astype(np.uint8)
    little = np.ascontiguousarray(big_endian[:, ::-1])
    words = little.view("<u8").reshape(n, 2)
    lo, hi = words[:, 0], words[:, 1].view(np.int64)
    limit = 10 ** arrow.precision  # |unscaled| < limit, compared as 128-bit (hi, lo)
    top_hi, top_lo = limit >> 64, limit & (2**64 - 1)
    low = (-limit) & (2**128 - 1)
    low_hi, low_lo = (low >> 64) - 2**64, low & (2**64 - 1)
    below = (hi < top_hi) | ((hi == top_hi) & (lo < np.uint64(top_lo)))
    above = (hi > low_hi) | ((hi == low_hi) & (lo > np.uint64(low_lo)))
    if not (below & above | ~valid).all():
        raise _RecordFailed(f"a decimal exceeds precision {arrow.precision}")
    mask = pa.py_buffer(np.packbits(valid, bitorder="little")) if not valid.all() else None
    return pa.Array.from_buffers(arrow, n, [mask, pa.py_buffer(little)],
                                 null_count=int((~valid).sum()))


def _mask(values: list[Any]) -> pa.Array | None:
    nulls = [v is None for v in values]
    return pa.array(nulls, pa.bool_()) if any(nulls) else None


def _offsets(values: list[Any]) -> pa.Array:
    lengths = np.fromiter((0 if v is None else len(v) for v in values), dtype=np.int64,
                          count=len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return pa.array(offsets.astype(np.int32))


def _branch_of(value: Any, branches: list[tuple[Node, Mapped]]) -> int:
    """The member a complex union's decoded value belongs to: by name for a named type
    (fastavro tags it when the writer wrote a union), else by the Python type fastavro gives
    (the first member of that type)."""
    if type(value) is tuple:
        name = value[0]
        for i, (node, _) in enumerate(branches):
            if node.get("name") == name:
                return i
        raise _RecordFailed(f"union branch {name} is not in the reader's union")
    wanted: tuple[str, ...]
    if isinstance(value, bool):
        wanted = ("boolean",)
    elif isinstance(value, int):
        wanted = ("int", "long")
    elif isinstance(value, float):
        wanted = ("float", "double")
    elif isinstance(value, str):
        wanted = ("string", "enum")
    elif isinstance(value, bytes):
        wanted = ("bytes", "fixed")
    elif isinstance(value, list):
        wanted = ("array",)
    elif isinstance(value, dict):
        keys = set(value)
        for i, (node, _) in enumerate(branches):
            if node["type"] == "record" and {f["name"] for f in node["fields"]} == keys:
                return i
        wanted = ("map", "record")
    else:
        raise _RecordFailed(f"no union branch for {type(value).__name__}")
    for kind in wanted:
        for i, (node, _) in enumerate(branches):
            if node["type"] == kind:
                return i
    raise _RecordFailed(f"no union branch for {type(value).__name__}")


def to_arrow(values: list[Any], m: Mapped) -> pa.Array:
    """Decoded values (None for null) -> an Arrow array of ``m.arrow``, column by column."""
    kind = m.kind
    if kind == "null":
        return pa.nulls(len(values))
    if kind in ("boolean", "int", "long", "float", "double", "string", "enum", "widened"):
        return pa.array(_unwrap(values), m.arrow)
    if kind in ("bytes", "fixed"):
        return pa.array([_as_bytes(v) for v in _unwrap(values)], pa.binary())
    if kind == "date":
        return pa.array(values, pa.int32()).cast(pa.date32())
    if kind in ("timestamp-millis", "local-timestamp-millis"):
        try:
            micros = pc.multiply_checked(pa.array(values, pa.int64()), 1000)
        except pa.ArrowInvalid as exc:
            raise _RecordFailed(f"timestamp-millis out of range: {exc}") from None
        return micros.cast(m.arrow)
    if kind in ("timestamp-micros", "local-timestamp-micros"):
        return pa.array(values, pa.int64()).cast(m.arrow)
    if kind == "decimal":
        return _decimal_array(_unwrap(values), m.arrow)
    if kind == "nullable":
        assert m.item is not None
        # a complex union inside keeps fastavro's (name, value) tags: they say the branch
        return to_arrow(values if m.item.kind == "members" else _unwrap(values), m.item)
    if kind != "members":
        values = _unwrap(values)
    if kind == "record":
        if not m.fields:
            return pa.array([None if v is None else {} for v in values], m.arrow)
        children = [to_arrow([None if v is None else v.get(name) for v in values], child)
                    for name, child in m.fields]
        return pa.StructArray.from_arrays(children, fields=list(m.arrow), mask=_mask(values))
    if kind == "array":
        assert m.item is not None
        flat = [x for v in values if v is not None for x in v]
        return pa.ListArray.from_arrays(_offsets(values), to_arrow(flat, m.item), type=m.arrow,
                                        mask=_mask(values))
    if kind == "map":
        assert m.item is not None
        keys = [k for v in values if v is not None for k in v]
        items = [x for v in values if v is not None for x in v.values()]
        return pa.MapArray.from_arrays(_offsets(values), pa.array(keys, pa.string()),
                                       to_arrow(items, m.item), type=m.arrow,
                                       mask=_mask(values))
    if kind == "members":
        columns: list[list[Any]] = [[None] * len(values) for _ in m.branches]
        for i, v in enumerate(values):
            if v is not None:
                columns[_branch_of(v, m.branches)][i] = v
        children = [to_arrow(col, child)
                    for col, (_, child) in zip(columns, m.branches, strict=True)]
        if not children:
            return pa.array([None if v is None else {} for v in values], m.arrow)
        return pa.StructArray.from_arrays(children, fields=list(m.arrow), mask=_mask(values))
    raise ValueError(f"no Arrow conversion for {kind}")


# ------------------------------------------------- values -> Arrow in one pa.array call

#: kinds whose Arrow values are fastavro's raw values after a vectorized conversion
_RAW_TYPES = {"date": pa.int32(), "timestamp-millis": pa.int64(),
              "timestamp-micros": pa.int64(), "local-timestamp-millis": pa.int64(),
              "local-timestamp-micros": pa.int64(), "decimal": pa.binary()}


def has_members(m: Mapped) -> bool:
    """Whether a complex union (a struct of members) is anywhere in ``m``."""
    if m.kind == "members":
        return True
    children = [c for _, c in m.fields] + ([m.item] if m.item is not None else [])
    return any(has_members(c) for c in children)


def raw_arrow(m: Mapped) -> pa.DataType:
    """The Arrow type of fastavro's raw values for ``m`` (before the logical conversions):
    ``pa.array`` builds a whole nested column from them in one C++ pass."""
    if m.kind in _RAW_TYPES:
        return _RAW_TYPES[m.kind]
    if m.kind == "nullable":
        assert m.item is not None
        return raw_arrow(m.item)
    if m.kind == "record":
        return pa.struct([pa.field(n, raw_arrow(c), c.nullable) for n, c in m.fields])
    if m.kind == "array":
        assert m.item is not None
        return pa.list_(pa.field("element", raw_arrow(m.item), m.item.nullable))
    if m.kind == "map":
        assert m.item is not None
        return pa.map_(pa.field("key", pa.string(), False),
                       pa.field("value", raw_arrow(m.item), m.item.nullable))
    return m.arrow


def from_raw(raw: pa.Array, m: Mapped) -> pa.Array:
    """A column of ``raw_arrow(m)`` converted to ``m.arrow``, vectorized."""
    if raw.type == m.arrow:
        return raw
    kind = m.kind
    if kind == "nullable":
        assert m.item is not None
        return from_raw(raw, m.item)
    if kind == "date":
        return raw.cast(pa.date32())
    if kind in ("timestamp-millis", "local-timestamp-millis"):
        try:
            return pc.multiply_checked(raw, 1000).cast(m.arrow)
        except pa.ArrowInvalid as exc:
            raise _RecordFailed(f"timestamp-millis out of range: {exc}") from None
    if kind in ("timestamp-micros", "local-timestamp-micros"):
        return raw.cast(m.arrow)
    if kind == "decimal":
        return decimals_from_binary(raw, m.arrow)
    mask = raw.is_null() if raw.null_count else None
    if kind == "record":
        children = [from_raw(raw.field(i), c) for i, (_, c) in enumerate(m.fields)]
        return pa.StructArray.from_arrays(children, fields=list(m.arrow), mask=mask)
    if kind == "array":
        assert m.item is not None
        offsets = raw.offsets
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        values = from_raw(raw.values.slice(first, last - first), m.item)
        return pa.ListArray.from_arrays(pc.subtract(offsets, first), values, type=m.arrow,
                                        mask=mask)
    if kind == "map":
        assert m.item is not None
        offsets = raw.offsets
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        items = from_raw(raw.items.slice(first, last - first), m.item)
        return pa.MapArray.from_arrays(pc.subtract(offsets, first),
                                       raw.keys.slice(first, last - first), items,
                                       type=m.arrow, mask=mask)
    raise ValueError(f"no conversion from {raw.type} to {m.arrow}")


# ---------------------------------------------------------------------------- decoding


@dataclass(frozen=True)
class _WriterPlan:
    writer: Any  # fastavro's parsed writer schema
    reader: Any  # fastavro's parsed reader schema, None when it equals the writer's
    problem: str | None  # why no record of this writer schema can be read, found once
    writer_node: Node | None = None
    flat: list[Column] | None = None  # the vectorized path's plan, when it applies
    #: the walk each record needs before fastavro reads it (avro_bounds), when it does
    bounds: RecordBounds | None = None


class AvroDecoder:
    """Decodes Avro payloads into Arrow with Spark's ``from_avro`` types and values.

    Built on the driver (the reader schema's Spark type is the column's type at planning
    time) and pickled into tasks, which parse writer schemas themselves, once each.
    """

    def __init__(self, reader_schema: str, *, stable_union_ids: bool = False,
                 recursive_field_max_depth: int = -1, vectorized: bool = True) -> None:
        self.reader_schema = reader_schema
        self.stable_union_ids = stable_union_ids
        self.recursive_field_max_depth = recursive_field_max_depth
        #: decode flat records of primitive fields with numpy (False: fastavro for every
        #: record, the path the tests hold the vectorized one against)
        self.vectorized = vectorized
        self._setup()

    def _setup(self) -> None:
        self._reader_node = parse_schema(self.reader_schema)
        self._mapped = to_spark(self._reader_node, stable_union_ids=self.stable_union_ids,
                                recursive_field_max_depth=self.recursive_field_max_depth)
        self._reader_fastavro = _fastavro_schema(self._reader_node)
        # fastavro tags named union branches only where a complex union needs the branch;
        # without them the values go to Arrow in one pa.array call (2-3x the column-wise
        # build, measured in bench/avro_formats.py)
        self._tagged = has_members(self._mapped)
        self._raw_type = raw_arrow(self._mapped)
        # bytes defaults are bytes in the plain schema: repr makes them comparable text
        self._reader_canonical = json.dumps(plain_schema(self._reader_node), sort_keys=True,
                                            default=repr)
        self._plans: dict[str, _WriterPlan] = {}

    def __getstate__(self) -> dict[str, Any]:
        # the parsed schemas are rebuilt where the decoder lands, from the text
        return {"reader_schema": self.reader_schema, "stable_union_ids": self.stable_union_ids,
                "recursive_field_max_depth": self.recursive_field_max_depth,
                "vectorized": self.vectorized}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    @property
    def spark_type_json(self) -> Any:
        """The column's Spark type as ``DataType.jsonValue()`` gives it."""
        return self._mapped.spark

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type pyspark uses for ``spark_type_json``."""
        return self._mapped.arrow

    def _plan(self, writer_schema: str) -> _WriterPlan:
        plan = self._plans.get(writer_schema)
        if plan is not None:
            return plan
        try:
            node = parse_schema(writer_schema)
            bounds = record_bounds(node)
            problem = resolution_problem(node, self._reader_node)
            writer = _fastavro_schema(node)
            same = json.dumps(plain_schema(node), sort_keys=True,
                              default=repr) == self._reader_canonical
            flat = flat_plan(node, self._reader_node) \
                if problem is None and self.vectorized and not self._tagged else None
            plan = _WriterPlan(writer, None if same else self._reader_fastavro,
                               None if problem is None
                               else f"writer schema cannot be read as the reader schema: "
                                    f"{problem}", node, flat, bounds)
        except (ValueError, KeyError, TypeError) as exc:
            plan = _WriterPlan(None, None, f"invalid writer schema: {exc}")
        except RecursionError:
            # parse_schema bounds the depth first, so this is a guard, not a path
            plan = _WriterPlan(None, None, "invalid writer schema: it nests too deeply")
        if len(self._plans) >= MAX_CACHED_WRITER_SCHEMAS:
            self._plans.pop(next(iter(self._plans)))
        self._plans[writer_schema] = plan
        return plan

    def decode(self, payloads: pa.BinaryArray | pa.LargeBinaryArray,
               writer_schema: str, *, skip: int = 0) -> Decoded:
        """Every payload read with ``writer_schema`` and resolved to the reader schema:
        flat records of primitive fields by the vectorized path (the records it gives up
        on by fastavro), everything else by fastavro. ``skip``: bytes before each payload
        (a framing header every non-null value has), read past in place."""
        plan = self._plan(writer_schema)
        if plan.flat is not None and plan.writer_node is not None:
            try:
                raw, gave_up = decode_flat(payloads, plan.writer_node, plan.flat,
                                           self._raw_type, skip=skip)
                array = from_raw(raw, self._mapped)
            except (_RecordFailed, pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                return self._decode_each(payloads, plan, skip)
            if not gave_up.any():
                return Decoded(array, np.zeros(len(payloads), dtype=bool), {})
            rows = np.flatnonzero(gave_up)
            rest = self._decode_each(payloads.take(pa.array(rows)), plan, skip)
            position = np.arange(len(payloads), dtype=np.int64)
            position[rows] = len(payloads) + np.arange(len(rows))
            failed = np.zeros(len(payloads), dtype=bool)
            failed[rows] = rest.failed
            errors = {int(rows[j]): why for j, why in rest.errors.items()}
            return Decoded(pa.concat_arrays([array, rest.array]).take(pa.array(position)),
                           failed, errors)
        return self._decode_each(payloads, plan, skip)

    def _decode_each(self, payloads: pa.BinaryArray | pa.LargeBinaryArray,
                     plan: _WriterPlan, skip: int = 0) -> Decoded:
        """fastavro per record, the Arrow column built from the decoded values."""
        values = payloads.to_pylist()
        if skip:
            values = [None if v is None else v[skip:] for v in values]
        n = len(values)
        failed = np.zeros(n, dtype=bool)
        errors: dict[int, str] = {}
        decoded: list[Any] = [None] * n
        if plan.problem is not None:
            for i, v in enumerate(values):
                if v is not None:
                    failed[i] = True
                    errors[i] = plan.problem
            return Decoded(pa.nulls(n, self.arrow_type), failed, errors)
        read = fastavro.schemaless_reader
        writer, reader = plan.writer, plan.reader
        tagged = self._tagged
        bounds = plan.bounds
        for i, v in enumerate(values):
            if v is None:
                continue
            if bounds is not None:
                refused = bounds.problem(v)
                if refused is not None:
                    failed[i] = True
                    errors[i] = refused
                    continue
            try:
                decoded[i] = read(io.BytesIO(v), writer, reader, return_named_type=tagged)
            except Exception as exc:  # noqa: BLE001 (any failure of one record fails it alone)
                failed[i] = True
                errors[i] = f"Avro record cannot be decoded: {type(exc).__name__}: {exc}"
        return Decoded(self._build(decoded, failed, errors), failed, errors)

    def _build(self, decoded: list[Any], failed: np.ndarray, errors: dict[int, str]) -> pa.Array:
        """The Arrow column; a record whose value cannot be converted (found by converting
        the records alone once the column fails) is failed and left null."""
        try:
            return self._to_arrow(decoded)
        except (_RecordFailed, pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as first:
            for i, v in enumerate(decoded):
                if v is None:
                    continue
                try:
                    self._to_arrow([v])
                except (_RecordFailed, pa.ArrowInvalid, pa.ArrowTypeError,
                        OverflowError) as exc:
                    failed[i] = True
                    errors[i] = f"Avro value does not fit the Spark type: {exc}"
                    decoded[i] = None
            if not failed.any():
                raise first
            return self._to_arrow(decoded)

    def _to_arrow(self, decoded: list[Any]) -> pa.Array:
        if self._tagged:
            return to_arrow(decoded, self._mapped)
        return from_raw(pa.array(decoded, self._raw_type), self._mapped)


class PayloadDecoder(Protocol):
    """What ``decode_framed`` needs of a decoder: ``AvroDecoder``, or json_schema's
    ``JsonSchemaDecoder`` (a protocol, so this module does not import the JSON one)."""

    @property
    def arrow_type(self) -> pa.DataType: ...

    def decode(self, payloads: pa.BinaryArray | pa.LargeBinaryArray, writer_schema: str,
               *, skip: int = 0) -> Decoded: ...


def decode_framed(values: pa.BinaryArray | pa.LargeBinaryArray, decoder: PayloadDecoder,
                  writer_schema_for_id: Callable[[int], str]) -> Decoded:
    """Confluent-framed values decoded: each schema id's records together (one writer schema
    per group, looked up once), the results put back in the records' order; a record not in
    the wire format fails with the reason its first bytes give."""
    frames = split_frames(values)
    n = len(frames.framed)
    failed = np.zeros(n, dtype=bool)
    errors: dict[int, str] = {}
    valid = np.asarray(pa.compute.is_valid(values)) if n else np.zeros(0, dtype=bool)
    for i in np.flatnonzero(valid & ~frames.framed):
        failed[i] = True
        errors[int(i)] = frames.reason(int(i))
    ids = frames.schema_ids
    framed_ids = ids[frames.framed]
    pieces: list[tuple[np.ndarray, pa.Array]] = []
    for schema_id in np.unique(framed_ids):
        where = np.flatnonzero(ids == schema_id)
        try:
            writer = writer_schema_for_id(int(schema_id))
        except Exception as exc:  # noqa: BLE001 (the lookup's failure fails its records)
            reason = f"writer schema {int(schema_id)} not available: {exc}"
            failed[where] = True
            errors.update((int(i), reason) for i in where)
            continue
        if len(where) == n:
            # every record framed with this id: read past the headers in place (no copy of
            # the payloads, no gather, no scatter)
            return decoder.decode(frames.values, writer, skip=FRAME_HEADER_SIZE)
        part = decoder.decode(frames.payloads.take(pa.array(where)), writer)
        failed[where[part.failed]] = True
        errors.update((int(where[j]), why) for j, why in part.errors.items())
        pieces.append((where, part.array))
    if not pieces:
        return Decoded(pa.nulls(n, decoder.arrow_type), failed, errors)
    order = np.concatenate([w for w, _ in pieces])
    column = pa.concat_arrays([a for _, a in pieces])
    # positions of each record in `column`, nulls where no piece holds it
    position = np.full(n, -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    indices = pa.array(position, mask=position < 0)
    return Decoded(column.take(indices), failed, errors)


# ---------------------------------------------------------------------------- encoding


def _unscaled(arr: pa.Array) -> list[int | None]:
    """decimal128 -> its unscaled ints (two 64-bit words per value, read with numpy)."""
    words = np.frombuffer(arr.buffers()[1], dtype="<u8")[2 * arr.offset: 2 * (arr.offset +
                                                                              len(arr))]
    lo, hi = words[0::2].tolist(), words[1::2].astype(np.int64).tolist()
    valid = arr.is_valid().to_pylist() if arr.null_count else [True] * len(arr)
    return [(h << 64) | lo_ if ok else None for lo_, h, ok in zip(lo, hi, valid, strict=True)]


def from_arrow(arr: pa.Array, m: Mapped) -> list[Any]:
    """An Arrow column -> values fastavro writes for the Avro type ``m`` maps (the reverse
    of ``to_arrow``: timestamps back to their unit, dates to days, decimals to bytes)."""
    kind = m.kind
    if kind == "nullable":
        assert m.item is not None
        return from_arrow(arr, m.item)
    if kind == "date":
        return arr.cast(pa.int32()).to_pylist()
    if kind in ("timestamp-millis", "local-timestamp-millis"):
        micros = np.asarray(arr.cast(pa.int64()).fill_null(0))
        out = (micros // 1000).tolist()
        return [None if not ok else v
                for v, ok in zip(out, arr.is_valid().to_pylist(), strict=True)]
    if kind in ("timestamp-micros", "local-timestamp-micros"):
        return arr.cast(pa.int64()).to_pylist()
    if kind == "decimal":
        size = m.avro.get("size")
        out_d: list[Any] = []
        for u in _unscaled(arr.cast(m.arrow)):
            if u is None:
                out_d.append(None)
            elif size is not None:
                out_d.append(u.to_bytes(size, "big", signed=True))
            else:
                out_d.append(u.to_bytes(max(1, (u.bit_length() + 8) // 8), "big", signed=True))
        return out_d
    if kind == "record":
        valid = arr.is_valid().to_pylist()
        columns = [from_arrow(arr.field(name), child) for name, child in m.fields]
        names = [name for name, _ in m.fields]
        return [dict(zip(names, row, strict=True)) if ok else None
                for ok, row in zip(valid, zip(*columns, strict=True), strict=True)] if columns \
            else [{} if ok else None for ok in valid]
    if kind == "array":
        assert m.item is not None
        flat = from_arrow(arr.flatten(), m.item)
        out_a: list[Any] = []
        at = 0
        for length, ok in zip(arr.value_lengths().fill_null(0).to_pylist(),
                              arr.is_valid().to_pylist(), strict=True):
            out_a.append(flat[at: at + length] if ok else None)
            at += length
        return out_a
    if kind == "map":
        assert m.item is not None
        # MapArray.keys/items ignore a slice's offset: cut them with the slice's offsets
        offsets = arr.offsets
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        keys = arr.keys.slice(first, last - first).to_pylist()
        items = from_arrow(arr.items.slice(first, last - first), m.item)
        out_m: list[Any] = []
        at = 0
        for length, ok in zip(np.diff(np.asarray(offsets)).tolist(),
                              arr.is_valid().to_pylist(), strict=True):
            out_m.append(dict(zip(keys[at: at + length], items[at: at + length], strict=True))
                         if ok else None)
            at += length
        return out_m
    if kind == "widened":
        # [int, long] / [float, double] hold Spark's long / double: written as the wider
        # branch, which holds every value (by value fastavro would pick int for small longs)
        wider = "long" if m.spark == "long" else "double"
        return [None if v is None else (wider, v) for v in arr.to_pylist()]
    if kind == "members":
        columns = [from_arrow(arr.field(name), child) for name, child in m.fields]
        branch_nodes = [node for node, _ in m.branches]
        out_u: list[Any] = []
        for row, ok in enumerate(arr.is_valid().to_pylist()):
            value: Any = None
            if ok:
                for node, column in zip(branch_nodes, columns, strict=True):
                    if column[row] is not None:
                        # fastavro's tuple notation names the branch: by type guessing it
                        # would write a string that is an enum symbol as the enum
                        named = node["type"] in ("record", "enum", "fixed")
                        value = (node["name"] if named else node["type"], column[row])
                        break
            out_u.append(value)
        return out_u
    return arr.to_pylist()


def to_raw(arr: pa.Array, m: Mapped) -> pa.Array:
    """A Spark-typed column back to ``raw_arrow(m)``'s values, vectorized (the reverse of
    ``from_raw``): timestamps to their unit (microseconds to milliseconds rounding down, as
    Spark's microsToMillis), dates to days, decimals to their two's complement bytes."""
    kind = m.kind
    if kind == "nullable":
        assert m.item is not None
        return to_raw(arr, m.item)
    if kind == "date":
        return arr.cast(pa.int32())
    if kind in ("timestamp-millis", "local-timestamp-millis"):
        micros = np.asarray(arr.cast(pa.int64()).fill_null(0))
        mask = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
        return pa.array(np.floor_divide(micros, 1000), pa.int64(), mask=mask)
    if kind in ("timestamp-micros", "local-timestamp-micros"):
        return arr.cast(pa.int64())
    if kind == "decimal":
        return pa.array(from_arrow(arr, m), pa.binary())
    if kind == "record":
        children = [to_raw(arr.field(name), c) for name, c in m.fields]
        return pa.StructArray.from_arrays(children, fields=list(raw_arrow(m)),
                                          mask=arr.is_null() if arr.null_count else None)
    return arr


def conform(array: pa.Array, m: Mapped) -> pa.Array:
    """A struct column given to a record schema it does not match field for field (a write
    with the registry's schema, ``use.latest.version``, rather than one derived from the
    column): the schema's fields in its order, each child cast to the schema's type where
    Arrow can do it without loss (int to long; an overflow is an error), a field the column
    lacks filled with the schema's default (ValueError without one, naming it), a column's
    field the schema lacks left out, as Confluent's serializers leave out what the schema
    does not name."""
    if m.kind != "record" or not pa.types.is_struct(array.type) or array.type == m.arrow:
        return array
    assert isinstance(array, pa.StructArray)
    given = {f.name for f in array.type}
    entries = {e["name"]: e for e in m.avro["fields"]}
    children = []
    for name, child in m.fields:
        if name in given:
            column = conform(array.field(name), child)
            if column.type != child.arrow:
                column = column.cast(child.arrow)
        else:
            entry = entries.get(name, {})
            if "default" not in entry:
                raise ValueError(f"the schema's field {name!r} is not in the column and has "
                                 "no default")
            default = entry["default"]
            raw_type = raw_arrow(child)
            if isinstance(default, str) and pa.types.is_binary(raw_type):
                default = default.encode("latin-1")  # Avro's bytes defaults: code points
            column = from_raw(pa.array([default] * len(array), type=raw_type), child)
        children.append(column)
    return pa.StructArray.from_arrays(children, fields=list(m.arrow),
                                      mask=array.is_null() if array.null_count else None)


class AvroEncoder:
    """Encodes an Arrow column (Spark's type for ``schema``, as ``to_avro`` expects it) as
    Avro binary, one value per row; nulls stay null (a tombstone)."""

    def __init__(self, schema: str, *, vectorized: bool = True) -> None:
        self.schema = schema
        #: encode flat records of primitive fields with numpy (False: fastavro per row)
        self.vectorized = vectorized
        self._setup()

    def _setup(self) -> None:
        self._node = parse_schema(self.schema)
        self._mapped = to_spark(self._node)
        self._fastavro = _fastavro_schema(self._node)
        self._leaves = flat_leaves(self._node)
        self._raw_type = raw_arrow(self._mapped)

    def __getstate__(self) -> dict[str, Any]:
        return {"schema": self.schema, "vectorized": self.vectorized}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    @property
    def arrow_type(self) -> pa.DataType:
        return self._mapped.arrow

    def encode(self, array: pa.StructArray | pa.Array) -> pa.BinaryArray:
        """Avro binary of each row (fastavro's schemaless writer); a row that does not fit
        the schema raises ValueError naming the row."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        array = conform(array, self._mapped)
        if self.vectorized and self._leaves is not None:
            try:
                encoded = encode_flat(to_raw(array, self._mapped), self._leaves)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                encoded = None  # fastavro below names the row at fault
            if encoded is not None:
                return encoded
        valid = array.is_valid().to_pylist()
        values = from_arrow(array, self._mapped)
        out: list[bytes | None] = []
        write = fastavro.schemaless_writer
        buffer = io.BytesIO()
        for row, (ok, value) in enumerate(zip(valid, values, strict=True)):
            if not ok:
                out.append(None)
                continue
            buffer.seek(0)
            buffer.truncate()
            try:
                write(buffer, self._fastavro, value)
            except Exception as exc:
                raise ValueError(f"row {row} cannot be written with the Avro schema: "
                                 f"{type(exc).__name__}: {exc}") from exc
            out.append(buffer.getvalue())
        return pa.array(out, pa.binary())
