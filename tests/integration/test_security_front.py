"""The secured test brokers behave like real Kafka brokers: librdkafka proves it.

kafkawire's TLS and SASL tests will run against stunnel and the SASL front of tests/support;
they are only worth something if an independent, widely used client agrees with them. Here
librdkafka (confluent-kafka) creates a topic, produces and consumes records through every
front (SSL server-auth and mutual TLS with PEM, encrypted PEM and PKCS12; SASL_PLAINTEXT and
SASL_SSL with PLAIN, SCRAM-SHA-256/512, OAUTHBEARER unsecured and OIDC; handshake v0), and
fails where a real broker makes it fail (wrong CA, hostname mismatch, expired certificate,
missing or foreign client certificate, wrong password, unknown user, mechanism not enabled,
bad client secret). librdkafka re-authenticates when the front grants a short session
lifetime (KIP-368). A raw-socket client checks what librdkafka cannot show: error codes and
messages on the wire, SaslAuthenticate v2 framing, and that an expired session is closed.

When the test broker is kafka the shared fixtures (tls_broker, sasl_broker, gssapi_broker, ...)
are Apache Kafka's own listeners, so the same checks hold Kafka and the fronts to one standard
(the few places they differ say so), and the KIP-368 wire checks run against Kafka's REAUTH
listener too, where the rules the front copies come from.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import subprocess
import time
import uuid

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.support.librdkafka import consume
from tests.support.security_env import (
    OAUTH_CLIENT_ID,
    OAUTH_CLIENT_SECRET,
    SASL_USERS,
)

pytestmark = pytest.mark.broker

TIMEOUT_S = 15.0
FAIL_TIMEOUT_S = 4.0
RECORDS = [(f"k{i}".encode(), f"value-{i}".encode()) for i in range(5)]
SCRAM = ("SCRAM-SHA-256", "SCRAM-SHA-512")

# --------------------------------------------------------------------------- librdkafka helpers


def _ssl(pki, **extra: object) -> dict:
    return {"security.protocol": "SSL", "ssl.ca.location": pki.ca_pem, **extra}


def _mtls_pem(pki) -> dict:
    return _ssl(pki, **{"ssl.certificate.location": pki.client.cert_pem,
                        "ssl.key.location": pki.client.key_pem})


def _sasl(mechanism: str, tls_pki=None, user: str = "alice", password: str | None = None,
          **extra: object) -> dict:
    conf: dict = {"security.protocol": "SASL_SSL" if tls_pki else "SASL_PLAINTEXT",
                  "sasl.mechanism": mechanism}
    if tls_pki is not None:
        conf["ssl.ca.location"] = tls_pki.ca_pem
    if mechanism in ("PLAIN", *SCRAM):
        conf.update({"sasl.username": user,
                     "sasl.password": SASL_USERS.get(user, "x") if password is None else password})
    conf.update(extra)
    return conf


def _oidc(token_endpoint, secret: str = OAUTH_CLIENT_SECRET) -> dict:
    return {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": OAUTH_CLIENT_ID,
            "sasl.oauthbearer.client.secret": secret, "sasl.oauthbearer.scope": "kafka",
            "sasl.oauthbearer.token.endpoint.url": token_endpoint.url}


UNSECURED = {"enable.sasl.oauthbearer.unsecure.jwt": True,
             "sasl.oauthbearer.config": "principal=carol extension_traceId=abc123"}


def _base(bootstrap: str, conf: dict) -> dict:
    return {"bootstrap.servers": bootstrap, "log_level": 0, "socket.timeout.ms": 5000, **conf}


def _roundtrip(bootstrap: str, conf: dict) -> None:
    """Create a topic, produce RECORDS, consume them back: all through the secured port."""
    base = _base(bootstrap, conf)
    topic = f"sec-{uuid.uuid4().hex[:12]}"
    admin = AdminClient(base)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    producer = confluent_kafka.Producer({**base, "linger.ms": 5})
    errors: list = []
    for key, value in RECORDS:
        producer.produce(topic, value, key, on_delivery=lambda e, _m: e and errors.append(e))
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors
    assert consume(base, topic, len(RECORDS), TIMEOUT_S) == RECORDS


def _failure(bootstrap: str, conf: dict) -> str:
    """The errors librdkafka reports when it tries to connect; fails if it gets metadata."""
    errors: list[str] = []
    producer = confluent_kafka.Producer({**_base(bootstrap, conf),
                                         "error_cb": lambda e: errors.append(str(e))})
    deadline = time.monotonic() + FAIL_TIMEOUT_S
    while not errors and time.monotonic() < deadline:
        producer.poll(0.05)
    with pytest.raises(confluent_kafka.KafkaException):
        producer.list_topics(timeout=0.5)
    assert errors, f"librdkafka reported no error within {FAIL_TIMEOUT_S}s"
    return " | ".join(errors)


def _python_ssl_verify_error(port: int, ca_pem: str) -> str:
    """Why Python's ssl module (OpenSSL's verify result) refuses the server's certificate."""
    context = ssl.create_default_context(cafile=ca_pem)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with pytest.raises(ssl.SSLCertVerificationError) as info:
            context.wrap_socket(sock, server_hostname="localhost")
    return info.value.verify_message


