""".proto text written from FileDescriptorProtos (issue 46 item 14): protoc, an independent
parser, compiles what ``proto_text`` prints back to the descriptor printed (``json_name``
aside, which protoc fills in), for derived schemas and for files with what derivation never
makes (enums, real oneofs, proto2 labels, reserved numbers); what it cannot print is refused,
never dropped."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2

from spark_kafka_wire.client.registry.proto_text import compile_text
from spark_kafka_wire.formats.protobuf_encode import derive_file, derived_text
from spark_kafka_wire.formats.protobuf_text import proto_text
from tests.unit.formats.test_protobuf_codec import _file
from tests.unit.formats.test_protobuf_encode import SPARK, _field

pytestmark = pytest.mark.unit
F = descriptor_pb2.FieldDescriptorProto


def _without_json_names(msg: descriptor_pb2.DescriptorProto) -> None:
    for f in msg.field:
        f.ClearField("json_name")
    for nested in msg.nested_type:
        _without_json_names(nested)


def _compiled(text: str) -> descriptor_pb2.FileDescriptorProto:
    """``text`` compiled by protoc (client/proto_text), its file name and json names cleared."""
    main, files = compile_text(text)
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.CopyFrom(files[main])  # a copy: compile_text's files are its cache's
    fdp.ClearField("name")
    for msg in fdp.message_type:
        _without_json_names(msg)
    return fdp


def _unnamed(fdp: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(fdp)
    out.ClearField("name")
    return out


#: What derivation has to name as protoc does: a struct before a map (nested order), a map of
#: structs (its message beside the entry), a field whose synthetic oneof protoc renames, names
#: protoc's keywords start statements with, a struct in a struct, structs whose messages'
#: names are taken by a field or a map's entry.
TRICKY = {"type": "struct", "fields": [
    _field("inner", {"type": "struct", "fields": [_field("deep", {"type": "struct", "fields": [
        _field("ok", "boolean")]})]}),
    _field("by_id", {"type": "map", "keyType": "long", "valueType": {
        "type": "struct", "fields": [_field("n", "integer"), _field("at", "timestamp")]},
        "valueContainsNull": True}),
    _field("a", "string"), _field("_b", "string"), _field("optional", "double"),
    _field("map", {"type": "map", "keyType": "string", "valueType": "binary",
                   "valueContainsNull": True}),
    _field("message", {"type": "array", "elementType": "float", "containsNull": False}),
    _field("Deep", {"type": "struct", "fields": [_field("x", "interval day to second")]}),
    _field("ByIdEntry2", {"type": "struct", "fields": [_field("y", "date")]}),
]}


@pytest.mark.parametrize("spark_type", [SPARK, TRICKY], ids=["spark", "tricky"])
def test_protoc_compiles_derived_text_to_the_derived_descriptor(spark_type: dict) -> None:
    text = derived_text(spark_type)
    assert text.startswith('syntax = "proto3";\npackage kafkawire;\n')
    assert _compiled(text) == _unnamed(derive_file(spark_type))


def test_derived_text_reads_as_written() -> None:
    """What a person (and every registry's parser) sees in the registry."""
    text = derived_text({"type": "struct", "fields": [
        _field("id", "long", False), _field("at", "timestamp"),
        _field("tags", {"type": "array", "elementType": "string", "containsNull": False}),
        _field("attrs", {"type": "map", "keyType": "string", "valueType": "integer",
                         "valueContainsNull": True}),
        _field("inner", {"type": "struct", "fields": [_field("x", "short")]})]})
    assert text == """syntax = "proto3";
package kafkawire;

import "google/protobuf/timestamp.proto";

message topLevelRecord {
  optional int64 id = 1;
  .google.protobuf.Timestamp at = 2;
  repeated string tags = 3;
  map<string, int32> attrs = 4;
  .kafkawire.topLevelRecord.Inner inner = 5;
  message Inner {
    optional int32 x = 1;
  }
}
"""


def test_enums_oneofs_wrappers_and_optional_print_back_equal() -> None:
    """The codec tests' file: top-level enum, real oneof, proto3 optional, a map, wrappers."""
    fdp = _file()
    # protoc declares map entries and nested messages in the order the text gives them
    assert _compiled(proto_text(fdp)) == _unnamed(fdp)


def test_proto2_labels_nested_enums_and_reserved_print_back_equal() -> None:
    # no syntax: proto2, as protoc leaves it
    fdp = descriptor_pb2.FileDescriptorProto(name="p2.proto", package="a.b")
    fdp.dependency.append("google/protobuf/wrappers.proto")
    fdp.public_dependency.append(0)
    m = fdp.message_type.add(name="M")
    m.field.add(name="need", number=1, type=F.TYPE_SFIXED64, label=F.LABEL_REQUIRED)
    m.field.add(name="maybe", number=2, type=F.TYPE_SINT32, label=F.LABEL_OPTIONAL)
    m.field.add(name="kind", number=3, type=F.TYPE_ENUM, type_name=".a.b.M.Kind",
                label=F.LABEL_OPTIONAL)
    m.field.add(name="x", number=4, type=F.TYPE_FIXED32, label=F.LABEL_OPTIONAL, oneof_index=0)
    m.field.add(name="y", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                type_name=".google.protobuf.StringValue", oneof_index=0)
    m.field.add(name="many", number=9, type=F.TYPE_UINT64, label=F.LABEL_REPEATED)
    m.oneof_decl.add(name="pick")
    m.reserved_range.add(start=6, end=8)
    m.reserved_range.add(start=20, end=21)
    m.reserved_name.extend(["old", "older"])
    kind = m.enum_type.add(name="Kind")
    kind.options.allow_alias = True
    for name, number in (("K0", 0), ("K1", 1), ("ALSO_K1", 1)):
        kind.value.add(name=name, number=number)
    kind.reserved_range.add(start=5, end=9)
    top = fdp.enum_type.add(name="Top")
    top.value.add(name="T", number=0)
    text = proto_text(fdp)
    assert text.startswith('syntax = "proto2";\npackage a.b;\n\nimport public "google/')
    assert _compiled(text) == _unnamed(fdp)


def _with(change) -> descriptor_pb2.FileDescriptorProto:
    fdp = _file()
    change(fdp)
    return fdp


@pytest.mark.parametrize(("fdp", "says"), [
    (_with(lambda f: setattr(f.message_type[1].field[0], "default_value", "3")),
     r"t\.Rec\.i32: default_value of a FieldDescriptorProto cannot be written"),
    (_with(lambda f: f.service.add(name="S")), r"service of a FileDescriptorProto"),
    (_with(lambda f: setattr(f.options, "java_package", "x")), r"options of a File"),
    (_with(lambda f: setattr(f.message_type[0].options, "deprecated", True)),
     r"t\.Inner: deprecated of a MessageOptions"),
    (_with(lambda f: setattr(f.message_type[0].field[0], "name", "a b")),
     r"t\.Inner\.a b: 'a b' is not a \.proto identifier"),
    (_with(lambda f: setattr(f.enum_type[0].value[0], "name", "option")),
     r"t\.Color: an enum value named 'option'"),
    (_with(lambda f: setattr(f, "syntax", "editions")), r"syntax 'editions'"),
    (_with(lambda f: f.message_type[1].field[17].ClearField("oneof_index") or
           f.message_type[1].field.add(name="q", number=40, type=F.TYPE_INT32,
                                        label=F.LABEL_OPTIONAL, oneof_index=0)),
     r"the fields of oneof choice are not contiguous"),
])
def test_what_is_not_printed_is_refused(fdp: descriptor_pb2.FileDescriptorProto,
                                        says: str) -> None:
    with pytest.raises(ValueError, match=says):
        proto_text(fdp)


@pytest.mark.parametrize(("fields", "says"), [
    ([_field("first name", "string")],
     r"field 'first name' is not a Protobuf field name .*rename it"),
    ([_field("s", {"type": "struct", "fields": [_field("1st", "long")]})],
     r"field 's\.1st' is not a Protobuf field name"),
    ([_field("a", "long"), _field("_a", "long")],
     r"fields 'a' and '_a': protobufjs .* names the oneof of optional 'a' '_a' as well"),
    ([_field("a_b", "long"), _field("aB", "long")],
     r"fields 'a_b' and 'aB' have the same Protobuf JSON name 'aB'"),
    ([_field(n, {"type": "map", "keyType": "string", "valueType": "long",
                 "valueContainsNull": True}) for n in ("x_y", "X_y")],
     r"map fields 'x_y' and 'X_y' would have the same entry message 'XYEntry'"),
    ([_field("map", {"type": "map", "keyType": "string", "valueType": "long",
                     "valueContainsNull": True}), _field("MapEntry", "string")],
     r"map field 'map' has an entry message named 'MapEntry', as another field is"),
])
def test_derivation_refuses_names_a_proto_file_cannot_hold(fields: list, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        derive_file({"type": "struct", "fields": fields})
