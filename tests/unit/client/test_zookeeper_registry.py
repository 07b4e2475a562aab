"""Broker and topic registrations of ZooKeeper-era clusters (client/zookeeper/registry.py): the
0.8+ JSON layouts (host/port, 0.9 endpoints, KIP-103 listener maps), 0.7's text layout, the
listener chosen for a security protocol, and damaged nodes; plus how options use them."""

from __future__ import annotations

import json

import pytest

from spark_kafka_wire.client.errors import (
    BrokerRegistrationError,
    ConfigurationError,
    NoBrokersRegisteredError,
    ZooKeeperError,
)
from spark_kafka_wire.client.zookeeper import registry as zookeeper_registry
from spark_kafka_wire.client.zookeeper.registry import (
    BrokerAddress,
    BrokerRegistry,
    Endpoint,
    TopicRegistration,
    bootstrap_addresses,
    parse_broker,
    parse_partition_count07,
    parse_partition_state,
    parse_topic_json,
)
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity
from spark_kafka_wire.options import SOURCE, client_config
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options, parse_stream_options
from tests.support.errors import raises_condition


def reg(value: object) -> bytes:
    return json.dumps(value).encode()


# ------------------------------------------------------------------------------ 0.8+ brokers


def test_version_1_host_and_port() -> None:
    """0.8: {"jmx_port":-1,"timestamp":...,"host":...,"version":1,"port":...}."""
    b = parse_broker(3, reg({"jmx_port": -1, "timestamp": "1400000000000", "host": "k1.example",
                             "version": 1, "port": 9092}))
    assert b.broker_id == 3 and not b.kafka07
    assert b.endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", BrokerAddress("k1.example", 9092)),)
    assert b.address("PLAINTEXT") == ("k1.example", 9092)
    assert b.address("ssl") is None


def test_version_2_endpoints_pick_the_configured_protocol() -> None:
    """0.9: endpoints named by protocol; host/port describe the PLAINTEXT one."""
    b = parse_broker(1, reg({"version": 2, "host": "k1", "port": 9092, "jmx_port": -1,
                             "timestamp": "1", "endpoints": [
                                 "PLAINTEXT://k1:9092", "SSL://k1:9093",
                                 "SASL_PLAINTEXT://k1:9094", "SASL_SSL://k1:9095"]}))
    assert b.address("PLAINTEXT") == ("k1", 9092)
    assert b.address("SSL") == ("k1", 9093)
    assert b.address("SASL_PLAINTEXT") == ("k1", 9094)
    assert b.address("sasl_ssl") == ("k1", 9095)


def test_host_null_when_there_is_no_plaintext_listener() -> None:
    """A broker with SSL only registers host null and port -1 beside its endpoints."""
    b = parse_broker(2, reg({"version": 3, "host": None, "port": -1, "rack": "r1",
                             "endpoints": ["SSL://secure.example:9093"], "jmx_port": -1}))
    assert b.address("SSL") == ("secure.example", 9093)
    assert b.address("PLAINTEXT") is None


def test_kip103_listener_map() -> None:
    """0.10.2: listener names mapped to protocols; the listener named like the protocol wins,
    else the first registered with it."""
    b = parse_broker(0, reg({
        "version": 4, "host": None, "port": -1, "jmx_port": -1, "timestamp": "1",
        "listener_security_protocol_map": {"INTERNAL": "SASL_SSL", "EXTERNAL": "SASL_SSL",
                                           "REPLICATION": "PLAINTEXT", "SSL": "SSL"},
        "endpoints": ["INTERNAL://10.0.0.1:9091", "EXTERNAL://k0.example:9094",
                      "REPLICATION://10.0.0.1:9092", "SSL://k0.example:9093"]}))
    assert b.address("SASL_SSL") == ("10.0.0.1", 9091)
    assert b.address("PLAINTEXT") == ("10.0.0.1", 9092)
    assert b.address("SSL") == ("k0.example", 9093)
    assert b.address("SASL_PLAINTEXT") is None
    named = parse_broker(0, reg({"endpoints": ["A://a:1", "SASL_SSL://b:2"],
                                 "listener_security_protocol_map": {"A": "SASL_SSL",
                                                                    "SASL_SSL": "SASL_SSL"}}))
    assert named.address("SASL_SSL") == ("b", 2)
    assert "EXTERNAL://k0.example:9094 (SASL_SSL)" in b.listeners()