# --------------------------------------------------------------------------------------- TLS


def test_ssl_server_auth_pem(tls_broker, pki):
    _roundtrip(tls_broker.bootstrap_servers, _ssl(pki))


def test_mtls_pem(mtls_broker, pki):
    _roundtrip(mtls_broker.bootstrap_servers, _mtls_pem(pki))


def test_mtls_encrypted_pem_key(mtls_broker, pki):
    _roundtrip(mtls_broker.bootstrap_servers, _ssl(pki, **{
        "ssl.certificate.location": pki.client.cert_pem,
        "ssl.key.location": pki.client.key_pem_encrypted, "ssl.key.password": pki.key_password}))


def test_mtls_pkcs12_keystore(mtls_broker, pki):
    # librdkafka insists on ssl.keystore.password (an empty one counts as missing), so the
    # password-less PKCS12 files are checked by test_keystores_open instead.
    _roundtrip(mtls_broker.bootstrap_servers, _ssl(pki, **{
        "ssl.keystore.location": pki.client.p12, "ssl.keystore.password": pki.store_password}))


def test_wrong_ca_fails(tls_broker, pki):
    errors = _failure(tls_broker.bootstrap_servers, _ssl(pki, **{"ssl.ca.location": pki.other_ca_pem}))
    assert "certificate verify failed" in errors


def test_hostname_mismatch_fails(wrong_host_tls_broker, pki):
    errors = _failure(wrong_host_tls_broker.bootstrap_servers,
                      _ssl(pki, **{"ssl.endpoint.identification.algorithm": "https"}))
    assert "certificate verify failed" in errors
    assert _python_ssl_verify_error(wrong_host_tls_broker.port, pki.ca_pem).startswith(
        "Hostname mismatch")
    # The same certificate is otherwise fine: hostname verification is what refused it.
    _roundtrip(wrong_host_tls_broker.bootstrap_servers,
               _ssl(pki, **{"ssl.endpoint.identification.algorithm": "none"}))


def test_expired_certificate_fails(expired_tls_broker, pki):
    errors = _failure(expired_tls_broker.bootstrap_servers, _ssl(pki))
    assert "certificate verify failed" in errors
    # librdkafka does not say why; OpenSSL's verify result through Python's ssl does.
    assert _python_ssl_verify_error(expired_tls_broker.port, pki.ca_pem) == "certificate has expired"


@pytest.mark.parametrize("client", ["none", "rogue"])
def test_mtls_refuses_missing_or_foreign_client_certificate(mtls_broker, pki, client):
    conf = _ssl(pki)
    if client == "rogue":
        conf.update({"ssl.certificate.location": pki.rogue_client.cert_pem,
                     "ssl.key.location": pki.rogue_client.key_pem})
    errors = _failure(mtls_broker.bootstrap_servers, conf)
    # TLS 1.3: stunnel's refusal arrives as an alert or a close on librdkafka's first read.
    assert errors, "librdkafka reported no error"


def test_tls_front_certificates_are_private(pki):
    assert os.stat(pki.directory).st_mode & 0o777 == 0o700
    for name in os.listdir(pki.directory):
        assert os.stat(os.path.join(pki.directory, name)).st_mode & 0o777 == 0o600, name


