"""kafkawire's client logging in with SASL GSSAPI (Kerberos) against a real MIT KDC.

The brokers are Apache Kafka's GSSAPI listeners (Java's Krb5LoginModule with the service
keytab of kafka/127.0.0.1) when the test broker is kafka, and the SASL front of
tests/support/sasl_front.py with its GSSAPI acceptor (tests/support/sasl_gssapi.py, kafka/localhost
and kafka/127.0.0.1) under Tansu and for what Kafka does not serve (raw tokens, a broker with a
stale keytab, a session lifetime of the test's own), proved by kafka-python in
test_security_front.py. KIP-368 also runs on Kafka's REAUTH listener. librdkafka's wheel has no GSSAPI, so the
records kafkawire writes over a Kerberos login are compared with what librdkafka reads from
the same broker logged in with SCRAM (and the other way round).

Covered: SASL_PLAINTEXT and SASL_SSL, SaslHandshake v1 + SaslAuthenticate and v0 raw tokens,
keytab logins that need no ticket cache or keytab path where they run (a fresh process with
an empty KRB5CCNAME and no KRB5_CLIENT_KTNAME), the user's ticket cache neither used nor
changed by a keytab login, ticket-cache logins, KIP-368 re-authentication, and the
failures (unknown principal, stale keytab, unknown service principal, KDC unreachable, a
broker that cannot read the ticket) as fast, non-retriable SaslAuthenticationErrors that say
what to check.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import SaslAuthenticationError
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.options import SOURCE, client_config, lower_keys
from spark_kafka_wire.protocol.messages import METADATA
from tests.support.kafkawire_io import (
    kafkawire_roundtrip,
    librdkafka_roundtrip,
    write_records,
)
from tests.support.refusals import login_refused
from tests.support.security_env import SASL_MECHANISMS, SASL_USERS

pytestmark = pytest.mark.broker

RECORDS = [(f"k{i}".encode(), f"v{i}".encode() * (i + 1)) for i in range(30)] + [
    (None, b"no key"), (b"tombstone", None), (b"big", bytes(range(256)) * 200)]
KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
FAIL_FAST_S = 10.0
SUBPROCESS_TIMEOUT_S = 120


def _keytab_jaas(keytab: str, principal: str) -> str:
    return (f'{KRB5} required useKeyTab=true storeKey=true keyTab="{keytab}" '
            f'principal="{principal}";')


def _options(broker, jaas: str | None, pki=None, **extra: str) -> dict[str, str]:
    opts = {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "GSSAPI", "kafka.request.timeout.ms": "10000", **extra}
    if jaas is not None:
        opts["kafka.sasl.jaas.config"] = jaas
    if pki is not None:
        opts["kafka.ssl.truststore.location"] = pki.ca_pem
    return opts


def _config(broker, jaas: str | None, pki=None, **extra: str) -> ClientConfig:
    return client_config(lower_keys(_options(broker, jaas, pki, **extra)), SOURCE)


def _librdkafka(broker, pki=None) -> dict:
    """librdkafka on the same broker, logged in with SCRAM (its wheel has no GSSAPI)."""
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0,
            "socket.timeout.ms": 5000, "sasl.mechanism": "SCRAM-SHA-256",
            "security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "sasl.username": "alice", "sasl.password": SASL_USERS["alice"]}
    if pki is not None:
        conf["ssl.ca.location"] = pki.ca_pem
    return conf


def _gssapi_broker(factory, kdc, service_keytab: str | None = None, **options):
    from tests.support.sasl_gssapi import GssapiServer

    return factory(mechanisms=(*SASL_MECHANISMS, "GSSAPI"),
                   gssapi_factory=functools.partial(GssapiServer,
                                                    service_keytab or kdc.service_keytab),
                   **options)


def _roundtrip(broker, config: ClientConfig, kdc, pki=None) -> None:
    """kafkawire writes and reads over GSSAPI; librdkafka reads exactly that and writes what
    kafkawire then reads; group offsets go through the coordinator."""
    before = len(broker.stats.authentications)
    client = KafkaClient(config)
    try:
        topic = kafkawire_roundtrip(client, "gss", RECORDS)
        librdkafka_roundtrip(client, _librdkafka(broker, pki), topic, RECORDS)
    finally:
        client.close()
    ours = [e for e in broker.stats.authentications[before:] if e.mechanism == "GSSAPI"]
    assert ours and {e.principal for e in ours} == {kdc.client_principal}
    assert not broker.stats.errors


# ------------------------------------------------------------------------------- logins


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
def test_gssapi_roundtrip_with_keytab(request, kdc, pki, tls: bool) -> None:
    broker = request.getfixturevalue("gssapi_ssl_broker" if tls else "gssapi_broker")
    config = _config(broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal),
                     pki if tls else None)
    _roundtrip(broker, pickle.loads(pickle.dumps(config)), kdc, pki if tls else None)


def test_gssapi_handshake_v0_raw_tokens(sasl_broker_factory, kdc) -> None:
    """Before Kafka 1.0 (KIP-43): raw tokens, and no token after the client's last one."""
    broker = _gssapi_broker(sasl_broker_factory, kdc, advertise_authenticate=False)
    _roundtrip(broker, _config(broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal)),
               kdc)
    gss = [e for e in broker.stats.authentications if e.mechanism == "GSSAPI"]
    assert {(e.handshake_version, e.authenticate_version) for e in gss} == {(0, None)}


