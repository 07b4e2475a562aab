"""kafkawire's client over TLS (security.protocol=SSL) against real TLS brokers: Apache Kafka's
SSL and mutual-TLS listeners when the test broker is kafka, stunnel in front of Tansu
(tests/support/tls_front.py) under Tansu and for the expired and wrong-host certificates,
proved by librdkafka in test_security_front.py.

Every store type we read (PEM files, PKCS12, inline PEM, librdkafka's names) connects for
metadata, admin, produce, fetch and the group coordinator, and what we write librdkafka reads
exactly and the other way round through the same broker. Each refused handshake fails fast
with a TlsHandshakeError that says what to check, and no secret shows in any message or repr.
"""

from __future__ import annotations

import contextlib
import pickle
import shutil
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError, TlsHandshakeError
from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from spark_kafka_wire.options import SINK, SOURCE, client_config, lower_keys
from tests.support.errors import raises_condition
from tests.support.fault_proxy import KAFKA_MAX_REQUEST_BYTES, FaultProxy
from tests.support.kafkawire_io import (
    kafkawire_roundtrip,
    librdkafka_roundtrip,
    read_records,
)

RECORDS = [(f"k{i}".encode(), f"v{i}".encode() * (i + 1)) for i in range(50)] + [
    (None, b"no key"), (b"tombstone", None), (b"big", bytes(range(256)) * 400)]
FAIL_FAST_S = 5.0


def _config(broker, **options: str) -> ClientConfig:
    opts = {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SSL", "kafka.request.timeout.ms": "10000", **options}
    return client_config(lower_keys(opts), SOURCE)


def _pem_trust(pki) -> dict[str, str]:
    return {"kafka.ssl.truststore.location": pki.ca_pem, "kafka.ssl.truststore.type": "PEM"}


def _librdkafka(broker, pki, mutual: bool) -> dict:
    conf = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SSL",
            "ssl.ca.location": pki.ca_pem, "log_level": 0, "socket.timeout.ms": 5000}
    if mutual:
        conf.update({"ssl.certificate.location": pki.client.cert_pem,
                     "ssl.key.location": pki.client.key_pem})
    return conf


def _roundtrip(broker, pki, config: ClientConfig, **librdkafka: str) -> None:
    """Create a topic, write RECORDS with our producer, read them with librdkafka and with our
    fetcher; librdkafka writes them again and our fetcher reads those; commit and fetch group
    offsets through the coordinator: every connection over TLS."""
    client = KafkaClient(config)
    try:
        topic = kafkawire_roundtrip(client, "tls", RECORDS)
        librdkafka_roundtrip(client, {**_librdkafka(broker, pki, broker.mutual), **librdkafka},
                             topic, RECORDS)
    finally:
        client.close()


# ------------------------------------------------------------------ server authentication


@pytest.mark.parametrize("trust", ["pem", "pem-detected", "pkcs12", "pkcs12-no-password",
                                   "inline", "librdkafka"])
def test_server_authenticated_roundtrip(tls_broker, pki, trust: str) -> None:
    options = {
        "pem": _pem_trust(pki),
        "pem-detected": {"kafka.ssl.truststore.location": pki.ca_pem},
        "pkcs12": {"kafka.ssl.truststore.location": pki.ca_p12,
                   "kafka.ssl.truststore.type": "PKCS12",
                   "kafka.ssl.truststore.password": pki.store_password},
        "pkcs12-no-password": {"kafka.ssl.truststore.location": pki.ca_p12_no_password},
        "inline": {"kafka.ssl.truststore.certificates": Path(pki.ca_pem).read_text()},
        "librdkafka": {"kafka.ssl.ca.location": pki.ca_pem},
    }[trust]
    _roundtrip(tls_broker, pki, _config(tls_broker, **options))


def test_tls_versions_and_ciphers_are_applied(tls_broker, pki) -> None:
    _roundtrip(tls_broker, pki, _config(
        tls_broker, **_pem_trust(pki), **{"kafka.ssl.enabled.protocols": "TLSv1.2",
                                          "kafka.ssl.cipher.suites": "ECDHE-RSA-AES128-GCM-SHA256"}))
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "kafka.ssl"):
        _config(tls_broker, **_pem_trust(pki), **{"kafka.ssl.cipher.suites": "NO-SUCH-CIPHER"})


# ----------------------------------------------------------------------------- mutual TLS


@pytest.mark.parametrize("keystore", ["pem-files", "pem-encrypted-key", "pkcs12", "pem-store",
                                      "inline", "inline-encrypted"])