def test_ipv6_endpoints_and_version_5_fields() -> None:
    b = parse_broker(9, reg({"version": 5, "features": {}, "host": "::1", "port": 9092,
                             "endpoints": ["PLAINTEXT://[::1]:9092"]}))
    assert b.address("PLAINTEXT") == ("::1", 9092)
    assert str(b.address("PLAINTEXT")) == "[::1]:9092"


# ------------------------------------------------------------------------------ 0.7 brokers


def test_kafka07_creator_host_port() -> None:
    """0.7.2 writes creator:host:port with creator <host>-<epoch ms>."""
    b = parse_broker(0, b"127.0.0.1-1700000000000:127.0.0.1:9092")
    assert b.kafka07 and b.address("PLAINTEXT") == ("127.0.0.1", 9092)
    named = parse_broker(4, b"kafka-4.example-1325000000000:kafka-4.example:9092")
    assert named.address("PLAINTEXT") == ("kafka-4.example", 9092)


def test_kafka07_split_from_the_right_with_colons_in_the_creator() -> None:
    """An IPv6 host puts ':' in the creator as well as the host."""
    b = parse_broker(1, b"fe80::1-1325000000000:fe80::1:9092")
    assert b.address("PLAINTEXT") == ("fe80::1", 9092)


def test_kafka07_plain_host_port() -> None:
    """The design document's earlier host:port form."""
    assert parse_broker(2, b"h07:9092\n").address("PLAINTEXT") == ("h07", 9092)


# ------------------------------------------------------------------------------ broken nodes


@pytest.mark.parametrize(("data", "why"), [
    (b"", "neither JSON nor 0.7"),
    (b"garbage", "neither JSON nor 0.7"),
    (b"creator:host:port", "neither JSON nor 0.7"),
    (b"c-1:h:99999", "port 99999"),
    (b"\xff\xfe", "neither JSON nor 0.7"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "neither JSON nor 0.7"),
    (b'{"version": 1}', "neither host and port nor endpoints"),
    (b'{"version": 1, "host": "h", "port": "9092"}', "port '9092'"),
    (b'{"version": 1, "host": "", "port": 9092}', "host ''"),
    (b'{"endpoints": "PLAINTEXT://h:1"}', "endpoints is not a list"),
    (b'{"endpoints": ["h:1"]}', "is not LISTENER://host:port"),
    (b'{"endpoints": ["PLAINTEXT://h"]}', "has no port"),
    (b'{"endpoints": ["PLAINTEXT://:9092"]}', "host ''"),
    (b'{"endpoints": ["PLAINTEXT://[::1:9092"]}', "is not [host]:port"),
    (b'{"endpoints": ["A://h:1"], "listener_security_protocol_map": [1]}', "not a map"),
])
def test_a_broken_registration_names_the_node_and_shows_its_bytes(data: bytes, why: str) -> None:
    with raises_condition(BrokerRegistrationError, "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION",
                          "/brokers/ids/7") as info:
        parse_broker(7, data)
    assert why in str(info.value)
    assert repr(data[:120]) in str(info.value)


def test_a_long_broken_node_is_shown_cut() -> None:
    data = b"{" + b"x" * 5000
    with pytest.raises(BrokerRegistrationError) as info:
        parse_broker(1, data)
    assert "(5001 bytes)" in str(info.value) and len(str(info.value)) < 600


def test_bootstrap_addresses_choose_the_protocol_and_say_what_is_offered() -> None:
    brokers = {0: parse_broker(0, reg({"endpoints": ["PLAINTEXT://a:1", "SSL://a:2"]})),
               1: parse_broker(1, reg({"endpoints": ["PLAINTEXT://b:1"]}))}
    assert bootstrap_addresses(brokers, "PLAINTEXT", "zk:2181") == (("a", 1), ("b", 1))
    assert bootstrap_addresses(brokers, "SSL", "zk:2181") == (("a", 2),)
    with raises_condition(NoBrokersRegisteredError, "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED",
                          r"at zk:2181 has a SASL_SSL listener \(broker 0: PLAINTEXT://a:1, "
                          r"SSL://a:2; broker 1: PLAINTEXT://b:1\); set kafka.security.protocol"):
        bootstrap_addresses(brokers, "SASL_SSL", "zk:2181")


