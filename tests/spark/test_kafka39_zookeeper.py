"""ZooKeeper-era Kafka for real (issue 28, part 4): Apache Kafka 3.9.1, the last release with
ZooKeeper mode, registered on Debian's ZooKeeper (tests/support/apache_kafka_zk.py).

The other ZooKeeper tests write the registrations themselves; here Kafka writes them, so a
difference between what kafkawire expects and what a broker writes (JSON fields, chroot,
listener names and protocols) fails here. Three single-broker clusters (module fixtures,
about 300 MB of memory each, 2 to 9 s to start):

- ``chrooted``: listeners PLAINTEXT and SSL, in a nested chroot of the session's ZooKeeper
  (``zookeeper.connect=<ensemble>/kafka39-<id>/cluster-a``: several clusters share an
  ensemble, as in production);
- ``rooted``: KIP-103 named listeners INTERNAL (PLAINTEXT, between brokers) and EXTERNAL
  (SSL) on the IPv6 loopback (registered as ``[::1]:port``; 127.0.0.1 on machines without
  IPv6), at the root of a ZooKeeper of its own;
- ``secured``: a ZooKeeper of its own that requires mutual TLS and a SASL login, with
  ``zookeeper.set.acl=true``.

Offsets: Kafka 3.9 has no tool that reads the old consumers' ZooKeeper offsets any more:
ConsumerGroupCommand (kafka-consumer-groups.sh, in 3.9 the separate kafka-tools artifact)
lost ``--zookeeper`` when Kafka 2.0 removed the old ZooKeeper-based Scala consumers
(KAFKA-2983), and describes only groups the brokers' coordinator keeps. What Kafka 3.9
still ships for those nodes is its ZooKeeper shell (bin/zookeeper-shell.sh,
``ZooKeeperMainWithTlsSupportForKafka``), so the shell is the independent reader and
writer of ``/consumers/<group>/offsets/<topic>/<partition>`` here. The records themselves
are judged by librdkafka and Kafka 3.9's own console producer.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import confluent_kafka
import pytest
from click.testing import CliRunner
from kazoo.client import KazooClient
from pyspark.sql import functions as F

from spark_kafka_wire.cli import cli
from spark_kafka_wire.client.config import ClientConfig, format_address
from spark_kafka_wire.client.errors import NoBrokersRegisteredError
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.zookeeper.consumer_offsets import (
    ZooKeeperOffsetStore,
    start_zookeeper,
    stop_zookeeper,
)
from spark_kafka_wire.client.zookeeper.registry import (
    BrokerAddress,
    BrokerRegistration,
    BrokerRegistry,
    Endpoint,
    PartitionAssignment,
    TopicRegistration,
)
from spark_kafka_wire.options import SOURCE, client_config, zookeeper_security
from spark_kafka_wire.source.options import parse_source_options
from tests.support import librdkafka
from tests.support.apache_kafka import java, kafka_libs, topic_on
from tests.support.apache_kafka_zk import ZK_MODE_VERSION, ZooKeeperKafka, missing_zk_mode_tools
from tests.support.errors import raises_condition
from tests.support.parquet_runs import available_now, written
from tests.support.zookeeper_server import ZK_PASSWORD, ZK_USER

pytestmark = [pytest.mark.broker]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


LOCAL = "127.0.0.1"
#: The rooted broker's address: the IPv6 loopback, where the machine has one (containers
#: often run without IPv6; the named-listener tests then run on 127.0.0.1).
IPV6 = _has_ipv6_loopback()
ROOT_HOST = "::1" if IPV6 else LOCAL
NO_IPV6 = pytest.mark.skipif(not IPV6, reason="this machine has no IPv6 loopback (::1), "
                             "so the broker cannot register an IPv6 listener")


def _skip_without_tools() -> None:
    missing = missing_zk_mode_tools()
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="module")
def chrooted(zookeeper: str, pki) -> Iterator[ZooKeeperKafka]:
    """Kafka 3.9 (PLAINTEXT and SSL) in a chroot of the session's ZooKeeper."""
    _skip_without_tools()
    kafka = ZooKeeperKafka(zookeeper=f"{zookeeper}/kafka39-{uuid.uuid4().hex[:8]}/cluster-a",
                           pki=pki).start()
    print(f"\nKafka {ZK_MODE_VERSION} (ZooKeeper mode) started in {kafka.started_s:.1f} s, "
          f"RSS {kafka.rss_mb():.0f} MB")
    yield kafka
    kafka.stop()


