"""Protobuf values (Confluent's Protobuf framing) decoded to the Arrow type Spark's
``from_protobuf`` gives (spark-protobuf's SchemaConverters / ProtobufDeserializer rules).

Why this shape: messages are parsed by the ``protobuf`` runtime (upb, C), the only
well-kept parser of the wire format; our code only walks the parsed message into Python
values and builds the Arrow column once per batch. Descriptors come from the registry's
schema as a serialized FileDescriptorProto (base64), the form Apicurio/Confluent hand out;
``references`` are other files the schema imports. No I/O here and no pyspark.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
from google.protobuf import (  # noqa: F401 (the well-known files register in the default pool)
    any_pb2,
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    empty_pb2,
    field_mask_pb2,
    message_factory,
    struct_pb2,
    timestamp_pb2,
    wrappers_pb2,
)
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from spark_kafka_wire.formats.avro_codec import Decoded
from spark_kafka_wire.formats.confluent import split_frames
from spark_kafka_wire.formats.errors import SchemaTooComplexError
from spark_kafka_wire.formats.limits import MAX_NESTING_DEPTH, MAX_SCHEMA_NODES
from spark_kafka_wire.formats.protobuf_vector import FlatField, decode_flat, flat_fields
from spark_kafka_wire.protocol.primitives import INT64_MAX

#: Spark's limits for ``recursive.fields.max.depth`` (values outside refuse recursion)
MAX_RECURSIVE_DEPTH = 10
_WRAPPERS = {f"google.protobuf.{n}" for n in (
    "BoolValue", "Int32Value", "UInt32Value", "Int64Value", "UInt64Value", "StringValue",
    "BytesValue", "FloatValue", "DoubleValue")}

_INT32 = {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32,
          FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32}
_INT64 = {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64,
          FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64}

#: The field types read as Spark int / long, and the wrapper messages (the write side's too).
INT32_TYPES, INT64_TYPES, WRAPPER_MESSAGES = _INT32, _INT64, _WRAPPERS


# ---------------------------------------------------------------------------- framing


def _zigzag(n: int) -> int:
    return (n >> 1) ^ -(n & 1)


def read_message_indexes(buf: bytes | memoryview, pos: int = 0) -> tuple[list[int], int]:
    """Confluent's message indexes at ``pos``: a zigzag varint count, then that many zigzag
    varints; count 0 (a single 0 byte) means ``[0]``, the file's first message. Returns the
    indexes and the position of the payload."""
    values: list[int] = []
    count = -1
    while count < 0 or len(values) < count:
        shift = result = 0
        while True:
            if pos >= len(buf):
                raise ValueError("truncated message indexes")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise ValueError("message index varint too long")
        if count < 0:
            count = _zigzag(result)
            if count < 0:
                raise ValueError(f"negative message index count {count}")
            if count == 0:
                return [0], pos
        else:
            values.append(_zigzag(result))
    return values, pos


def write_message_indexes(indexes: list[int]) -> bytes:
    """Confluent's encoding of ``indexes`` (``[0]`` as the single byte 0, as its serializer)."""
    if indexes == [0]:
        return b"\x00"
    out = bytearray()
    for n in [len(indexes), *indexes]:
        z = (n << 1) ^ (n >> 63)
        while z > 0x7F:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
    return bytes(out)


# ---------------------------------------------------------------------------- descriptors


def file_descriptor_proto(schema: str | bytes) -> descriptor_pb2.FileDescriptorProto:
    """A schema as a FileDescriptorProto: base64 of a serialized one (what confluent-kafka
    Python registers, and what ``client/proto_text.binary_schemas`` makes of ``.proto``
    text, which the source and the sink compile before a codec sees it)."""
    raw = schema.encode() if isinstance(schema, str) else schema
    try:
        fdp = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(raw, validate=True))
    except Exception as exc:  # noqa: BLE001 (binascii.Error or DecodeError: not base64 FDP)
        raise ValueError("Protobuf schema is not a base64 serialized FileDescriptorProto "
                         f"(compile .proto text first: client/proto_text): {exc}") from None
    if not fdp.name:
        raise ValueError("Protobuf schema has no file name: not a FileDescriptorProto")
    return fdp