def test_keystores_open(pki):
    """Every store opens with its password (or none) and holds what its name says."""
    for store in (pki.server, pki.client, pki.wrong_host, pki.expired, pki.rogue_client):
        for path, password in ((store.p12, pki.store_password.encode()),
                               (store.p12_no_password, None)):
            with open(path, "rb") as f:
                key, cert, chain = pkcs12.load_key_and_certificates(f.read(), password)
            assert key is not None and cert.subject.rfc4514_string() == store.subject
            assert len(chain) == 1
    for path, password in ((pki.ca_p12, pki.store_password.encode()), (pki.ca_p12_no_password, None)):
        with open(path, "rb") as f:
            assert len(pkcs12.load_pkcs12(f.read(), password).additional_certs) == 1
    if pki.ca_jks is None:
        pytest.skip("no keytool: JKS files were not made")
    for path in (pki.ca_jks, pki.client.jks, pki.server.jks):
        listing = subprocess.run(["keytool", "-list", "-keystore", path, "-storepass",
                                  pki.store_password], capture_output=True, text=True,
                                 timeout=60, check=True).stdout
        assert "Keystore type: JKS" in listing
        assert ("trustedCertEntry" if path == pki.ca_jks else "PrivateKeyEntry") in listing


# -------------------------------------------------------------------------------------- SASL


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", *SCRAM])
def test_sasl_user_mechanisms(request, pki, tls, mechanism):
    broker = request.getfixturevalue("sasl_ssl_broker" if tls else "sasl_broker")
    before = len(broker.stats.authentications)
    _roundtrip(broker.bootstrap_servers, _sasl(mechanism, pki if tls else None, user="bob"))
    new = broker.stats.authentications[before:]
    assert new and {(e.mechanism, e.principal) for e in new} == {(mechanism, "bob")}
    if broker.kind == "front":  # Kafka does not log the SaslHandshake version
        assert {e.handshake_version for e in new} == {1}
    assert not broker.stats.errors


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
def test_oauthbearer_oidc(request, pki, token_endpoint, tls):
    broker = request.getfixturevalue("sasl_ssl_broker" if tls else "sasl_broker").signed_tokens
    before, issued = len(broker.stats.authentications), len(token_endpoint.issued)
    _roundtrip(broker.bootstrap_servers,
               _sasl("OAUTHBEARER", pki if tls else None, **_oidc(token_endpoint)))
    assert token_endpoint.issued[issued:], "librdkafka got no token from the endpoint"
    assert {e.principal for e in broker.stats.authentications[before:]} == {OAUTH_CLIENT_ID}
    assert not broker.stats.errors


def test_oauthbearer_unsecured(sasl_broker):
    before = len(sasl_broker.stats.authentications)
    _roundtrip(sasl_broker.bootstrap_servers, _sasl("OAUTHBEARER", **UNSECURED))
    new = sasl_broker.stats.authentications[before:]
    assert {e.principal for e in new} == {"carol"}
    assert all(e.extensions == {"traceId": "abc123"} for e in new)


@pytest.mark.parametrize("mechanism", ["PLAIN", *SCRAM])
def test_handshake_v0_raw_tokens(sasl_broker_factory, mechanism):
    """A broker without SaslAuthenticate: librdkafka falls back to raw tokens after v0."""
    broker = sasl_broker_factory(advertise_authenticate=False)
    _roundtrip(broker.bootstrap_servers, _sasl(mechanism))
    assert {(e.handshake_version, e.authenticate_version)
            for e in broker.stats.authentications} == {(0, None)}
    assert not broker.stats.errors


@pytest.mark.parametrize("mechanism", ["PLAIN", *SCRAM])
@pytest.mark.parametrize("user", ["alice", "mallory"], ids=["wrong-password", "unknown-user"])
def test_bad_credentials_fail(sasl_broker, mechanism, user):
    errors = _failure(sasl_broker.bootstrap_servers, _sasl(mechanism, user=user, password="nope"))
    assert "Authentication failed" in errors


def test_mechanism_not_enabled_fails(sasl_broker_factory):
    broker = sasl_broker_factory(mechanisms=("SCRAM-SHA-512",))
    errors = _failure(broker.bootstrap_servers, _sasl("PLAIN"))
    assert "SCRAM-SHA-512" in errors  # librdkafka quotes the broker's enabled list


def test_oidc_bad_client_secret_fails(sasl_broker, token_endpoint):
    refused = len(token_endpoint.refused)
    _failure(sasl_broker.bootstrap_servers,
             _sasl("OAUTHBEARER", **_oidc(token_endpoint, secret="wrong")))
    assert token_endpoint.refused[refused:]