@pytest.fixture(scope="module")
def rooted(pki) -> Iterator[ZooKeeperKafka]:
    """Kafka 3.9 with named listeners INTERNAL (PLAINTEXT) and EXTERNAL (SSL) on ROOT_HOST, at
    the root of a ZooKeeper of its own (nothing else registers there). The tests' certificate
    names localhost and 127.0.0.1 only, so EXTERNAL is discovered here, not connected to."""
    from tests.support.zookeeper_server import ZooKeeperServer, missing_jars

    _skip_without_tools()
    if missing_jars():
        pytest.skip("ZooKeeper tests need a ZooKeeper server: install Debian's package with "
                    "'apt-get install zookeeper' (missing jars: " + ", ".join(missing_jars())
                    + ")")
    server = ZooKeeperServer().start()
    try:
        kafka = ZooKeeperKafka(zookeeper=server.connect, pki=pki, host=ROOT_HOST,
                               listeners={"INTERNAL": "PLAINTEXT", "EXTERNAL": "SSL"}).start()
        yield kafka
        kafka.stop()
    finally:
        server.stop()


#: The SASL user Kafka logs in to the secured ZooKeeper as (kafkawire logs in as ZK_USER).
KAFKA_ZK_USER, KAFKA_ZK_PASSWORD = "kafka", "zk-kafka-Secret-4"


def _zookeeper_tls(pki) -> dict[str, str]:
    """Kafka's zookeeper.ssl.* broker settings (the shell's -zk-tls-config-file takes the
    same): mutual TLS with the tests' client certificate."""
    return {"zookeeper.ssl.client.enable": "true",
            "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
            "zookeeper.ssl.keystore.location": pki.client.p12,
            "zookeeper.ssl.keystore.password": pki.store_password,
            "zookeeper.ssl.keystore.type": "PKCS12",
            "zookeeper.ssl.truststore.location": pki.ca_p12,
            "zookeeper.ssl.truststore.password": pki.store_password,
            "zookeeper.ssl.truststore.type": "PKCS12"}


@dataclass
class Secured:
    kafka: ZooKeeperKafka
    tls_config: str  # the shell's -zk-tls-config-file
    login: str  # -Djava.security.auth.login.config=<Kafka's JAAS file>


@pytest.fixture(scope="module")
def secured(pki, tmp_path_factory) -> Iterator[Secured]:
    """Kafka 3.9 set up as Kafka's ZooKeeper security guide describes: ZooKeeper reached over
    mutual TLS only, with a SASL DIGEST-MD5 login required of every session, and
    ``zookeeper.set.acl=true`` (Kafka's nodes writable by its own user only)."""
    from tests.support.zookeeper_server import ZooKeeperServer, missing_jars

    _skip_without_tools()
    if missing_jars(secure=True):
        pytest.skip("ZooKeeper TLS tests need Debian's zookeeper and netty packages (missing "
                    "jars: " + ", ".join(missing_jars(secure=True)) + ")")
    private = tmp_path_factory.mktemp("kafka39-zk-login")
    private.chmod(0o700)
    jaas, tls = private / "jaas.conf", private / "zookeeper-tls.properties"
    jaas.write_text("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required "
                    f'username="{KAFKA_ZK_USER}" password="{KAFKA_ZK_PASSWORD}";\n}};\n')
    tls.write_text("".join(f"{k}={v}\n" for k, v in _zookeeper_tls(pki).items()))
    server = ZooKeeperServer(
        keystore=(pki.server.p12, pki.store_password, "PKCS12"),
        truststore=(pki.ca_p12, pki.store_password, "PKCS12"),
        sasl_users={KAFKA_ZK_USER: KAFKA_ZK_PASSWORD, ZK_USER: ZK_PASSWORD},
        require_sasl=True).start()
    login = f"-Djava.security.auth.login.config={jaas}"
    try:
        kafka = ZooKeeperKafka(zookeeper=f"{server.secure_connect}/kafka39-secured",
                               extra={**_zookeeper_tls(pki), "zookeeper.set.acl": "true"},
                               jvm_options=[login]).start()
        print(f"\nKafka {ZK_MODE_VERSION} on a TLS+SASL ZooKeeper started in "
              f"{kafka.started_s:.1f} s")
        yield Secured(kafka, str(tls), login)
        kafka.stop()
    finally:
        server.stop()


def _ssl_options(pki) -> dict[str, str]:
    return {"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": pki.ca_p12,
            "kafka.ssl.truststore.password": pki.store_password}


