"""Protobuf writes (issue 32): an Arrow struct column encoded as Confluent's Protobuf payloads
(message indexes, then the serialized message), and the proto3 schema derived from a Spark type
when the registry gives none (registered as ``.proto`` text, ``formats/protobuf_text.py``).

Why this shape: the message is filled in Python and serialized by the ``protobuf`` runtime
(upb, C), so the wire format is the runtime's, never ours. The mapping is the inverse of
``protobuf_codec``'s read mapping (Spark's ``from_protobuf`` types), so a column read from a
topic can be written back with the same schema: enums from their names (or numbers),
``Timestamp`` from timestamps, ``Duration`` from day-time intervals, maps, repeated fields,
nested messages and wrappers (from a ``struct<value>`` as read, or the bare value). A null
field is left unset; the struct may name a subset of the message's fields (as Spark's
``to_protobuf`` accepts). No I/O here and no pyspark.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from spark_kafka_wire.formats.protobuf_codec import (
    INT32_TYPES,
    INT64_TYPES,
    WRAPPER_MESSAGES,
    build_pool,
    is_well_known_pair,
    message_by_indexes,
    write_message_indexes,
)
from spark_kafka_wire.formats.protobuf_text import IDENTIFIER, proto_text

#: The package and message name of a schema derived from a Spark type (the message name is
#: spark-avro's record name, so the record-name subject strategies name the same thing).
DERIVED_PACKAGE = "kafkawire"
DERIVED_MESSAGE = "topLevelRecord"

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DAY = dt.date(1970, 1, 1)
_US = dt.timedelta(microseconds=1)
_UNSIGNED = {FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32,
             FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64}

# ---------------------------------------------------------------------------- derivation

F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "boolean": F.TYPE_BOOL, "byte": F.TYPE_INT32, "short": F.TYPE_INT32,
    "integer": F.TYPE_INT32, "long": F.TYPE_INT64, "float": F.TYPE_FLOAT,
    "double": F.TYPE_DOUBLE, "string": F.TYPE_STRING, "binary": F.TYPE_BYTES,
    # a date is its day number since 1970-01-01, as Spark's to_protobuf writes a date into an
    # int32 field (Protobuf has no date type; google.type.Date is not bundled by the runtime)
    "date": F.TYPE_INT32,
}
_WELL_KNOWN = {"timestamp": ("google/protobuf/timestamp.proto", ".google.protobuf.Timestamp"),
               "timestamp_ntz": ("google/protobuf/timestamp.proto",
                                 ".google.protobuf.Timestamp")}
_DURATION = ("google/protobuf/duration.proto", ".google.protobuf.Duration")


def _camel(name: str) -> str:
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", name) if p]
    out = "".join(p[:1].upper() + p[1:] for p in parts) or "Field"
    return out if out[0].isalpha() else f"M{out}"


class _Deriver:
    """One derivation: collects the well-known files the message imports."""

    def __init__(self) -> None:
        self.imports: list[str] = []

    def _import(self, file: str) -> None:
        if file not in self.imports:
            self.imports.append(file)

    def message(self, msg: descriptor_pb2.DescriptorProto, struct: Mapping[str, Any],
                scope: str, path: str) -> None:
        fields = struct["fields"]
        _check_field_names(fields, path)
        # protoc names a map's entry message after its field, and a message's fields and
        # nested messages share one scope: nested structs take other names
        taken = {_map_entry_name(f["name"]) for f in fields
                 if isinstance(f["type"], dict) and f["type"].get("type") == "map"}
        taken |= {f["name"] for f in fields}
        for number, f in enumerate(fields, start=1):
            where = f"{path}.{f['name']}" if path else f["name"]
            fd = msg.field.add(name=f["name"], number=number, label=F.LABEL_OPTIONAL)
            spark = f["type"]
            if isinstance(spark, dict) and spark.get("type") == "array":
                fd.label = F.LABEL_REPEATED
                element = spark["elementType"]
                if isinstance(element, dict) and element.get("type") in ("array", "map"):
                    raise ValueError(f"field {where}: Protobuf has no repeated field of "
                                     f"{element['type']}s (wrap the inner one in a struct)")
                self._typed(fd, msg, element, scope, where, taken)
            elif isinstance(spark, dict) and spark.get("type") == "map":
                self._map(fd, msg, spark, scope, where, taken)
            else:
                self._typed(fd, msg, spark, scope, where, taken)
                # proto3 `optional` (explicit presence) for every singular scalar: a null
                # stays a null, and a written 0, "" or false reads back as itself, where
                # implicit presence would read it as null (as from_protobuf does)
                if fd.type != F.TYPE_MESSAGE:
                    fd.proto3_optional = True
        _synthetic_oneofs(msg)
        # the order protoc gives the nested messages of the printed text (formats/
        # protobuf_text.py): map entries as their fields come, then the nested messages
        entries = [n for n in msg.nested_type if n.options.map_entry]
        others = [n for n in msg.nested_type if not n.options.map_entry]
        del msg.nested_type[:]
        msg.nested_type.extend(entries + others)

    def _nested(self, msg: descriptor_pb2.DescriptorProto, base: str, taken: set[str]
                ) -> descriptor_pb2.DescriptorProto:
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}{n}"
        taken.add(name)
        return msg.nested_type.add(name=name)

    def _typed(self, fd: descriptor_pb2.FieldDescriptorProto,
               msg: descriptor_pb2.DescriptorProto, spark: Any, scope: str, where: str,
               taken: set[str], nested_name: str | None = None) -> None:
        if isinstance(spark, dict) and spark.get("type") == "struct":
            nested = self._nested(msg, nested_name or _camel(fd.name), taken)
            fd.type, fd.type_name = F.TYPE_MESSAGE, f"{scope}.{nested.name}"
            self.message(nested, spark, f"{scope}.{nested.name}", where)
            return
        if isinstance(spark, str) and spark in _SCALARS:
            fd.type = _SCALARS[spark]
            return
        if isinstance(spark, str) and spark in _WELL_KNOWN:
            file, type_name = _WELL_KNOWN[spark]
        elif isinstance(spark, str) and spark.startswith("interval ") and \
                "year" not in spark and "month" not in spark:
            file, type_name = _DURATION
        elif isinstance(spark, str) and spark.startswith("decimal"):
            raise ValueError(f"field {where} is a {spark}: Protobuf has no decimal type; cast "
                             "it to string or double, or pin a schema (schema.id / "
                             "use.latest.version)")
        else:
            shown = spark.get("type") if isinstance(spark, dict) else spark
            raise ValueError(f"field {where} is of Spark type {shown}, which has no Protobuf "
                             "type here; cast it, or pin a schema")
        self._import(file)
        fd.type, fd.type_name = F.TYPE_MESSAGE, type_name

    def _map(self, fd: descriptor_pb2.FieldDescriptorProto, msg: descriptor_pb2.DescriptorProto,
             spark: Mapping[str, Any], scope: str, where: str, taken: set[str]) -> None:
        key, value = spark["keyType"], spark["valueType"]
        if key not in ("string", "byte", "short", "integer", "long", "boolean"):
            raise ValueError(f"field {where}: a Protobuf map's key is a string, an integer or "
                             f"a boolean, not {key if isinstance(key, str) else key['type']}")
        if isinstance(value, dict) and value.get("type") in ("array", "map"):
            raise ValueError(f"field {where}: a Protobuf map's value cannot be a "
                             f"{value['type']} (wrap it in a struct)")
        entry = msg.nested_type.add(name=_map_entry_name(fd.name))
        entry.options.map_entry = True
        entry_taken: set[str] = set()
        k = entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL)
        self._typed(k, entry, key, f"{scope}.{entry.name}", f"{where}.key", entry_taken)
        v = entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL)
        # a struct value's message is the map's sibling: .proto text declares no message
        # inside a map's entry
        self._typed(v, msg, value, scope, f"{where}.value", taken,
                    nested_name=f"{_camel(fd.name)}Value")
        fd.label, fd.type, fd.type_name = F.LABEL_REPEATED, F.TYPE_MESSAGE, \
            f"{scope}.{entry.name}"


def _map_entry_name(field: str) -> str:
    """The name protoc gives the entry message of map field ``field`` (MapEntryName in its
    parser): '_' dropped and the letter after it (and the first) upper-cased, then Entry."""
    out, cap = [], True
    for c in field:
        if c == "_":
            cap = True
        else:
            out.append(c.upper() if cap and "a" <= c <= "z" else c)
            cap = False
    return "".join(out) + "Entry"


def _json_name(field: str) -> str:
    """protoc's default JSON name of a field: '_' dropped, the letter after it upper-cased."""
    return re.sub(r"_+([a-z]?)", lambda m: m.group(1).upper(), field)


