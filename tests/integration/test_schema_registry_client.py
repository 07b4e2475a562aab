"""kafkawire's Schema Registry client (client/registry/schema_registry.py) against a real registry:
Apicurio Registry serving Confluent's API (the ``schema_registry`` fixture), with Confluent's
own Python client as the oracle for what the registry holds.

What a real registry will not do on command (a 5xx then success, a redirect, an oversized or
HTML answer, a stall, a dropped connection) comes from ``RegistryFaultProxy`` in front of the
same registry: it answers the scripted fault, then forwards to the registry, so the client's
success after a fault is the registry's real answer. It also shows the headers sent. https is
stunnel (the same OpenSSL a registry's clients meet) in front of the registry.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from urllib.parse import urlsplit

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry import SchemaReference as ConfluentReference
from confluent_kafka.schema_registry import SchemaRegistryClient as ConfluentClient

from spark_kafka_wire.client.errors import SchemaRegistryError
from spark_kafka_wire.client.registry.schema_registry import (
    RegisteredSchema,
    RegistryConfig,
    SchemaReference,
    SchemaRegistryClient,
    shared_registry,
)
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.testing.embedded import free_port
from tests.support.errors import raises_condition
from tests.support.registry_fault_proxy import Fault, RegistryFaultProxy

AVRO_V1 = {"type": "record", "name": "Reading", "namespace": "kafkawire.test",
           "fields": [{"name": "sensor", "type": "string"}, {"name": "value", "type": "double"}]}
AVRO_V2 = {**AVRO_V1, "fields": [*AVRO_V1["fields"],
                                 {"name": "unit", "type": "string", "default": "C"}]}
AVRO_BREAKING = {**AVRO_V1, "fields": [*AVRO_V1["fields"], {"name": "unit", "type": "string"}]}
PROTO = ('syntax = "proto3";\npackage kafkawire.test;\n\nmessage Reading {\n'
         "  string sensor = 1;\n  double value = 2;\n}\n")
JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Reading",
               "type": "object", "properties": {"sensor": {"type": "string"}}}
#: in a fault's body: never to be shown in an error or a log
MARKER = "SECRET-BODY-MARKER"
PASSWORD = "pa:ss@w0rd/secret"


def subject(prefix: str) -> str:
    """A subject of the test's own (the registry lives as long as the session)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}-value"


def fast(*urls: str, **settings: object) -> RegistryConfig:
    """A config whose retries wait milliseconds, not seconds."""
    settings = {"retries_wait_ms": 5, "retries_max_wait_ms": 20, "request_timeout_s": 10.0,
                **settings}
    return RegistryConfig(urls, **settings)  # type: ignore[arg-type]


@pytest.fixture
def oracle(schema_registry: str) -> ConfluentClient:
    client = ConfluentClient({"url": schema_registry, "timeout": 30})
    yield client
    client.close()


@pytest.fixture
def client(schema_registry: str) -> SchemaRegistryClient:
    return SchemaRegistryClient(fast(schema_registry, max_retries=0))


@pytest.fixture
def proxy(schema_registry: str) -> RegistryFaultProxy:
    with RegistryFaultProxy(schema_registry) as started:
        yield started


def closed_port_url() -> str:
    """A URL nothing listens on (a port just freed)."""
    return f"http://127.0.0.1:{free_port()}/apis/ccompat/v7"


# ------------------------------------------------------------------ the API on a real registry


def test_register_then_read_by_id_latest_version_versions_and_lookup(client, oracle):
    name = subject("avro")
    text = json.dumps(AVRO_V1)

    schema_id = client.register(name, text)

    assert schema_id == oracle.get_latest_version(name).schema_id
    by_id = client.schema_by_id(schema_id)
    assert (by_id.id, by_id.schema_type, by_id.references) == (schema_id, "AVRO", ())
    assert json.loads(by_id.schema) == AVRO_V1
    latest = client.latest(name)
    assert (latest.id, latest.subject, latest.version) == (schema_id, name, 1)
    assert client.version(name, 1) == latest
    assert client.versions(name) == [1] == oracle.get_versions(name)
    found = client.lookup(name, text)
    assert found is not None and (found.id, found.version, found.subject) == (schema_id, 1, name)
    assert client.register(name, text) == schema_id  # the same schema keeps its id