def test_unsecured_token_refused_when_not_allowed(sasl_broker_factory, token_endpoint):
    from tests.support.security_env import credentials

    broker = sasl_broker_factory(creds=credentials(token_endpoint, allow_unsecured=False))
    errors = _failure(broker.bootstrap_servers, _sasl("OAUTHBEARER", **UNSECURED))
    assert "unsecured token refused" in errors


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
def test_librdkafka_reauthenticates_before_session_lifetime(sasl_broker_factory, pki, tls):
    """KIP-368: with a 1.5 s lifetime librdkafka re-authenticates its connections and the
    front never has to close one for an expired session."""
    broker = sasl_broker_factory(pki=pki if tls else None, session_lifetime_ms=1500)
    base = _base(broker.bootstrap_servers, _sasl("SCRAM-SHA-256", pki if tls else None))
    topic = f"reauth-{uuid.uuid4().hex[:12]}"
    admin = AdminClient(base)  # kept referenced: a destroyed client fails its futures
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    producer = confluent_kafka.Producer(base)
    errors: list = []
    sent = 0
    deadline = time.monotonic() + 4.0
    while time.monotonic() < deadline:
        producer.produce(topic, b"x%d" % sent, on_delivery=lambda e, _m: e and errors.append(e))
        sent += 1
        producer.poll(0.1)
    assert producer.flush(TIMEOUT_S) == 0 and not errors, errors
    assert len(broker.stats.reauthentications) >= 2
    assert broker.stats.expired_closes == 0
    assert {e.principal for e in broker.stats.reauthentications} == {"alice"}
    assert not broker.stats.errors


# ------------------------------------------------------- the wire, seen by a raw-socket client