def _check_field_names(fields: Any, path: str) -> None:
    """Refuses struct field names a .proto file cannot hold, naming the column to rename."""
    seen: dict[str, str] = {}
    for f in fields:
        name = f["name"]
        where = f"{path}.{name}" if path else name
        if not IDENTIFIER.fullmatch(name):
            raise ValueError(f"field {where!r} is not a Protobuf field name (letters, digits "
                             "and '_', not starting with a digit): rename it, e.g. "
                             "F.col(...).alias(...), or pin a schema")
        if name.startswith("_") and name[1:] in {g["name"] for g in fields}:
            raise ValueError(f"fields {name[1:]!r} and {name!r}{f' of {path}' if path else ''}: "
                             f"protobufjs (JavaScript clients) names the oneof of optional "
                             f"{name[1:]!r} {name!r} as well and refuses the schema: rename one")
        other = seen.setdefault(_json_name(name), name)
        if other != name:
            raise ValueError(f"fields {other!r} and {name!r}"
                             f"{f' of {path}' if path else ''} have the same Protobuf JSON "
                             f"name {_json_name(name)!r}, which protoc refuses: rename one")
    entries: dict[str, str] = {}
    for f in fields:
        if isinstance(f["type"], dict) and f["type"].get("type") == "map":
            entry = _map_entry_name(f["name"])
            if entry in seen.values():
                raise ValueError(f"map field {f['name']!r}{f' of {path}' if path else ''} "
                                 f"has an entry message named {entry!r}, as another field "
                                 "is, which protoc refuses: rename one")
            other = entries.setdefault(entry, f["name"])
            if other != f["name"]:
                raise ValueError(f"map fields {other!r} and {f['name']!r}"
                                 f"{f' of {path}' if path else ''} would have the same entry "
                                 f"message {_map_entry_name(f['name'])!r}: rename one")