def test_mutual_tls_roundtrip(mtls_broker, pki, keystore: str) -> None:
    c = pki.client
    options = {
        "pem-files": {"kafka.ssl.certificate.location": c.cert_pem,
                      "kafka.ssl.key.location": c.key_pem},
        "pem-encrypted-key": {"kafka.ssl.certificate.location": c.cert_pem,
                              "kafka.ssl.key.location": c.key_pem_encrypted,
                              "kafka.ssl.key.password": pki.key_password},
        "pkcs12": {"kafka.ssl.keystore.location": c.p12, "kafka.ssl.keystore.type": "PKCS12",
                   "kafka.ssl.keystore.password": pki.store_password},
        "pem-store": {"kafka.ssl.keystore.location": _pem_store(pki),
                      "kafka.ssl.keystore.type": "PEM",
                      "kafka.ssl.key.password": pki.key_password},
        "inline": {"kafka.ssl.keystore.certificate.chain": Path(c.cert_pem).read_text(),
                   "kafka.ssl.keystore.key": Path(c.key_pem).read_text()},
        "inline-encrypted": {"kafka.ssl.keystore.certificate.chain": Path(c.cert_pem).read_text(),
                             "kafka.ssl.keystore.key": Path(c.key_pem_encrypted).read_text(),
                             "kafka.ssl.key.password": pki.key_password},
    }[keystore]
    _roundtrip(mtls_broker, pki, _config(mtls_broker, **_pem_trust(pki), **options))


def _pem_store(pki) -> str:
    """A KIP-651 PEM keystore: the encrypted key and the certificate chain in one file."""
    path = Path(pki.directory) / "client-store.pem"
    if not path.exists():
        path.write_bytes(Path(pki.client.key_pem_encrypted).read_bytes()
                         + Path(pki.client.cert_pem).read_bytes())
        path.chmod(0o600)
    return str(path)


def _jks(pki) -> None:
    if pki.ca_jks is None:
        pytest.skip("JKS test files need the JDK's keytool, which Spark's Java provides")


def test_jks_truststore_and_keystore_roundtrip(mtls_broker, pki) -> None:
    """JKS stores, the Java client's default, converted by keytool on the driver."""
    _jks(pki)
    config = _config(mtls_broker, **{
        "kafka.ssl.truststore.location": pki.ca_jks,
        "kafka.ssl.truststore.password": pki.store_password,
        "kafka.ssl.keystore.location": pki.client.jks, "kafka.ssl.keystore.type": "JKS",
        "kafka.ssl.keystore.password": pki.store_password,
        "kafka.ssl.key.password": pki.store_password})
    assert config.tls is not None and config.tls.cadata == _config(
        mtls_broker, **_pem_trust(pki)).tls.cadata
    _roundtrip(mtls_broker, pki, config)


def test_jks_key_entry_with_its_own_password(mtls_broker, pki, tmp_path) -> None:
    """A JKS key entry whose password differs from the store's (kafka.ssl.key.password)."""
    _jks(pki)
    store = tmp_path / "own-key-password.jks"
    shutil.copy(pki.client.jks, store)
    subprocess.run(["keytool", "-keypasswd", "-alias", "client", "-keystore", str(store),
                    "-storepass", pki.store_password, "-keypass", pki.store_password,
                    "-new", pki.key_password], check=True, capture_output=True, timeout=120)
    options = {**_pem_trust(pki), "kafka.ssl.keystore.location": str(store),
               "kafka.ssl.keystore.password": pki.store_password}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "cannot read the JKS store"):
        _config(mtls_broker, **options)  # the key's own password is needed
    _roundtrip(mtls_broker, pki, _config(mtls_broker, **options,
                                         **{"kafka.ssl.key.password": pki.key_password}))


def test_jks_wrong_password_names_the_store_not_the_password(pki) -> None:
    _jks(pki)
    wrong = "not-the-" + pki.store_password
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "cannot read the JKS store") as info:
        client_config(lower_keys({"kafka.bootstrap.servers": "h:1",
                                  "kafka.security.protocol": "SSL",
                                  "kafka.ssl.truststore.location": pki.ca_pem,
                                  "kafka.ssl.keystore.location": pki.client.jks,
                                  "kafka.ssl.keystore.password": wrong}), SINK)
    assert "kafka.ssl.keystore" in str(info.value)
    assert wrong not in str(info.value) and pki.store_password not in str(info.value)


