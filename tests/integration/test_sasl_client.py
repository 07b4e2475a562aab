"""kafkawire's client over SASL_PLAINTEXT and SASL_SSL against Apache Kafka's SASL listeners
(when the test broker is kafka) or the SASL front of tests/support/sasl_front.py (under Tansu,
and on every broker for what Kafka does not serve: raw tokens, hostile SCRAM iterations, chosen
mechanism lists, Tansu's bogus SCRAM), proved by librdkafka in test_security_front.py.

Every mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), with credentials from a JAAS entry or
librdkafka's username/password, logs in on every connection (metadata, admin, produce, fetch,
group coordinator); what we write librdkafka reads exactly and the other way round. Refused
logins (wrong password, unknown user, mechanism not enabled, Tansu's bogus SCRAM success) fail
fast with a SaslAuthenticationError naming broker, mechanism and user and never the password.
SaslHandshake v0 with raw tokens, and KIP-368 re-authentication on a long-lived connection.
"""

from __future__ import annotations

import dataclasses
import pickle
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
    read_records,
    write_records,
)
from tests.support.refusals import login_refused
from tests.support.security_env import SASL_USERS, credentials

pytestmark = pytest.mark.broker

RECORDS = [(f"k{i}".encode(), f"v{i}".encode() * (i + 1)) for i in range(30)] + [
    (None, b"no key"), (b"tombstone", None), (b"big", bytes(range(256)) * 200)]
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
FAIL_FAST_S = 5.0
MODULE = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
          "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
          "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}


def _jaas(mechanism: str, user: str, password: str) -> str:
    return f'{MODULE[mechanism]} required username="{user}" password="{password}";'


