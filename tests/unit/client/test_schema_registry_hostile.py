"""The Schema Registry client against a hostile registry (issue 45, items 5 and 11): a real
HTTP server on loopback, in a thread, answering as an attacker would. A registry's answers are
data: whatever they say, a request ends within its timeout, a schema's imports within limits
of count, bytes and depth, and credentials sent over plain http are warned of.

The hostile answers that ran away on the client before (an endless reference chain drew
17,410 requests in 20 s, 4 MiB schemas grew RSS by 2.3 GiB) run in a child process under an
address-space limit and a timeout, so a regression fails the test, not the test run.
"""

from __future__ import annotations

import http.server
import json
import logging
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from spark_kafka_wire.client.errors import ConfigurationError, SchemaRegistryError
from spark_kafka_wire.client.registry.schema_registry import (
    DEFAULT_MAX_IMPORTED_BYTES,
    DEFAULT_MAX_IMPORTED_SCHEMAS,
    DEFAULT_MAX_REFERENCE_DEPTH,
    RegisteredSchema,
    RegistryConfig,
    SchemaReference,
    SchemaRegistryClient,
)
from spark_kafka_wire.client.security.tls import TlsConfig
from tests.support.certs import make_pki, remove_pki
from tests.support.errors import raises_condition

pytestmark = pytest.mark.unit

SECRET = "hostile-s3cret"
VERSION_PATH = re.compile(r"/subjects/([^/]+)/versions/(\d+)")
#: a schema's text the registry answers with (its bytes do not matter to ``imports``)
PROTO = 'syntax = "proto3";\nmessage M { int32 a = 1; }\n'
#: the hostile schemas' size: a schema of 4 MiB, as the issue's attacker served
HUGE = 4 * 1024 * 1024
#: how long a dribbling answer lasts at most (then it ends, so that a client without a
#: deadline sees the whole answer instead of hanging the test run)
DRIBBLE_S = 8.0
#: the address space a child may use: ample for a client within its limits (64 MiB of
#: imported schemas), far below what the unbounded client grew to
CHILD_ADDRESS_SPACE = 1536 * 1024 * 1024
CHILD_TIMEOUT_S = 60

Route = Callable[[str, str], object]  # (subject, version) -> the JSON answer