def test_gssapi_ticket_cache_and_default_credentials(gssapi_broker, kdc) -> None:
    """useTicketCache=true, and no JAAS entry at all (librdkafka's kinit way), use the
    process's ticket cache (KRB5CCNAME, kinit'ed by the kdc fixture)."""
    for jaas in (f"{KRB5} required useTicketCache=true;",
                 f'{KRB5} required useTicketCache=true principal="{kdc.client_principal}";',
                 None):
        config = _config(gssapi_broker, jaas)
        before = len(gssapi_broker.stats.authentications)
        with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
            conn.request(METADATA, {"topics": []})
        assert [e.principal for e in gssapi_broker.stats.authentications[before:]] == [
            kdc.client_principal]


def test_librdkafka_option_names_for_the_keytab(gssapi_broker, kdc) -> None:
    config = _config(gssapi_broker, None, **{
        "kafka.sasl.kerberos.keytab": kdc.client_keytab,
        "kafka.sasl.kerberos.principal": kdc.client_principal,
        "kafka.sasl.kerberos.service.name": "kafka"})
    assert config.sasl is not None and config.sasl.kerberos is not None
    assert config.sasl.kerberos.keytab is not None
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        conn.request(METADATA, {"topics": []})


def test_keytab_login_leaves_the_users_ticket_cache_alone(gssapi_broker, kdc) -> None:
    """A keytab login keeps its tickets in a private MEMORY cache: the ticket cache of
    KRB5CCNAME is the same file, byte for byte, afterwards."""
    with open(kdc.ccache, "rb") as f:
        before = f.read()
    config = _config(gssapi_broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal))
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        conn.request(METADATA, {"topics": []})
    with open(kdc.ccache, "rb") as f:
        assert f.read() == before


_EXECUTOR = textwrap.dedent("""
    import os, pickle, sys
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from tests.support.kafkawire_io import read_records
    config, topic, n = pickle.loads(sys.stdin.buffer.read())
    client = KafkaClient(config)
    try:
        rows = read_records(client, topic, 0, n)
    finally:
        client.close()
    print(len(rows), rows == pickle.loads(bytes.fromhex(os.environ["EXPECTED"])))
    print("ccache created" if os.path.exists(os.environ["EMPTY_CCACHE"]) else "no ccache")
    def target(fd):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself used
            return ""
    keytabs = [fd for fd in os.listdir("/proc/self/fd")
               if target(fd).startswith("/memfd:kafkawire-keytab")]
    print("memfd keytab" if keytabs else "no memfd keytab")
""")