def _synthetic_oneofs(msg: descriptor_pb2.DescriptorProto) -> None:
    """The oneof protoc declares for each proto3 ``optional`` field, named as protoc names it
    ('_' + the field's name, unless it starts with '_'; 'X' prepended while it clashes with
    a field or another oneof), after the real ones (there are none)."""
    names = {f.name for f in msg.field} | {o.name for o in msg.oneof_decl}
    for fd in msg.field:
        if fd.proto3_optional:
            name = fd.name if fd.name.startswith("_") else f"_{fd.name}"
            while name in names:
                name = f"X{name}"
            names.add(name)
            fd.oneof_index = len(msg.oneof_decl)
            msg.oneof_decl.add(name=name)


def derive_file(spark_type: Any, *, package: str = DERIVED_PACKAGE,
                message: str = DERIVED_MESSAGE) -> descriptor_pb2.FileDescriptorProto:
    """The proto3 file a struct's Spark type (JSON form) derives: message ``message`` with a
    field per struct field, numbered 1..n in column order; nested structs as nested messages;
    every singular scalar ``optional`` (values round-trip, defaults included); arrays
    repeated; maps ``map<k, v>`` (a struct value's message beside the entry); timestamps
    ``google.protobuf.Timestamp``; day-time intervals ``google.protobuf.Duration``; dates as
    int32 day numbers. Names, synthetic oneofs and the order of nested messages are those
    protoc gives the file's ``.proto`` text (``derived_text``), so the registered text and
    this descriptor are one schema. ValueError names a field Protobuf cannot hold (decimals,
    nested arrays, maps with other keys, names that are no .proto identifier or share a JSON
    name)."""
    if not (isinstance(spark_type, dict) and spark_type.get("type") == "struct"):
        shown = spark_type.get("type") if isinstance(spark_type, dict) else spark_type
        raise ValueError(f"a Protobuf message is written from a struct column, not {shown}: "
                         "wrap the column in a struct (F.struct(...))")
    deriver = _Deriver()
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"{package.replace('.', '/')}/{message}.proto", package=package, syntax="proto3")
    msg = fdp.message_type.add(name=message)
    deriver.message(msg, spark_type, f".{package}.{message}", "")
    fdp.dependency.extend(deriver.imports)
    return fdp


