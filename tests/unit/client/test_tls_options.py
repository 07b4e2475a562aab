"""Parsing of kafka.security.protocol and kafka.ssl.* into ClientConfig.tls (no broker: the
certificates of tests/support/certs.py, files read as on the driver)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.security.tls import TlsConfig, context_for, detect_store_type
from spark_kafka_wire.options import SINK, SOURCE, client_config, lower_keys
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options
from tests.support.errors import raises_condition

BASE = {"kafka.bootstrap.servers": "h:9093"}


def _parse(use=SOURCE, **options: str) -> ClientConfig:
    return client_config(lower_keys({**BASE, **options}), use)


def _ssl(use=SOURCE, **options: str) -> ClientConfig:
    return _parse(use, **{"kafka.security.protocol": "SSL", **options})


def test_plaintext_is_unchanged() -> None:
    config = _parse()
    assert config.security_protocol == "PLAINTEXT" and config.tls is None


def test_ssl_without_truststore_trusts_the_system_cas() -> None:
    config = _ssl(**{"kafka.security.protocol": "ssl"})
    assert config.security_protocol == "SSL"
    assert config.tls == TlsConfig()  # cadata None: load_default_certs
    assert config.tls.check_hostname


@pytest.mark.parametrize(("options", "kind", "message"), [
    ({"kafka.security.protocol": "TLS"}, "UNSUPPORTED_VALUE", "must be one of PLAINTEXT, SSL, SASL_PLAINTEXT"),
    ({"kafka.security.protocol": "SSL", "kafka.sasl.mechanism": "PLAIN"},
     "CONFLICTING_OPTIONS", "set kafka.security.protocol=SASL_PLAINTEXT or SASL_SSL"),
    ({"kafka.ssl.truststore.location": "/x"}, "CONFLICTING_OPTIONS", "set kafka.security.protocol=SSL or SASL_SSL"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
      "kafka.sasl.username": "u", "kafka.sasl.password": "p",
      "kafka.ssl.truststore.location": "/x"}, "CONFLICTING_OPTIONS", "SSL or SASL_SSL to connect with TLS"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "/no/such/file"},
     "SECURITY_SETTING", "kafka.ssl.truststore.location: cannot read '/no/such/file'"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.endpoint.identification.algorithm": "ldap"},
     "UNSUPPORTED_VALUE", "must be https or empty"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.enabled.protocols": "SSLv3"},
     "SECURITY_SETTING", "unknown TLS protocol 'SSLv3'"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.enabled.protocols": "TLSv1.3",
      "kafka.ssl.protocol": "TLSv1.2"}, "CONFLICTING_OPTIONS", "lower than every version"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.cipher.suites": "NOPE"}, "SECURITY_SETTING", "kafka.ssl"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.type": "BKS",
      "kafka.ssl.truststore.certificates": "x"}, "SECURITY_SETTING", "holds no readable PEM certificate"),
])
def test_refusals(options: dict, kind: str, message: str) -> None:
    for use in (SOURCE, SINK):
        with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}", message):
            _parse(use, **options)


def test_both_sides_and_parsers_read_tls(pki) -> None:
    opts = {**BASE, "kafka.security.protocol": "SSL", "kafka.ssl.ca.location": pki.ca_pem}
    source = parse_source_options({**opts, "subscribe": "t"})
    sink = parse_sink_options({**opts, "topic": "t"})
    assert source.client.tls == sink.client.tls
    assert source.client.tls is not None and "BEGIN CERTIFICATE" in (source.client.tls.cadata or "")


def test_every_trust_source_gives_the_same_cas(pki) -> None:
    pem = Path(pki.ca_pem).read_text()
    configs = [
        _ssl(**{"kafka.ssl.truststore.location": pki.ca_pem}),
        _ssl(**{"kafka.ssl.truststore.location": pki.ca_pem, "kafka.ssl.truststore.type": "pem"}),
        _ssl(**{"kafka.ssl.truststore.location": pki.ca_p12,
                "kafka.ssl.truststore.password": pki.store_password}),
        _ssl(**{"kafka.ssl.truststore.location": pki.ca_p12_no_password}),
        _ssl(**{"kafka.ssl.truststore.certificates": pem}),
        _ssl(**{"kafka.ssl.ca.location": pki.ca_pem}),
    ]
    assert len({c.tls for c in configs}) == 1


def test_every_keystore_gives_the_same_client_key(pki) -> None:
    c = pki.client
    configs = [
        _ssl(**{"kafka.ssl.keystore.location": c.p12,
                "kafka.ssl.keystore.password": pki.store_password}),
        _ssl(**{"kafka.ssl.certificate.location": c.cert_pem,
                "kafka.ssl.key.location": c.key_pem}),
        _ssl(**{"kafka.ssl.certificate.location": c.cert_pem,
                "kafka.ssl.key.location": c.key_pem_encrypted,
                "kafka.ssl.key.password": pki.key_password}),
        _ssl(**{"kafka.ssl.keystore.certificate.chain": Path(c.cert_pem).read_text(),
                "kafka.ssl.keystore.key": Path(c.key_pem_encrypted).read_text(),
                "kafka.ssl.key.password": pki.key_password}),
    ]
    keys = {cfg.tls.key for cfg in configs if cfg.tls}
    chains = {cfg.tls.cert_chain for cfg in configs if cfg.tls}
    assert len(keys) == 1 and len(chains) == 1 and None not in keys


@pytest.mark.parametrize(("options", "kind", "message"), [
    ({"kafka.ssl.certificate.location": "CERT"}, "MISSING_OPTION", "kafka.ssl.key.location is needed"),
    ({"kafka.ssl.keystore.key": "KEY"}, "MISSING_OPTION", "kafka.ssl.keystore.certificate.chain is needed"),
    ({"kafka.ssl.truststore.location": "CA", "kafka.ssl.ca.location": "CA"},
     "CONFLICTING_OPTIONS", "give only one of kafka.ssl.truststore.location, kafka.ssl.ca.location"),
    ({"kafka.ssl.keystore.location": "P12", "kafka.ssl.certificate.location": "CERT",
      "kafka.ssl.key.location": "KEY"}, "CONFLICTING_OPTIONS", "client certificate: give only one"),
    ({"kafka.ssl.certificate.location": "CERT", "kafka.ssl.key.location": "ENCKEY"},
     "SECURITY_SETTING", "the private key is encrypted: set kafka.ssl.key.password"),
    ({"kafka.ssl.certificate.location": "CERT", "kafka.ssl.key.location": "ROGUEKEY"},
     "SECURITY_SETTING", "does not match the client certificate"),
    ({"kafka.ssl.keystore.location": "P12", "kafka.ssl.keystore.password": "wrong-pw"},
     "SECURITY_SETTING", "wrong kafka.ssl.keystore.password"),
    ({"kafka.ssl.keystore.location": "CA"}, "SECURITY_SETTING", "holds no private key"),
])
def test_store_errors(pki, options: dict, kind: str, message: str) -> None:
    files = {"CERT": pki.client.cert_pem, "KEY": pki.client.key_pem, "CA": pki.ca_pem,
             "ENCKEY": pki.client.key_pem_encrypted, "ROGUEKEY": pki.rogue_client.key_pem,
             "P12": pki.client.p12}
    resolved = {k: files.get(v, v) for k, v in options.items()}
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}",
                          message) as info:
        _ssl(**resolved)
    assert "wrong-pw" not in str(info.value)


def test_hostname_check_and_versions(pki) -> None:
    assert _ssl(**{"kafka.ssl.endpoint.identification.algorithm": "HTTPS"}).tls.check_hostname
    for off in ("", "none"):
        tls = _ssl(**{"kafka.ssl.endpoint.identification.algorithm": off}).tls
        assert tls is not None and not tls.check_hostname
    tls = _ssl(**{"kafka.ssl.enabled.protocols": "TLSv1.3, tlsv1.2",
                  "kafka.ssl.protocol": "TLS"}).tls
    assert tls is not None and (tls.min_version, tls.max_version) == ("TLSv1.2", "TLSv1.3")
    tls = _ssl(**{"kafka.ssl.protocol": "TLSv1.2"}).tls
    assert tls is not None and (tls.min_version, tls.max_version) == (None, "TLSv1.2")
    tls = _ssl(**{"kafka.ssl.cipher.suites": "ECDHE-RSA-AES128-GCM-SHA256, AES256-SHA"}).tls
    assert tls is not None and tls.ciphers == "ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA"
    assert context_for(tls).get_ciphers()


def test_config_repr_hides_secrets_and_pickles(pki) -> None:
    config = _ssl(**{"kafka.ssl.truststore.location": pki.ca_p12,
                     "kafka.ssl.truststore.password": pki.store_password,
                     "kafka.ssl.keystore.location": pki.client.p12,
                     "kafka.ssl.keystore.password": pki.store_password,
                     "kafka.ssl.key.password": pki.key_password})
    assert config.tls is not None and config.tls.key is not None
    text = repr(config)
    assert "key=<hidden>" in text and "1 CA certificate(s)" in text
    for secret in (pki.store_password, pki.key_password, config.tls.key.hex()[:40],
                   repr(config.tls.key)[:40]):
        assert secret not in text
    assert pickle.loads(pickle.dumps(config)) == config
    hash(config)  # the pool keys clients by their configuration


def test_store_types_are_detected(pki) -> None:
    assert detect_store_type(Path(pki.ca_pem).read_bytes()) == "PEM"
    assert detect_store_type(Path(pki.client.p12).read_bytes()) == "PKCS12"
    # JKS stores (keytool makes them): tests/integration/test_tls_java_stores.py
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "says JKS, but the file is not a JKS store"):
        _ssl(**{"kafka.ssl.truststore.location": pki.ca_pem, "kafka.ssl.truststore.type": "JKS"})


def test_parsed_source_and_sink_options_hide_secrets(pki) -> None:
    """What partitions and writers carry (SourceOptions, SinkOptions) prints no secret."""
    opts = {**BASE, "kafka.security.protocol": "SSL",
            "kafka.ssl.truststore.location": pki.ca_p12,
            "kafka.ssl.truststore.password": pki.store_password,
            "kafka.ssl.keystore.certificate.chain": Path(pki.client.cert_pem).read_text(),
            "kafka.ssl.keystore.key": Path(pki.client.key_pem_encrypted).read_text(),
            "kafka.ssl.key.password": pki.key_password}
    for parsed in (parse_source_options({**opts, "subscribe": "t"}),
                   parse_sink_options({**opts, "topic": "t"})):
        text = repr(parsed) + str(parsed)
        assert "key=<hidden>" in text
        assert pki.store_password not in text and pki.key_password not in text
        assert "PRIVATE KEY" not in text