def test_a_second_version_is_seen_by_latest_version_and_versions(client, oracle):
    name = subject("avro-v2")
    first = client.register(name, json.dumps(AVRO_V1))
    second = client.register(name, json.dumps(AVRO_V2))

    assert second != first
    assert client.versions(name) == [1, 2]
    assert (client.latest(name).id, client.latest(name).version) == (second, 2)
    assert json.loads(client.version(name, 1).schema) == AVRO_V1
    assert json.loads(client.schema_by_id(second).schema) == AVRO_V2
    assert oracle.get_latest_version(name).schema_id == second


def test_protobuf_and_json_schemas_keep_their_type_and_references(client, oracle):
    common = f"kafkawire-common-{uuid.uuid4().hex[:8]}"
    unit = ('syntax = "proto3";\npackage kafkawire.common;\n\n'
            "message Unit {\n  string symbol = 1;\n}\n")
    client.register(common, unit, "PROTOBUF")
    reading = ('syntax = "proto3";\npackage kafkawire.test;\n\nimport "kafkawire/unit.proto";\n\n'
               "message Reading {\n  double value = 1;\n  kafkawire.common.Unit unit = 2;\n}\n")
    reference = SchemaReference("kafkawire/unit.proto", common, 1)
    name = subject("proto")

    proto_id = client.register(name, reading, "PROTOBUF", [reference])

    by_id = client.schema_by_id(proto_id)
    assert by_id.schema_type == "PROTOBUF" and by_id.references == (reference,)
    assert client.latest(name).references == (reference,)
    theirs = oracle.get_schema(proto_id)
    assert theirs.schema_type == "PROTOBUF"
    assert [(r.name, r.subject, r.version) for r in theirs.references] == [
        ("kafkawire/unit.proto", common, 1)]
    json_name = subject("json")
    json_id = client.register(json_name, json.dumps(JSON_SCHEMA), "JSON")
    assert client.schema_by_id(json_id).schema_type == "JSON"
    assert json.loads(client.latest(json_name).schema) == JSON_SCHEMA


def test_what_confluents_client_registers_reads_the_same(client, oracle):
    """The other way round: a schema with a reference registered by Confluent's client."""
    common = f"kafkawire-common-{uuid.uuid4().hex[:8]}"
    oracle.register_schema(common, Schema('syntax = "proto3";\npackage c;\n\n'
                                          "message U {\n  string s = 1;\n}\n", "PROTOBUF"))
    text = ('syntax = "proto3";\npackage t;\n\nimport "c/u.proto";\n\n'
            "message R {\n  c.U u = 1;\n}\n")
    name = subject("proto-theirs")
    schema_id = oracle.register_schema(
        name, Schema(text, "PROTOBUF", [ConfluentReference("c/u.proto", common, 1)]))

    assert client.schema_by_id(schema_id) == RegisteredSchema(
        schema_id, "PROTOBUF", oracle.get_schema(schema_id).schema_str,
        (SchemaReference("c/u.proto", common, 1),))


def test_lookup_of_a_schema_or_subject_the_registry_lacks_is_none(client):
    name = subject("lookup")
    client.register(name, json.dumps(AVRO_V1))

    assert client.lookup(name, json.dumps(AVRO_V2)) is None  # 40403
    assert client.lookup(subject("nobody"), json.dumps(AVRO_V1)) is None  # 40401


def test_subject_names_are_quoted_whole(client, oracle):
    """Context-style and odd subject names: each is one path segment."""
    for name in (f":.ctx{uuid.uuid4().hex[:6]}:orders-value", f"a/b c?d#{uuid.uuid4().hex[:6]}"):
        schema_id = client.register(name, json.dumps(AVRO_V1))
        assert client.latest(name).subject == name
        assert client.versions(name) == [1]
        assert oracle.get_latest_version(name).schema_id == schema_id


# ------------------------------------------------------------------ the registry's refusals


def test_an_unknown_id_is_not_found_with_confluents_code(client):
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.NOT_FOUND",
                          "schema id 2000000000", "HTTP 404", "40403") as caught:
        client.schema_by_id(2_000_000_000)
    assert (caught.value.status, caught.value.error_code) == (404, 40403)
    assert caught.value.schema_id == 2_000_000_000


def test_an_unknown_subject_or_version_is_not_found(client):
    name = subject("missing")
    for call in (lambda: client.latest(name), lambda: client.versions(name)):
        with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.NOT_FOUND",
                              f"subject '{name}'") as caught:
            call()
        assert caught.value.error_code == 40401 and caught.value.subject == name
    client.register(name, json.dumps(AVRO_V1))
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.NOT_FOUND",
                          "version 7") as caught:
        client.version(name, 7)
    assert caught.value.error_code == 40402


