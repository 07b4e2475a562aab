"""JSON Schema values (Confluent's ``JSONSerializer``): schema -> Spark/Arrow type, JSON text
<-> Arrow (issue 32).

Spark has no built-in mapping for JSON Schema, so kafkawire chooses the one a user expects:

* ``object`` with ``properties`` -> struct, fields in declaration order, every field nullable
  (``required`` is not turned into a non-null field: Spark makes every column of a source
  nullable anyway, and a record of an older schema version may lack a field a newer one
  requires; nulls are always allowed where the schema allows absence or ``null``);
* ``object`` without ``properties`` whose ``additionalProperties`` is a schema -> map<string, T>;
* ``array`` with ``items`` -> array; ``string`` -> string, ``format: date`` -> date,
  ``format: date-time`` -> timestamp (UTC), ``contentEncoding: base64`` -> binary;
  ``integer`` -> long; ``number`` -> double; ``boolean`` -> boolean;
* ``["T", "null"]``, ``oneOf``/``anyOf`` of T and ``null`` -> nullable T; ``allOf`` of one
  schema -> that schema; ``$ref`` into ``definitions`` / ``$defs`` (or ``#``) resolved, and a
  ``$ref`` naming a registry reference resolved by the schemas the caller passes;
* everything else (several types, ``oneOf`` of several object types, objects without a
  declared shape, a recursive ``$ref``) -> string holding the value's JSON text.

Decoding: a batch of a type Arrow's JSON reader converts as kafkawire does (structs, arrays,
strings, longs, doubles, booleans) is read by it in one call, as NDJSON; otherwise, or when a
record does not fit, each payload is parsed by ``json.loads`` and converted along the mapping,
the column built by one ``pa.array``; records are NOT validated against the schema with a validator
(too slow per record), only checked to fit the Spark type (a string where a long is declared
fails the record). This module does no I/O and needs no pyspark.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import io
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json

from spark_kafka_wire.formats.avro_codec import Decoded
from spark_kafka_wire.formats.binary import binary_parts
from spark_kafka_wire.formats.errors import SchemaTooComplexError
from spark_kafka_wire.formats.limits import MAX_NESTING_DEPTH, MAX_SCHEMA_NODES
from spark_kafka_wire.protocol.primitives import INT64_MAX

#: draft of the schemas kafkawire derives for a write
DERIVED_DRAFT = "http://json-schema.org/draft-07/schema#"


@dataclass
class JsonMapped:
    """One JSON Schema node mapped: ``kind`` (struct, array, map, string, json, binary,
    date, timestamp, long, double, boolean), its Spark type's JSON form and Arrow type."""

    kind: str
    spark: Any
    arrow: pa.DataType
    fields: list[tuple[str, JsonMapped]] = field(default_factory=list)
    item: JsonMapped | None = None


_SCALARS: dict[str, tuple[str, Any, pa.DataType]] = {
    "integer": ("long", "long", pa.int64()),
    "number": ("double", "double", pa.float64()),
    "boolean": ("boolean", "boolean", pa.bool_()),
}


#: the mapping of every node kept as JSON text: one object, shared (mappings are never
#: changed once built)
_JSON_TEXT = JsonMapped("json", "string", pa.string())


def _json_text() -> JsonMapped:
    return _JSON_TEXT


