""".proto text schemas (what Java producers register) compiled by protoc and decoded: values
checked against the protobuf runtime's own serialization of messages built from the compiled
descriptors; references as text, as base64 binary and mixed; errors naming the line."""

from __future__ import annotations

import base64
import datetime
import os
import pickle
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from google.protobuf import descriptor_pb2, message_factory

from spark_kafka_wire.client.registry.proto_text import (
    MAX_IMPORT_PATH_CHARS,
    UnsafeImportPathError,
    binary_file_descriptor,
    binary_schemas,
    check_import_path,
    compile_text,
    synthetic_name,
)
from spark_kafka_wire.formats.protobuf_codec import ProtobufDecoder, build_pool


def _pool(schema, refs=None):
    """The pool of text (or binary) schemas as the source builds it: compiled, then loaded."""
    main, references = binary_schemas(schema, refs)
    return build_pool(main, references)


def _decoder(schema, references=None, **kwargs) -> ProtobufDecoder:
    main, binary = binary_schemas(schema, references)
    return ProtobufDecoder(main, references=binary, **kwargs)

pytestmark = pytest.mark.unit

COMMON = """syntax = "proto3";
package shop.common;
message Money { string currency = 1; int64 units = 2; }
enum Tier { TIER_UNSPECIFIED = 0; GOLD = 1; }
"""

ORDER = """syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "shop/common.proto";

message Order {
  message Line { string sku = 1; uint32 qty = 2; }
  enum State { NEW = 0; PAID = 1; }
  int32 id = 1;
  sint64 delta = 2;
  fixed64 big = 3;
  State state = 4;
  repeated Line lines = 5;
  map<string, int32> tags = 6;
  oneof pay { string card = 7; shop.common.Money cash = 8; }
  google.protobuf.Timestamp at = 9;
  google.protobuf.StringValue note = 10;
  optional int32 opt = 11;
  shop.common.Tier tier = 12;
}
"""


def _payload(schema: str, refs: dict[str, str], message: str, /, **values: object) -> bytes:
    pool, _ = _pool(schema, refs)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(message))
    return bytes(cls(**values).SerializeToString())


def _decode(dec: ProtobufDecoder, payloads: list[bytes]) -> list[object]:
    got = dec.decode(pa.array([b"\x00" + p for p in payloads], pa.binary()))
    assert not got.failed.any(), got.errors
    return list(got.array.to_pylist())


def _order_values() -> dict[str, object]:
    ts = datetime.datetime(2023, 11, 14, 22, 13, 20, 5, tzinfo=datetime.timezone.utc)
    return {"id": 7, "delta": -3, "big": 2**64 - 1, "state": 1,
            "lines": [{"sku": "a", "qty": 2}], "tags": {"x": 1},
            "cash": {"currency": "EUR", "units": 12}, "at": ts,
            "note": {"value": "hi"}, "opt": 0, "tier": 1}


def test_text_schema_with_text_reference_and_well_known_types() -> None:
    refs = {"shop/common.proto": COMMON}
    dec = _decoder(ORDER, references=refs)
    row = _decode(dec, [_payload(ORDER, refs, "shop.Order", **_order_values())])[0]
    assert row == {
        "id": 7, "delta": -3, "big": -1, "state": "PAID",
        "lines": [{"sku": "a", "qty": 2}], "tags": [("x", 1)], "card": None,
        "cash": {"currency": "EUR", "units": 12},
        "at": row["at"], "note": {"value": "hi"}, "opt": 0, "tier": "GOLD"}  # type: ignore[index]
    assert str(row["at"]) == "2023-11-14 22:13:20.000005+00:00"  # type: ignore[index]
    names = [f["name"] for f in dec.spark_type_json["fields"]]
    assert names == ["id", "delta", "big", "state", "lines", "tags", "card", "cash", "at",
                     "note", "opt", "tier"]


def test_text_main_with_binary_reference_and_binary_main_with_text_reference() -> None:
    # mixed: the reference binary (as confluent-kafka Python registers it), the main text
    pool, _ = _pool(COMMON.replace("package shop.common;", "package shop.common;\n"),
                         {})
    fdp = descriptor_pb2.FileDescriptorProto()
    pool.FindMessageTypeByName("shop.common.Money").file.CopyToProto(fdp)
    binary_common = base64.b64encode(fdp.SerializeToString()).decode()
    refs = {"shop/common.proto": binary_common}
    dec = _decoder(ORDER, references=refs)
    row = _decode(dec, [_payload(ORDER, {"shop/common.proto": COMMON}, "shop.Order",
                                 **_order_values())])[0]
    assert row["cash"] == {"currency": "EUR", "units": 12}  # type: ignore[index]
    # and the other way round: the main binary, its reference text
    main_pool, main_name = _pool(ORDER, {"shop/common.proto": COMMON})
    main_fdp = descriptor_pb2.FileDescriptorProto()
    main_pool.FindFileByName(main_name).CopyToProto(main_fdp)
    main_fdp.name = "shop/order.proto"
    dec2 = _decoder(base64.b64encode(main_fdp.SerializeToString()).decode(),
                           references={"shop/common.proto": COMMON})
    assert _decode(dec2, [_payload(ORDER, {"shop/common.proto": COMMON}, "shop.Order",
                                   **_order_values())]) == [row]