# ------------------------------------------------------------------------------------ topics


def test_topic_json_and_partition_state() -> None:
    data = reg({"version": 1, "partitions": {"1": [2, 0], "0": [0, 1], "10": [1]}})
    assert parse_topic_json("t", data) == {0: (0, 1), 1: (2, 0), 10: (1,)}
    v3 = reg({"version": 3, "topic_id": "x", "partitions": {"0": [5]}, "adding_replicas": {},
              "removing_replicas": {}})
    assert parse_topic_json("t", v3) == {0: (5,)}
    state = reg({"controller_epoch": 1, "leader": 2, "version": 1, "leader_epoch": 0,
                 "isr": [2, 0]})
    assert parse_partition_state(state, "/s") == 2
    assert parse_partition_state(reg({"leader": -1, "isr": []}), "/s") is None


@pytest.mark.parametrize(("data", "why"), [
    (b"{", "not JSON"), (b'{"version": 1}', "no partitions map"),
    (b'{"partitions": {"x": [1]}}', "partition 'x'"),
    (b'{"partitions": {"0": [true]}}', "not broker ids"),
    (b'{"partitions": {"0": "1,2"}}', "not broker ids"),
])
def test_a_broken_topic_names_its_node(data: bytes, why: str) -> None:
    with raises_condition(BrokerRegistrationError, "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION",
                          "/brokers/topics/orders") as info:
        parse_topic_json("orders", data)
    assert why in str(info.value)
    with raises_condition(BrokerRegistrationError, "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION",
                          "no leader"):
        parse_partition_state(b'{"isr": [1]}', "/brokers/topics/t/partitions/0/state")


def test_kafka07_partition_counts() -> None:
    assert parse_partition_count07(b"4", "/p") == 4
    assert parse_partition_count07(b" 2\n", "/p") == 2
    for bad in (b"", b"-1", b"two", b"\xff"):
        with raises_condition(BrokerRegistrationError,
                              "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION", "/brokers/topics/t/3"):
            parse_partition_count07(bad, "/brokers/topics/t/3")
    t = TopicRegistration("t", {}, {7: 2, 3: 1}, kafka07=True)
    assert t.partitions07() == [(3, 0), (7, 0), (7, 1)]


def test_topic_names_that_are_no_node_names() -> None:
    for name in ("", "a/b", ".", ".."):
        with pytest.raises(ValueError, match="cannot be a ZooKeeper node name"):
            BrokerRegistry("zk:1").topic(name)


def test_an_unreadable_connect_string_is_a_configuration_error() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "zookeeper.connect 'zk:abc' is not host:port"):
        BrokerRegistry("zk:abc", timeout_s=1).brokers()


def test_an_unreachable_zookeeper_is_named() -> None:
    with raises_condition(ZooKeeperError, "KAFKAWIRE_ZOOKEEPER",
                          r"ZooKeeper at 127.0.0.1:1/kafka did not answer "
                          r"within 0.5 s; check zookeeper.connect"):
        BrokerRegistry("127.0.0.1:1/kafka", timeout_s=0.5).brokers()


# ----------------------------------------------------------------------------------- options