def test_an_incompatible_schema_is_refused_and_not_registered(client, oracle):
    name = subject("compat")
    oracle.set_compatibility(name, "BACKWARD")
    client.register(name, json.dumps(AVRO_V1))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.INCOMPATIBLE",
                          f"subject '{name}'", "HTTP 409") as caught:
        client.register(name, json.dumps(AVRO_BREAKING))

    assert caught.value.status == 409 and caught.value.error_code == 409
    assert client.versions(name) == [1]
    assert client.register(name, json.dumps(AVRO_V2))  # a compatible change is taken


def test_compatibility_is_read_and_set_as_confluents_client_sees_it(client, oracle):
    name = subject("levels")
    client.register(name, json.dumps(AVRO_V1))
    client.set_compatibility(name, "FORWARD")
    assert oracle.get_compatibility(name) == "FORWARD"
    oracle.set_compatibility(name, "FULL")
    assert client.compatibility(name) == "FULL"


def test_an_invalid_schema_is_refused_as_invalid(client):
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.INVALID_SCHEMA",
                          "HTTP 422", "42201") as caught:
        client.register(subject("invalid"), "{not a schema", "AVRO")
    assert caught.value.error_code == 42201


# ------------------------------------------------------------------ failover, retries, cache


def test_a_dead_first_url_fails_over_to_the_next(schema_registry):
    registry = SchemaRegistryClient(fast(closed_port_url(), schema_registry, max_retries=0))
    name = subject("failover")

    schema_id = registry.register(name, json.dumps(AVRO_V1))

    assert registry.latest(name).id == schema_id
    assert registry.requests_sent == 4  # each call: the dead URL, then the live one


def test_no_url_answering_is_unreachable_after_every_round():
    dead = [closed_port_url(), closed_port_url()]
    registry = SchemaRegistryClient(fast(*dead, max_retries=2))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE",
                          "6 attempts on 2 URLs", "max_retries=2", dead[0], dead[1],
                          "refused"):
        registry.latest("x-value")
    assert registry.requests_sent == 6


def test_schemas_by_id_are_asked_once_per_process(schema_registry):
    config = fast(schema_registry)
    registry = shared_registry(config)
    assert shared_registry(fast(schema_registry)) is registry  # equal configs share a client
    schema_id = registry.register(subject("cache"), json.dumps(AVRO_V1))
    sent = registry.requests_sent

    first = registry.schema_by_id(schema_id)
    again = registry.schema_by_id(schema_id)

    assert again is first
    assert registry.requests_sent == sent + 1
    # with Confluent's subject parameter (the id's context): a key of its own, the same schema
    with_subject = registry.schema_by_id(schema_id, subject=first.subject or "any-value")
    assert (with_subject.id, with_subject.schema) == (first.id, first.schema)
    assert registry.schema_by_id(schema_id, subject="any-value") is with_subject
    assert registry.requests_sent == sent + 2


def test_a_server_error_then_success_gets_the_registrys_answer(proxy, client):
    name = subject("retry")
    schema_id = client.register(name, json.dumps(AVRO_V1))
    registry = SchemaRegistryClient(fast(proxy.url, max_retries=3))
    proxy.then(Fault(503, b'{"error_code": 50301, "message": "busy"}'), Fault(429), Fault(500))

    assert registry.latest(name).id == schema_id

    assert registry.requests_sent == 4 and len(proxy.seen) == 4


def test_a_server_error_that_lasts_runs_out_of_retries(proxy, caplog):
    registry = SchemaRegistryClient(fast(proxy.url, max_retries=2))
    body = json.dumps({"error_code": 50001, "message": "store down\x1b[31m",
                       "trace": MARKER}).encode()
    proxy.then(*[Fault(500, body)] * 3)

    with caplog.at_level(logging.WARNING), raises_condition(
            SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.SERVER_ERROR", "HTTP 500",
            "50001: store down\\?\\[31m", "3 attempts") as caught:
        registry.versions("x-value")

    assert caught.value.status == 500 and caught.value.error_code == 50001
    assert MARKER not in str(caught.value) and MARKER not in caplog.text
    assert "\x1b" not in str(caught.value) + caplog.text
    assert len(proxy.seen) == 3