class HostileRegistry:
    """A registry on loopback: ``route`` answers ``GET /subjects/S/versions/V`` (None: 404),
    or ``dribble`` writes the whole answer itself, as slowly as it likes. ``requests`` and
    ``authorizations`` are what it was sent."""

    def __init__(self, route: Route | None = None,
                 dribble: Callable[[Any, threading.Event], None] | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[str] = []
        self.authorizations: list[str | None] = []
        self.stopped = threading.Event()
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                registry.requests.append(self.path)
                registry.authorizations.append(self.headers.get("Authorization"))
                if dribble is not None:
                    try:
                        dribble(self.wfile, registry.stopped)
                    except OSError:
                        pass  # the client gave up: that is the point
                    return
                found = VERSION_PATH.fullmatch(self.path)
                answer = route(found.group(1), found.group(2)) if route and found else None
                body = json.dumps(answer if answer is not None else {
                    "error_code": 40401, "message": "Subject not found"}).encode()
                self.send_response(200 if answer is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HostileRegistry:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()


def answer(subject: str, version: str, schema: str, references: list[tuple[str, str]]
           ) -> dict[str, object]:
    return {"id": abs(hash(subject)) % 100000, "subject": subject, "version": int(version),
            "schemaType": "PROTOBUF", "schema": schema,
            "references": [{"name": name, "subject": s, "version": 1} for name, s in references]}


def endless_chain(subject: str, version: str) -> object:
    """Every schema imports a new one: s1 imports s2, which imports s3, ..."""
    n = int(subject[1:]) + 1
    return answer(subject, version, PROTO, [(f"n{n}.proto", f"s{n}")])


def wide(subject: str, version: str) -> object:
    """s1 imports 5000 schemas, each of them small and importing nothing."""
    if subject == "s1":
        return answer(subject, version, PROTO, [(f"w{i}.proto", f"w{i}") for i in range(5000)])
    return answer(subject, version, PROTO, [])


def huge_chain(subject: str, version: str) -> object:
    """Schemas of 4 MiB, each importing a new one."""
    n = int(subject[1:]) + 1
    return answer(subject, version, "/" * HUGE, [(f"n{n}.proto", f"s{n}")])


ROOT = RegisteredSchema(id=7, schema_type="PROTOBUF", schema=PROTO,
                        references=(SchemaReference("n1.proto", "s1", 1),),
                        subject="orders-value", version=3)
SCENARIOS: dict[str, Route] = {"endless_chain": endless_chain, "wide": wide,
                               "huge_chain": huge_chain}


def run_scenario(name: str) -> dict[str, object]:
    """``imports`` of ROOT against the registry of scenario ``name``, with the client's
    default limits: what it raised and how many requests the registry saw (the child's
    output)."""
    with HostileRegistry(SCENARIOS[name]) as registry:
        client = SchemaRegistryClient(RegistryConfig((registry.url,), max_retries=0))
        try:
            found = client.imports(ROOT)
        except SchemaRegistryError as error:
            return {"kind": error.kind, "message": str(error), "requests": client.requests_sent,
                    "subject": error.subject, "version": error.version,
                    "schema_id": error.schema_id}
        return {"kind": None, "imported": len(found), "requests": client.requests_sent}


_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from tests.unit.client.test_schema_registry_hostile import run_scenario
try:
    print(json.dumps(run_scenario(sys.argv[1])))
except MemoryError:
    print(json.dumps({{"kind": "MemoryError"}}))
"""


def in_child(name: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", _CHILD.format(limit=CHILD_ADDRESS_SPACE), name],
                         capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env,
                         check=False)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    got: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return got


def _stopped_at_the_limit(got: dict[str, Any], limit: str) -> None:
    assert got["kind"] == "REFERENCE_LIMIT", got
    # the error names the schema whose imports went too far, the limit, and where it stopped
    assert (got["subject"], got["version"], got["schema_id"]) == ("orders-value", 3, 7)
    assert limit in got["message"], got["message"]
    assert "at the import " in got["message"] and "check the references" in got["message"]


# ------------------------------------------------------------------ imports within limits


def test_an_endless_reference_chain_ends_at_the_depth_limit() -> None:
    got = in_child("endless_chain")
    _stopped_at_the_limit(got, f"more than {DEFAULT_MAX_REFERENCE_DEPTH} levels of references "
                               "(max_reference_depth)")
    assert got["requests"] == DEFAULT_MAX_REFERENCE_DEPTH


def test_a_schema_importing_thousands_ends_at_the_count_limit() -> None:
    got = in_child("wide")
    _stopped_at_the_limit(got, f"more than {DEFAULT_MAX_IMPORTED_SCHEMAS} schemas imported "
                               "(max_imported_schemas)")
    assert got["requests"] == DEFAULT_MAX_IMPORTED_SCHEMAS


def test_huge_imported_schemas_end_at_the_bytes_limit() -> None:
    got = in_child("huge_chain")
    _stopped_at_the_limit(got, f"more than {DEFAULT_MAX_IMPORTED_BYTES} bytes of imported "
                               "schemas (max_imported_bytes)")
    assert got["requests"] == DEFAULT_MAX_IMPORTED_BYTES // HUGE + 1


def test_the_limits_are_the_configs_and_a_graph_within_them_is_imported_whole() -> None:
    """Diamonds and cycles are fetched once each; the limits are settings of the config."""
    graph = {"a": ["b", "c"], "b": ["c"], "c": ["a", "d"], "d": []}

    def route(subject: str, version: str) -> object:
        return answer(subject, version, PROTO * (subject == "d"),
                      [(f"{s}.proto", s) for s in graph[subject]])

    root = RegisteredSchema(id=1, schema_type="PROTOBUF", schema=PROTO,
                            references=(SchemaReference("a.proto", "a", 1),), subject="r")
    with HostileRegistry(route) as registry:
        config = RegistryConfig((registry.url,))
        client = SchemaRegistryClient(config)
        assert sorted(client.imports(root)) == ["a.proto", "b.proto", "c.proto", "d.proto"]
        assert client.requests_sent == 4
        cases: list[tuple[dict[str, Any], str]] = [
            ({"max_reference_depth": 2}, "2 levels"), ({"max_imported_schemas": 3}, "3 schemas"),
            ({"max_imported_bytes": len(PROTO) - 1}, f"{len(PROTO) - 1} bytes")]
        for limits, words in cases:
            strict = SchemaRegistryClient(RegistryConfig((registry.url,), **limits))
            with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.REFERENCE_LIMIT",
                                  f"more than {words}") as caught:
                strict.imports(root)
            assert caught.value.condition == "KAFKAWIRE_SCHEMA_REGISTRY.REFERENCE_LIMIT"
    for name in ("max_imported_schemas", "max_imported_bytes", "max_reference_depth"):
        zero: dict[str, Any] = {name: 0}
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE",
                              name):
            RegistryConfig(("http://h",), **zero)


# ------------------------------------------------------------------ the request's deadline


def dribbled_body(wfile: Any, stopped: threading.Event) -> None:
    """Headers at once, then the body a space at a time (JSON allows leading whitespace),
    each byte well within the timeout of one read."""
    wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
    wfile.flush()
    end = time.monotonic() + DRIBBLE_S
    while time.monotonic() < end and not stopped.is_set():
        wfile.write(b" ")
        wfile.flush()
        time.sleep(0.1)
    wfile.write(json.dumps({"id": 1, "schema": PROTO, "schemaType": "PROTOBUF"}).encode())


def dribbled_headers(wfile: Any, stopped: threading.Event) -> None:
    """The status line and headers a byte at a time (urllib reads them in its own code)."""
    head = b"HTTP/1.0 200 OK\r\n" + b"X-Slow: " + b"a" * 200 + b"\r\n"
    end = time.monotonic() + DRIBBLE_S
    for i in range(len(head)):
        if time.monotonic() >= end or stopped.is_set():
            wfile.write(head[i:])
            break
        wfile.write(head[i:i + 1])
        wfile.flush()
        time.sleep(0.1)
    wfile.write(b"\r\n" + json.dumps({"id": 1, "schema": PROTO}).encode())


@pytest.mark.parametrize("dribble", [dribbled_body, dribbled_headers])
def test_a_dribbled_answer_ends_at_the_request_timeout(dribble: Any) -> None:
    """request_timeout_s is the time of the whole request, not of each read: an answer sent a
    byte every 0.1 s fails at 1 s (before, it was read for as long as it lasted)."""
    with HostileRegistry(dribble=dribble) as registry:
        client = SchemaRegistryClient(RegistryConfig((registry.url,), max_retries=0,
                                                     request_timeout_s=1.0))
        with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE",
                              r"no answer within 1 s "
                              r"\(request_timeout_s\), the time a whole request may take") as err:
            client.version("s1", 1)
        assert err.value.kind == "UNREACHABLE"
        assert len(registry.requests) == 1


def test_https_answers_are_read_and_a_dribbled_one_ends_at_the_request_timeout() -> None:
    """The deadline watches the TCP socket under TLS too."""
    pki = make_pki(jks=False)
    try:
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(pki.server.cert_pem, pki.server.key_pem)
        tls = TlsConfig(cadata=Path(pki.ca_pem).read_text())
        with HostileRegistry(endless_chain, tls=server) as registry:
            client = SchemaRegistryClient(RegistryConfig((registry.url,), tls=tls,
                                                         request_timeout_s=1.0))
            assert client.version("s1", 1).references[0].subject == "s2"
        with HostileRegistry(dribble=dribbled_body, tls=server) as registry:
            client = SchemaRegistryClient(RegistryConfig((registry.url,), tls=tls,
                                                         max_retries=0, request_timeout_s=1.0))
            with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE",
                                  r"no answer within 1 s") as err:
                client.version("s1", 1)
            assert err.value.kind == "UNREACHABLE"
    finally:
        remove_pki(pki)


class DribblingRelay:
    """A TCP relay to ``target`` passing the target's bytes on one at a time, every 0.05 s
    (for DRIBBLE_S, then at once): a TLS handshake dribbled, each byte within a read's
    timeout."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition("//")[2].rpartition(":")
        self.target = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stopped = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        upstream = socket.create_connection(self.target)
        threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
        end = time.monotonic() + DRIBBLE_S
        try:
            while not self.stopped.is_set():
                data = upstream.recv(65536)
                if not data:
                    break
                for i in range(len(data)):
                    if time.monotonic() >= end or self.stopped.is_set():
                        client.sendall(data[i:])
                        break
                    client.sendall(data[i:i + 1])
                    time.sleep(0.05)
        except OSError:
            pass
        finally:
            client.close()
            upstream.close()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


def test_a_dribbled_tls_handshake_ends_at_the_request_timeout() -> None:
    """CPython bounds a handshake by the socket's timeout as a whole; the client's own
    https connect (the handshake after the Deadline's watch) keeps it so."""
    pki = make_pki(jks=False)
    try:
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(pki.server.cert_pem, pki.server.key_pem)
        tls = TlsConfig(cadata=Path(pki.ca_pem).read_text())
        with HostileRegistry(endless_chain, tls=server) as registry:
            relay = DribblingRelay(registry.url)
            try:
                client = SchemaRegistryClient(RegistryConfig(
                    (f"https://127.0.0.1:{relay.port}",), tls=tls, max_retries=0,
                    request_timeout_s=1.0))
                with raises_condition(SchemaRegistryError, "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE",
                                      r"no answer within 1 s") as err:
                    client.version("s1", 1)
                assert err.value.kind == "UNREACHABLE"
            finally:
                relay.close()
    finally:
        remove_pki(pki)


def test_an_answer_within_the_deadline_is_read_as_before() -> None:
    with HostileRegistry(endless_chain) as registry:
        client = SchemaRegistryClient(RegistryConfig((registry.url,), request_timeout_s=0.5))
        for _ in range(3):
            assert client.version("s1", 1).references[0].subject == "s2"
        time.sleep(0.7)  # no deadline of an earlier request outlives it
        assert client.version("s5", 1).references[0].subject == "s6"


# ------------------------------------------------------------------ credentials over http


def test_credentials_over_plain_http_are_warned_of_once_without_the_secret(
        caplog: pytest.LogCaptureFixture) -> None:
    """A warning, not a refusal (see warn_plain_http): once per process, URL and kind of
    credentials; the secret never in it. https, or no credentials, are not warned of."""
    caplog.set_level(logging.WARNING, "spark_kafka_wire.client.registry.schema_registry")
    with HostileRegistry(endless_chain) as registry:
        config = RegistryConfig((registry.url,), user_info=f"me:{SECRET}")
        for _ in range(2):
            SchemaRegistryClient(config).version("s1", 1)
        SchemaRegistryClient(RegistryConfig((registry.url,)))
    SchemaRegistryClient(RegistryConfig(("https://registry.example:8081",),
                                        user_info=f"me:{SECRET}"))
    token = SchemaRegistryClient(RegistryConfig(("http://registry.example:8082",),
                                                bearer_token=SECRET))
    in_url = SchemaRegistryClient(RegistryConfig((f"http://me:{SECRET}@registry.example:8083",)))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    said = "sent over plain http, readable by anyone on the network path; use an https:// URL"
    assert warnings == [
        f"Schema Registry {registry.url}: Basic credentials (basic.auth.user.info) {said}",
        f"Schema Registry http://registry.example:8082: a bearer token (bearer.auth.token) {said}",
        f"Schema Registry http://registry.example:8083: Basic credentials (the URL's user info) "
        f"{said}"]
    assert all(SECRET not in w for w in warnings)
    assert registry.authorizations[0] is not None  # warned, and sent: a warning, not a refusal
    assert token.config.bearer_token == SECRET and in_url.config.urls
