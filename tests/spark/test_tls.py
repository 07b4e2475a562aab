"""Spark through a mutual-TLS broker (stunnel in front of Tansu): a batch write and a batch
read, and an availableNow stream, each compared with librdkafka through the same broker; no
secret in the plans Spark prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.spark_security import available_now, write_then_read

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
    def no_secret(text: str) -> None:
        _assert_no_secret(text, pki)

    read = write_then_read(spark, options, conf, "tls", RECORDS, no_secret)
    assert available_now(spark, options, read, "tls_stream", tmp_path / "ck",
                         no_secret) == RECORDS