def test_proto2_required_defaults_and_enums() -> None:
    text = """syntax = "proto2";
package p2;
message M {
  required int32 id = 1;
  optional string name = 2 [default = "anon"];
  optional int64 n = 3 [default = 5];
  enum E { A = 1; B = 2; }
  optional E e = 4;
  repeated double xs = 5;
}
"""
    dec = _decoder(text)
    fields = {f["name"]: f for f in dec.spark_type_json["fields"]}
    assert fields["id"]["nullable"] is False and fields["name"]["nullable"] is True
    rows = _decode(dec, [_payload(text, {}, "p2.M", id=1),
                         _payload(text, {}, "p2.M", id=2, name="x", n=0, e=2, xs=[1.5])])
    # proto2 presence: unset optional fields are null (their defaults are not emitted)
    assert rows == [{"id": 1, "name": None, "n": None, "e": None, "xs": []},
                    {"id": 2, "name": "x", "n": 0, "e": "B", "xs": [1.5]}]


def test_nested_message_selected_by_name_and_pickles() -> None:
    text = """syntax = "proto3";
package n;
message Outer { message Inner { bytes b = 1; bool ok = 2; } Inner in = 1; }
"""
    dec = _decoder(text, message="n.Outer.Inner")
    payload = _payload(text, {}, "n.Outer.Inner", b=b"\x01", ok=True)
    framed = b"\x04\x00\x00" + payload  # indexes [0, 0]: count 2, 0, 0 (zigzag)
    dec2 = pickle.loads(pickle.dumps(dec))
    got = dec2.decode(pa.array([framed], pa.binary()))
    assert got.array.to_pylist() == [{"b": b"\x01", "ok": True}]


def test_syntax_error_names_the_line() -> None:
    bad = 'syntax = "proto3";\nmessage M {\n  int32 x = 1\n}\n'
    with pytest.raises(ValueError, match=r"kafkawire_[0-9a-f]{16}\.proto:4:1") as info:
        _decoder(bad)
    assert "/tmp" not in str(info.value)


def test_unknown_import_and_escaping_references_refused() -> None:
    text = 'syntax = "proto3";\nimport "secret/other.proto";\nmessage M { int32 x = 1; }\n'
    with pytest.raises(ValueError, match="secret/other.proto"):
        _decoder(text)
    for name in ["/etc/passwd", "../x.proto", "a/../../x.proto", "a//b.proto", "", "a\\b",
                 "./a.proto"]:
        with pytest.raises(ValueError, match="relative import path"):
            check_import_path(name)
        with pytest.raises(ValueError, match="relative import path"):
            _decoder(text, references={name: COMMON})


def test_imports_outside_the_directory_are_errors() -> None:
    # a valid .proto outside the compile directory: were protoc to read it, the schema
    # would compile, so only confinement makes these fail
    outside = Path(tempfile.mkdtemp(prefix="kafkawire-outside-"))
    try:
        (outside / "outside.proto").write_text(
            'syntax = "proto3";\npackage o;\nmessage O { int32 x = 1; }\n')
        for imp in [str(outside / "outside.proto"), f"../{outside.name}/outside.proto",
                    f"google/protobuf/../../../../../../../..{outside}/outside.proto"]:
            text = f'syntax = "proto3";\nimport "{imp}";\nmessage M {{ o.O x = 1; }}\n'
            with pytest.raises(ValueError, match="does not compile"):
                _decoder(text)
    finally:
        shutil.rmtree(outside)


def test_detection_cache_and_stable_name() -> None:
    assert binary_file_descriptor(COMMON) is None
    assert binary_file_descriptor(base64.b64encode(b"").decode()) is None  # no name: text
    main, files = compile_text(ORDER, {"shop/common.proto": COMMON})
    assert main == synthetic_name(ORDER) and main in files and "shop/common.proto" in files
    again = compile_text(ORDER, {"shop/common.proto": COMMON})
    assert again[1] is files  # cached per process by the texts' hash


def _binary_main() -> str:
    """A base64 binary main file: with it, text references are protoc's inputs by name."""
    fdp = descriptor_pb2.FileDescriptorProto(name="main.proto", package="m", syntax="proto3")
    fdp.message_type.add(name="M")
    return base64.b64encode(fdp.SerializeToString()).decode()