def _options(broker, mechanism: str, pki=None, user: str = "alice", password: str | None = None,
             jaas: bool = True) -> dict[str, str]:
    password = SASL_USERS.get(user, "x") if password is None else password
    opts = {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": mechanism, "kafka.request.timeout.ms": "10000"}
    if pki is not None:
        opts["kafka.ssl.truststore.location"] = pki.ca_pem
    if jaas:
        opts["kafka.sasl.jaas.config"] = _jaas(mechanism, user, password)
    else:
        opts.update({"kafka.sasl.username": user, "kafka.sasl.password": password})
    return opts


def _config(broker, mechanism: str, pki=None, **kwargs) -> ClientConfig:
    return client_config(lower_keys(_options(broker, mechanism, pki, **kwargs)), SOURCE)


def _librdkafka(broker, mechanism: str, pki=None) -> dict:
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0,
            "socket.timeout.ms": 5000, "sasl.mechanism": mechanism,
            "security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "sasl.username": "alice", "sasl.password": SASL_USERS["alice"]}
    if pki is not None:
        conf["ssl.ca.location"] = pki.ca_pem
    return conf


def _roundtrip(broker, config: ClientConfig, mechanism: str, pki=None) -> None:
    """Our producer writes, librdkafka and our fetcher read; librdkafka writes, we read; group
    offsets through the coordinator: every connection logged in with SASL."""
    before = len(broker.stats.authentications)
    client = KafkaClient(config)
    try:
        topic = kafkawire_roundtrip(client, "sasl", RECORDS)
        librdkafka_roundtrip(client, _librdkafka(broker, mechanism, pki), topic, RECORDS)
    finally:
        client.close()
    ours = [e for e in broker.stats.authentications[before:] if e.mechanism == mechanism]
    assert ours and all(e.principal == "alice" for e in ours)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_plaintext_roundtrip(sasl_broker, mechanism: str) -> None:
    _roundtrip(sasl_broker, _config(sasl_broker, mechanism), mechanism)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_sasl_ssl_roundtrip(sasl_ssl_broker, pki, mechanism: str) -> None:
    config = _config(sasl_ssl_broker, mechanism, pki, jaas=False)
    _roundtrip(sasl_ssl_broker, pickle.loads(pickle.dumps(config)), mechanism, pki)


@pytest.mark.parametrize("jaas", [True, False], ids=["jaas", "username-password"])
def test_credential_forms(sasl_broker, jaas: bool) -> None:
    config = _config(sasl_broker, "SCRAM-SHA-256", user="bob", jaas=jaas)
    assert config.sasl is not None and config.sasl.username == "bob"
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        conn.request(METADATA, {"topics": []})
    assert sasl_broker.stats.authentications[-1].principal == "bob"


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_handshake_v0_raw_tokens(sasl_broker_factory, mechanism: str) -> None:
    broker = sasl_broker_factory(advertise_authenticate=False)
    _roundtrip(broker, _config(broker, mechanism), mechanism)
    assert {e.authenticate_version for e in broker.stats.authentications} == {None}
    assert {e.handshake_version for e in broker.stats.authentications} == {0}


def _refused(config: ClientConfig, caplog: pytest.LogCaptureFixture | None = None
             ) -> SaslAuthenticationError:
    """login_refused (at once, not retriable, no password shown), naming broker, protocol,
    mechanism and user."""
    err = login_refused(config, FAIL_FAST_S, caplog=caplog,
                        secrets=("hunter2", *SASL_USERS.values()))
    text = str(err)
    assert err.broker in text and config.security_protocol in text and err.mechanism in text
    assert repr(err.user) in text
    return err


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("user", ["alice", "mallory"])
def test_wrong_password_or_unknown_user(sasl_broker, mechanism: str, user: str,
                                        caplog: pytest.LogCaptureFixture) -> None:
    logins = len(sasl_broker.stats.failures)
    err = _refused(_config(sasl_broker, mechanism, user=user, password="hunter2-wrong"),
                   caplog)
    assert err.error_code == 58 and "Check the user name and password" in str(err)
    assert len(sasl_broker.stats.failures) == logins + 1  # never retried


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_wrong_password_over_raw_tokens(sasl_broker_factory, mechanism: str) -> None:
    broker = sasl_broker_factory(advertise_authenticate=False)
    err = _refused(_config(broker, mechanism, password="hunter2-wrong"))
    assert "user name and password" in str(err)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_iterations_beyond_kafkas_maximum_are_refused(sasl_broker_factory, token_endpoint,
                                                            mechanism: str,
                                                            caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    """A broker asking for 20000 iterations (Kafka's ScramMechanism allows 16384 at most) gets
    no client-final-message: refused at once, naming the broker (issue 27)."""
    creds = dataclasses.replace(credentials(token_endpoint), scram_iterations=20_000)
    broker = sasl_broker_factory(creds=creds)
    err = _refused(_config(broker, mechanism), caplog)
    assert "asked for 20000 SCRAM iterations" in str(err) and "16384" in str(err)
    assert not broker.stats.authentications


def test_mechanism_not_enabled_lists_the_enabled_ones(sasl_broker_factory, pki) -> None:
    broker = sasl_broker_factory(pki=pki, mechanisms=("PLAIN", "SCRAM-SHA-256"))
    err = _refused(_config(broker, "SCRAM-SHA-512", pki))
    assert err.error_code == 33
    assert "PLAIN, SCRAM-SHA-256" in str(err) and "SASL_SSL" in str(err)


def test_tansu_bogus_scram_success_is_refused(tansu_bogus_scram_broker) -> None:
    """Tansu answers error 0 with a server-final e=unknown-user: not a login."""
    config = client_config(lower_keys({
        "kafka.bootstrap.servers": tansu_bogus_scram_broker.bootstrap_servers,
        "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.username": "nobody", "kafka.sasl.password": "hunter2-bogus"}), SOURCE)
    err = _refused(config)
    assert "unknown-user" in str(err) and "'nobody'" in str(err)


def test_reauthentication_keeps_a_long_lived_connection_working(sasl_broker_factory) -> None:
    """KIP-368: the front grants 1.5 s sessions and closes connections that outlive them; one
    connection used for ~5 lifetimes logs in again before each session ends."""
    broker = sasl_broker_factory(session_lifetime_ms=1500)
    config = _config(broker, "SCRAM-SHA-512")
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        deadline = time.monotonic() + 7.5
        while time.monotonic() < deadline:
            conn.request(METADATA, {"topics": []})
            time.sleep(0.2)
        assert conn.connected
        assert conn.authentications >= 5
    assert len(broker.stats.reauthentications) >= 4
    assert broker.stats.expired_closes == 0
    assert {e.principal for e in broker.stats.authentications} == {"alice"}


def test_reauthentication_while_fetching_ahead(sasl_broker_factory) -> None:
    """The fetcher sends the next Fetch before decoding the previous answer; re-logins happen
    between them, so a reader holding its connections for several lifetimes never sees its
    session expire and reads exactly what was written."""
    broker = sasl_broker_factory(session_lifetime_ms=1500)
    client = KafkaClient(_config(broker, "PLAIN"))
    try:
        topic = f"reauth-{uuid.uuid4().hex[:10]}"
        create_topics(client, [(topic, 1)])
        write_records(client, topic, RECORDS)
        deadline = time.monotonic() + 6
        reads = 0
        while time.monotonic() < deadline:
            assert read_records(client, topic, 0, len(RECORDS)) == RECORDS
            reads += 1
            time.sleep(0.1)
    finally:
        client.close()
    assert reads > 10
    assert len(broker.stats.reauthentications) >= 3
    assert broker.stats.expired_closes == 0


def test_sasl_against_a_listener_without_sasl_says_so(bootstrap: str, broker_kind) -> None:
    """Plain Tansu (no SASL) answers SaslHandshake with UNSUPPORTED_SASL_MECHANISM listing
    just the mechanism asked for (Kafka's plaintext listener: ILLEGAL_SASL_STATE); the message
    used to read "has not enabled PLAIN ...; it enables: PLAIN". It now says the listener
    takes no SASL logins and what to use."""
    config = client_config(lower_keys({
        "kafka.bootstrap.servers": bootstrap, "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "alice",
        "kafka.sasl.password": "hunter2-any"}), SOURCE)
    err = _refused(config)
    text = str(err)
    assert err.error_code == {"tansu": 33, "kafka": 34}.get(broker_kind, err.error_code)
    assert "this listener does not take SASL logins" in text
    assert "kafka.security.protocol=PLAINTEXT" in text and "SASL port" in text
    assert "has not enabled" not in text


@dataclasses.dataclass(frozen=True)
class BusyRun:
    """What Apache Kafka logged while busy_for_sessions ran, and how many rounds went through."""

    rounds: int
    reauthentications: int
    logins: int  # new connections' first logins
    expired: int  # connections Kafka closed for an expired session
    failures: int  # refused logins
    principals: set[str]


def busy_for_sessions(broker, config: ClientConfig, sessions: float = 4.0) -> BusyRun:
    """One KafkaClient writes and reads a topic without pause for ``sessions`` KIP-368 session
    lifetimes of Apache Kafka's REAUTH listener, where Kafka closes a connection whose session
    has passed at its next request (other than a re-authentication). What the broker logged
    meanwhile: its re-authentications and new logins, the sessions it found expired and the
    logins it refused, and how many write/read rounds went through."""
    from tests.conftest import REAUTH_MS

    client = KafkaClient(config)
    try:
        topic = f"reauth-{uuid.uuid4().hex[:10]}"
        create_topics(client, [(topic, 1)])
        write_records(client, topic, RECORDS[:5])
        assert read_records(client, topic, 0, 5) == RECORDS[:5]
        before = broker.stats
        deadline, rounds, offset = time.monotonic() + sessions * REAUTH_MS / 1000, 0, 5
        while time.monotonic() < deadline:
            batch = RECORDS[rounds % len(RECORDS):][:3] or RECORDS[:3]
            write_records(client, topic, batch)
            assert read_records(client, topic, offset, offset + len(batch)) == batch
            offset += len(batch)
            rounds += 1
        after = broker.stats
    finally:
        client.close()
    return BusyRun(
        rounds=rounds,
        reauthentications=len(after.reauthentications) - len(before.reauthentications),
        logins=after.logins - before.logins, expired=after.expired_closes - before.expired_closes,
        failures=len(after.failures) - len(before.failures),
        principals={e.principal for e in after.authentications[len(before.authentications):]})


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_kafka_reauthentication_keeps_reads_and_writes_going(reauth_broker,
                                                             mechanism: str) -> None:
    """KIP-368 against Apache Kafka itself (connections.max.reauth.ms on the REAUTH listener):
    for four session lifetimes the client's connections log in again before each session
    ends, on the same connections (no new login, no session found expired by Kafka), and
    every write and read goes through."""
    seen = busy_for_sessions(reauth_broker, _config(reauth_broker, mechanism))
    assert seen.rounds > 10
    assert seen.reauthentications >= 3
    assert seen.logins == 0 and seen.expired == 0 and seen.failures == 0
    assert seen.principals == {"alice"}


def test_kafka_reauthentication_while_fetching_ahead(reauth_broker) -> None:
    """The fetcher sends the next Fetch before decoding the previous answer; on Apache Kafka's
    REAUTH listener, reads of about a hundred small fetches each (1 KiB, one two-record batch)
    held for four session lifetimes re-authenticate between fetches and read exactly what was
    written, on the same connections."""
    from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
    from spark_kafka_wire.client.fetching.fetcher import fetch_range
    from tests.conftest import REAUTH_MS

    client = KafkaClient(_config(reauth_broker, "SCRAM-SHA-256"))
    try:
        topic = f"reauth-{uuid.uuid4().hex[:10]}"
        create_topics(client, [(topic, 1)])
        records = [(f"k{i}".encode(), bytes([i % 256]) * 700) for i in range(200)]
        for i in range(0, len(records), 2):  # batches of two: a fetch takes about one
            write_records(client, topic, records[i:i + 2])
        small = FetchSettings(max_partition_fetch_bytes=1024, fetch_max_bytes=1024)
        before = reauth_broker.stats
        deadline, reads = time.monotonic() + 4 * REAUTH_MS / 1000, 0
        while time.monotonic() < deadline:
            rows = [row for chunk in fetch_range(client, topic, 0, 0, len(records), small)
                    for row in zip(chunk.keys.to_pylist(), chunk.values.to_pylist(),
                                   strict=True)]
            assert rows == records
            reads += 1
        after = reauth_broker.stats
    finally:
        client.close()
    assert reads >= 2
    assert len(after.reauthentications) - len(before.reauthentications) >= 3
    assert after.logins == before.logins and after.expired_closes == before.expired_closes
    assert len(after.failures) == len(before.failures)


def test_mechanism_the_listener_does_not_enable_lists_the_enabled_ones(sasl_ssl_broker, pki,
                                                                       kdc) -> None:
    """The shared SASL_SSL listener (Apache Kafka's or the front) enables no GSSAPI: the broker
    answers SaslHandshake with UNSUPPORTED_SASL_MECHANISM (33) and its enabled mechanisms,
    which the error names (the front-only test above checks a list the test chooses)."""
    krb5 = "com.sun.security.auth.module.Krb5LoginModule"
    config = client_config(lower_keys({
        "kafka.bootstrap.servers": sasl_ssl_broker.bootstrap_servers,
        "kafka.security.protocol": "SASL_SSL", "kafka.ssl.truststore.location": pki.ca_pem,
        "kafka.sasl.mechanism": "GSSAPI", "kafka.sasl.kerberos.service.name": "kafka",
        "kafka.sasl.jaas.config": f'{krb5} required useKeyTab=true keyTab="{kdc.client_keytab}" '
                                  f'principal="{kdc.client_principal}";'}), SOURCE)
    err = _refused(config)
    assert err.error_code == 33
    text = str(err)
    listed = text[text.index("enables: "):text.index(". Set kafka.sasl.mechanism")]
    assert set(listed.removeprefix("enables: ").split(", ")) == {  # in the broker's order
        "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"}
    assert "SASL_SSL" in text


def test_kafka_idle_connection_outliving_its_session_logs_in_again(reauth_broker) -> None:
    """A connection left idle past its session (a stream between triggers) re-authenticates
    before its next request: Apache Kafka takes a SaslHandshake on an expired session as the
    start of a re-authentication, where any other request closes the connection."""
    from tests.conftest import REAUTH_MS

    config = _config(reauth_broker, "SCRAM-SHA-256")
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        conn.request(METADATA, {"topics": []})
        before = reauth_broker.stats
        time.sleep(REAUTH_MS * 1.3 / 1000)
        conn.request(METADATA, {"topics": []})
        assert conn.connected and conn.authentications == 2
    after = reauth_broker.stats
    assert len(after.reauthentications) == len(before.reauthentications) + 1
    assert after.expired_closes == before.expired_closes and after.logins == before.logins
