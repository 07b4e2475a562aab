"""Spark through a SASL_SSL broker (Apache Kafka's listener, or under Tansu the SASL front
behind stunnel) with
SCRAM-SHA-512 and with OAUTHBEARER (tokens from the test's OAuth endpoint): a batch write and a
batch read, and an availableNow stream, each compared with librdkafka through the same broker;
no secret in the plans Spark prints or in the progress. And a 20 s stream over sessions that
last 5 s (KIP-368): it re-authenticates, reads every record once and commits its offsets for
lag tools."""

from __future__ import annotations

import threading
import time
import uuid

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.librdkafka import consume
from tests.support.security_env import OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, SASL_USERS
from tests.support.spark_security import available_now, write_then_read

pytestmark = [pytest.mark.spark, pytest.mark.broker]

RECORDS = [(f"k{i}".encode(), f"value-{i}".encode() * (1 + i % 5)) for i in range(200)]
MECHANISM = "SCRAM-SHA-512"
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        f'username="alice" password="{SASL_USERS["alice"]}";')


def _options(broker, pki) -> dict[str, str]:
    """SASL_SSL with ``pki``'s CA; SASL_PLAINTEXT without ``pki``."""
    opts = {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": MECHANISM, "kafka.sasl.jaas.config": JAAS}
    if pki is not None:
        opts["kafka.ssl.truststore.location"] = pki.ca_pem
    return opts


def _librdkafka(broker, pki) -> dict:
    conf = {"bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "sasl.mechanism": MECHANISM, "sasl.username": "alice",
            "sasl.password": SASL_USERS["alice"], "log_level": 0}
    if pki is not None:
        conf["ssl.ca.location"] = pki.ca_pem
    return conf


def _assert_no_secret(text: str) -> None:
    assert SASL_USERS["alice"] not in text and "ScramLoginModule" not in text


def test_batch_write_read_and_available_now_over_sasl_ssl(spark, sasl_ssl_broker, pki,
                                                          tmp_path):
    options = _options(sasl_ssl_broker, pki)
    conf = _librdkafka(sasl_ssl_broker, pki)
    before = len(sasl_ssl_broker.stats.authentications)  # the broker serves the whole session
    read = write_then_read(spark, options, conf, "sasl", RECORDS, _assert_no_secret)
    assert available_now(spark, options, read, "sasl_stream", tmp_path / "ck",
                         _assert_no_secret) == RECORDS
    principals = {e.principal for e in sasl_ssl_broker.stats.authentications[before:]
                  if e.mechanism == MECHANISM}
    assert principals == {"alice"}


STREAM_SECONDS = 20
SESSION_LIFETIME_MS = 5000


def _stream_producer(conf: dict, topic: str, stop: threading.Event, sent: list) -> None:
    """librdkafka writing about 100 records a second over two partitions until ``stop``."""
    producer = confluent_kafka.Producer({**conf, "linger.ms": 5})
    n = 0
    while not stop.is_set():
        for _ in range(10):
            producer.produce(topic, b"v%06d" % n, b"k%06d" % n, partition=n % 2)
            sent.append(b"k%06d" % n)
            n += 1
        producer.poll(0)
        stop.wait(0.1)
    assert producer.flush(30) == 0


def test_stream_reauthenticates_through_short_sessions_and_commits_offsets(
        spark, sasl_broker_factory, pki, tmp_path):
    """The front grants 5 s sessions and closes a connection used after its session ended.
    A processing-time stream runs 20 s while librdkafka writes: the driver's and the Python
    workers' pooled connections log in again before their sessions end, every record arrives
    once, and the group's committed offsets are the ends of the last micro-batch."""
    broker = sasl_broker_factory(pki=pki, session_lifetime_ms=SESSION_LIFETIME_MS)
    stats = _stream_through_short_sessions(spark, broker, pki, tmp_path, "sasl_live")
    assert stats.expired_closes == 0
    assert len(stats.reauthentications) >= 3, (len(stats.authentications), stats.connections)
    assert {e.principal for e in stats.authentications} == {"alice"}


def test_stream_reauthenticates_on_apache_kafka(spark, reauth_broker, tmp_path):
    """The same stream against Apache Kafka's REAUTH listener (SASL_PLAINTEXT, sessions of
    REAUTH_MS, KIP-368): Kafka finds no session expired, refuses no login, and sees the
    stream's connections re-authenticate."""
    before = reauth_broker.stats
    after = _stream_through_short_sessions(spark, reauth_broker, None, tmp_path, "kafka_live")
    assert after.expired_closes == before.expired_closes
    assert len(after.failures) == len(before.failures)
    assert len(after.reauthentications) - len(before.reauthentications) >= 3
    assert {e.principal for e in after.authentications[len(before.authentications):]} == {
        "alice"}


def _stream_through_short_sessions(spark, broker, pki, tmp_path, name: str):
    """A processing-time stream of ``broker``'s new topic for STREAM_SECONDS while librdkafka
    writes: every record arrives once, the group's committed offsets are the ends of the last
    micro-batch, no secret in the progress. The broker's stats afterwards."""
    options = _options(broker, pki)
    conf = _librdkafka(broker, pki)
    topic, group = f"sasl-live-{uuid.uuid4().hex[:8]}", f"sasl-g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(conf)  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)

    stream = (spark.readStream.format("kafkawire").options(**options)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("commitOffsets", "kafka").option("kafka.group.id", group).load())
    q = (stream.select("key", "partition", "offset").writeStream.format("memory")
         .queryName(name).option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(processingTime="500 milliseconds").start())
    stop, sent = threading.Event(), []
    writer = threading.Thread(target=_stream_producer, args=(conf, topic, stop, sent))
    try:
        writer.start()
        time.sleep(STREAM_SECONDS)
        stop.set()
        writer.join(60)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and q.exception() is None:
            if spark.sql(f"select count(*) c from {name}").first().c >= len(sent):
                break
            time.sleep(0.5)
        q.processAllAvailable()
        assert q.exception() is None
    finally:
        stop.set()
        q.stop()
    got = spark.sql(f"select key, partition, offset from {name}").collect()
    assert sorted(bytes(r.key) for r in got) == sorted(sent)  # each record once
    assert len(q.recentProgress) >= 10
    for progress in q.recentProgress:
        _assert_no_secret(str(progress))

    stats = broker.stats

    ends = {p: 1 + max(r.offset for r in got if r.partition == p) for p in (0, 1)}
    consumer = confluent_kafka.Consumer({**conf, "group.id": group})
    try:
        committed = consumer.committed(
            [confluent_kafka.TopicPartition(topic, p) for p in (0, 1)], timeout=30)
    finally:
        consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == ends
    return stats


OAUTH_JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
              f'clientId="{OAUTH_CLIENT_ID}" clientSecret="{OAUTH_CLIENT_SECRET}" scope="kafka";')