def build_pool(schema: str | bytes, references: Mapping[str, str | bytes] | None = None
               ) -> tuple[descriptor_pool.DescriptorPool, str]:
    """A descriptor pool holding the schema's file and its references (import name ->
    schema, each base64 binary: ``.proto`` text is compiled before, client/proto_text);
    google/protobuf well-known files come from the runtime. Returns the pool and the
    schema's file name."""
    pool = descriptor_pool.DescriptorPool()
    files = {name: file_descriptor_proto(s) for name, s in (references or {}).items()}
    main_fdp = file_descriptor_proto(schema)
    files[main_fdp.name] = main_fdp
    main_name = main_fdp.name
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        added.add(name)
        fdp = None if name.startswith("google/protobuf/") else files.get(name)
        if fdp is None:
            # a well-known file (google/protobuf/timestamp.proto ...) the runtime carries
            default = descriptor_pool.Default().FindFileByName(name)
            fdp = descriptor_pb2.FileDescriptorProto()
            default.CopyToProto(fdp)
            files[name] = fdp
        for dep in fdp.dependency:
            add(dep)
        pool.Add(fdp)

    for name in list(files):
        if not name.startswith("google/protobuf/"):
            add(name)
    return pool, main_name


def message_by_indexes(file_desc: Any, indexes: list[int]) -> Descriptor:
    """The message Confluent's indexes name: top-level index, then nested indexes."""
    types = list(file_desc.message_types_by_name.values())
    desc: Descriptor | None = None
    for i in indexes:
        if not 0 <= i < len(types):
            raise ValueError(f"message index {indexes} not in {file_desc.name}")
        desc = types[i]
        types = list(desc.nested_types)
    if desc is None:
        raise ValueError("empty message indexes")
    return desc


# ---------------------------------------------------------------------------- types


def is_well_known_pair(desc: Descriptor, name: str) -> bool:
    """``desc`` is google.protobuf's Timestamp or Duration (``name``): seconds and nanos."""
    return _is_pair(desc, name)


def _is_pair(desc: Descriptor, name: str) -> bool:
    return (desc.name == name and len(desc.fields) == 2 and desc.fields[0].name == "seconds"
            and desc.fields[1].name == "nanos")


def _field(name: str, spark: Any, nullable: bool) -> dict[str, Any]:
    return {"name": name, "type": spark, "nullable": nullable, "metadata": {}}


def _micros(m: Any) -> int:
    """A Timestamp's or Duration's seconds and nanos as Spark's microseconds: a record whose
    seconds do not fit 64 bits of microseconds (the wire allows any int64; valid Timestamps
    end at year 9999) fails alone, as Spark's exact multiplication fails it, rather than
    failing the batch's ``pa.array``."""
    micros = m.seconds * 1_000_000 + m.nanos // 1000
    if not -INT64_MAX - 1 <= micros <= INT64_MAX:
        raise ValueError(f"{m.DESCRIPTOR.name} of {m.seconds} seconds does not fit Spark's "
                         "64-bit microseconds")
    return micros


# a converter turns one parsed field value into the Python value pa.array takes
Conv = Callable[[Any], Any]


def _ident(v: Any) -> Any:
    return v


def _text(v: str | bytes) -> str:
    # upb hands a proto2 string with invalid UTF-8 back as bytes (proto3 refuses the
    # record); Java's runtime, which Spark uses, reads such bytes with U+FFFD in place of the
    # bad sequences, and a bytes value would fail the whole batch's Arrow build
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _s32(v: int) -> int:
    return v - (1 << 32) if v >= 1 << 31 else v


def _s64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


#: a message's or field's Spark type JSON, Arrow type and converter (None: Spark drops it)
Typed = tuple[Any, pa.DataType, Conv]
_KIND = "Protobuf schema"