def test_a_client_error_is_not_retried(proxy):
    registry = SchemaRegistryClient(fast(proxy.url, max_retries=3))
    proxy.then(Fault(400, json.dumps({"error_code": 40001, "message": "bad"}).encode()))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.INVALID_REQUEST",
                          "HTTP 400, error code 40001: bad"):
        registry.versions("x-value")
    assert len(proxy.seen) == 1


def test_a_connection_closed_without_answer_is_retried(proxy, client):
    name = subject("dropped")
    client.register(name, json.dumps(AVRO_V1))
    registry = SchemaRegistryClient(fast(proxy.url, max_retries=1))
    proxy.then(Fault(close=True))

    assert registry.versions(name) == [1]
    assert len(proxy.seen) == 2


def test_no_answer_within_the_timeout_is_unreachable(proxy):
    registry = SchemaRegistryClient(fast(proxy.url, max_retries=0, request_timeout_s=0.5))
    proxy.then(Fault(200, b"[1]", delay_s=3))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE",
                          r"no answer within 0.5 s \(request_timeout_s\)"):
        registry.versions("x-value")


# ------------------------------------------------------------------ what is not trusted


def test_a_redirect_is_reported_never_followed(proxy, schema_registry):
    with RegistryFaultProxy(schema_registry) as elsewhere:
        registry = SchemaRegistryClient(fast(proxy.url, max_retries=2, user_info="u:" + PASSWORD))
        proxy.then(Fault(307, headers={"Location": elsewhere.url + "/subjects"}))

        with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.REDIRECTED",
                              "HTTP 307", "final URL") as caught:
            registry.versions("x-value")

        assert elsewhere.seen == []  # the credentials went nowhere else
        assert len(proxy.seen) == 1
        assert PASSWORD not in str(caught.value)


@pytest.mark.parametrize("length", [None, -1], ids=["content-length", "until-close"])
def test_an_answer_over_the_limit_is_refused_unread(proxy, length):
    """The proxy stalls after 2,000 bytes of a 200,000-byte answer for longer than the
    client's timeout: only a client that stops at its limit (1,000) gets to say so; one
    reading the whole answer would time out."""
    registry = SchemaRegistryClient(fast(proxy.url, max_retries=2, max_response_bytes=1000,
                                         request_timeout_s=2.0))
    proxy.then(Fault(200, b"[" + b"1," * 100_000 + b"1]", length=length, stall_after=2000,
                     stall_s=6.0))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.BAD_ANSWER",
                          "max_response_bytes", "1000 bytes"):
        registry.versions("x-value")
    assert len(proxy.seen) == 1  # not retried: the same registry answers the same


def test_an_answer_at_the_limit_is_read(proxy, client):
    name = subject("limit")
    client.register(name, json.dumps(AVRO_V1))
    registry = SchemaRegistryClient(fast(proxy.url, max_response_bytes=3))  # "[1]"
    assert registry.versions(name) == [1]


def test_an_html_page_is_a_bad_answer_and_is_not_shown(proxy):
    registry = SchemaRegistryClient(fast(proxy.url))
    proxy.then(Fault(200, f"<html>login {MARKER}</html>".encode(),
                     headers={"Content-Type": "text/html"}))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.BAD_ANSWER",
                          "not JSON") as caught:
        registry.versions("x-value")
    assert MARKER not in str(caught.value)


def test_an_answer_of_the_wrong_shape_is_a_bad_answer(proxy):
    registry = SchemaRegistryClient(fast(proxy.url))
    proxy.then(Fault(200, b'{"schema": 5, "id": 1}'),
               Fault(200, b'{"schema": "x", "schemaType": "XML"}'))
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.BAD_ANSWER",
                          "no schema string", "schema id 1"):
        registry.schema_by_id(1)
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.BAD_ANSWER",
                          "unknown schemaType 'XML'"):
        registry.schema_by_id(1)
    assert registry.requests_sent == 2  # failures are not cached