def _topic(kafka: ZooKeeperKafka, partitions: int = 1) -> str:
    client = KafkaClient(ClientConfig.from_servers(kafka.bootstrap(next(iter(kafka.ports))),
                                                   request_timeout_ms=10_000))
    try:
        return topic_on(client, partitions, prefix="zk39")
    finally:
        client.close()


def _raw_registration(connect: str, broker_id: int) -> dict[str, object]:
    zk = KazooClient(hosts=connect, timeout=15)
    zk.start(timeout=15)
    try:
        value: dict[str, object] = json.loads(zk.get(f"/brokers/ids/{broker_id}")[0])
        return value
    finally:
        zk.stop()
        zk.close()


# ------------------------------------------------------------------------------ discovery


def test_discovery_reads_what_kafka_39_registered_in_a_chroot(chrooted, zookeeper, pki) -> None:
    """Kafka 3.9 writes version 5 (``features`` beside KIP-103's map); the query's security
    protocol picks the endpoint, and the ensemble's root (the chroot forgotten) has none."""
    plain, tls = chrooted.ports["PLAINTEXT"], chrooted.ports["SSL"]
    raw = _raw_registration(chrooted.zookeeper, 1)
    assert raw["version"] == 5 and raw["features"] == {}
    assert raw["endpoints"] == [f"PLAINTEXT://{LOCAL}:{plain}", f"SSL://{LOCAL}:{tls}"]
    assert raw["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}
    topic = _topic(chrooted, partitions=2)  # version 3 topic nodes (topic_id, ...)
    with BrokerRegistry(chrooted.zookeeper) as registry:
        assert registry.brokers() == {1: BrokerRegistration(1, (
            Endpoint("PLAINTEXT", "PLAINTEXT", BrokerAddress(LOCAL, plain)),
            Endpoint("SSL", "SSL", BrokerAddress(LOCAL, tls))))}
        assert topic in registry.topics()
        assert registry.topic(topic) == TopicRegistration(topic, {
            0: PartitionAssignment((1,), 1), 1: PartitionAssignment((1,), 1)}, {})
    base = {"zookeeper.connect": chrooted.zookeeper, "subscribe": "t"}
    assert parse_source_options(base).client.bootstrap_servers == ((LOCAL, plain),)
    assert parse_source_options({**base, **_ssl_options(pki)}).client.bootstrap_servers == (
        (LOCAL, tls),)
    with raises_condition(NoBrokersRegisteredError, "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED",
                          "lacks the cluster's chroot"):
        parse_source_options({**base, "zookeeper.connect": zookeeper})


def test_discovery_of_named_listeners_at_the_root(rooted, pki) -> None:
    """KIP-103 names: no listener is called PLAINTEXT or SSL, the map says what each speaks
    (host and port at the top are the first PLAINTEXT-speaking listener's, INTERNAL); IPv6
    endpoints are bracketed, the host at the top is not."""
    internal, external = rooted.ports["INTERNAL"], rooted.ports["EXTERNAL"]
    shown_internal, shown_external = (format_address(ROOT_HOST, p) for p in (internal, external))
    raw = _raw_registration(rooted.zookeeper, 1)
    assert (raw["host"], raw["port"]) == (ROOT_HOST, internal)
    assert raw["endpoints"] == [f"INTERNAL://{shown_internal}", f"EXTERNAL://{shown_external}"]
    assert raw["listener_security_protocol_map"] == {"INTERNAL": "PLAINTEXT", "EXTERNAL": "SSL"}
    base = {"zookeeper.connect": rooted.zookeeper, "subscribe": "t"}
    assert parse_source_options(base).client.bootstrap_servers == ((ROOT_HOST, internal),)
    assert parse_source_options({**base, **_ssl_options(pki)}).client.bootstrap_servers == (
        (ROOT_HOST, external),)
    offered = (f"has a SASL_SSL listener (broker 1: INTERNAL://{shown_internal} (PLAINTEXT), "
               f"EXTERNAL://{shown_external} (SSL))")
    with raises_condition(NoBrokersRegisteredError, "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED",
                          re.escape(offered)):
        parse_source_options({**base, **_ssl_options(pki), "kafka.security.protocol": "SASL_SSL",
                              "kafka.sasl.mechanism": "PLAIN",
                              "kafka.sasl.jaas.config": "org.apache.kafka.common.security."
                              'plain.PlainLoginModule required username="u" password="p";'})


@NO_IPV6
def test_the_cli_names_the_ipv6_broker_it_found_as_it_is_given_back(rooted) -> None:
    """``kafkawire --zookeeper ... check`` shows the discovered bootstrap server and the
    Metadata broker in brackets (it printed ``::1:port``, which reads as a host without a
    port, before client/config.py's format_address)."""
    internal = rooted.ports["INTERNAL"]
    result = CliRunner().invoke(cli, ["--zookeeper", rooted.zookeeper, "check"],
                                env={"KAFKA_BOOTSTRAP_SERVERS": None}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"bootstrap: [::1]:{internal} (PLAINTEXT): connected\n")
    assert f"\nbroker 1 at [::1]:{internal}: " in result.stdout


def test_kafkas_acls_on_a_secured_zookeeper_let_kafkawire_find_it_and_commit(secured,
                                                                          pki) -> None:
    """With ``zookeeper.set.acl`` Kafka's nodes are writable by its own ZooKeeper user only,
    readable by anyone where they hold nothing secret (its registration), and
    ``/consumers`` stays open, for consumers of any user. kafkawire, logged in as another
    SASL user over mutual TLS, finds the broker and commits offsets (through the store that
    commitOffsets=zookeeper uses) that Kafka's shell, logged in as Kafka, reads."""
    kafka = secured.kafka
    opts = {"zookeeper.connect": kafka.zookeeper,
            **{k: v for k, v in _zookeeper_tls(pki).items() if k != "zookeeper.clientCnxnSocket"},
            "zookeeper.sasl.jaas.config": "org.apache.zookeeper.server.auth.DigestLoginModule "
                                          f'required username="{ZK_USER}" '
                                          f'password="{ZK_PASSWORD}";'}
    security = zookeeper_security(opts)
    zk = start_zookeeper(kafka.zookeeper, 15, security)
    try:
        registration_acl, _ = zk.get_acls("/brokers/ids/1")
        consumers_acl, _ = zk.get_acls("/consumers")
    finally:
        stop_zookeeper(zk)
    # ALL for Kafka's login (and for the x509 identity of its certificate, the tests' one
    # client certificate, which kafkawire presents too); READ for anyone
    assert {("sasl", KAFKA_ZK_USER, 31), ("world", "anyone", 1)} <= {
        (a.id.scheme, a.id.id, a.perms) for a in registration_acl}
    assert all(a.perms == 1 for a in registration_acl if a.id.scheme == "world")
    assert {(a.id.scheme, a.id.id, a.perms) for a in consumers_acl} == {("world", "anyone", 31)}
    assert client_config(opts, SOURCE).bootstrap_servers == ((LOCAL, kafka.ports["PLAINTEXT"]),)
    group, topic = f"zk39-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    with ZooKeeperOffsetStore(kafka.zookeeper, security=security) as store:
        store.commit(group, {(topic, 0): 12, (topic, 1): 3})
    out = kafka.zookeeper_shell_script(
        [f"get /consumers/{group}/offsets/{topic}/{p}" for p in (0, 1)],
        tls_config=secured.tls_config, jvm_options=(secured.login,))
    assert _shell_data(out) == ["12", "3"], out


# ------------------------------------------------------------------------ records (Spark)


@pytest.mark.spark
def test_spark_writes_over_the_discovered_ssl_listener_librdkafka_reads(spark, chrooted,
                                                                         pki) -> None:
    topic = _topic(chrooted)
    rows = [(f"k{i}", f"v{i}-" + "x" * i) for i in range(40)]
    (spark.createDataFrame(rows, "key string, value string").coalesce(1)
     .write.format("kafkawire").mode("append")
     .options(**{"zookeeper.connect": chrooted.zookeeper, "topic": topic, **_ssl_options(pki)})
     .save())
    conf = {"bootstrap.servers": chrooted.bootstrap("SSL"), "security.protocol": "SSL",
            "ssl.ca.location": pki.ca_pem}
    got = librdkafka.consume(conf, topic, len(rows), timeout_s=30)
    assert [(k.decode(), v.decode()) for k, v in got] == rows
    consumer = confluent_kafka.Consumer({**conf, "group.id": f"wm-{topic}"})
    try:  # and nothing more: the log ends after them
        assert consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0),
                                              timeout=20) == (0, len(rows))
    finally:
        consumer.close()


