"""A FileDescriptorProto written as ``.proto`` text (issue 46): the form a derived Protobuf
schema is registered in.

Why text: a registry that stores what it is given (Apicurio) serves a schema to every client
as it was registered. Java's serializer registers ``.proto`` text, which every registry and
client parses (protobufjs in @kafkajs/confluent-schema-registry, Wire in the Java registries,
protoc); a base64 serialized FileDescriptorProto (what confluent-kafka's Python serializer
sends) only some of them decode. The ``protobuf`` runtime has no printer from a
FileDescriptorProto to ``.proto`` text, so this is one, for what kafkawire writes.

What it prints: ``proto2`` and ``proto3`` files with their package and imports (``public``,
``weak``), top-level and nested messages and enums, fields of every scalar type, repeated and
proto2 ``required`` fields, proto3 ``optional`` (its synthetic oneof is protoc's again),
``map<k, v>`` (from a map-entry nested message), real oneofs (their fields contiguous, as
protoc declares them), ``reserved`` numbers and names, and enums' ``allow_alias``. Type names
are written fully qualified with a leading dot (``.google.protobuf.Timestamp``), so no scope
rule can resolve them elsewhere and no keyword is taken for a type. Anything else (options,
default values, extensions, groups, services, editions) raises ValueError naming it, rather
than printing a different schema: compiling the text gives back the same descriptor, apart
from ``json_name``, which protoc fills in (tests/unit/formats/test_protobuf_text.py checks
it with protoc). No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from google.protobuf import descriptor_pb2

from spark_kafka_wire.protocol.primitives import INT32_MAX

F = descriptor_pb2.FieldDescriptorProto

#: An identifier of the .proto grammar (field, message, enum, value, package component).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_SCALAR_NAMES = {
    F.TYPE_DOUBLE: "double", F.TYPE_FLOAT: "float", F.TYPE_INT64: "int64",
    F.TYPE_UINT64: "uint64", F.TYPE_INT32: "int32", F.TYPE_FIXED64: "fixed64",
    F.TYPE_FIXED32: "fixed32", F.TYPE_BOOL: "bool", F.TYPE_STRING: "string",
    F.TYPE_BYTES: "bytes", F.TYPE_UINT32: "uint32", F.TYPE_SFIXED32: "sfixed32",
    F.TYPE_SFIXED64: "sfixed64", F.TYPE_SINT32: "sint32", F.TYPE_SINT64: "sint64",
}
_LABELS = {F.LABEL_OPTIONAL: "optional", F.LABEL_REQUIRED: "required",
           F.LABEL_REPEATED: "repeated"}
#: Words that start a statement inside an enum body: a value of that name is not printable.
_ENUM_STATEMENTS = {"option", "reserved"}
#: The largest field number (reserved ranges ending there are printed ``to max``).
MAX_FIELD_NUMBER = 536_870_911

#: The members of each descriptor message printed here; any other set member is refused.
_PRINTED = {
    "FileDescriptorProto": {"name", "package", "dependency", "public_dependency",
                            "weak_dependency", "message_type", "enum_type", "syntax"},
    "DescriptorProto": {"name", "field", "nested_type", "enum_type", "oneof_decl",
                        "reserved_range", "reserved_name", "options"},
    "FieldDescriptorProto": {"name", "number", "label", "type", "type_name", "oneof_index",
                             "json_name", "proto3_optional"},
    "OneofDescriptorProto": {"name"},
    "EnumDescriptorProto": {"name", "value", "options", "reserved_range", "reserved_name"},
    "EnumValueDescriptorProto": {"name", "number"},
    "MessageOptions": {"map_entry"},
    "EnumOptions": {"allow_alias"},
}


def _check(node: object, where: str) -> None:
    """Refuses a member this printer does not print (so the text never says less)."""
    kind = type(node).__name__
    extra = sorted(f.name for f, _ in node.ListFields()  # type: ignore[attr-defined]
                   if f.name not in _PRINTED[kind])
    if extra:
        raise ValueError(f"{where}: {', '.join(extra)} of a {kind} cannot be written as "
                         ".proto text here")


def _name(name: str, where: str) -> str:
    if not IDENTIFIER.fullmatch(name):
        raise ValueError(f"{where}: {name!r} is not a .proto identifier (letters, digits and "
                         "'_', not starting with a digit)")
    return name


def _quoted(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", text):
        raise ValueError(f"import {text!r}: only paths of letters, digits, '_', '-', '.' and '/' "
                         "are written")
    return f'"{text}"'


def _reserved(ranges: Sequence[object], names: Sequence[str], end_exclusive: bool,
              where: str) -> list[str]:
    """``reserved`` statements; message ranges are end-exclusive, enum ranges inclusive."""
    out: list[str] = []
    if ranges:
        parts = []
        for r in ranges:
            start, end = r.start, r.end - 1 if end_exclusive else r.end  # type: ignore[attr-defined]
            top = MAX_FIELD_NUMBER if end_exclusive else INT32_MAX
            parts.append(str(start) if start == end else
                         f"{start} to {'max' if end == top else end}")
        out.append(f"reserved {', '.join(parts)};")
    if names:
        out.append("reserved " + ", ".join(f'"{_name(n, where)}"' for n in names) + ";")
    return out


class _Printer:
    def __init__(self, syntax: str) -> None:
        self.proto3 = syntax == "proto3"
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text if text else "")

    def enum(self, enum: descriptor_pb2.EnumDescriptorProto, depth: int, where: str) -> None:
        where = f"{where}.{enum.name}" if where else enum.name
        _check(enum, where)
        if enum.HasField("options"):
            _check(enum.options, where)
        self.emit(depth, f"enum {_name(enum.name, where)} {{")
        if enum.options.allow_alias:
            self.emit(depth + 1, "option allow_alias = true;")
        for value in enum.value:
            _check(value, f"{where}.{value.name}")
            if value.name in _ENUM_STATEMENTS:
                raise ValueError(f"{where}: an enum value named {value.name!r} cannot be "
                                 "written as .proto text")
            self.emit(depth + 1, f"{_name(value.name, where)} = {value.number};")
        for line in _reserved(enum.reserved_range, enum.reserved_name, False, where):
            self.emit(depth + 1, line)
        self.emit(depth, "}")

    def field_type(self, field: descriptor_pb2.FieldDescriptorProto, where: str) -> str:
        if field.type in _SCALAR_NAMES:
            return _SCALAR_NAMES[field.type]
        if field.type in (F.TYPE_MESSAGE, F.TYPE_ENUM) and field.type_name:
            parts = field.type_name.lstrip(".").split(".")
            for part in parts:
                _name(part, where)
            return "." + ".".join(parts)
        raise ValueError(f"{where}: a field of type {F.Type.Name(field.type)} cannot be "
                         "written as .proto text here")

    def field(self, field: descriptor_pb2.FieldDescriptorProto, depth: int, where: str,
              entries: dict[str, descriptor_pb2.DescriptorProto], in_oneof: bool) -> None:
        where = f"{where}.{field.name}"
        _check(field, where)
        name = _name(field.name, where)
        entry = entries.get(field.type_name.lstrip(".")) if field.type == F.TYPE_MESSAGE \
            else None
        if entry is not None and field.label == F.LABEL_REPEATED:
            key, value = sorted(entry.field, key=lambda f: f.number)
            self.emit(depth, f"map<{self.field_type(key, where)}, "
                             f"{self.field_type(value, where)}> {name} = {field.number};")
            return
        if in_oneof:
            label = ""
        elif field.label == F.LABEL_REPEATED:
            label = "repeated "
        elif self.proto3:
            label = "optional " if field.proto3_optional else ""
        else:
            label = _LABELS[field.label] + " "
        self.emit(depth, f"{label}{self.field_type(field, where)} {name} = {field.number};")

    def message(self, msg: descriptor_pb2.DescriptorProto, depth: int, scope: str,
                where: str) -> None:
        full = f"{scope}.{msg.name}" if scope else msg.name
        where = f"{where}.{msg.name}" if where else msg.name
        _check(msg, where)
        if msg.HasField("options"):
            _check(msg.options, where)
        self.emit(depth, f"message {_name(msg.name, where)} {{")
        entries = {f"{full}.{n.name}": n for n in msg.nested_type if n.options.map_entry}
        synthetic = {f.oneof_index for f in msg.field
                     if f.proto3_optional and f.HasField("oneof_index")}
        printed_oneofs: set[int] = set()
        fields = list(msg.field)
        i = 0
        while i < len(fields):
            f = fields[i]
            if f.HasField("oneof_index") and f.oneof_index not in synthetic:
                index = f.oneof_index
                if index in printed_oneofs:
                    raise ValueError(f"{where}: the fields of oneof "
                                     f"{msg.oneof_decl[index].name} are not contiguous")
                printed_oneofs.add(index)
                oneof = msg.oneof_decl[index]
                _check(oneof, f"{where}.{oneof.name}")
                self.emit(depth + 1, f"oneof {_name(oneof.name, where)} {{")
                while i < len(fields) and fields[i].HasField("oneof_index") and \
                        fields[i].oneof_index == index:
                    self.field(fields[i], depth + 2, where, entries, in_oneof=True)
                    i += 1
                self.emit(depth + 1, "}")
                continue
            self.field(f, depth + 1, where, entries, in_oneof=False)
            i += 1
        for line in _reserved(msg.reserved_range, msg.reserved_name, True, where):
            self.emit(depth + 1, line)
        for nested in msg.nested_type:
            if not nested.options.map_entry:
                self.message(nested, depth + 1, full, where)
        for enum in msg.enum_type:
            self.enum(enum, depth + 1, where)
        self.emit(depth, "}")


def proto_text(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    """``fdp`` as ``.proto`` text that protoc compiles back to it (ValueError: see the module
    docstring)."""
    _check(fdp, fdp.name or "the file")
    syntax = fdp.syntax or "proto2"
    if syntax not in ("proto2", "proto3"):
        raise ValueError(f"{fdp.name}: syntax {syntax!r} cannot be written as .proto text here")
    printer = _Printer(syntax)
    printer.emit(0, f'syntax = "{syntax}";')
    if fdp.package:
        for part in fdp.package.split("."):
            _name(part, fdp.name)
        printer.emit(0, f"package {fdp.package};")
    if fdp.dependency:
        printer.emit(0, "")
    public, weak = set(fdp.public_dependency), set(fdp.weak_dependency)
    for n, dependency in enumerate(fdp.dependency):
        kind = "public " if n in public else "weak " if n in weak else ""
        printer.emit(0, f"import {kind}{_quoted(dependency)};")
    scope = fdp.package
    for msg in fdp.message_type:
        printer.emit(0, "")
        printer.message(msg, 0, scope, scope)
    for enum in fdp.enum_type:
        printer.emit(0, "")
        printer.enum(enum, 0, scope)
    return "\n".join(printer.lines) + "\n"
