"""Spark through a SASL_SSL broker (the SASL front behind stunnel, in front of Tansu) with
SCRAM-SHA-512: a batch write and a batch read, and an availableNow stream, each compared with
librdkafka through the same broker; no secret in the plans Spark prints or in the progress."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.librdkafka import consume, produce
from tests.support.security_env import SASL_USERS

pytestmark = [pytest.mark.spark, pytest.mark.broker]

RECORDS = [(f"k{i}".encode(), f"value-{i}".encode() * (1 + i % 5)) for i in range(200)]
MECHANISM = "SCRAM-SHA-512"
JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        f'username="alice" password="{SASL_USERS["alice"]}";')


def _options(broker, pki) -> dict[str, str]:
    return {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL", "kafka.ssl.truststore.location": pki.ca_pem,
            "kafka.sasl.mechanism": MECHANISM, "kafka.sasl.jaas.config": JAAS}


def _librdkafka(broker, pki) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_SSL",
            "ssl.ca.location": pki.ca_pem, "sasl.mechanism": MECHANISM,
            "sasl.username": "alice", "sasl.password": SASL_USERS["alice"], "log_level": 0}


def _assert_no_secret(text: str) -> None:
    assert SASL_USERS["alice"] not in text and "ScramLoginModule" not in text


def test_batch_write_read_and_available_now_over_sasl_ssl(spark, sasl_ssl_broker, pki,
                                                          tmp_path):
    options = _options(sasl_ssl_broker, pki)
    conf = _librdkafka(sasl_ssl_broker, pki)
    before = len(sasl_ssl_broker.stats.authentications)  # the broker serves the whole session
    written = f"sasl-w-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame(RECORDS, "key binary, value binary").coalesce(1)
    (df.write.format("kafkawire").options(**options).option("topic", written)
     .option("createTopic", "true").option("createTopicPartitions", "1").mode("append").save())
    assert consume(conf, written, len(RECORDS)) == RECORDS

    read = f"sasl-r-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(read, 1, 1)])[read].result(30)
    produce(conf, read, RECORDS)

    batch = spark.read.format("kafkawire").options(**options).option("subscribe", read).load()
    _assert_no_secret(batch._jdf.queryExecution().toString())
    rows = batch.orderBy("offset").select("key", "value").collect()
    assert [(bytes(r.key), bytes(r.value)) for r in rows] == RECORDS

    stream = spark.readStream.format("kafkawire").options(**options).option("subscribe", read) \
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "64").load()
    q = (stream.select("key", "value", "offset").writeStream.format("memory")
         .queryName("sasl_stream").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
        assert not q.isActive and q.exception() is None
        assert q.recentProgress
        for progress in q.recentProgress:
            _assert_no_secret(str(progress))
    finally:
        q.stop()
    got = spark.sql("select key, value from sasl_stream order by offset").collect()
    assert [(bytes(r.key), bytes(r.value)) for r in got] == RECORDS
    principals = {e.principal for e in sasl_ssl_broker.stats.authentications[before:]
                  if e.mechanism == MECHANISM}
    assert principals == {"alice"}


# ------------------------------------------------------------------------------- GSSAPI


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
        written = f"gss-w-{uuid.uuid4().hex[:8]}"
        df = spark.createDataFrame(RECORDS, "key binary, value binary").coalesce(1)
        (df.write.format("kafkawire").options(**options).option("topic", written)
         .option("createTopic", "true").option("createTopicPartitions", "1").mode("append")
         .save())
        assert consume(conf, written, len(RECORDS)) == RECORDS

        read = f"gss-r-{uuid.uuid4().hex[:8]}"
        admin = AdminClient(conf)  # kept referenced until the topic exists
        admin.create_topics([NewTopic(read, 1, 1)])[read].result(30)
        produce(conf, read, RECORDS)
        batch = spark.read.format("kafkawire").options(**options).option("subscribe", read).load()
        plan = batch._jdf.queryExecution().toString()
        assert "Krb5LoginModule" not in plan
        rows = batch.orderBy("offset").select("key", "value").collect()
        assert [(bytes(r.key), bytes(r.value)) for r in rows] == RECORDS
    finally:
        sc.environment.clear()
        sc.environment.update(saved)
        spark.dataSource.register(KafkaWireDataSource)
    assert not (tmp_path / "no-ccache").exists()  # nobody wrote a ticket cache
    logins = {(e.mechanism, e.principal) for e in broker.stats.authentications[before:]}
    assert logins == {("GSSAPI", kdc.client_principal), ("SCRAM-SHA-256", "alice")}