def test_keytab_is_shipped_executors_need_no_path_or_ticket(gssapi_broker, kdc, tmp_path
                                                            ) -> None:
    """Like a Spark executor: a fresh process gets the parsed (pickled) settings, while the
    keytab's path is gone, KRB5CCNAME names an empty cache and no client keytab is set. It
    logs in from the shipped bytes (an in-memory keytab file) and reads what was written."""
    keytab = tmp_path / "alice-copy.keytab"
    shutil.copy(kdc.client_keytab, keytab)
    config = _config(gssapi_broker, _keytab_jaas(str(keytab), kdc.client_principal))
    keytab.unlink()  # the driver read it; nothing needs the path any more
    client = KafkaClient(config)
    try:
        topic = f"gss-ship-{uuid.uuid4().hex[:10]}"
        create_topics(client, [(topic, 1)])
        write_records(client, topic, RECORDS)
    finally:
        client.close()
    empty = tmp_path / "no-ccache"
    env = {k: v for k, v in os.environ.items() if k != "KRB5_CLIENT_KTNAME"}
    env.update(KRB5CCNAME=f"FILE:{empty}", EMPTY_CCACHE=str(empty),
               PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), env.get("PYTHONPATH")) if p),
               EXPECTED=pickle.dumps(RECORDS).hex())
    before = len(gssapi_broker.stats.authentications)
    done = subprocess.run([sys.executable, "-c", _EXECUTOR],
                          input=pickle.dumps((config, topic, len(RECORDS))), env=env,
                          capture_output=True, timeout=SUBPROCESS_TIMEOUT_S, check=False)
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    lines = out.split("\n")
    assert lines[0] == f"{len(RECORDS)} True"
    assert lines[1] == "no ccache"  # the user's cache was never written
    if sys.platform == "linux":
        assert lines[2] == "memfd keytab"
    ours = gssapi_broker.stats.authentications[before:]
    assert ours and {e.principal for e in ours} == {kdc.client_principal}


def test_reauthentication_with_kerberos(sasl_broker_factory, kdc) -> None:
    """KIP-368 with GSSAPI: 1.5 s sessions; one connection used for ~5 lifetimes logs in again
    (a new Kerberos context each time, the same principal) and is never closed for expiry."""
    broker = _gssapi_broker(sasl_broker_factory, kdc, session_lifetime_ms=1500)
    config = _config(broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal))
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        deadline = time.monotonic() + 6
        while time.monotonic() < deadline:
            conn.request(METADATA, {"topics": []})
            time.sleep(0.2)
        assert conn.connected and conn.authentications >= 3
    assert len(broker.stats.reauthentications) >= 2
    assert broker.stats.expired_closes == 0
    assert {(e.mechanism, e.principal) for e in broker.stats.authentications} == {
        ("GSSAPI", kdc.client_principal)}


def test_kafka_reauthentication_with_kerberos(reauth_broker, kdc) -> None:
    """KIP-368 with GSSAPI against Apache Kafka's REAUTH listener: for four session lifetimes
    each connection logs in again with a new Kerberos context (same principal) before its
    session ends, while writes and reads go on; Kafka never finds a session expired."""
    from tests.integration.test_sasl_client import busy_for_sessions

    if "GSSAPI" not in reauth_broker.kafka.listener_mechanisms("REAUTH"):
        pytest.skip("the REAUTH listener has no GSSAPI (no KDC when the broker started)")
    seen = busy_for_sessions(reauth_broker, _config(
        reauth_broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal)))
    assert seen.rounds > 10
    assert seen.reauthentications >= 3
    assert seen.logins == 0 and seen.expired == 0 and seen.failures == 0
    assert seen.principals == {kdc.client_principal}


# ------------------------------------------------------------------------------ failures


def _refused(config: ClientConfig) -> SaslAuthenticationError:
    """login_refused (at once, not retriable), by GSSAPI, naming broker, protocol, mechanism
    option and user, and showing no byte of the keytab."""
    err = login_refused(config, FAIL_FAST_S)
    assert err.mechanism == "GSSAPI"
    text = str(err)
    assert err.broker in text and config.security_protocol in text
    assert "kafka.sasl.mechanism=GSSAPI" in text and repr(err.user) in text
    assert config.sasl is not None and config.sasl.kerberos is not None
    keytab = config.sasl.kerberos.keytab
    if keytab is not None:  # the keytab's bytes never show
        assert repr(keytab)[2:40] not in text and repr(keytab)[2:40] not in repr(config)
    return err


def _new_principal(kdc, name: str, versions: int = 1) -> list[str]:
    """A principal with ``versions`` successive keys, each exported to its own keytab."""
    from tests.support.kdc import _tool

    kdc._run(_tool("kadmin.local"), "-r", kdc.realm, "-q", f"addprinc -randkey {name}")
    paths = []
    for i in range(versions):
        path = os.path.join(kdc.directory, f"{name.replace('/', '_')}-{i}.keytab")
        kdc._run(_tool("kadmin.local"), "-r", kdc.realm, "-q", f"ktadd -k {path} {name}")
        paths.append(path)
    return paths


