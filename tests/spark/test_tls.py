"""Spark through a mutual-TLS broker (stunnel in front of Tansu): a batch write and a batch
read, and an availableNow stream, each compared with librdkafka through the same broker; no
secret in the plans Spark prints."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.librdkafka import consume, produce

pytestmark = [pytest.mark.spark, pytest.mark.broker]

RECORDS = [(f"k{i}".encode(), f"value-{i}".encode() * (1 + i % 5)) for i in range(200)]


def _tls_options(broker, pki) -> dict[str, str]:
    """PKCS12 truststore and an inline PEM client key: secrets of both kinds in the options."""
    return {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": pki.ca_p12,
            "kafka.ssl.truststore.password": pki.store_password,
            "kafka.ssl.keystore.certificate.chain": Path(pki.client.cert_pem).read_text(),
            "kafka.ssl.keystore.key": Path(pki.client.key_pem_encrypted).read_text(),
            "kafka.ssl.key.password": pki.key_password}


def _librdkafka(broker, pki) -> dict:
    return {"bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SSL",
            "ssl.ca.location": pki.ca_pem, "ssl.certificate.location": pki.client.cert_pem,
            "ssl.key.location": pki.client.key_pem, "log_level": 0}


def _assert_no_secret(text: str, pki) -> None:
    assert pki.store_password not in text and pki.key_password not in text
    assert "PRIVATE KEY" not in text


def test_batch_write_read_and_available_now_over_mutual_tls(spark, mtls_broker, pki, tmp_path):
    options = _tls_options(mtls_broker, pki)
    conf = _librdkafka(mtls_broker, pki)
    written = f"tls-w-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame(RECORDS, "key binary, value binary").coalesce(1)
    (df.write.format("kafkawire").options(**options).option("topic", written)
     .option("createTopic", "true").option("createTopicPartitions", "1").mode("append").save())
    assert consume(conf, written, len(RECORDS)) == RECORDS

    read = f"tls-r-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(read, 1, 1)])[read].result(30)
    produce(conf, read, RECORDS)

    batch = spark.read.format("kafkawire").options(**options).option("subscribe", read).load()
    _assert_no_secret(batch._jdf.queryExecution().toString(), pki)
    rows = batch.orderBy("offset").select("key", "value").collect()
    assert [(bytes(r.key), bytes(r.value)) for r in rows] == RECORDS

    stream = spark.readStream.format("kafkawire").options(**options).option("subscribe", read) \
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "64").load()
    q = (stream.select("key", "value", "offset").writeStream.format("memory")
         .queryName("tls_stream").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(availableNow=True).start())
    try:
        q.awaitTermination(120)
        assert not q.isActive and q.exception() is None
        for progress in q.recentProgress:
            _assert_no_secret(str(progress), pki)
    finally:
        q.stop()
    got = spark.sql("select key, value from tls_stream order by offset").collect()
    assert [(bytes(r.key), bytes(r.value)) for r in got] == RECORDS