class _Expansion:
    """One message's Spark type being built (spark-protobuf's SchemaConverters). A message
    type is expanded wherever a field uses it, so a 2 KB schema whose messages each hold two
    fields of the next, 20 deep, would take exponential time and memory (issue 45). A message's
    type is kept by its full name and used again where it cannot differ: when no recursive
    message was met inside it (recursion depends on which messages enclose it). The
    expanded type's nodes are counted, kept ones by their size, and a schema beyond
    MAX_SCHEMA_NODES nodes or nesting messages deeper than MAX_NESTING_DEPTH (protobuf's
    own parsers stop records there) is refused (SchemaTooComplexError) while it is built."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self.memo: dict[str, tuple[Typed | None, int, int]] = {}  # -> (type, nodes, height)
        self.nodes = 0
        self.cuts = 0  # recursive messages met so far
        self.reach = 0  # the deepest message nesting reached by the message under way

    def count(self, nodes: int) -> None:
        self.nodes += nodes
        if self.nodes > MAX_SCHEMA_NODES:
            raise SchemaTooComplexError(
                _KIND, f"its Spark type expands to more than {MAX_SCHEMA_NODES:,} nodes "
                "(message types used in many places)")

    def nest(self, depth: int) -> None:
        if depth > MAX_NESTING_DEPTH:
            raise SchemaTooComplexError(
                _KIND, f"its messages nest deeper than {MAX_NESTING_DEPTH}")
        self.reach = max(self.reach, depth)

    def field_type(self, fd: FieldDescriptor, seen: dict[str, int], depth: int
                   ) -> Typed | None:
        """Spark type JSON, Arrow type and converter of one field (not counting
        repetition) of a message nested ``depth`` deep, None where Spark drops it
        (recursion depth reached); SchemaConverters.structFieldFor."""
        self.count(1)
        t = fd.type
        if t in _INT32:
            return "integer", pa.int32(), (_s32 if t in (FieldDescriptor.TYPE_UINT32,
                                                       FieldDescriptor.TYPE_FIXED32) else _ident)
        if t in _INT64:
            return "long", pa.int64(), (_s64 if t in (FieldDescriptor.TYPE_UINT64,
                                                     FieldDescriptor.TYPE_FIXED64) else _ident)
        if t == FieldDescriptor.TYPE_FLOAT:
            return "float", pa.float32(), _ident
        if t == FieldDescriptor.TYPE_DOUBLE:
            return "double", pa.float64(), _ident
        if t == FieldDescriptor.TYPE_BOOL:
            return "boolean", pa.bool_(), _ident
        if t == FieldDescriptor.TYPE_STRING:
            return "string", pa.string(), _text
        if t == FieldDescriptor.TYPE_BYTES:
            return "binary", pa.binary(), _ident
        if t == FieldDescriptor.TYPE_ENUM:
            enum = fd.enum_type

            def enum_name(v: int) -> str | None:
                value = enum.values_by_number.get(v)
                # Spark: an unknown number (open enum) gives the runtime's name UNRECOGNIZED
                return value.name if value is not None else "UNRECOGNIZED"
            return "string", pa.string(), enum_name
        msg = fd.message_type
        if _is_pair(msg, "Duration"):
            return "interval day to second", pa.duration("us"), _micros
        if _is_pair(msg, "Timestamp"):
            return "timestamp", pa.timestamp("us", tz="UTC"), _micros
        if msg.GetOptions().map_entry:
            self.nest(depth + 1)  # an entry is a message on the wire
            k = self.field_type(msg.fields_by_name["key"], seen, depth + 1)
            v = self.field_type(msg.fields_by_name["value"], seen, depth + 1)
            if k is None or v is None:
                return None
            kc, vc = k[2], v[2]
            return ({"type": "map", "keyType": k[0], "valueType": v[0],
                     "valueContainsNull": False}, pa.map_(k[1], pa.field("value", v[1], False)),
                    lambda m: [(kc(a), vc(b)) for a, b in m.items()])
        return self.message(msg, fd.full_name, seen, depth + 1)

    def message(self, msg: Descriptor, where: str, seen: dict[str, int], depth: int
                ) -> Typed | None:
        """The struct of message ``msg`` (field ``where``) nested ``depth`` deep."""
        name = msg.full_name
        if name in seen:
            self.cuts += 1
            if self.max_depth <= 0 or self.max_depth > MAX_RECURSIVE_DEPTH:
                raise ValueError(
                    f"Found recursive reference in Protobuf schema at field {where}: "
                    "set recursive.fields.max.depth (1..10) to read it")
            if seen[name] >= self.max_depth:
                return None
            return self.struct(msg, {**seen, name: seen[name] + 1}, depth)
        if name in self.memo:
            typed, nodes, height = self.memo[name]
            self.nest(depth + height)
            self.count(nodes)
            return typed
        nodes, cuts, outer = self.nodes, self.cuts, self.reach
        self.reach = depth
        typed = self.struct(msg, {**seen, name: 1}, depth)
        if self.cuts == cuts:
            self.memo[name] = (typed, self.nodes - nodes, self.reach - depth)
        self.reach = max(self.reach, outer)
        return typed

    def struct(self, desc: Descriptor, seen: dict[str, int], depth: int) -> Typed | None:
        self.nest(depth)
        fields: list[dict[str, Any]] = []
        arrow: list[pa.Field] = []
        convs: list[tuple[str, bool, bool, Conv]] = []
        for fd in desc.fields:
            got = self.field_type(fd, seen, depth)
            if got is None:
                continue
            spark, at, conv = got
            is_map = isinstance(spark, dict) and spark.get("type") == "map"
            repeated = fd.is_repeated
            if repeated and not is_map:
                self.count(1)
                spark = {"type": "array", "elementType": spark, "containsNull": False}
                at = pa.list_(pa.field("element", at, False))
                elem = conv
                conv = (lambda e: lambda vs: [e(x) for x in vs])(elem)
            nullable = not fd.is_required or repeated
            fields.append(_field(fd.name, spark, nullable))
            arrow.append(pa.field(fd.name, at, nullable))
            # repeated and maps are never null (an empty array), as ProtobufDeserializer
            convs.append((fd.name, repeated, fd.has_presence, conv))
        if not fields:
            return None

        def convert(m: Any) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, repeated, presence, conv in convs:
                v = getattr(m, name)
                if repeated:
                    out[name] = conv(v)
                elif presence:
                    out[name] = conv(v) if m.HasField(name) else None
                else:
                    # proto3 implicit presence: Spark's hasField is false for the default
                    # value, so it gives null (without emit.default.values)
                    out[name] = conv(v) if v else None
            return out
        return {"type": "struct", "fields": fields}, pa.struct(arrow), convert


def spark_type(desc: Descriptor, recursive_field_max_depth: int = -1) -> Typed:
    """Spark type JSON, Arrow type and message converter of a message, as from_protobuf.
    SchemaTooComplexError when its messages nest deeper than MAX_NESTING_DEPTH or its type
    expands to more than MAX_SCHEMA_NODES nodes."""
    got = _Expansion(recursive_field_max_depth).struct(desc, {desc.full_name: 1}, 1)
    if got is None:
        raise ValueError(f"message {desc.full_name} has no fields Spark can read")
    return got


# ---------------------------------------------------------------------------- decoding


class ProtobufDecoder:
    """Decodes Protobuf payloads (message indexes first, as Confluent frames them) to the
    Arrow type of ``spark_type_json``. Picklable: only the schema text travels; the
    descriptors are rebuilt where it lands."""

    def __init__(self, schema: str, *, references: Mapping[str, str] | None = None,
                 message: str | None = None, recursive_field_max_depth: int = -1,
                 vectorized: bool = True) -> None:
        self.schema = schema
        #: decode flat messages field by field across records (False: upb for every
        #: record, the path the tests hold the vectorized one against)
        self.vectorized = vectorized
        self.references = dict(references or {})
        self.message = message
        self.recursive_field_max_depth = recursive_field_max_depth
        self._setup()

    def _setup(self) -> None:
        self._pool, file_name = build_pool(self.schema, self.references)
        self._file = self._pool.FindFileByName(file_name)
        if self.message:
            desc = self._pool.FindMessageTypeByName(self.message)
        else:
            desc = message_by_indexes(self._file, [0])
        self._desc = desc
        self._spark, self._arrow, self._convert = spark_type(
            desc, self.recursive_field_max_depth)
        self._class = message_factory.GetMessageClass(desc)
        self._classes: dict[tuple[int, ...], Any] = {}
        self._flat: list[FlatField] | None = flat_fields(desc) if self.vectorized else None

    def __getstate__(self) -> dict[str, Any]:
        return {"schema": self.schema, "references": self.references, "message": self.message,
                "recursive_field_max_depth": self.recursive_field_max_depth,
                "vectorized": self.vectorized}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.vectorized = True
        self.__dict__.update(state)
        self._setup()

    @property
    def spark_type_json(self) -> Any:
        """The column's Spark type as ``DataType.jsonValue()`` gives it."""
        return self._spark

    @property
    def arrow_type(self) -> pa.DataType:
        """The Arrow type pyspark uses for ``spark_type_json``."""
        return self._arrow

    def decode(self, payloads: pa.BinaryArray | pa.LargeBinaryArray, *, skip: int = 0,
               indexes: bool = True) -> Decoded:
        """Every payload parsed by the protobuf runtime and converted: ``skip`` bytes
        (a Confluent header) then, when ``indexes``, the message indexes, which must name
        the reader's message. Flat messages are scanned across all records at once
        (protobuf_vector), the records that path leaves parsed by upb; others per record
        parse + one columnar build."""
        first = message_by_indexes(self._file, [0]).full_name == self._desc.full_name
        if self._flat is None or (indexes and not first):
            return self._decode_upb(payloads, skip=skip, indexes=indexes)
        array, left = decode_flat(payloads, self._flat, self._arrow, skip=skip,
                                  index_byte=indexes)
        if not left.any():
            return Decoded(array, left, {})
        rows = np.flatnonzero(left)
        part = self._decode_upb(payloads.take(pa.array(rows)), skip=skip, indexes=indexes)
        n = len(array)
        position = np.arange(n)
        position[rows] = n + np.arange(len(rows))
        merged = pa.concat_arrays([array, part.array]).take(pa.array(position))
        failed = np.zeros(n, dtype=bool)
        failed[rows] = part.failed
        errors = {int(rows[i]): e for i, e in part.errors.items()}
        return Decoded(merged, failed, errors)

    def _decode_upb(self, payloads: pa.BinaryArray | pa.LargeBinaryArray, *, skip: int = 0,
                    indexes: bool = True) -> Decoded:
        """Every payload parsed by upb and walked in Python (the reference path)."""
        values = payloads.to_pylist()
        n = len(values)
        failed = np.zeros(n, dtype=bool)
        errors: dict[int, str] = {}
        out: list[Any] = [None] * n
        parse = self._class.FromString
        first = message_by_indexes(self._file, [0]).full_name == self._desc.full_name
        convert = self._convert
        for i, v in enumerate(values):
            if v is None:
                continue
            try:
                pos = skip
                if indexes:
                    if first and len(v) > pos and v[pos] == 0:
                        pos += 1  # [0]: the reader's own message, the common case
                    else:
                        idx, pos = read_message_indexes(v, pos)
                        named = message_by_indexes(self._file, idx)
                        if named.full_name != self._desc.full_name:
                            raise ValueError(
                                f"record is message {named.full_name}, the reader reads "
                                f"{self._desc.full_name}")
                out[i] = convert(parse(v[pos:] if pos else v))
            except Exception as exc:  # noqa: BLE001 (one record's failure fails it alone)
                failed[i] = True
                errors[i] = f"Protobuf record cannot be decoded: {type(exc).__name__}: {exc}"
        return Decoded(pa.array(out, self._arrow), failed, errors)


def decode_framed(values: pa.BinaryArray | pa.LargeBinaryArray,
                  decoder: ProtobufDecoder) -> Decoded:
    """Confluent-framed Protobuf values decoded with the reader's schema (Protobuf needs no
    writer schema: unknown fields are skipped, missing ones are defaults); a record not in
    the wire format fails with the reason its first bytes give."""
    frames = split_frames(values)
    n = len(frames.framed)
    valid = np.asarray(pa.compute.is_valid(values)) if n else np.zeros(0, dtype=bool)
    masked = pa.array(frames.values.to_pylist(), pa.binary(), mask=~frames.framed) \
        if not frames.framed[valid].all() else frames.values
    part = decoder.decode(masked, skip=5)
    failed = part.failed.copy()
    errors = dict(part.errors)
    for i in np.flatnonzero(valid & ~frames.framed):
        failed[i] = True
        errors[int(i)] = frames.reason(int(i))
    return Decoded(part.array, failed, errors)