@pytest.fixture
def discovered(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Replaces the ZooKeeper lookup; records (connect, protocol) of each call."""
    calls: list[tuple[str, str]] = []

    def fake(connect: str, protocol: str, timeout_s: float = 15.0,
             zookeeper_security: object = None) -> tuple[tuple[tuple[str, int], ...], bool]:
        calls.append((connect, protocol))
        LOOKUP_TIMEOUTS.append(timeout_s)
        LOOKUP_SECURITY.append(zookeeper_security)
        return (("k1", 9092), ("k2", 9092)), False

    LOOKUP_TIMEOUTS.clear()
    LOOKUP_SECURITY.clear()
    # options/client.py imports the lookup where it runs (a query without zookeeper.connect
    # never imports the ZooKeeper client): replaced where it is looked up from
    monkeypatch.setattr(zookeeper_registry, "find_cluster", fake)
    return calls


LOOKUP_TIMEOUTS: list[float] = []  # the timeout of each lookup the fake above saw
LOOKUP_SECURITY: list[object] = []  # the ZooKeeperSecurity of each lookup


def test_the_zookeeper_security_settings_reach_the_lookup(discovered) -> None:
    """zookeeper.ssl.* and zookeeper.sasl.jaas.config are parsed with the query's options and
    handed to the ZooKeeper lookup (client/zookeeper/consumer_offsets.py applies them to the session)."""
    client_config({"zookeeper.connect": "zk:2182", "zookeeper.ssl.client.enable": "true",
                   "zookeeper.sasl.jaas.config":
                   'org.apache.zookeeper.server.auth.DigestLoginModule required username="u" '
                   'password="p";'}, SOURCE)
    (security,) = LOOKUP_SECURITY
    assert isinstance(security, ZooKeeperSecurity)
    assert security.tls is not None and security.tls.check_hostname
    assert (security.sasl_user, security.sasl_password) == ("u", "p")
    client_config({"zookeeper.connect": "zk:2181"}, SOURCE)
    assert LOOKUP_SECURITY[1] is None


def test_the_zookeeper_lookup_is_bounded_by_the_connection_setup_timeout(discovered) -> None:
    parse_source_options({"zookeeper.connect": "zk1:2181", "subscribe": "t"})
    parse_source_options({"zookeeper.connect": "zk1:2181", "subscribe": "t",
                          "kafka.socket.connection.setup.timeout.ms": "2500"})
    # an unreachable ensemble fails as fast as an unreachable broker (default 10 s), not 15 s
    assert LOOKUP_TIMEOUTS == [10.0, 2.5]


def test_zookeeper_connect_instead_of_bootstrap_servers(discovered) -> None:
    zk = {"zookeeper.connect": " zk1:2181,zk2:2181/kafka ", "subscribe": "t"}
    assert parse_source_options(zk).client.bootstrap_servers == (("k1", 9092), ("k2", 9092))
    sink = parse_sink_options({"zookeeper.connect": "zk1:2181/kafka", "topic": "t"})
    assert sink.client.bootstrap_servers == (("k1", 9092), ("k2", 9092))
    stream = parse_stream_options({**zk, "commitOffsets": "zookeeper", "kafka.group.id": "g"})
    assert stream.source.client.bootstrap_servers == (("k1", 9092), ("k2", 9092))
    assert stream.zookeeper_connect == "zk1:2181,zk2:2181/kafka"
    assert discovered[0] == ("zk1:2181,zk2:2181/kafka", "PLAINTEXT")


def test_the_protocol_decides_the_listener(discovered) -> None:
    parse_source_options({"zookeeper.connect": "zk:2181", "subscribe": "t",
                          "kafka.security.protocol": "sasl_plaintext",
                          "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "u",
                          "kafka.sasl.password": "p"})
    assert discovered == [("zk:2181", "SASL_PLAINTEXT")]


def test_bootstrap_servers_win_over_zookeeper_connect(discovered) -> None:
    both = {"kafka.bootstrap.servers": "b:1", "zookeeper.connect": "zk:2181", "subscribe": "t"}
    assert parse_source_options(both).client.bootstrap_servers == (("b", 1),)
    assert parse_sink_options({**both, "topic": "t"}).client.bootstrap_servers == (("b", 1),)
    assert discovered == []


def test_neither_says_both_ways(discovered) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "kafka.bootstrap.servers' is required.*"
                          "'zookeeper.connect'"):
        parse_source_options({"subscribe": "t", "zookeeper.connect": "  "})
    assert discovered == []


def test_a_wrong_option_fails_before_zookeeper_is_asked(discovered) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE",
                          "kafka.security.protocol"):
        parse_source_options({"zookeeper.connect": "zk:2181", "subscribe": "t",
                              "kafka.security.protocol": "TLS"})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED",
                          "Kafka 0.7 brokers have no SASL"):
        parse_source_options({"zookeeper.connect": "zk:2181", "subscribe": "t",
                              "kafka.broker.version.fallback": "0.7.2",
                              "kafka.security.protocol": "SASL_PLAINTEXT"})
    assert discovered == []