def test_basic_credentials_are_sent_and_never_shown(proxy, caplog):
    """From basic.auth.user.info and from a URL's user info (percent-decoded, per URL); the
    password is in no message, log line or repr."""
    quoted = PASSWORD.replace("%", "%25").replace(":", "%3A").replace("@", "%40") \
        .replace("/", "%2F")
    in_url = proxy.url.replace("http://", f"http://user:{quoted}@")
    for config in (fast(proxy.url, user_info="user:" + PASSWORD, max_retries=1),
                   fast(in_url, max_retries=1)):
        registry = SchemaRegistryClient(config)
        proxy.seen.clear()
        proxy.then(Fault(503), Fault(401, json.dumps(
            {"error_code": 40101, "message": "Unauthorized"}).encode()))
        with caplog.at_level(logging.DEBUG), raises_condition(
                SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNAUTHORIZED",
                "HTTP 401, error code 40101") as caught:
            registry.versions("x-value")

        expected = "Basic " + base64.b64encode(f"user:{PASSWORD}".encode()).decode()
        assert [seen.headers.get("authorization") for seen in proxy.seen] == [expected] * 2
        shown = " ".join([str(caught.value), repr(caught.value), repr(config), str(config),
                          repr(registry), caplog.text, *config.urls])
        assert PASSWORD not in shown and quoted not in shown and "user:" not in shown


def test_a_bearer_token_and_its_headers_are_sent(proxy, client):
    name = subject("bearer")
    client.register(name, json.dumps(AVRO_V1))
    registry = SchemaRegistryClient(fast(
        proxy.url, bearer_token="tok-" + MARKER,
        bearer_headers=(("target-sr-cluster", "lsrc-123"),
                        ("Confluent-Identity-Pool-Id", "pool-9"))))

    assert registry.versions(name) == [1]

    sent = proxy.seen[-1].headers
    assert sent["authorization"] == f"Bearer tok-{MARKER}"
    assert (sent["target-sr-cluster"], sent["confluent-identity-pool-id"]) == ("lsrc-123",
                                                                                "pool-9")
    assert MARKER not in repr(registry.config)


def test_no_credentials_no_authorization_header(proxy, client):
    name = subject("anonymous")
    client.register(name, json.dumps(AVRO_V1))
    SchemaRegistryClient(fast(proxy.url)).versions(name)
    assert "authorization" not in proxy.seen[-1].headers


# ------------------------------------------------------------------ https


@pytest.fixture
def tls_registry(schema_registry, pki):
    """The registry behind stunnel's TLS (the test PKI's server certificate: localhost and
    127.0.0.1)."""
    from tests.support.tls_front import Stunnel, stunnel_binary

    if stunnel_binary() is None:
        pytest.skip("https needs stunnel4 (apt-get install stunnel4)")
    parts = urlsplit(schema_registry)
    if parts.hostname not in ("127.0.0.1", "localhost") or parts.port is None:
        pytest.skip("stunnel fronts a registry on this machine's loopback only")
    tunnel = Stunnel(free_port(), parts.port, pki.server).start()  # waits for its port
    yield f"https://127.0.0.1:{tunnel.port}{parts.path}"
    tunnel.stop()


def test_https_with_the_registrys_ca(tls_registry, pki, client):
    name = subject("https")
    schema_id = client.register(name, json.dumps(AVRO_V1))
    with open(pki.ca_pem) as ca:
        registry = SchemaRegistryClient(fast(tls_registry, tls=TlsConfig(cadata=ca.read())))

    assert registry.latest(name).id == schema_id


def test_https_with_an_untrusted_certificate_fails_at_once(tls_registry, pki):
    with open(pki.other_ca_pem) as ca:
        registry = SchemaRegistryClient(fast(tls_registry, max_retries=3,
                                             tls=TlsConfig(cadata=ca.read())))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.TLS_HANDSHAKE",
                          "untrusted certificate", "schema.registry.ssl"):
        registry.versions("x-value")
    assert registry.requests_sent == 1


def test_an_https_url_on_a_plain_port_is_a_tls_failure(schema_registry):
    plain = schema_registry.replace("http://", "https://")
    registry = SchemaRegistryClient(fast(plain, max_retries=3))
    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.TLS_HANDSHAKE",
                          "serves https"):
        registry.versions("x-value")
    assert registry.requests_sent == 1



def test_a_404_without_confluents_code_is_no_empty_lookup(proxy):
    """A wrong path (a URL without Confluent's API path, a proxy's 404 page) is an error, not
    "the subject lacks the schema": only the codes 40401 and 40403 mean that."""
    registry = SchemaRegistryClient(fast(proxy.url))
    proxy.then(Fault(404, b"<html>Not Found</html>", headers={"Content-Type": "text/html"}))

    with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.NOT_FOUND",
                          "HTTP 404, no Confluent error in the answer", "/apis/ccompat/v7"):
        registry.lookup("x-value", json.dumps(AVRO_V1))
