"""The CLI's registry formats against hostile data (issue 45, items 12 and 13): the readers
kept by schema id and message are bounded (ids and message indexes are the records' data), a
schema whose references go beyond the client's limits fails its own records only, and the
registry's credentials may come from the environment instead of the command line."""

from __future__ import annotations

import base64
import json
import logging

import pytest

from spark_kafka_wire.cli.records import Record
from spark_kafka_wire.cli.registry_decoding import (
    Reader,
    RecordDecoder,
    RegistryReaders,
    decode_values,
)
from spark_kafka_wire.client.errors import ConfigurationError, SchemaRegistryError
from spark_kafka_wire.client.registry.schema_registry import (
    RegisteredSchema,
    RegistryConfig,
    SchemaRegistryClient,
)
from spark_kafka_wire.formats.json_schema import JsonSchemaDecoder
from tests.unit.client.test_schema_registry_hostile import HostileRegistry

pytestmark = pytest.mark.unit

SECRET = "cli-s3cret"
#: what the CLI keeps: Confluent's max.schemas.per.subject (READERS_KEPT)
KEPT = 1000


class UnknownIds(SchemaRegistryClient):
    """A registry that has no schema: each id asked is counted, and NOT_FOUND."""

    def __init__(self) -> None:
        super().__init__(RegistryConfig(("http://127.0.0.1:9",)))
        self.asked: list[int] = []

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> RegisteredSchema:
        self.asked.append(schema_id)
        raise SchemaRegistryError("NOT_FOUND", "http://127.0.0.1:9", f"GET /schemas/ids/"
                                  f"{schema_id}", status=404, error_code=40403)


def test_the_readers_kept_are_bounded_and_the_least_recently_used_go() -> None:
    """Before, one reader per (id, message indexes) seen was kept for the command's life:
    records naming ever new ids or indexes grew it without end."""
    registry = UnknownIds()
    readers = RegistryReaders(registry, "protobuf")
    for i in range(3 * KEPT):
        assert "is not in the registry" in str(readers(i, (0, i % 7)))
    assert len(readers._found) == KEPT
    asked = len(registry.asked)
    readers(3 * KEPT - 1, (0, (3 * KEPT - 1) % 7))  # recently used: kept
    assert len(registry.asked) == asked
    readers(0, (0, 0))  # long unused: gone, asked again
    assert len(registry.asked) == asked + 1 and len(readers._found) == KEPT


class EndlessImports(SchemaRegistryClient):
    """A registry whose schema 5 imports beyond the client's limits; schema 6 is fine."""

    def __init__(self) -> None:
        super().__init__(RegistryConfig(("http://127.0.0.1:9",)))

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> RegisteredSchema:
        return RegisteredSchema(schema_id, "JSON", '{"type": "string"}')

    def imports(self, schema: RegisteredSchema) -> dict[str, str]:
        raise SchemaRegistryError("REFERENCE_LIMIT", "http://127.0.0.1:9",
                                  "GET /subjects/s101/versions/1", schema_id=schema.id,
                                  reason="more than 100 levels of references "
                                         "(max_reference_depth)")


def test_a_schema_beyond_the_reference_limits_fails_its_records_only() -> None:
    readers = RegistryReaders(EndlessImports(), "json-schema")
    got = readers(5, (0,))
    assert isinstance(got, str) and got.startswith("schema id 5 cannot be read: ")
    assert "REFERENCE_LIMIT" in got and "max_reference_depth" in got


def record(value: bytes) -> Record:
    return Record(topic="t", partition=0, offset=3, timestamp=0, timestamp_type=0, key=None,
                  value=value, headers=())