def test_oauthbearer_oidc_batch_and_available_now(spark, sasl_ssl_broker, pki, token_endpoint,
                                                  tmp_path):
    """OAUTHBEARER with tokens from the client-credentials endpoint (KIP-768): the driver and
    every Python worker get their own token; neither the client secret nor a token shows in
    the plan or the progress."""
    sasl_ssl_broker = sasl_ssl_broker.signed_tokens  # Kafka: the JWKS-validating listener
    options = {"kafka.bootstrap.servers": sasl_ssl_broker.bootstrap_servers,
               "kafka.security.protocol": "SASL_SSL",
               "kafka.ssl.truststore.location": pki.ca_pem,
               "kafka.sasl.mechanism": "OAUTHBEARER", "kafka.sasl.jaas.config": OAUTH_JAAS,
               "kafka.sasl.login.callback.handler.class":
                   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
               "kafka.sasl.oauthbearer.token.endpoint.url": token_endpoint.url}
    conf = _librdkafka(sasl_ssl_broker, pki)

    def no_secret(text: str) -> None:
        assert OAUTH_CLIENT_SECRET not in text and "eyJ" not in text  # eyJ: a JWT's start

    before, issued = len(sasl_ssl_broker.stats.authentications), len(token_endpoint.issued)
    written = f"oauth-w-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame(RECORDS, "key binary, value binary").coalesce(1)
    (df.write.format("kafkawire").options(**options).option("topic", written)
     .option("createTopic", "true").option("createTopicPartitions", "1").mode("append").save())
    assert consume(conf, written, len(RECORDS)) == RECORDS

    batch = spark.read.format("kafkawire").options(**options).option("subscribe", written).load()
    no_secret(batch._jdf.queryExecution().toString())
    rows = batch.orderBy("offset").select("key", "value").collect()
    assert [(bytes(r.key), bytes(r.value)) for r in rows] == RECORDS

    assert available_now(spark, options, written, "oauth_stream", tmp_path / "ck",
                         no_secret) == RECORDS
    ours = [e for e in sasl_ssl_broker.stats.authentications[before:]
            if e.mechanism == "OAUTHBEARER"]
    assert ours and {e.principal for e in ours} == {OAUTH_CLIENT_ID}
    assert len(token_endpoint.issued) > issued


# ------------------------------------------------------------------------------- GSSAPI


def _no_kerberos_secret(plan: str) -> None:
    assert "Krb5LoginModule" not in plan


def test_batch_write_and_read_with_kerberos(spark, kdc, gssapi_ssl_broker, pki, tmp_path):
    """GSSAPI over SASL_SSL with a keytab. The Python workers get the realm's krb5.conf
    (KRB5_CONFIG, as spark.executorEnv would give it on a cluster) but an empty ticket cache
    and no client keytab of their own: they log in only with the keytab's bytes shipped in
    the plan. librdkafka (SCRAM on the same broker, its wheel has no GSSAPI) checks both ways."""
    from spark_kafka_wire import KafkaWireDataSource

    broker = gssapi_ssl_broker
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers,
               "kafka.security.protocol": "SASL_SSL", "kafka.ssl.truststore.location": pki.ca_pem,
               "kafka.sasl.mechanism": "GSSAPI",
               "kafka.sasl.jaas.config": (
                   "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                   f'storeKey=true keyTab="{kdc.client_keytab}" principal="{kdc.client_principal}";')}
    conf = {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_SSL",
            "ssl.ca.location": pki.ca_pem, "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice", "sasl.password": SASL_USERS["alice"], "log_level": 0}
    sc = spark.sparkContext
    saved = dict(sc.environment)
    # the data source's workers take the environment the data source was registered with
    sc.environment.update({"KRB5_CONFIG": kdc.krb5_conf,
                           "KRB5CCNAME": f"FILE:{tmp_path / 'no-ccache'}",
                           "KRB5_CLIENT_KTNAME": f"FILE:{tmp_path / 'no-keytab'}"})
    spark.dataSource.register(KafkaWireDataSource)
    before = len(broker.stats.authentications)  # the broker serves the whole session
    try:
        write_then_read(spark, options, conf, "gss", RECORDS, _no_kerberos_secret)
    finally:
        sc.environment.clear()
        sc.environment.update(saved)
        spark.dataSource.register(KafkaWireDataSource)
    assert not (tmp_path / "no-ccache").exists()  # nobody wrote a ticket cache
    logins = {(e.mechanism, e.principal) for e in broker.stats.authentications[before:]}
    assert logins == {("GSSAPI", kdc.client_principal), ("SCRAM-SHA-256", "alice")}