def derived_schema(spark_type: Any) -> str:
    """``derive_file`` as base64 of the serialized FileDescriptorProto: what the encoder of a
    derived schema is built from (``derived_text`` compiles to the same descriptor, so the
    encoder needs no protoc)."""
    return base64.b64encode(derive_file(spark_type).SerializeToString()).decode()


def derived_text(spark_type: Any) -> str:
    """``derive_file`` as the registry takes it: ``.proto`` text (what Java's
    KafkaProtobufSerializer registers, and what every registry and client parses; a base64
    descriptor, which confluent-kafka's Python serializer registers, is served as given by
    a registry that stores what it is given, and JavaScript clients cannot read it). No
    references for the well-known google/protobuf files it imports (registries and clients
    bundle them)."""
    return proto_text(derive_file(spark_type))


# ---------------------------------------------------------------------------- encoding

Setter = Callable[[Any, Any], None]


def _int_check(fd: FieldDescriptor) -> Callable[[Any], int]:
    bits = 32 if fd.type in INT32_TYPES else 64
    unsigned = fd.type in _UNSIGNED

    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, dt.date) and not isinstance(v, dt.datetime) and bits == 32:
                return (v - _EPOCH_DAY).days  # a date as its day number (see derive_file)
            raise ValueError(f"field {fd.full_name} is an integer, got {type(v).__name__}")
        if unsigned:
            # the read gives unsigned values above the signed maximum as negatives (Spark's
            # rule): a negative written back is that same unsigned value
            if not -(1 << (bits - 1)) <= v < 1 << bits:
                raise ValueError(f"field {fd.full_name}: {v} is out of uint{bits} range")
            return v + (1 << bits) if v < 0 else v
        if not -(1 << (bits - 1)) <= v < 1 << (bits - 1):
            raise ValueError(f"field {fd.full_name}: {v} is out of int{bits} range")
        return v
    return check


def _micros(v: Any, fd: FieldDescriptor) -> int:
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)  # timestamp_ntz: its wall clock as UTC
        return (v - _EPOCH) // _US
    if isinstance(v, dt.timedelta):
        return v // _US
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise ValueError(f"field {fd.full_name} is a {fd.message_type.name}, got "
                     f"{type(v).__name__}")


