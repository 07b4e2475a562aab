"""TLS stores that Java writes: JKS stores (keytool) are detected and read, for the broker
connections and for ZooKeeper; a PKCS12 key under a password of its own is refused saying what
to do. Here and not in tests/unit/client/test_tls_options.py and test_zookeeper_security.py
because making the stores starts a JVM (the unit tier's PKI has no JKS files)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.security.tls import detect_store_type
from spark_kafka_wire.options import SOURCE, client_config, lower_keys
from tests.support.errors import raises_condition
from tests.support.zookeeper_stores import check_zookeeper_stores


def _ssl(**options: str) -> ClientConfig:
    return client_config(lower_keys({"kafka.bootstrap.servers": "h:9093",
                                     "kafka.security.protocol": "SSL", **options}), SOURCE)


def test_pkcs12_key_with_a_password_of_its_own_is_refused_saying_what_to_do(pki) -> None:
    """Java can write a PKCS12 key entry under a password other than the store's (keytool and
    openssl cannot); cryptography reads one password per store, so kafkawire refuses such a
    store with the way out, and never shows either password."""
    from tests.support.certs import two_password_p12

    if shutil.which("java") is None:
        pytest.skip("needs a JDK's java (Spark needs one too) to write the store")
    store = two_password_p12(pki.client)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "kafka.ssl.keystore.type=PEM") as info:
        _ssl(**{"kafka.ssl.keystore.location": store,
                "kafka.ssl.keystore.password": pki.store_password,
                "kafka.ssl.key.password": pki.key_password})
    text = str(info.value)
    assert pki.store_password not in text and pki.key_password not in text
    assert "kafka.ssl.key.password differs" in text


def _need_jks(pki) -> None:
    if not pki.ca_jks:
        pytest.skip("needs the JDK's keytool (Spark needs a JDK too) to make JKS stores")


def test_jks_stores_are_detected(pki) -> None:
    _need_jks(pki)
    assert detect_store_type(Path(pki.ca_jks).read_bytes()) == "JKS"
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING") as info:
        _ssl(**{"kafka.ssl.truststore.location": pki.ca_jks,
                "kafka.ssl.truststore.type": "PKCS12"})
    assert re.search("is a JKS store, but .* says PKCS12", str(info.value)), info.value


def test_zookeeper_jks_stores_are_read_into_bytes(pki) -> None:
    """As the PEM and PKCS12 stores of tests/unit/client/test_zookeeper_security.py."""
    _need_jks(pki)
    check_zookeeper_stores(pki, [(pki.ca_jks, pki.store_password, pki.client.jks)])