def test_unknown_principal(gssapi_broker, kdc) -> None:
    name = f"gone{uuid.uuid4().hex[:6]}"
    (keytab,) = _new_principal(kdc, name)
    from tests.support.kdc import _tool

    kdc._run(_tool("kadmin.local"), "-r", kdc.realm, "-q", f"delprinc -force {name}")
    principal = f"{name}@{kdc.realm}"
    err = _refused(_config(gssapi_broker, _keytab_jaas(keytab, principal)))
    assert err.user == principal
    assert "not found in Kerberos database" in str(err)
    assert f"The KDC does not know the principal '{principal}'" in str(err)


def test_stale_keytab(gssapi_broker, kdc) -> None:
    name = f"stale{uuid.uuid4().hex[:6]}"
    old, _new = _new_principal(kdc, name, versions=2)
    err = _refused(_config(gssapi_broker, _keytab_jaas(old, f"{name}@{kdc.realm}")))
    assert "is not the KDC's" in str(err) and "export a fresh keytab" in str(err)
    assert old in str(err)  # the keytab's path (not its bytes) names the file to replace


def test_unknown_service_principal_names_it(gssapi_broker, kdc) -> None:
    config = _config(gssapi_broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal),
                     **{"kafka.sasl.kerberos.service.name": "kafka-typo"})
    err = _refused(config)
    text = str(err)
    assert "kafka-typo@127.0.0.1" in text and "kafka.sasl.kerberos.service.name" in text
    assert "host names" in text and "DNS" in text


def test_broker_that_cannot_read_the_ticket_is_error_58(sasl_broker_factory, kdc) -> None:
    """The broker's keytab holds an old key of its principal: it refuses the AP-REQ with
    SASL_AUTHENTICATION_FAILED, and the message says what to check on both sides."""
    service = f"svc{uuid.uuid4().hex[:6]}"
    old, _new = _new_principal(kdc, f"{service}/127.0.0.1", versions=2)
    broker = _gssapi_broker(sasl_broker_factory, kdc, service_keytab=old)
    err = _refused(_config(broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal),
                           **{"kafka.sasl.kerberos.service.name": service}))
    assert err.error_code == 58
    assert f"the broker's principal is {service}/<broker host>@<realm>" in str(err)
    assert len(broker.stats.failures) == 1  # never retried


_KDC_DOWN = textwrap.dedent("""
    import pickle, sys, time
    from spark_kafka_wire.client.metadata.cluster import KafkaClient
    from spark_kafka_wire.client.errors import SaslAuthenticationError
    config = pickle.loads(sys.stdin.buffer.read())
    start = time.monotonic()
    client = KafkaClient(config)
    try:
        client.fetch_metadata()
    except SaslAuthenticationError as e:
        print(time.monotonic() - start, e.retriable)
        print(e)
    finally:
        client.close()
""")


def test_kdc_unreachable(gssapi_broker, kdc, tmp_path) -> None:
    """krb5.conf names a KDC nobody listens on: a fast, clear failure (in a process of its
    own, as KRB5_CONFIG is read from the environment)."""
    from spark_kafka_wire.testing.embedded import free_port

    with open(kdc.krb5_conf) as f:
        conf = f.read().replace(f"127.0.0.1:{kdc.port}", f"127.0.0.1:{free_port()}")
    (tmp_path / "krb5.conf").write_text(conf)
    config = _config(gssapi_broker, _keytab_jaas(kdc.client_keytab, kdc.client_principal))
    env = {**os.environ, "KRB5_CONFIG": str(tmp_path / "krb5.conf"),
           "KRB5CCNAME": f"FILE:{tmp_path / 'none'}",
           "PYTHONPATH": os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH"))
                                         if p)}
    done = subprocess.run([sys.executable, "-c", _KDC_DOWN], input=pickle.dumps(config),
                          env=env, capture_output=True, timeout=SUBPROCESS_TIMEOUT_S,
                          check=False)
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    took, retriable = out.split("\n")[0].split()
    assert float(took) < FAIL_FAST_S and retriable == "False"
    assert "Cannot contact any KDC" in out and "No KDC could be reached" in out
    assert "krb5.conf" in out and kdc.client_principal in out