def _scalar(fd: FieldDescriptor) -> Callable[[Any], Any]:
    """A converter of one Python value to what the runtime takes for ``fd`` (not a message)."""
    t = fd.type
    name = fd.full_name
    if t in INT32_TYPES or t in INT64_TYPES:
        return _int_check(fd)
    if t in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        def real(v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise ValueError(f"field {name} is a number, got {type(v).__name__}")
            return float(v)
        return real
    if t == FieldDescriptor.TYPE_BOOL:
        def boolean(v: Any) -> bool:
            if not isinstance(v, bool):
                raise ValueError(f"field {name} is a boolean, got {type(v).__name__}")
            return v
        return boolean
    if t == FieldDescriptor.TYPE_STRING:
        def text(v: Any) -> str:
            if not isinstance(v, str):
                raise ValueError(f"field {name} is a string, got {type(v).__name__}")
            return v
        return text
    if t == FieldDescriptor.TYPE_BYTES:
        def binary(v: Any) -> bytes:
            if not isinstance(v, (bytes, bytearray, memoryview)):
                raise ValueError(f"field {name} is bytes, got {type(v).__name__}")
            return bytes(v)
        return binary
    if t == FieldDescriptor.TYPE_ENUM:
        enum = fd.enum_type
        closed = getattr(enum, "is_closed", False)

        def number(v: Any) -> int:
            if isinstance(v, str):
                found = enum.values_by_name.get(v)
                if found is None:
                    raise ValueError(f"field {name}: {v!r} is not a value of enum "
                                     f"{enum.full_name} ({', '.join(enum.values_by_name)})")
                return int(found.number)
            if isinstance(v, int) and not isinstance(v, bool):
                if closed and v not in enum.values_by_number or \
                        not -(1 << 31) <= v < 1 << 31:
                    raise ValueError(f"field {name}: {v} is not a value of enum "
                                     f"{enum.full_name}")
                return v
            raise ValueError(f"field {name} is enum {enum.full_name}: give a name or a "
                             f"number, got {type(v).__name__}")
        return number
    raise ValueError(f"field {name} has an unknown type {t}")  # pragma: no cover


def _message_filler(desc: Descriptor, cache: dict[str, Callable[[Any, Any], None]]
                    ) -> Callable[[Any, Any], None]:
    """A function filling a message of ``desc`` from a Python value: a dict (an Arrow struct),
    or for Timestamp / Duration / wrappers the bare value."""
    found = cache.get(desc.full_name)
    if found is not None:
        return found
    if is_well_known_pair(desc, "Timestamp") or is_well_known_pair(desc, "Duration"):
        def pair(m: Any, v: Any) -> None:
            seconds, micros = divmod(_micros(v, fields_owner), 1_000_000)
            if desc.name == "Duration" and seconds < 0 and micros:
                seconds, micros = seconds + 1, micros - 1_000_000  # nanos take the sign
            m.seconds, m.nanos = seconds, micros * 1000
        fields_owner = desc.fields[0]
        cache[desc.full_name] = pair
        return pair

    setters: dict[str, Setter] = {}

    def fill(m: Any, v: Any) -> None:
        if desc.full_name in WRAPPER_MESSAGES and not isinstance(v, dict):
            v = {"value": v}
        if not isinstance(v, dict):
            raise ValueError(f"message {desc.full_name} is written from a struct, got "
                             f"{type(v).__name__}")
        m.SetInParent()
        for k, x in v.items():
            setter = setters.get(k)
            if setter is None:
                raise ValueError(f"field {k!r} is not in message {desc.full_name} (its "
                                 f"fields: {', '.join(f.name for f in desc.fields)})")
            if x is not None:
                setter(m, x)
    cache[desc.full_name] = fill
    for fd in desc.fields:
        setters[fd.name] = _setter(fd, cache)
    return fill


def _setter(fd: FieldDescriptor, cache: dict[str, Callable[[Any, Any], None]]) -> Setter:
    name = fd.name
    msg = fd.message_type
    if msg is not None and msg.GetOptions().map_entry:
        kf, vf = msg.fields_by_name["key"], msg.fields_by_name["value"]
        kc = _scalar(kf)
        if vf.message_type is not None:
            vfill = _message_filler(vf.message_type, cache)

            def map_messages(m: Any, v: Any) -> None:
                target = getattr(m, name)
                for k, x in (v.items() if isinstance(v, dict) else v):
                    if k is None or x is None:
                        raise ValueError(f"field {fd.full_name}: a map entry's key and value "
                                         "cannot be null in Protobuf")
                    vfill(target[kc(k)], x)
            return map_messages
        vc = _scalar(vf)

        def map_scalars(m: Any, v: Any) -> None:
            target = getattr(m, name)
            for k, x in (v.items() if isinstance(v, dict) else v):
                if k is None or x is None:
                    raise ValueError(f"field {fd.full_name}: a map entry's key and value "
                                     "cannot be null in Protobuf")
                target[kc(k)] = vc(x)
        return map_scalars
    if fd.is_repeated:
        if msg is not None:
            efill = _message_filler(msg, cache)

            def repeated_messages(m: Any, v: Any) -> None:
                target = getattr(m, name)
                for x in v:
                    if x is None:
                        raise ValueError(f"field {fd.full_name}: a repeated field cannot "
                                         "hold a null")
                    efill(target.add(), x)
            return repeated_messages
        ec = _scalar(fd)

        def repeated_scalars(m: Any, v: Any) -> None:
            if any(x is None for x in v):
                raise ValueError(f"field {fd.full_name}: a repeated field cannot hold a null")
            getattr(m, name).extend([ec(x) for x in v])
        return repeated_scalars
    if msg is not None:
        mfill = _message_filler(msg, cache)

        def message(m: Any, v: Any) -> None:
            mfill(getattr(m, name), v)
        return message
    conv = _scalar(fd)

    def scalar(m: Any, v: Any) -> None:
        setattr(m, name, conv(v))
    return scalar


def _indexes(desc: Descriptor) -> list[int]:
    """Confluent's message indexes of ``desc`` in its file."""
    path: list[int] = []
    while desc is not None:
        parent = desc.containing_type
        siblings = list(parent.nested_types) if parent is not None else \
            list(desc.file.message_types_by_name.values())
        path.insert(0, [s.full_name for s in siblings].index(desc.full_name))
        desc = parent
    return path


class ProtobufEncoder:
    """Encodes an Arrow struct column as Protobuf payloads (Confluent's message indexes, then
    the message): ``message`` (a full name) of the schema, or the file's first. Picklable:
    only the schema text, references and message name travel."""

    def __init__(self, schema: str, *, references: Mapping[str, str] | None = None,
                 message: str | None = None) -> None:
        self.schema = schema
        self.references = dict(references or {})
        self.message = message
        self._setup()

    def _setup(self) -> None:
        pool, file_name = build_pool(self.schema, self.references)
        file = pool.FindFileByName(file_name)
        if self.message:
            try:
                desc = pool.FindMessageTypeByName(self.message)
            except KeyError:
                names = ", ".join(file.message_types_by_name)
                raise ValueError(f"message {self.message} is not in Protobuf schema "
                                 f"{file_name} (its messages: {names})") from None
        else:
            desc = message_by_indexes(file, [0])
        self._desc = desc
        self._prefix = write_message_indexes(_indexes(desc))
        self._class = message_factory.GetMessageClass(desc)
        self._fill = _message_filler(desc, {})

    def __getstate__(self) -> dict[str, Any]:
        return {"schema": self.schema, "references": self.references, "message": self.message}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()

    @property
    def message_name(self) -> str:
        """The full name of the message written."""
        return str(self._desc.full_name)

    @property
    def indexes(self) -> list[int]:
        """Confluent's message indexes of the message written."""
        return _indexes(self._desc)

    def check(self, spark_type: Any) -> None:
        """ValueError when a struct's Spark type (JSON form) names a field the message does
        not have (nested structs included): found before any record is written."""
        _check_names(spark_type, self._desc, "")

    def encode(self, array: pa.Array | pa.ChunkedArray) -> pa.BinaryArray:
        """The payload of each row; null rows stay null (tombstones). A value the message
        cannot hold raises ValueError naming the field and the row."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        out: list[bytes | None] = []
        cls, fill, prefix = self._class, self._fill, self._prefix
        for row, value in enumerate(array.to_pylist()):
            if value is None:
                out.append(None)
                continue
            m = cls()
            try:
                fill(m, value)
                out.append(prefix + m.SerializeToString())
            except ValueError as exc:
                raise ValueError(f"row {row}: {exc}") from None
            except (TypeError, OverflowError) as exc:
                raise ValueError(f"row {row}: {type(exc).__name__}: {exc}") from None
        return pa.array(out, pa.binary())


def _check_names(spark: Any, desc: Descriptor, path: str) -> None:
    if not isinstance(spark, dict):
        return
    kind = spark.get("type")
    if kind == "struct":
        if is_well_known_pair(desc, "Timestamp") or is_well_known_pair(desc, "Duration"):
            return
        for f in spark["fields"]:
            fd = desc.fields_by_name.get(f["name"])
            where = f"{path}.{f['name']}" if path else f["name"]
            if fd is None:
                raise ValueError(f"field {where} is not in message {desc.full_name} (its "
                                 f"fields: {', '.join(x.name for x in desc.fields)})")
            _check_field(f["type"], fd, where)


def _check_field(spark: Any, fd: FieldDescriptor, where: str) -> None:
    msg = fd.message_type
    if not isinstance(spark, dict) or msg is None:
        return
    kind = spark.get("type")
    if kind == "array":
        _check_field(spark["elementType"], fd, where)
    elif kind == "map" and msg.GetOptions().map_entry:
        _check_field(spark["valueType"], msg.fields_by_name["value"], f"{where}.value")
    elif kind == "struct":
        _check_names(spark, msg, where)
