"""Broker discovery through a real ZooKeeper (client/zookeeper/registry.py, zookeeper.connect).

Each test registers brokers the way ZooKeeper-era brokers did (an ephemeral ``/brokers/ids/<id>``
node in a session of the broker's own, under a fresh chroot), pointing at the real test broker
(Tansu); a client bootstrapped from ZooKeeper then writes and reads it. The emulated 0.7 brokers
register 0.7's text layout themselves (tests/support/kafka07_broker.py).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from spark_kafka_wire.client.config import ClientConfig, parse_bootstrap
from spark_kafka_wire.client.errors import (
    BrokerRegistrationError,
    ConfigurationError,
    NoBrokersRegisteredError,
    ZooKeeperAuthError,
    ZooKeeperError,
    ZooKeeperTlsError,
)
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import resolve_offsets
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import PendingBatch, Producer, ProduceSettings
from spark_kafka_wire.client.zookeeper.consumer_offsets import start_zookeeper, stop_zookeeper
from spark_kafka_wire.client.zookeeper.registry import (
    BrokerRegistry,
    bootstrap_from_zookeeper,
    discover_brokers,
)
from spark_kafka_wire.options import SOURCE, client_config, zookeeper_security
from spark_kafka_wire.protocol.records import encode_record_batch
from spark_kafka_wire.source.options import parse_source_options
from spark_kafka_wire.testing.embedded import free_port
from tests.support.errors import assert_condition, raises_condition
from tests.support.kafka07_broker import Kafka07Broker
from tests.support.zookeeper_server import ZK_PASSWORD, ZK_USER


def _session(hosts: str) -> KazooClient:
    zk = KazooClient(hosts=hosts, timeout=15)
    zk.start(timeout=15)
    return zk


@pytest.fixture
def zk_root(zookeeper: str) -> Iterator[tuple[str, str]]:
    """(the ensemble's connect string, a fresh chroot created on it)."""
    chroot = f"/kafka-{uuid.uuid4().hex[:10]}"
    zk = _session(zookeeper)
    zk.ensure_path(chroot)
    zk.stop()
    zk.close()
    yield zookeeper, chroot


@pytest.fixture
def register(zk_root: tuple[str, str]) -> Iterator[Callable[..., KazooClient]]:
    """Factory: register a broker as a ZooKeeper-era broker does, in a session of its own, and
    return that session (ending it or deleting the node deregisters the broker)."""
    connect, chroot = zk_root
    sessions: list[KazooClient] = []

    def make(broker_id: int, registration: dict[str, object] | bytes) -> KazooClient:
        zk = _session(connect + chroot)
        sessions.append(zk)
        data = registration if isinstance(registration, bytes) else \
            json.dumps(registration).encode()
        zk.create(f"/brokers/ids/{broker_id}", data, ephemeral=True, makepath=True)
        return zk

    yield make
    for zk in sessions:
        zk.stop()
        zk.close()


def _v1(host: str, port: int) -> dict[str, object]:
    """Kafka 0.8's registration."""
    return {"jmx_port": -1, "timestamp": "1400000000000", "host": host, "version": 1,
            "port": port}


def _round_trip(config: ClientConfig, topic: str) -> list[bytes]:
    client = KafkaClient(config)
    try:
        create_topics(client, [(topic, 2)])
        p = Producer(client, ProduceSettings())
        for part in (0, 1):
            values = [f"{part}-{i}".encode() for i in range(3)]
            p.send([PendingBatch(topic, part, encode_record_batch([None] * 3, values), 3)])
        ends = resolve_offsets(client, {(topic, 0): -1, (topic, 1): -1})
        out: list[bytes] = []
        for part in (0, 1):
            for chunk in fetch_range(client, topic, part, 0, ends[(topic, part)]):
                out.extend(chunk.values.to_pylist())
        return out
    finally:
        client.close()


def test_a_client_bootstrapped_from_zookeeper_writes_and_reads(bootstrap, zk_root,
                                                                 register) -> None:
    """A KIP-103 registration (host null, a listener map) whose PLAINTEXT listener is Tansu;
    a second broker's registration offers only SSL, so it is not a bootstrap server."""
    connect, chroot = zk_root
    host, port = parse_bootstrap(bootstrap)[0]
    ssl1, ssl2 = free_port(), free_port()
    register(1, {"version": 4, "host": None, "port": -1, "jmx_port": -1,
                 "timestamp": "1500000000000", "rack": None,
                 "listener_security_protocol_map": {"CLIENTS": "PLAINTEXT", "SECURE": "SSL"},
                 "endpoints": [f"SECURE://{host}:{ssl1}", f"CLIENTS://{host}:{port}"]})
    register(2, {"version": 2, "host": None, "port": -1, "endpoints": [f"SSL://{host}:{ssl2}"]})
    servers = bootstrap_from_zookeeper(connect + chroot)
    assert servers == ((host, port),)
    config = ClientConfig(servers, request_timeout_ms=10_000)
    topic = f"zk-{uuid.uuid4().hex[:10]}"
    assert sorted(_round_trip(config, topic)) == sorted(
        f"{p}-{i}".encode() for p in (0, 1) for i in range(3))
    # the SSL listeners are what kafka.security.protocol=SSL would bootstrap from
    assert bootstrap_from_zookeeper(connect + chroot, "SSL") == ((host, ssl1), (host, ssl2))


def test_options_resolve_zookeeper_connect_on_the_driver(bootstrap, zk_root, register) -> None:
    connect, chroot = zk_root
    host, port = parse_bootstrap(bootstrap)[0]
    register(0, _v1(host, port))
    options = parse_source_options({"zookeeper.connect": connect + chroot, "subscribe": "t"})
    assert options.client.bootstrap_servers == ((host, port),)


def test_the_chroot_is_where_the_cluster_lives(bootstrap, zk_root, register) -> None:
    connect, chroot = zk_root
    host, port = parse_bootstrap(bootstrap)[0]
    register(5, _v1(host, port))
    with BrokerRegistry(connect + chroot) as registry:
        brokers = registry.brokers()
    assert list(brokers) == [5] and brokers[5].address("PLAINTEXT") == (host, port)
    # Without the chroot the registration is not found (unless another test registered at
    # the root, which none does): the message points at the chroot.
    with raises_condition(NoBrokersRegisteredError, "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED",
                          "lacks the cluster's chroot"):
        bootstrap_from_zookeeper(connect + f"/elsewhere-{uuid.uuid4().hex[:6]}")


def test_a_broker_gone_from_zookeeper_is_a_clear_error(bootstrap, zk_root, register) -> None:
    connect, chroot = zk_root
    host, port = parse_bootstrap(bootstrap)[0]
    session = register(3, _v1(host, port))
    assert bootstrap_from_zookeeper(connect + chroot) == ((host, port),)
    session.delete("/brokers/ids/3")
    with raises_condition(NoBrokersRegisteredError,
                          "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED") as info:
        bootstrap_from_zookeeper(connect + chroot)
    assert re.search(rf"no Kafka broker is registered in ZooKeeper at {connect}{chroot} "
                     r"\(no children of /brokers/ids\): the brokers are down",
                     str(info.value)), info.value
    with raises_condition(NoBrokersRegisteredError, "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED",
                          "no Kafka broker is registered"):
        parse_source_options({"zookeeper.connect": connect + chroot, "subscribe": "t"})


def test_a_session_ending_deregisters_and_a_broken_node_is_named(zk_root, register) -> None:
    connect, chroot = zk_root
    register(1, _v1("h1", 9092))
    gone = register(2, _v1("h2", 9092))
    assert [a for a, _ in bootstrap_from_zookeeper(connect + chroot)] == ["h1", "h2"]
    gone.stop()  # the broker's session ends: its ephemeral node goes at once
    assert [a for a, _ in bootstrap_from_zookeeper(connect + chroot)] == ["h1"]
    register(4, b'{"version":1,"host":"h4","port":"not a port"}')
    with raises_condition(BrokerRegistrationError,
                          "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION") as info:
        bootstrap_from_zookeeper(connect + chroot)
    assert re.search(r"ZooKeeper node /brokers/ids/4 is not a Kafka registration \(port "
                     r"'not a port' is not between 1 and 65535\); it holds b'\{\"version\":1",
                     str(info.value)), info.value


def test_topics_and_leaders_in_the_08_layout(zk_root) -> None:
    connect, chroot = zk_root
    zk = _session(connect + chroot)
    try:
        zk.create("/brokers/topics/orders",
                  json.dumps({"version": 1, "partitions": {"1": [2, 1], "0": [1, 2]}}).encode(),
                  makepath=True)
        zk.create("/brokers/topics/orders/partitions/0/state", json.dumps(
            {"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 3,
             "isr": [2]}).encode(), makepath=True)
        zk.create("/brokers/topics/orders/partitions/1/state", json.dumps(
            {"controller_epoch": 1, "leader": -1, "version": 1, "leader_epoch": 4,
             "isr": []}).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()
    with BrokerRegistry(connect + chroot) as registry:
        assert registry.topics() == ["orders"]
        t = registry.topic("orders")
        assert registry.topic("missing") is None
    assert t is not None and not t.kafka07
    assert {p: (a.replicas, a.preferred_leader, a.leader) for p, a in t.partitions.items()} == {
        0: ((1, 2), 1, 2), 1: ((2, 1), 2, None)}


def test_emulated_07_brokers_register_the_07_layout(zk_root) -> None:
    """Two 0.7 brokers with two partitions each: their text registrations and per-broker
    partition counts are read; options then select the 0.7 protocol by themselves."""
    connect, chroot = zk_root
    brokers = [Kafka07Broker(broker_id=i).start() for i in (3, 7)]
    try:
        for b in brokers:
            b.create_topic("events", 2)
            b.register(connect, chroot)
        brokers[1].create_topic("only-on-7", 1)
        with BrokerRegistry(connect + chroot) as registry:
            found = registry.brokers()
            events = registry.topic("events")
            solo = registry.topic("only-on-7")
            assert registry.topics() == ["events", "only-on-7"]
        assert {i: (r.kafka07, r.address("PLAINTEXT")) for i, r in found.items()} == {
            b.broker_id: (True, (b.host, b.port)) for b in brokers}
        assert events is not None and events.kafka07
        assert events.broker_partitions == {3: 2, 7: 2}
        assert events.partitions07() == [(3, 0), (3, 1), (7, 0), (7, 1)]
        assert solo is not None and solo.partitions07() == [(7, 0)]
        client = parse_source_options({"zookeeper.connect": connect + chroot,
                                       "subscribe": "events"}).client
        assert client.kafka07 and client.zookeeper_connect == connect + chroot
        assert client.bootstrap_servers == tuple((b.host, b.port) for b in brokers)
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED",
                              "are Kafka 0.7 brokers, which have no Metadata request"):
            bootstrap_from_zookeeper(connect + chroot)
        brokers[1].deregister()
        with BrokerRegistry(connect + chroot) as registry:
            assert list(registry.brokers()) == [3]
            t = registry.topic("events")
            assert t is not None and t.broker_partitions == {3: 2}
    finally:
        for b in brokers:
            b.stop()


def test_an_unreachable_zookeeper_names_the_connect_string() -> None:
    connect = f"127.0.0.1:{free_port()}/kafka"
    with raises_condition(ZooKeeperError, "KAFKAWIRE_ZOOKEEPER",
                          f"ZooKeeper at {connect} did not answer within 1 s; check "
                          "zookeeper.connect"):
        bootstrap_from_zookeeper(connect, timeout_s=1)


# ------------------------------------------------- ZooKeeper over TLS, with a SASL login
# secure_zookeeper (tests/conftest.py): a secureClientPort that requires a client
# certificate, and SASL DIGEST-MD5 required of every session.


def _secure_options(pki, connect: str, **overrides: str) -> dict[str, str]:
    """The options of a query reaching ``secure_zookeeper``: a JKS truststore, a PKCS12
    keystore (the formats Kafka brokers' own ZooKeeper settings use) and the JAAS login."""
    assert pki.ca_jks is not None, "needs the JDK's keytool"
    opts = {
        "zookeeper.connect": connect,
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientcnxnsocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.truststore.location": pki.ca_jks,
        "zookeeper.ssl.truststore.password": pki.store_password,
        "zookeeper.ssl.truststore.type": "JKS",
        "zookeeper.ssl.keystore.location": pki.client.p12,
        "zookeeper.ssl.keystore.password": pki.store_password,
        "zookeeper.ssl.keystore.type": "PKCS12",
        "zookeeper.sasl.jaas.config": "org.apache.zookeeper.server.auth.DigestLoginModule "
                                      f'required username="{ZK_USER}" password="{ZK_PASSWORD}";',
        "kafka.socket.connection.setup.timeout.ms": "5000",
    }
    opts.update(overrides)
    return {k: v for k, v in opts.items() if v is not None}


def _no_secret(text: str, pki) -> None:
    for secret in (ZK_PASSWORD, pki.store_password):
        assert secret not in text


def test_discovery_over_tls_with_a_sasl_login(bootstrap, pki, secure_zookeeper) -> None:
    """A broker registered on a ZooKeeper that only speaks TLS with client certificates and
    only to logged-in sessions is found through the options, and the client it bootstraps
    writes and reads; the settings' reprs show no password."""
    chroot = f"/kafka-{uuid.uuid4().hex[:10]}"
    opts = _secure_options(pki, secure_zookeeper.secure_connect + chroot)
    security = zookeeper_security(opts)
    assert security is not None and security.tls is not None and security.sasl_user == ZK_USER
    _no_secret(repr(security), pki)
    host, port = parse_bootstrap(bootstrap)[0]
    registrar = start_zookeeper(secure_zookeeper.secure_connect, 10, security)
    try:
        registrar.create(f"{chroot}/brokers/ids/1", json.dumps(_v1(host, port)).encode(),
                         ephemeral=True, makepath=True)
        config = client_config(opts, SOURCE)
        assert config.bootstrap_servers == ((host, port),)
        _no_secret(repr(config), pki)
        topic = f"zk-tls-{uuid.uuid4().hex[:10]}"
        assert len(_round_trip(config, topic)) == 6
    finally:
        stop_zookeeper(registrar)


def test_a_wrong_ca_is_a_tls_error_naming_the_zookeeper(pki, secure_zookeeper) -> None:
    opts = _secure_options(pki, secure_zookeeper.secure_connect,
                           **{"zookeeper.ssl.truststore.location": pki.other_ca_pem,
                              "zookeeper.ssl.truststore.type": "PEM",
                              "zookeeper.ssl.truststore.password": None})
    started = time.monotonic()
    with pytest.raises(ZooKeeperTlsError) as caught:
        BrokerRegistry(opts["zookeeper.connect"], 10, zookeeper_security(opts)).brokers()
    message = str(caught.value)
    assert f"ZooKeeper at {secure_zookeeper.secure_connect}" in message
    assert "untrusted certificate" in message and "zookeeper.ssl.truststore" in message
    assert time.monotonic() - started < 5, "a refused certificate ends the start at once"
    _no_secret(message, pki)


def test_a_wrong_host_name_is_a_tls_error_unless_the_check_is_off(pki,
                                                                   wrong_host_zookeeper) -> None:
    connect = wrong_host_zookeeper.secure_connect
    opts = {"zookeeper.ssl.client.enable": "true",
            "zookeeper.ssl.truststore.location": pki.ca_p12,
            "zookeeper.ssl.truststore.password": pki.store_password}
    with raises_condition(ZooKeeperTlsError, "KAFKAWIRE_ZOOKEEPER.TLS_HANDSHAKE") as caught:
        BrokerRegistry(connect, 10, zookeeper_security(opts)).topics()
    assert re.search(r"hostname mismatch.*not valid for 'localhost'"
                     r".*wrong-host\.invalid.*zookeeper\.ssl\.endpoint\.identification"
                     r"\.enable=false", str(caught.value)), caught.value
    assert connect in str(caught.value)
    _no_secret(str(caught.value), pki)
    # Kafka brokers' name for turning the check off works too
    for off in ({"zookeeper.ssl.endpoint.identification.enable": "false"},
                {"zookeeper.ssl.endpoint.identification.algorithm": ""}):
        with BrokerRegistry(connect, 10, zookeeper_security({**opts, **off})) as registry:
            assert registry.topics() == []


def test_a_wrong_password_is_an_auth_error(pki, secure_zookeeper) -> None:
    wrong = "not-the-Password-42"
    opts = _secure_options(pki, secure_zookeeper.secure_connect, **{
        "zookeeper.sasl.jaas.config": "org.apache.zookeeper.server.auth.DigestLoginModule "
                                      f'required username="{ZK_USER}" password="{wrong}";'})
    security = zookeeper_security(opts)
    assert wrong not in repr(security)
    with pytest.raises(ZooKeeperAuthError) as caught:
        start_zookeeper(secure_zookeeper.secure_connect, 10, security)
    message = str(caught.value)
    assert f"ZooKeeper at {secure_zookeeper.secure_connect} refused the SASL DIGEST-MD5 login " \
           f"of user '{ZK_USER}'" in message and "zookeeper.sasl.jaas.config" in message
    assert wrong not in message
    _no_secret(message, pki)


def test_no_login_where_one_is_required_is_an_auth_error(pki, secure_zookeeper) -> None:
    opts = _secure_options(pki, secure_zookeeper.secure_connect,
                           **{"zookeeper.sasl.jaas.config": None})
    with raises_condition(ZooKeeperAuthError, "KAFKAWIRE_ZOOKEEPER.AUTHENTICATION") as info:
        discover_brokers(secure_zookeeper.secure_connect, 10, zookeeper_security(opts))
    assert re.search("requires a SASL login.*zookeeper.sasl.jaas", str(info.value)), info.value


def test_no_tls_against_the_secure_port_fails_clearly(secure_zookeeper) -> None:
    with raises_condition(ZooKeeperError, "KAFKAWIRE_ZOOKEEPER") as info:
        client_config({"zookeeper.connect": secure_zookeeper.secure_connect,
                       "kafka.socket.connection.setup.timeout.ms": "2000"}, SOURCE)
    assert re.search(r"accepted connections but started no session "
                     r"within 2 s: if this is ZooKeeper's TLS port \(secureClientPort\), set "
                     r"zookeeper\.ssl\.client\.enable=true", str(info.value)), info.value


def test_tls_against_the_plaintext_port_is_a_tls_error(pki, secure_zookeeper) -> None:
    connect = secure_zookeeper.connect.replace("127.0.0.1", "localhost")
    opts = _secure_options(pki, connect)
    with raises_condition(ZooKeeperTlsError, "KAFKAWIRE_ZOOKEEPER.TLS_HANDSHAKE") as info:
        start_zookeeper(connect, 10, zookeeper_security(opts))
    assert re.search(f"TLS handshake with ZooKeeper at {connect} "
                     "failed.*secureClientPort", str(info.value)), info.value


def test_no_client_certificate_where_one_is_required_fails_clearly(pki,
                                                                   secure_zookeeper) -> None:
    opts = _secure_options(pki, secure_zookeeper.secure_connect, **{
        "zookeeper.ssl.keystore.location": None, "zookeeper.ssl.keystore.password": None,
        "zookeeper.ssl.keystore.type": None})
    # the server's alert ends the handshake (TLS 1.2: a ZooKeeperTlsError, its kind
    # TLS_HANDSHAKE), or the session after it (TLS 1.3: no session within the 2 s, the
    # family's condition); either names the client certificate
    with pytest.raises(ZooKeeperError) as info:
        start_zookeeper(secure_zookeeper.secure_connect, 2, zookeeper_security(opts))
    assert info.value.condition in ("KAFKAWIRE_ZOOKEEPER.TLS_HANDSHAKE",
                                    "KAFKAWIRE_ZOOKEEPER"), info.value
    assert_condition(info.value, info.value.condition)
    assert re.search(r"client certificates.*zookeeper\.ssl\.keystore", str(info.value)), \
        info.value
