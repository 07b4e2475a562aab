"""ZooKeeper security settings (zookeeper.ssl.*, zookeeper.sasl.jaas.config) as parsed on the
driver: what is refused, and that no password reaches a repr or a message."""

from __future__ import annotations

import os
import tempfile

import pytest

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.security.sasl.jaas import digest_credentials
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity
from spark_kafka_wire.options import SOURCE, config_file_options, zookeeper_security
from tests.support.errors import raises_condition
from tests.support.zookeeper_stores import check_zookeeper_stores

SECRET = "Zk-s3cret-Pass"
JAAS = ('org.apache.zookeeper.server.auth.DigestLoginModule required username="alice" '
        f'password="{SECRET}";')


def test_the_jaas_login_is_parsed_and_its_password_never_shown() -> None:
    security = zookeeper_security({"zookeeper.sasl.jaas.config": JAAS})
    assert security == ZooKeeperSecurity(sasl_user="alice", sasl_password=SECRET)
    assert SECRET not in repr(security) and "alice" in repr(security)
    options = security.sasl_options()
    assert options == {"mechanism": "DIGEST-MD5", "username": "alice", "password": SECRET}
    assert security.sasl_options() is not options, "kazoo adds to the dict it is given"


def test_plain_tcp_without_settings() -> None:
    assert zookeeper_security({"zookeeper.connect": "zk:2181"}) is None
    # Java's client needs Netty for TLS; accepted, nothing to do here
    assert zookeeper_security(
        {"zookeeper.clientcnxnsocket": "org.apache.zookeeper.ClientCnxnSocketNetty"}) is None


@pytest.mark.parametrize("jaas, expected", [
    ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" '
     f'password="{SECRET}";', "not supported for ZooKeeper"),
    ('org.apache.zookeeper.server.auth.DigestLoginModule required username="a";',
     "password missing"),
    (f'org.apache.zookeeper.server.auth.DigestLoginModule required password="{SECRET}"',
     "must end with ';'"),
])
def test_a_wrong_jaas_entry_is_refused_without_its_password(jaas: str, expected: str) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "zookeeper.sasl.jaas.config", expected) as caught:
        zookeeper_security({"zookeeper.sasl.jaas.config": jaas})
    assert "zookeeper.sasl.jaas.config" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_digest_credentials_names_the_option() -> None:
    assert digest_credentials(JAAS, "x") == ("alice", SECRET)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          r"\] x: the user name is empty"):
        digest_credentials('org.apache.zookeeper.server.auth.DigestLoginModule required '
                           'username="" password="p";', "x")


def test_a_store_without_tls_enabled_is_refused() -> None:
    """Silently ignoring a truststore would connect in plaintext."""
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "'zookeeper.ssl.truststore.location'",
                          "zookeeper.ssl.client.enable is not true"):
        zookeeper_security({"zookeeper.ssl.truststore.location": "/x/ca.pem"})


def test_host_name_check_settings() -> None:
    on = {"zookeeper.ssl.client.enable": "true"}
    security = zookeeper_security(on)
    assert security is not None and security.tls == TlsConfig(check_hostname=True)
    for off in ({"zookeeper.ssl.endpoint.identification.enable": "false"},
                {"zookeeper.ssl.endpoint.identification.algorithm": ""},
                {"zookeeper.ssl.endpoint.identification.algorithm": " ",
                 "zookeeper.ssl.endpoint.identification.enable": "false"}):
        found = zookeeper_security({**on, **off})
        assert found is not None and found.tls is not None and not found.tls.check_hostname
    assert zookeeper_security({**on, "zookeeper.ssl.endpoint.identification.algorithm":
                               "HTTPS"}) == security
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "zookeeper.ssl.endpoint.identification.enable", "disagree"):
        zookeeper_security({**on, "zookeeper.ssl.endpoint.identification.algorithm": "https",
                            "zookeeper.ssl.endpoint.identification.enable": "false"})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE",
                          "zookeeper.ssl.endpoint.identification.algorithm",
                          "must be HTTPS or empty", "'ldaps'"):
        zookeeper_security({**on, "zookeeper.ssl.endpoint.identification.algorithm": "ldaps"})


def test_a_wrong_store_password_names_the_zookeeper_option(pki) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "zookeeper.ssl.keystore.location: cannot read the PKCS12 keystore",
                          r"\(wrong zookeeper.ssl.keystore.password") as caught:
        zookeeper_security({"zookeeper.ssl.client.enable": "true",
                            "zookeeper.ssl.keystore.location": pki.client.p12,
                            "zookeeper.ssl.keystore.password": SECRET})
    assert SECRET not in str(caught.value)


def test_stores_are_read_into_bytes(pki) -> None:
    """PEM and PKCS12 stores become the TlsConfig the broker connections use; its repr hides
    the key (JKS: tests/integration/test_tls_java_stores.py)."""
    check_zookeeper_stores(pki, [(pki.ca_pem, None, pki.client.p12)])


def test_config_files_give_zookeeper_settings() -> None:
    """A broker's server.properties or a --command-config holds them without kafka. prefix
    (file keys are read as kafka.<key>): they become the zookeeper.* options."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "zk.properties")
        with open(path, "w") as f:
            f.write("zookeeper.connect=zk:2182\nzookeeper.ssl.client.enable=true\n"
                    f"zookeeper.sasl.jaas.config={JAAS}\n"
                    "zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n")
        taken, skipped = config_file_options(path, {}, SOURCE)
    assert taken["zookeeper.ssl.client.enable"] == "true"
    assert taken["zookeeper.sasl.jaas.config"] == JAAS
    assert "zookeeper.clientcnxnsocket" in taken and not skipped
