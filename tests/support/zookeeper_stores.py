"""The check of ZooKeeper TLS stores read into a TlsConfig, shared by the unit tier (PEM and
PKCS12: tests/unit/client/test_zookeeper_security.py) and the JKS stores that need keytool
(tests/integration/test_tls_java_stores.py)."""

from __future__ import annotations

from spark_kafka_wire.options import zookeeper_security


def check_zookeeper_stores(pki, stores: list[tuple[str, str | None, str]]) -> None:
    """Each (truststore, its password, keystore) gives a TlsConfig with the CAs, the key and
    the chain, and a repr hiding the key and the password."""
    for truststore, trust_password, keystore in stores:
        opts = {"zookeeper.ssl.client.enable": "true",
                "zookeeper.ssl.truststore.location": truststore,
                "zookeeper.ssl.keystore.location": keystore,
                "zookeeper.ssl.keystore.password": pki.store_password}
        if trust_password:
            opts["zookeeper.ssl.truststore.password"] = trust_password
        security = zookeeper_security(opts)
        assert security is not None and security.tls is not None
        assert security.tls.cadata and "BEGIN CERTIFICATE" in security.tls.cadata
        assert security.tls.key and security.tls.cert_chain
        assert "key=<hidden>" in repr(security) and pki.store_password not in repr(security)