def test_registry_credentials_come_from_the_environment_not_the_command_line(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """KAFKAWIRE_SCHEMA_REGISTRY_USER_INFO (Confluent's basic.auth.user.info) and
    KAFKAWIRE_SCHEMA_REGISTRY_BEARER_TOKEN authenticate the CLI's requests, so that no
    password need stand in argv, where `ps` shows it to every local user."""
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("KAFKAWIRE_SCHEMA_REGISTRY_USER_INFO", f"me:{SECRET}")
    with HostileRegistry() as registry:
        decoder = RecordDecoder(registry.url, "text", "avro")
        decoded = decoder.decode([record(b"\x00\x00\x00\x00\x01body")])
        assert decoded[0].value_view is not None
        basic = "Basic " + base64.b64encode(f"me:{SECRET}".encode()).decode()
        assert registry.requests == ["/schemas/ids/1"] and registry.authorizations == [basic]
    monkeypatch.delenv("KAFKAWIRE_SCHEMA_REGISTRY_USER_INFO")
    monkeypatch.setenv("KAFKAWIRE_SCHEMA_REGISTRY_BEARER_TOKEN", SECRET)
    with HostileRegistry() as registry:
        RecordDecoder(registry.url, "text", "avro").decode([record(b"\x00\x00\x00\x00\x02b")])
        assert registry.authorizations == [f"Bearer {SECRET}"]
    assert all(SECRET not in r.getMessage() for r in caplog.records)
    # given twice (the URL's user info too): refused, naming the variable, not the secret
    with pytest.raises(ConfigurationError) as refused:
        RecordDecoder("http://u:pw@127.0.0.1:9", "text", "avro")
    assert "KAFKAWIRE_SCHEMA_REGISTRY_BEARER_TOKEN" in str(refused.value)
    assert SECRET not in str(refused.value) and "pw" not in str(refused.value)


class DeepSchemas(SchemaRegistryClient):
    """A registry answering, for every id, a schema nested 3,000 deep in the format asked."""

    def __init__(self, schema_type: str, text: str) -> None:
        super().__init__(RegistryConfig(("http://127.0.0.1:9",)))
        self.schema_type, self.text = schema_type, text

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> RegisteredSchema:
        return RegisteredSchema(schema_id, self.schema_type, self.text)  # type: ignore[arg-type]


def _deep_avro(levels: int) -> str:
    """Text only: json.dumps itself cannot nest this deep."""
    inner = '{"type": "array", "items": ' * levels + '"int"' + "}" * levels
    return '{"type": "record", "name": "R", "fields": [{"name": "a", "type": ' + inner + "}]}"


def _deep_json_schema(levels: int) -> str:
    inner = '{"type": "array", "items": ' * levels + '{"type": "integer"}' + "}" * levels
    return '{"type": "object", "properties": {"a": ' + inner + "}}"


@pytest.mark.parametrize(("fmt", "schema_type", "text"), [
    ("avro", "AVRO", _deep_avro(3000)), ("json-schema", "JSON", _deep_json_schema(3000))])
def test_a_writer_schema_nested_3000_deep_fails_its_records_not_the_command(
        fmt: str, schema_type: str, text: str) -> None:
    """Issue 45 item 7: such a schema raised RecursionError through `kafkawire consume`,
    which printed a traceback and stopped; now its records are shown as base64 with the
    reason, as for an unknown id."""
    got = RegistryReaders(DeepSchemas(schema_type, text), fmt)(4, (0,))
    assert isinstance(got, str) and got.startswith(f"schema 4 cannot be read as {fmt}: ")
    assert "deeper than 100" in got or "nested deeper" in got, got


def test_a_json_record_nested_thousands_deep_is_one_failure_not_a_traceback() -> None:
    """Issue 45 item 7: a 2 KB `[[[...]]]` record stopped `kafkawire consume` with a
    RecursionError traceback; now it is one record shown as base64 with its reason."""
    schema = json.dumps({"type": "array", "items": {}})
    reader = Reader(JsonSchemaDecoder(schema), schema)
    deep = b"\x00\x00\x00\x00\x04" + b"[" * 2000 + b"]" * 2000
    good = b"\x00\x00\x00\x00\x04[1, 2]"
    shown, failures = decode_values([good, deep], "json-schema", lambda i, p: reader)
    assert [f.index for f in failures] == [1]
    assert "nested deeper than 100" in failures[0].reason
    assert shown[1][1] == "base64" and shown[0][1] == "json"


class EveryId(SchemaRegistryClient):
    """A registry answering a schema for every id asked (as a hostile one may), without HTTP:
    ``_call`` is the client's one request method."""

    def __init__(self) -> None:
        super().__init__(RegistryConfig(("http://127.0.0.1:9",)))
        self.asked = 0

    def _call(self, method, path, **kwargs):  # type: ignore[no-untyped-def,override]
        from spark_kafka_wire.client.registry.schema_registry import _Answer

        self.asked += 1
        return _Answer({"schema": '{"type": "string"}', "schemaType": "JSON"},
                       "http://127.0.0.1:9")


def test_the_registry_client_keeps_the_most_recently_used_schemas_only() -> None:
    """Issue 45: the client's cache by id grew with every id the records named (ids are
    data) while a registry answered them; it keeps SCHEMAS_KEPT, the least recently used
    going first, and the CLI keeps as many readers."""
    from spark_kafka_wire.cli.registry_decoding import READERS_KEPT
    from spark_kafka_wire.client.registry.schema_registry import SCHEMAS_KEPT

    assert READERS_KEPT == SCHEMAS_KEPT == KEPT
    registry = EveryId()
    for i in range(3 * KEPT):
        registry.schema_by_id(i)
    assert len(registry._by_id) == KEPT and registry.asked == 3 * KEPT
    registry.schema_by_id(3 * KEPT - 1)  # recently used: kept, not asked again
    assert registry.asked == 3 * KEPT
    registry.schema_by_id(0)  # long unused: dropped, asked again
    assert registry.asked == 3 * KEPT + 1 and len(registry._by_id) == KEPT