@pytest.mark.spark
def test_kafkas_console_producer_writes_spark_reads_through_a_named_listener(spark,
                                                                             rooted) -> None:
    """Kafka 3.9's own producer (kafka.tools.ConsoleProducer, from the broker's jars) writes;
    kafkawire, given only the ZooKeeper root, reads INTERNAL's records exactly (over IPv6
    where the machine has it: the address travels to the tasks as the registration gave it)."""
    topic = _topic(rooted)
    lines = [f"key-{i}\tvalue {i}" for i in range(25)]
    done = subprocess.run(
        [java(), "-Xmx128m", "-XX:+UseSerialGC", "-cp", f"{kafka_libs(ZK_MODE_VERSION)}/*",
         "kafka.tools.ConsoleProducer", "--bootstrap-server", rooted.bootstrap("INTERNAL"),
         "--topic", topic, "--property", "parse.key=true", "--request-required-acks", "all"],
        input="".join(f"{line}\n" for line in lines), capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    read = (spark.read.format("kafkawire")
            .options(**{"zookeeper.connect": rooted.zookeeper, "subscribe": topic}).load()
            .select("partition", "offset", F.col("key").cast("string"),
                    F.col("value").cast("string")))
    assert [tuple(r) for r in read.orderBy("offset").collect()] == [
        (0, i, f"key-{i}", f"value {i}") for i in range(25)]


# ------------------------------------------------------------------- offsets in ZooKeeper


def _produce(kafka: ZooKeeperKafka, topic: str, counts: dict[int, int]) -> None:
    """``counts[p]`` records into partition p, with librdkafka."""
    producer = confluent_kafka.Producer({"bootstrap.servers": kafka.bootstrap("PLAINTEXT")})
    for partition, n in counts.items():
        for i in range(n):
            producer.produce(topic, f"{partition}-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def _shell_data(out: str) -> list[str]:
    """The lines of the shell's output that answer its commands (``get`` prints a node's
    data on a line of its own), without its session notices (``Connecting to``, ``WATCHER::``
    and the ``WatchedEvent`` lines its watcher prints when the session starts and ends)."""
    notices = ("Connecting to ", "Welcome to ZooKeeper", "JLine support", "WATCHER::",
               "WatchedEvent ")
    return [line for line in out.splitlines() if line.strip() and not line.startswith(notices)]


@pytest.mark.spark
def test_group_offsets_in_zookeeper_are_where_kafkas_shell_reads_and_writes(spark, chrooted,
                                                                            tmp_path) -> None:
    """startingOffsets=group: the shell writes partition 0's offset (15) as the old consumers
    did (decimal text); partition 1 has none and starts at the earliest. commitOffsets=
    zookeeper: the run (two micro-batches) commits the ends of its last batch there, under
    the chroot, where the old consumers of a cluster with this zookeeper.connect kept them."""
    topic = _topic(chrooted, partitions=2)
    _produce(chrooted, topic, {0: 20, 1: 6})
    group = f"zk39-{uuid.uuid4().hex[:8]}"
    base = f"/consumers/{group}/offsets/{topic}"
    out = chrooted.zookeeper_shell_script([
        f"create /consumers/{group}", f"create /consumers/{group}/offsets", f"create {base}",
        f"create {base}/0 15", f"get {base}/0"])
    assert _shell_data(out) == ["15"], out
    checkpoint = str(tmp_path / "cp")
    df = (spark.readStream.format("kafkawire").options(**{
        "zookeeper.connect": chrooted.zookeeper, "subscribe": topic,
        "startingOffsets": "group", "commitOffsets": "zookeeper", "maxOffsetsPerTrigger": "6",
        "kafka.group.id": group}).load())
    assert available_now(df, checkpoint) is None
    assert [(p, o) for p, o, _ in written(spark, checkpoint)] == (
        [(0, o) for o in range(15, 20)] + [(1, o) for o in range(6)])
    assert _shell_data(chrooted.zookeeper_shell_script([f"get {base}/0", f"get {base}/1"])
                       ) == ["20", "6"]


def test_an_offset_node_the_shell_left_without_data_is_named(chrooted) -> None:
    """``create <path>`` without a value in Kafka's shell leaves ZooKeeper's null as the
    node's data; kafkawire's lag (and startingOffsets=group, the same reader) names the node
    instead of failing with an AttributeError (kazoo hands null over as None)."""
    topic = _topic(chrooted)
    group = f"zk39-{uuid.uuid4().hex[:8]}"
    base = f"/consumers/{group}/offsets/{topic}"
    chrooted.zookeeper_shell_script([
        f"create /consumers/{group}", f"create /consumers/{group}/offsets", f"create {base}",
        f"create {base}/0"])
    result = CliRunner().invoke(
        cli, ["--zookeeper", chrooted.zookeeper, "lag", group, "--zookeeper",
              chrooted.zookeeper], env={"KAFKA_BOOTSTRAP_SERVERS": None},
        catch_exceptions=False)
    assert result.exit_code == 1
    assert (f"ZooKeeper node {base}/0 on {chrooted.zookeeper} holds no data, not an offset"
            in result.stderr), result.output