def test_jks_without_keytool_says_how_to_convert(pki, monkeypatch) -> None:
    _jks(pki)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "keytool -importkeystore") as info:
        client_config(lower_keys({"kafka.bootstrap.servers": "h:1",
                                  "kafka.security.protocol": "SSL",
                                  "kafka.ssl.truststore.location": pki.ca_jks,
                                  "kafka.ssl.truststore.password": pki.store_password}), SINK)
    assert pki.store_password not in str(info.value)


# -------------------------------------------------------------------------------- failures


def _fails(config: ClientConfig) -> TlsHandshakeError:
    client = KafkaClient(config)
    started = time.monotonic()
    try:
        with pytest.raises(TlsHandshakeError) as info:
            client.fetch_metadata()
    finally:
        client.close()
    assert time.monotonic() - started < FAIL_FAST_S, "a TLS failure must not be retried"
    err = info.value
    assert err.retriable is False
    assert "kafka.security.protocol=SSL" in str(err)
    assert config.bootstrap_servers[0][0] in str(err)
    return err


def test_hostname_mismatch_names_the_certificate(wrong_host_tls_broker, pki) -> None:
    err = _fails(_config(wrong_host_tls_broker, **_pem_trust(pki)))
    assert "hostname mismatch" in str(err)
    assert "wrong-host.invalid" in str(err)
    assert "kafka.ssl.endpoint.identification.algorithm" in str(err)
    # The check can be turned off (Java's empty value, librdkafka's none).
    for off in ("", "none"):
        _roundtrip(wrong_host_tls_broker, pki, _config(
            wrong_host_tls_broker, **_pem_trust(pki),
            **{"kafka.ssl.endpoint.identification.algorithm": off}),
            **{"ssl.endpoint.identification.algorithm": "none"})


def test_expired_certificate(expired_tls_broker, pki) -> None:
    err = _fails(_config(expired_tls_broker, **_pem_trust(pki)))
    assert "has expired" in str(err) and "valid until" in str(err)


def test_wrong_ca_names_subject_and_issuer(tls_broker, pki) -> None:
    err = _fails(_config(tls_broker, **{"kafka.ssl.ca.location": pki.other_ca_pem}))
    assert "untrusted certificate" in str(err)
    assert pki.server.subject in str(err) and "issuer" in str(err)
    assert "kafka.ssl.truststore" in str(err)


def test_system_default_cas_do_not_trust_the_test_ca(tls_broker) -> None:
    """No truststore: the system's CAs, which never signed the session's CA."""
    assert "untrusted certificate" in str(_fails(_config(tls_broker)))


@pytest.mark.parametrize("client_cert", ["missing", "rogue"])
def test_mutual_tls_refuses_missing_or_foreign_certificate(mtls_broker, pki,
                                                           client_cert: str) -> None:
    options = _pem_trust(pki)
    if client_cert == "rogue":
        options.update({"kafka.ssl.certificate.location": pki.rogue_client.cert_pem,
                        "kafka.ssl.key.location": pki.rogue_client.key_pem})
    err = _fails(_config(mtls_broker, **options))
    assert "client certificate" in str(err) and "kafka.ssl.keystore" in str(err)


def test_plaintext_client_on_a_tls_port_is_not_a_tls_error(tls_broker) -> None:
    """PLAINTEXT against a TLS listener stays a connection failure (retried, then
    NoBrokersAvailable), as in the Java client: the unchanged PLAINTEXT path."""
    config = ClientConfig.from_servers(tls_broker.bootstrap_servers, request_timeout_ms=2000,
                                       retries=0)
    client = KafkaClient(config)
    try:
        with pytest.raises(Exception) as info:
            client.fetch_metadata()
        assert not isinstance(info.value, TlsHandshakeError)
    finally:
        client.close()


def _not_tls(config: ClientConfig) -> TlsHandshakeError:
    """A TLS handshake with a plaintext listener fails fast (well under the connect timeout,
    10 s here) with a TlsHandshakeError that says so and names the broker."""
    assert config.connect_timeout_ms >= 10_000
    err = _fails(config)
    text = str(err)
    assert "the listener does not speak TLS" in text
    assert "kafka.security.protocol=PLAINTEXT" in text and "TLS (SSL listener) port" in text
    assert "firewall" not in text
    return err


def test_ssl_on_a_plaintext_port_that_waits_says_it_is_not_tls(bootstrap, pki,
                                                             broker_kind) -> None:
    """Tansu's plaintext port reads the ClientHello as the start of a ~369 MB frame and waits
    for it, silent (Kafka's closes, see below): this used to wait the whole connect timeout
    and blame a down broker or a firewall."""
    err = _not_tls(_config(_Servers(bootstrap), **_pem_trust(pki)))
    assert "the listener does not speak TLS" in str(err)
    if broker_kind == "tansu":
        assert "said nothing to the TLS ClientHello" in str(err)
    elif broker_kind == "kafka":
        assert "closed the connection on the TLS ClientHello" in str(err)