class _Resolver:
    """``$ref`` resolution: JSON pointers into the document being read, and registry
    references by name (each parsed once)."""

    def __init__(self, root: Any, references: Mapping[str, str]) -> None:
        self.root = root
        self.references = {k: json.loads(v) if isinstance(v, str) else v
                           for k, v in references.items()}

    def resolve(self, ref: str, doc: Any) -> tuple[Any, Any]:
        """(the node ``ref`` points at, the document it is in)."""
        target, _, pointer = ref.partition("#")
        if target:
            if target not in self.references:
                raise ValueError(f"$ref {ref!r} names no schema reference of this schema "
                                 f"(references: {sorted(self.references)})")
            doc = self.references[target]
        node = doc
        for part in [p for p in pointer.split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            elif isinstance(node, dict) and part in node:
                node = node[part]
            else:
                raise ValueError(f"$ref {ref!r} points at nothing in its schema")
        return node, doc


def _non_null(branches: list[Any]) -> list[Any]:
    return [b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")]


_KIND = "JSON Schema"


class _Expansion:
    """One schema being mapped. A ``$ref`` is expanded wherever it is used, so a 2 KB schema
    whose definitions each use the next twice expanded to 2**21 nodes (13 s, 370 MiB at
    planning; issue 45). A target's mapping is kept per ``$ref`` and used again where the
    mapping cannot differ: when no recursive ``$ref`` was cut inside it (a cut depends on
    which ``$ref``s enclose it). The expanded type's nodes are counted, memoised ones by
    their size, and a schema beyond MAX_SCHEMA_NODES nodes or nesting deeper than
    MAX_NESTING_DEPTH is refused (SchemaTooComplexError) while it is mapped. Chains of
    ``$ref``, ``oneOf`` and ``allOf`` are followed in a loop, so Python recurses only per
    nesting level of the Spark type."""

    def __init__(self, res: _Resolver) -> None:
        self.res = res
        self.active: set[str] = set()  # the $refs being expanded: one met again is cut
        self.memo: dict[str, tuple[JsonMapped, int, int]] = {}  # -> (mapping, nodes, height)
        self.targets: dict[str, tuple[Any, Any]] = {}  # each $ref resolved once
        self.nodes = 0
        self.cuts = 0
        self.reach = 0  # the deepest nesting reached by the mapping under way

    def count(self, nodes: int) -> None:
        self.nodes += nodes
        if self.nodes > MAX_SCHEMA_NODES:
            raise SchemaTooComplexError(
                _KIND, f"its Spark type expands to more than {MAX_SCHEMA_NODES:,} nodes "
                "(definitions used in many places by $ref)")

    def nest(self, depth: int) -> None:
        if depth > MAX_NESTING_DEPTH:
            raise SchemaTooComplexError(
                _KIND, f"its Spark type nests objects, arrays and maps deeper than "
                f"{MAX_NESTING_DEPTH}")
        self.reach = max(self.reach, depth)

    def map(self, node: Any, doc: Any, depth: int) -> JsonMapped:
        """``node`` (in ``doc``) mapped, ``depth`` objects, arrays and maps inside."""
        chain: list[str] = []  # the $refs followed to the node mapped
        nodes, cuts, outer = self.nodes, self.cuts, self.reach
        self.reach = depth
        try:
            mapped = self._map(node, doc, depth, chain)
        finally:
            self.active.difference_update(chain)
        if chain and self.cuts == cuts:
            kept = (mapped, self.nodes - nodes, self.reach - depth)
            self.memo.update((key, kept) for key in chain)
        self.reach = max(self.reach, outer)
        return mapped

    def _map(self, node: Any, doc: Any, depth: int, chain: list[str]) -> JsonMapped:
        while isinstance(node, dict) and node:
            if "$ref" in node:
                ref = node["$ref"]
                key = f"{id(doc)}:{ref}"
                if key in self.active:  # recursive: Spark types are finite, JSON text kept
                    self.cuts += 1
                    break
                if key in self.memo:
                    mapped, nodes, height = self.memo[key]
                    self.nest(depth + height)
                    self.count(nodes)
                    return mapped
                self.active.add(key)
                chain.append(key)
                if key not in self.targets:
                    self.targets[key] = self.res.resolve(ref, doc)
                node, doc = self.targets[key]
                continue
            combinator = next((c for c in ("oneOf", "anyOf") if c in node), None)
            if combinator is not None:
                branches = _non_null(node[combinator])
                if len(branches) != 1:
                    break
                node = branches[0]
                continue
            if "allOf" in node:
                if len(node["allOf"]) != 1:
                    break
                node = node["allOf"][0]
                continue
            return self._typed(node, doc, depth)
        self.count(1)
        return _json_text()

    def _typed(self, node: dict[str, Any], doc: Any, depth: int) -> JsonMapped:
        kind = node.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"]
            if len(kinds) != 1:
                self.count(1)
                return _json_text()
            kind = kinds[0]
        if kind is None and "properties" in node:
            kind = "object"
        if kind is None and "items" in node:
            kind = "array"
        self.count(1)
        if kind == "object":
            props = node.get("properties")
            if props:
                self.nest(depth + 1)
                fields = [(name, self.map(sub, doc, depth + 1)) for name, sub in props.items()]
                return JsonMapped(
                    "struct",
                    {"type": "struct", "fields": [{"name": n, "type": m.spark, "nullable": True,
                                                   "metadata": {}} for n, m in fields]},
                    pa.struct([pa.field(n, m.arrow) for n, m in fields]), fields=fields)
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                self.nest(depth + 1)
                item = self.map(extra, doc, depth + 1)
                return JsonMapped("map", {"type": "map", "keyType": "string",
                                          "valueType": item.spark, "valueContainsNull": True},
                                  pa.map_(pa.field("key", pa.string(), False),
                                          pa.field("value", item.arrow)), item=item)
            return _json_text()
        if kind == "array":
            self.nest(depth + 1)
            items = node.get("items")
            if isinstance(items, dict):
                item = self.map(items, doc, depth + 1)
            else:
                self.count(1)
                item = _json_text()
            return JsonMapped("array", {"type": "array", "elementType": item.spark,
                                        "containsNull": True}, pa.list_(item.arrow), item=item)
        if kind == "string":
            fmt = node.get("format")
            if fmt == "date":
                return JsonMapped("date", "date", pa.date32())
            if fmt == "date-time":
                return JsonMapped("timestamp", "timestamp", pa.timestamp("us", tz="UTC"))
            if node.get("contentEncoding") == "base64":
                return JsonMapped("binary", "binary", pa.binary())
            return JsonMapped("string", "string", pa.string())
        if kind in _SCALARS:
            k, spark, arrow = _SCALARS[kind]
            return JsonMapped(k, spark, arrow)
        if kind is None and "enum" in node and all(isinstance(v, str) for v in node["enum"]):
            return JsonMapped("string", "string", pa.string())
        return _json_text()


def map_schema(schema: str | Any, references: Mapping[str, str] | None = None) -> JsonMapped:
    """The mapping of a JSON Schema (text or loaded). ``references``: the schemas a ``$ref``
    may name (reference name as in the registry's ``references`` -> schema text).
    SchemaTooComplexError when it nests deeper than MAX_NESTING_DEPTH or expands to more
    than MAX_SCHEMA_NODES nodes."""
    try:
        root = json.loads(schema) if isinstance(schema, str) else schema
        expansion = _Expansion(_Resolver(root, references or {}))
    except RecursionError:  # text nesting deeper than json.loads recurses
        raise SchemaTooComplexError(_KIND, f"it nests deeper than {MAX_NESTING_DEPTH}") \
            from None
    return expansion.map(root, root, 0)


#: the kinds Arrow's own JSON reader converts exactly as ``_convert`` does
_NATIVE_KINDS = frozenset({"struct", "array", "string", "long", "double", "boolean"})


def _native(m: JsonMapped) -> bool:
    """Whether Arrow's JSON reader gives ``m``'s column as ``_convert`` would (no maps,
    dates, timestamps, base64 or JSON-text fields, whose conversion is kafkawire's)."""
    return m.kind in _NATIVE_KINDS and all(_native(sub) for _, sub in m.fields) and \
        (m.item is None or _native(m.item))


class _Misfit(Exception):
    """A record whose JSON does not fit the mapped type."""


def _parse_timestamp(text: str) -> dt.datetime:
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:  # RFC 3339 requires an offset; a bare one is read as UTC
        value = value.replace(tzinfo=dt.timezone.utc)
    return value


def _text(value: str) -> str:
    """``value`` if it is Unicode text: JSON's ``\\ud800`` escapes a lone UTF-16 surrogate,
    which json.loads keeps and no UTF-8 string (an Arrow or Spark string) can hold; such a
    record fails alone instead of failing the batch's ``pa.array``."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _Misfit("a string holds a lone UTF-16 surrogate (\\ud800-\\udfff), "
                          "which is not Unicode text") from None
    return value


def _convert(value: Any, m: JsonMapped) -> Any:
    """A parsed JSON value as ``pa.array`` takes it for ``m``'s Arrow type."""
    if value is None:
        return None
    kind = m.kind
    if kind == "json":
        return _text(value) if isinstance(value, str) \
            else json.dumps(value, separators=(",", ":"))  # ASCII: surrogates escaped
    if kind == "struct":
        if not isinstance(value, dict):
            raise _Misfit(f"expected an object, got {type(value).__name__}")
        return {name: _convert(value.get(name), sub) for name, sub in m.fields}
    if kind == "array":
        if not isinstance(value, list):
            raise _Misfit(f"expected an array, got {type(value).__name__}")
        assert m.item is not None
        return [_convert(v, m.item) for v in value]
    if kind == "map":
        if not isinstance(value, dict):
            raise _Misfit(f"expected an object, got {type(value).__name__}")
        assert m.item is not None
        return [(_text(k), _convert(v, m.item)) for k, v in value.items()]
    if kind == "long":
        if isinstance(value, bool) or not isinstance(value, int):
            if not (isinstance(value, float) and value.is_integer()):
                raise _Misfit(f"expected an integer, got {value!r}")
            value = int(value)
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise _Misfit(f"{value} does not fit a 64-bit long")
        return value
    if kind == "double":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Misfit(f"expected a number, got {value!r}")
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits: infinite, as Arrow's
            return math.inf if value > 0 else -math.inf  # reader and Jackson read it
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _Misfit(f"expected a boolean, got {value!r}")
        return value
    if not isinstance(value, str):
        raise _Misfit(f"expected a string, got {value!r}")
    value = _text(value)
    try:
        if kind == "date":
            return dt.date.fromisoformat(value)
        if kind == "timestamp":
            return _parse_timestamp(value)
        if kind == "binary":
            return base64.b64decode(value, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise _Misfit(f"{value!r} is not a {kind}: {exc}") from exc
    return value


#: JSON's bytes the depth scan looks for: ``[`` and ``{`` are 0x5B and 0x7B, ``]`` and ``}``
#: 0x5D and 0x7D, so ``byte | 0x20`` tells each pair in one comparison
_OPEN, _CLOSE, _QUOTE, _BACKSLASH = 0x7B, 0x7D, 0x22, 0x5C


def _too_deep(payloads: pa.BinaryArray | pa.LargeBinaryArray, skip: int) -> np.ndarray:
    """Which payloads (after ``skip`` bytes) nest arrays and objects deeper than
    MAX_NESTING_DEPTH: such a record fails (issue 45) before ``json.loads``, whose recursion
    a 2 KB ``[[[...]]]`` exhausted (RecursionError, failing the whole batch), and before
    Arrow's reader, which would take it. A payload with no more ``[`` and ``{`` than the
    bound cannot be deeper; the others are scanned together, by their brackets and quotes
    only: a bracket counts outside strings, a quote ends a string unless an odd run of
    backslashes escapes it. Bytes that are not JSON get some depth here, and fail in
    ``json.loads`` if not here."""
    parts = binary_parts(payloads)
    offsets, data = parts.offsets, parts.data
    ends = offsets[1:]
    starts = np.minimum(offsets[:-1] + skip, ends)
    deep = np.zeros(len(ends), dtype=bool)
    rows = np.flatnonzero(parts.valid & (ends - starts > MAX_NESTING_DEPTH))
    if not len(rows):
        return deep
    # the ``[`` and ``{`` of each payload: sums over [start, end), every other segment
    folded = data | 0x20
    opens = np.zeros(len(data) + 1, dtype=np.uint8)
    opens[:-1] = folded == _OPEN
    bounds = np.column_stack([starts[rows], ends[rows]]).ravel()
    counts = np.add.reduceat(opens, bounds, dtype=np.int32)[::2]
    rows = rows[counts > MAX_NESTING_DEPTH]
    if not len(rows):
        return deep
    # the brackets and quotes of those payloads, one payload after another
    marks = np.flatnonzero((folded == _OPEN) | (folded == _CLOSE) | (data == _QUOTE))
    begin, end = starts[rows], ends[rows]
    low = np.searchsorted(marks, begin)
    count = np.searchsorted(marks, end) - low
    first = np.zeros(len(rows), dtype=np.int64)  # where each payload's marks begin
    np.cumsum(count[:-1], out=first[1:])
    at = marks[np.repeat(low - first, count) + np.arange(int(count.sum()))]
    row = np.repeat(np.arange(len(rows)), count)
    byte = data[at]
    quote = byte == _QUOTE
    # a quote after a backslash: escaped if the run of backslashes before it (within its
    # payload) is odd
    slashed = np.flatnonzero(quote & (at > begin[row]))
    slashed = slashed[data[at[slashed] - 1] == _BACKSLASH]
    if len(slashed):
        slashes = np.flatnonzero(data == _BACKSLASH)
        new_run = np.ones(len(slashes), dtype=bool)
        new_run[1:] = np.diff(slashes) != 1
        run_start = slashes[np.maximum.accumulate(
            np.where(new_run, np.arange(len(slashes)), 0))]
        after = at[slashed]
        run = after - np.maximum(run_start[np.searchsorted(slashes, after - 1)],
                                 begin[row[slashed]])
        quote[slashed[run % 2 == 1]] = False
    # a bracket counts outside strings: after an even number of quotes in its payload
    quotes = np.zeros(len(at) + 1, dtype=np.int64)
    np.cumsum(quote, out=quotes[1:])
    outside = (quotes[:-1] - quotes[first][row]) % 2 == 0
    step = np.where(outside & (byte != _QUOTE), np.where((byte | 0x20) == _OPEN, 1, -1), 0)
    level = np.zeros(len(at) + 1, dtype=np.int64)
    np.cumsum(step, out=level[1:])
    deep[rows] = np.maximum.reduceat(level[1:], first) - level[first] > MAX_NESTING_DEPTH
    return deep


class JsonSchemaDecoder:
    """Decodes JSON payloads to the Arrow type of a reader JSON Schema. The writer schema
    (the record's id) does not change how JSON text is read: fields are found by name, so
    the decoder takes it only to match ``AvroDecoder.decode`` (``decode_framed`` calls it)."""

    def __init__(self, reader_schema: str, references: Mapping[str, str] | None = None) -> None:
        self.reader_schema = reader_schema
        self.references = dict(references or {})
        self.mapped = map_schema(reader_schema, self.references)
        self.native = self.mapped.kind == "struct" and _native(self.mapped)

    @property
    def spark_type_json(self) -> Any:
        return self.mapped.spark

    @property
    def arrow_type(self) -> pa.DataType:
        return self.mapped.arrow

    def decode(self, payloads: pa.BinaryArray | pa.LargeBinaryArray, writer_schema: str = "",
               *, skip: int = 0) -> Decoded:
        """Each payload (after ``skip`` bytes) parsed and converted; a payload that is not
        JSON (UTF-8), nests deeper than MAX_NESTING_DEPTH or does not fit the type fails,
        null in the result."""
        raws = payloads.to_pylist()
        failed = _too_deep(payloads, skip)
        errors = {int(i): f"JSON nested deeper than {MAX_NESTING_DEPTH} arrays and objects, "
                          "the most a record may nest" for i in np.flatnonzero(failed)}
        for i in errors:
            raws[i] = None
        if self.native:
            fast = self._decode_native(raws, skip)
            if fast is not None:
                return Decoded(fast.array, failed, errors)
        values: list[Any] = []
        for i, raw in enumerate(raws):
            if raw is None:
                values.append(None)
                continue
            try:
                values.append(_convert(json.loads(raw[skip:]), self.mapped))
            # JSONDecodeError and UnicodeDecodeError are ValueErrors; RecursionError cannot
            # happen below MAX_NESTING_DEPTH, and would fail this record alone
            except (ValueError, _Misfit, RecursionError) as exc:
                failed[i] = True
                errors[i] = f"not JSON of the reader schema: {exc}"
                values.append(None)
        return Decoded(pa.array(values, type=self.arrow_type), failed, errors)

    def _decode_native(self, raws: list[bytes | None], skip: int) -> Decoded | None:
        """The batch read by Arrow's JSON reader as NDJSON (5x ``json.loads`` on 230-byte
        records), or None when some record is not one JSON object of the type (then each
        record is decoded alone, to say which fails). A newline outside a JSON string is
        whitespace and one inside must be escaped, so a payload's newlines become spaces."""
        present = [i for i, raw in enumerate(raws) if raw is not None]
        # Arrow reads a top-level ``null`` as a row of null fields, where it is a null value
        if not present or any(raws[i][skip:].lstrip()[:1] != b"{" for i in present):  # type: ignore[index]
            return None
        text = b"\n".join(raws[i][skip:].replace(b"\n", b" ").replace(b"\r", b" ")  # type: ignore[index]
                          for i in present)
        struct = self.arrow_type
        try:
            table = pa_json.read_json(io.BytesIO(text), parse_options=pa_json.ParseOptions(
                explicit_schema=pa.schema(list(struct)), unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return None
        if table.num_rows != len(present):  # a payload of several objects, or none
            return None
        array = pa.StructArray.from_arrays(
            [table.column(f.name).combine_chunks() for f in struct], fields=list(struct)) \
            if struct.num_fields else pa.array([{}] * len(present), struct)
        if len(present) < len(raws):
            position = np.full(len(raws), -1, dtype=np.int64)
            position[present] = np.arange(len(present))
            array = array.take(pa.array(position, mask=position < 0))
        return Decoded(array, np.zeros(len(raws), dtype=bool), {})


# ---------------------------------------------------------------------------- encoding


def json_value(value: Any, arrow: pa.DataType) -> Any:
    """A Python value of Arrow type ``arrow`` (``to_pylist``) as a JSON-ready value:
    timestamps ISO-8601 (UTC with ``Z`` where the type has a zone), dates ISO, bytes base64,
    decimals as numbers, maps as objects. The JSON Schema writer's form, and the one
    ``kafkawire consume`` shows decoded registry records in (one rule for both)."""
    if value is None:
        return None
    if pa.types.is_struct(arrow):
        return {arrow.field(i).name: json_value(value.get(arrow.field(i).name),
                                              arrow.field(i).type)
                for i in range(arrow.num_fields)}
    if pa.types.is_map(arrow):
        return {str(k): json_value(v, arrow.item_type) for k, v in value}
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return [json_value(v, arrow.value_type) for v in value]
    if pa.types.is_timestamp(arrow):
        if arrow.tz is not None:
            return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z")
        return value.isoformat()
    if pa.types.is_date(arrow):
        return value.isoformat()
    if pa.types.is_binary(arrow) or pa.types.is_large_binary(arrow):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return float(value)
    return value


class JsonSchemaEncoder:
    """Encodes an Arrow column to JSON text payloads (UTF-8, compact separators)."""

    def __init__(self, schema: str) -> None:
        self.schema = schema

    def encode(self, array: pa.Array) -> pa.BinaryArray:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        arrow = array.type
        dumps: Callable[[Any], str] = json.JSONEncoder(
            separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
        out = [None if v is None else dumps(json_value(v, arrow)).encode("utf-8")
               for v in array.to_pylist()]
        return pa.array(out, type=pa.binary())


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("type"), str) and schema["type"] not in ("object", "array"):
        return {**schema, "type": [schema["type"], "null"]}
    return {"oneOf": [{"type": "null"}, schema]}


def _derive(spark: Any) -> dict[str, Any]:
    if isinstance(spark, str):
        if spark in ("long", "integer", "short", "byte"):
            return {"type": "integer"}
        if spark in ("double", "float") or spark.startswith("decimal"):
            return {"type": "number"}
        if spark == "boolean":
            return {"type": "boolean"}
        if spark == "binary":
            return {"type": "string", "contentEncoding": "base64"}
        if spark == "date":
            return {"type": "string", "format": "date"}
        if spark == "timestamp":
            return {"type": "string", "format": "date-time"}
        if spark in ("string", "timestamp_ntz") or spark.startswith(("char", "varchar")):
            return {"type": "string"}
        raise ValueError(f"no JSON Schema for Spark type {spark!r}")
    kind = spark["type"]
    if kind == "struct":
        props = {}
        required = []
        for f in spark["fields"]:
            sub = _derive(f["type"])
            props[f["name"]] = _nullable(sub) if f.get("nullable", True) else sub
            if not f.get("nullable", True):
                required.append(f["name"])
        out: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            out["required"] = required
        return out
    if kind == "array":
        item = _derive(spark["elementType"])
        return {"type": "array",
                "items": _nullable(item) if spark.get("containsNull", True) else item}
    if kind == "map":
        value = _derive(spark["valueType"])
        return {"type": "object", "additionalProperties":
                _nullable(value) if spark.get("valueContainsNull", True) else value}
    raise ValueError(f"no JSON Schema for Spark type {spark!r}")


def json_schema_for(spark_type_json: Any) -> str:
    """The JSON Schema (draft-07, title ``topLevelRecord``) kafkawire registers for a column
    of this Spark type (its JSON form): nullable fields as ``["T", "null"]`` or a ``oneOf``
    with null, non-null fields ``required``, dates/timestamps as formatted strings, binary
    as base64 strings."""
    derived = _derive(spark_type_json)
    return json.dumps({"$schema": DERIVED_DRAFT, "title": "topLevelRecord", **derived})