HOSTILE_NAMES = [
    "--plugin=protoc-gen-x=/bin/sh", "--x_out=\nid > FILE; exit 0\n:.", "-Iroot.proto",
    "@args.txt", "a/-b.proto", "a/@b.proto", "a b.proto", "a\tb.proto", "a\nb.proto",
    "a\rb.proto", "a\x1bb.proto", "caf\u00e9.proto", "a:b.proto", "C:x.proto", "a;b.proto",
    "$(id).proto", "a'b.proto", ".kafkawire-out.pb", "a/.hidden.proto", "x" * 300 + ".proto",
    "a/" * (MAX_IMPORT_PATH_CHARS // 2) + "b.proto"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_reference_names_are_refused_before_protoc_runs(name, monkeypatch) -> None:
    """Issue 45 item 1: with a binary main file, text references' names were protoc's
    arguments, and a name starting with '-' or '@' (newlines allowed) was read as an option:
    --plugin=protoc-gen-x=/bin/sh with --x_out=<newline>command<newline>:. ran a shell
    command. Names are plain relative paths of letters, digits, '_', '-', '.' and '/' now,
    refused by a typed error naming the subject and the reference before protoc runs."""
    def no_protoc(*args, **kwargs):
        raise AssertionError(f"protoc ran with {args!r}")
    monkeypatch.setattr(subprocess, "run", no_protoc)
    with pytest.raises(UnsafeImportPathError, match="relative import path") as info:
        check_import_path(name)
    assert "\n" not in str(info.value) and len(str(info.value)) < 600
    refs = {name: 'syntax = "proto3";\n', "ok.proto": 'syntax = "proto3";\n'}
    for main in (_binary_main(), 'syntax = "proto3";\nmessage T { int32 x = 1; }\n'):
        with pytest.raises(UnsafeImportPathError, match="subject 'victim-value'") as info:
            binary_schemas(main, refs, "victim-value")
        assert isinstance(info.value, ValueError)  # the callers' handling of schema errors
        assert info.value.subject == "victim-value" and info.value.name == name
        assert "\n" not in str(info.value)
    again = pickle.loads(pickle.dumps(info.value))
    assert (again.name, again.subject, str(again)) == (name, "victim-value", str(info.value))


def test_the_reported_exploit_runs_nothing(tmp_path: Path) -> None:
    """The registry answer of issue 45 item 1, against the real protoc: no command runs."""
    marker = tmp_path / "ran"
    refs = {"--plugin=protoc-gen-x=/bin/sh": "",
            f"--x_out=\ntouch {marker}; exit 0\n:.": "",
            "a.proto": 'syntax = "proto3";\n'}
    with pytest.raises(UnsafeImportPathError):
        binary_schemas(_binary_main(), refs, "victim-value")
    assert not marker.exists()


def test_protoc_gets_only_absolute_file_targets(monkeypatch) -> None:
    """Whatever check_import_path allows, no registry string stands where protoc reads an
    option: its inputs are the written files' absolute paths under the temporary proto_path;
    the compiled files keep their import names."""
    seen: list[list[str]] = []
    real_run = subprocess.run

    def spy(cmd, *args, **kwargs):
        seen.append(list(cmd))
        return real_run(cmd, *args, **kwargs)
    monkeypatch.setattr(subprocess, "run", spy)
    common = COMMON.replace("package shop.common;", "package shop.common; // absolute")
    main_pool, main_name = _pool(ORDER, {"shop/common.proto": COMMON})
    main_fdp = descriptor_pb2.FileDescriptorProto()
    main_pool.FindFileByName(main_name).CopyToProto(main_fdp)
    main_fdp.name = "shop/order.proto"
    binary_main = base64.b64encode(main_fdp.SerializeToString()).decode()
    seen.clear()
    _, files = compile_text(binary_main, {"shop/common.proto": common,
                                          "shop/extra-1.0/x_y.proto": 'syntax = "proto3";'})
    assert {"shop/order.proto", "shop/common.proto", "shop/extra-1.0/x_y.proto"} <= set(files)
    text_main = ORDER.replace("message Order {", "message Order { // absolute")
    _, files = compile_text(text_main, {"shop/common.proto": common})
    assert synthetic_name(text_main) in files and "shop/common.proto" in files
    assert len(seen) == 2
    for cmd in seen:
        protoc = cmd[cmd.index("grpc_tools.protoc") + 1:]
        options = [a for a in protoc if a.startswith("-")]
        assert all(a.startswith(("-I", "--descriptor_set_out=", "--descriptor_set_in="))
                   or a == "--include_imports" for a in options), options
        include = next(a[2:] for a in protoc if a.startswith("-I"))
        targets = [a for a in protoc if not a.startswith("-")]
        assert targets and all(os.path.isabs(t) and t.startswith(include + os.sep)
                               for t in targets), targets


def test_legitimate_reference_names_are_taken() -> None:
    for name in ["a.proto", "shop/common.proto", "com/acme/v1_2/order-item.proto",
                 "google/protobuf/timestamp.proto", "_p/x.y.z.proto", "A/B/C.PROTO"]:
        check_import_path(name)


def test_a_name_both_file_and_directory_is_a_typed_error() -> None:
    text = 'syntax = "proto3";\n'
    with pytest.raises(UnsafeImportPathError, match="cannot be written"):
        binary_schemas(_binary_main(), {"a": text, "a/b.proto": text}, "s")