class _Raw:
    """A minimal hand-encoded Kafka client, to look at what the front sends byte by byte."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.cid = 0

    def request(self, api_key: int, version: int, body: bytes, flexible: bool = False) -> bytes:
        self.cid += 1
        header = struct.pack(">hhih", api_key, version, self.cid, 3) + b"raw"
        if flexible:
            header += b"\x00"
        self.send_frame(header + body)
        payload = self.read_frame()
        assert struct.unpack_from(">i", payload)[0] == self.cid
        return payload[4:]

    def send_frame(self, data: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(data)) + data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the front")
            buf += chunk
        return buf

    def closed(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()


def _str(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def _plain(user: str, password: str) -> bytes:
    return f"\x00{user}\x00{password}".encode()


def _metadata_v1(raw: _Raw) -> bytes:
    return raw.request(3, 1, struct.pack(">i", -1))


def _api_versions(raw: _Raw) -> dict[int, tuple[int, int]]:
    body = raw.request(18, 1, b"")
    error, n = struct.unpack_from(">hi", body)
    assert error == 0
    return {k: (lo, hi) for k, lo, hi in
            (struct.unpack_from(">hhh", body, 6 + 6 * i) for i in range(n))}


def test_wire_api_versions_advertise_sasl(sasl_broker):
    raw = _Raw(sasl_broker.port)
    try:
        versions = _api_versions(raw)
    finally:
        raw.close()
    assert versions[17] == (0, 1) and versions[36] == (0, 2)
    assert 3 in versions and 0 in versions  # Tansu's own APIs are kept


def test_wire_unknown_mechanism_is_error_33_with_enabled_list(sasl_broker):
    raw = _Raw(sasl_broker.port)
    try:
        body = raw.request(17, 1, _str("GSSAPI-NOPE"))
        error, n = struct.unpack_from(">hi", body)
        names, pos = [], 6
        for _ in range(n):
            (size,) = struct.unpack_from(">h", body, pos)
            names.append(body[pos + 2:pos + 2 + size].decode())
            pos += 2 + size
        assert error == 33
        assert set(names) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
        assert raw.closed()
    finally:
        raw.close()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_wire_authenticate_versions(sasl_broker, version):
    """SaslAuthenticate v0-v2 (v2 flexible): success, then error 58 with a message. A
    success carries no message: null from the front; Apache Kafka 4 sends an empty string
    (the field is nullable in every version; the v2 parse here reads an empty compact string
    as None too)."""
    for password, expected in (("alice-secret", 0), ("wrong", 58)):
        raw = _Raw(sasl_broker.port)
        try:
            assert struct.unpack_from(">h", raw.request(17, 1, _str("PLAIN")))[0] == 0
            token = _plain("alice", password)
            if version >= 2:
                body = raw.request(36, 2, bytes([len(token) + 1]) + token + b"\x00", flexible=True)
                assert body[0] == 0  # response header v1: no tagged fields
                error = struct.unpack_from(">h", body, 1)[0]
                message_len = body[3] - 1
                message = body[4:4 + message_len].decode() if message_len > 0 else None
            else:
                body = raw.request(36, version, struct.pack(">i", len(token)) + token)
                error, message_len = struct.unpack_from(">hh", body)
                message = body[4:4 + message_len].decode() if message_len >= 0 else None
            assert error == expected
            if expected:
                assert message == "Authentication failed: Invalid username or password"
                assert raw.closed()
            else:
                assert message == ("" if sasl_broker.kind == "kafka" and version < 2 else None)
                assert _metadata_v1(raw)  # authenticated: Tansu answers through the front
        finally:
            raw.close()


def test_wire_request_before_authentication_closes(sasl_broker):
    raw = _Raw(sasl_broker.port)
    try:
        raw.send_frame(struct.pack(">hhih", 3, 1, 1, -1) + struct.pack(">i", -1))
        assert raw.closed()
    finally:
        raw.close()


def test_wire_expired_session_is_closed_and_reauthentication_extends_it(sasl_broker_factory):
    broker = sasl_broker_factory(session_lifetime_ms=700)
    raw = _Raw(broker.port)
    try:
        for round_ in range(2):
            assert struct.unpack_from(">h", raw.request(17, 1, _str("PLAIN")))[0] == 0
            token = _plain("alice", "alice-secret")
            body = raw.request(36, 1, struct.pack(">i", len(token)) + token)
            error, message_len = struct.unpack_from(">hh", body)
            pos = 4 + max(message_len, 0)
            (token_len,) = struct.unpack_from(">i", body, pos)
            (lifetime,) = struct.unpack_from(">q", body, pos + 4 + token_len)
            assert error == 0 and lifetime == 700
            assert _metadata_v1(raw)
            if round_ == 0:
                time.sleep(0.4)  # re-authenticate within the lifetime
        assert len(broker.stats.reauthentications) == 1
        time.sleep(1.0)
        raw.send_frame(struct.pack(">hhih", 3, 1, 99, -1) + struct.pack(">i", -1))
        assert raw.closed()
        assert broker.stats.expired_closes == 1
    finally:
        raw.close()


# ----------------------------------------------------------------- GSSAPI, proved by kafka-python
# librdkafka's wheel is built without GSSAPI (no Cyrus SASL), so kafka-python, the project's
# other oracle, logs in with Kerberos (its own GSSAPI code over the gssapi package).


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
def test_gssapi_with_kafka_python(request, kdc, pki, tls):
    import kafka
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic

    # fetched by name so that without stunnel only the SASL_SSL case skips
    broker = request.getfixturevalue("gssapi_ssl_broker" if tls else "gssapi_broker")
    conf: dict = {"bootstrap_servers": broker.bootstrap_servers,
                  "security_protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
                  "sasl_mechanism": "GSSAPI", "sasl_kerberos_service_name": "kafka",
                  "sasl_kerberos_domain_name": broker.kerberos_host,
                  "request_timeout_ms": 10_000}
    if tls:
        conf.update({"ssl_cafile": pki.ca_pem, "ssl_check_hostname": True})
    before = len(broker.stats.authentications)
    topic = f"gss-{uuid.uuid4().hex[:12]}"
    admin = KafkaAdminClient(**conf)
    try:
        admin.create_topics([KpNewTopic(topic, 1, 1)])
    finally:
        admin.close()
    producer = kafka.KafkaProducer(**conf)
    try:
        for key, value in RECORDS:
            producer.send(topic, value=value, key=key).get(TIMEOUT_S)
    finally:
        producer.close(timeout=5)
    tp = kafka.TopicPartition(topic, 0)
    consumer = kafka.KafkaConsumer(**conf, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        got = []
        for message in consumer:  # stops after consumer_timeout_ms without a record
            got.append((message.key, message.value))
            if len(got) == len(RECORDS):
                break
    finally:
        consumer.close()
    assert got == RECORDS
    new = broker.stats.authentications[before:]
    assert new and {(e.mechanism, e.principal) for e in new} == {("GSSAPI", kdc.client_principal)}
    assert not broker.stats.errors


def test_wire_gssapi_garbage_token_is_error_58(gssapi_broker):
    raw = _Raw(gssapi_broker.port)
    try:
        assert struct.unpack_from(">h", raw.request(17, 1, _str("GSSAPI")))[0] == 0
        token = b"\x60\x03not-a-kerberos-token"
        body = raw.request(36, 1, struct.pack(">i", len(token)) + token)
        error, message_len = struct.unpack_from(">hh", body)
        assert error == 58
        assert "GSSAPI" in body[4:4 + message_len].decode()
        assert raw.closed()
    finally:
        raw.close()


def test_tansu_bogus_scram_success_is_refused_by_librdkafka(tansu_bogus_scram_broker):
    """What kafkawire must also refuse: Tansu's error code 0 with server-final e=unknown-user."""
    errors = _failure(tansu_bogus_scram_broker.bootstrap_servers,
                      _sasl("SCRAM-SHA-256", user="nobody", password="x"))
    assert "unknown-user" in errors