def test_ssl_on_a_plaintext_port_that_closes_says_it_is_not_tls(bootstrap, pki) -> None:
    """Kafka's plaintext port closes on a frame over socket.request.max.bytes, which the
    ClientHello reads as: played by the fault proxy in front of Tansu."""
    port = int(bootstrap.rsplit(":", 1)[1])
    with FaultProxy(port, max_request_bytes=KAFKA_MAX_REQUEST_BYTES) as proxy:
        err = _not_tls(_config(_Servers(proxy.address), **_pem_trust(pki)))
    assert "closed the connection on the TLS ClientHello" in str(err)


def test_ssl_on_a_port_answering_other_bytes_says_it_is_not_tls(pki) -> None:
    """A peer that answers the ClientHello with bytes that are no TLS record (an HTTP
    server): not TLS, said at once, with no plaintext Kafka probe needed."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    try:
        err = _not_tls(_config(_Servers(f"127.0.0.1:{port}"), **_pem_trust(pki)))
    finally:
        listener.close()
    assert "no TLS record" in str(err)


@dataclass(frozen=True)
class _Servers:
    """What ``_config`` needs of a broker: its bootstrap servers."""

    bootstrap_servers: str


# --------------------------------------------------------------------------------- secrets


def test_no_secret_in_reprs_pickles_or_errors(mtls_broker, pki) -> None:
    secrets = [pki.store_password, pki.key_password]
    config = _config(mtls_broker, **{
        "kafka.ssl.truststore.location": pki.ca_p12,
        "kafka.ssl.truststore.password": pki.store_password,
        "kafka.ssl.keystore.location": pki.client.p12,
        "kafka.ssl.keystore.password": pki.store_password,
        "kafka.ssl.key.password": pki.key_password})
    assert config.tls is not None and config.tls.key
    text = repr(config) + str(config)
    key_pem = Path(pki.client.key_pem).read_text()
    for secret in secrets:
        assert secret not in text
    assert "PRIVATE KEY" not in text and key_pem[40:80] not in text
    assert config.tls.key.hex()[:32] not in text and "<hidden>" in text
    # The config travels pickled (partitions, writers) and still connects.
    _roundtrip(mtls_broker, pki, pickle.loads(pickle.dumps(config)))
    # Wrong passwords: errors that never echo them.
    for options in ({"kafka.ssl.keystore.location": pki.client.p12,
                     "kafka.ssl.keystore.password": "hunter2-wrong"},
                    {"kafka.ssl.certificate.location": pki.client.cert_pem,
                     "kafka.ssl.key.location": pki.client.key_pem_encrypted,
                     "kafka.ssl.key.password": "hunter2-wrong"},
                    {"kafka.ssl.truststore.location": pki.ca_p12,
                     "kafka.ssl.truststore.password": "hunter2-wrong"}):
        with pytest.raises(ConfigurationError) as info:
            _config(mtls_broker, **{**_pem_trust(pki), **options}) if \
                "kafka.ssl.truststore.location" not in options else \
                _config(mtls_broker, **options)
        assert "hunter2" not in str(info.value)
        assert "password" in str(info.value)


def test_acks_zero_over_tls(tls_broker, pki) -> None:
    """acks=0: Tansu answers anyway, and the connection drains those answers without blocking
    (on a TLS socket a non-blocking read with nothing to read is SSLWantReadError)."""
    client = KafkaClient(_config(tls_broker, **_pem_trust(pki)))
    try:
        topic = f"tls-a0-{uuid.uuid4().hex[:10]}"
        create_topics(client, [(topic, 1)])
        settings = ProduceSettings(acks=0, enable_idempotence=False, batch_size=1024)
        values = pa.array([b"v%d" % i for i in range(500)], pa.binary())
        Producer(client, settings).send(encode_partitioned(
            topic, None, values, np.zeros(500, np.int32), settings, 1_700_000_000_000))
        deadline = time.monotonic() + 20
        rows: list[tuple] = []
        while len(rows) < 500 and time.monotonic() < deadline:
            rows = read_records(client, topic, 0, 500) if _end(client, topic) >= 500 else []
        assert [v for _, v in rows] == values.to_pylist()
    finally:
        client.close()


def _end(client: KafkaClient, topic: str) -> int:
    return resolve_offsets(client, {(topic, 0): LATEST})[(topic, 0)]