def test_wire_oauthbearer_lifetime_capped_by_token_expiry(sasl_broker_factory):
    """Kafka's rule: the session lasts no longer than the token (KIP-368 with OAUTHBEARER)."""
    from tests.support.sasl_mechanisms import unsecured_token

    broker = sasl_broker_factory(session_lifetime_ms=60_000)
    raw = _Raw(broker.port)
    try:
        assert struct.unpack_from(">h", raw.request(17, 1, _str("OAUTHBEARER")))[0] == 0
        token = f"n,,\x01auth=Bearer {unsecured_token('dave', lifetime_s=3)}\x01\x01".encode()
        body = raw.request(36, 1, struct.pack(">i", len(token)) + token)
        error, message_len = struct.unpack_from(">hh", body)
        pos = 4 + max(message_len, 0)
        (token_len,) = struct.unpack_from(">i", body, pos)
        (lifetime,) = struct.unpack_from(">q", body, pos + 4 + token_len)
        assert error == 0 and 0 < lifetime <= 3000
        assert broker.stats.principals() == ["dave"]
    finally:
        raw.close()


# ------------------------------------------------ KIP-368 on the wire, against Apache Kafka itself
# The front emulates Kafka's session rules (the tests above); these check them on Kafka's REAUTH
# listener (connections.max.reauth.ms = REAUTH_MS), where the rules come from.


def _authenticate_v1(raw: _Raw, mechanism: str, token: bytes) -> int:
    """SaslHandshake v1 and one SaslAuthenticate v1; the session lifetime granted (ms)."""
    assert struct.unpack_from(">h", raw.request(17, 1, _str(mechanism)))[0] == 0
    body = raw.request(36, 1, struct.pack(">i", len(token)) + token)
    error, message_len = struct.unpack_from(">hh", body)
    assert error == 0, body[4:4 + max(message_len, 0)]
    pos = 4 + max(message_len, 0)
    (token_len,) = struct.unpack_from(">i", body, pos)
    return struct.unpack_from(">q", body, pos + 4 + token_len)[0]


def test_wire_kafka_expired_session_is_closed_and_reauthentication_extends_it(reauth_broker):
    """Apache Kafka grants REAUTH_MS sessions; a re-authentication on the open connection
    within the session extends it; a request after the session ended closes the connection
    (Kafka counts it as an expired session)."""
    from tests.conftest import REAUTH_MS

    before = reauth_broker.stats
    raw = _Raw(reauth_broker.port)
    try:
        for round_ in range(2):
            lifetime = _authenticate_v1(raw, "PLAIN", _plain("alice", "alice-secret"))
            assert 0 < lifetime <= REAUTH_MS
            assert _metadata_v1(raw)
            if round_ == 0:
                time.sleep(REAUTH_MS / 3000)  # re-authenticate within the session
        # at about 1.13 sessions from the first login: the first session has ended, the one
        # the re-authentication began at about 0.33 has not
        time.sleep(REAUTH_MS * 0.8 / 1000)
        assert _metadata_v1(raw)
        time.sleep(REAUTH_MS / 1000 + 0.5)
        raw.send_frame(struct.pack(">hhih", 3, 1, 99, -1) + struct.pack(">i", -1))
        assert raw.closed()
    finally:
        raw.close()
    after = reauth_broker.stats
    assert len(after.reauthentications) == len(before.reauthentications) + 1
    assert after.expired_closes == before.expired_closes + 1


def test_wire_kafka_oauthbearer_lifetime_capped_by_token_expiry(reauth_broker, token_endpoint):
    """Apache Kafka's rule, which the front copies: a session lasts no longer than its token
    (a signed token valid for 2 s on a listener granting REAUTH_MS sessions)."""
    from tests.conftest import REAUTH_MS

    token = token_endpoint.issue(OAUTH_CLIENT_ID, lifetime_s=2)
    raw = _Raw(reauth_broker.port)
    try:
        lifetime = _authenticate_v1(raw, "OAUTHBEARER",
                                    f"n,,\x01auth=Bearer {token}\x01\x01".encode())
        assert 0 < lifetime <= 2000 < REAUTH_MS
    finally:
        raw.close()
