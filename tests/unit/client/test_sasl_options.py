"""SASL settings: Java's JAAS syntax, librdkafka's username/password, and every refusal, with
no secret in any message or repr."""

from __future__ import annotations

import pickle

import pytest

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.security.sasl.authenticate import choose_versions
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.jaas import jaas_credentials, parse_jaas
from spark_kafka_wire.options import SINK, SOURCE, client_config, lower_keys
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options
from tests.support.errors import raises_condition

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
SECRET = "s3cr\"et;=x"


def _config(**options: str):
    opts = {"kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SASL_PLAINTEXT",
            **options}
    return client_config(lower_keys(opts), SOURCE)


@pytest.mark.parametrize(("text", "module", "options"), [
    (f'{PLAIN} required username="alice" password="alice-secret";', PLAIN,
     {"username": "alice", "password": "alice-secret"}),
    (f'  {SCRAM}   REQUIRED\n username = "a b"  password="q\\"u\\\\o;te=" ;  ', SCRAM,
     {"username": "a b", "password": 'q"u\\o;te='}),
    (f"{SCRAM} optional username=bare password=tok tokenauth=true;", SCRAM,
     {"username": "bare", "password": "tok", "tokenauth": "true"}),
    (f'{PLAIN} required;', PLAIN, {}),
])
def test_parse_jaas(text: str, module: str, options: dict) -> None:
    assert parse_jaas(text) == (module, options)


@pytest.mark.parametrize(("text", "message"), [
    ("", "must read"),
    (f'{PLAIN} username="a" password="b";', "followed by one of required"),
    (f'{PLAIN} required username="a" password="b"', "must end with ';'"),
    (f'{PLAIN} required username="a" password="{SECRET[:4]}', "not closed"),
    (f'{PLAIN} required username "a";', "expected key=value"),
    (f'{PLAIN} required username="a"; {PLAIN} required;', "more than one login module"),
])
def test_bad_jaas(text: str, message: str) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "kafka.sasl.jaas.config", message) as info:
        parse_jaas(text)
    assert "s3cr" not in str(info.value)


def test_jaas_module_must_fit_the_mechanism() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "does not fit kafka.sasl.mechanism=PLAIN"):
        jaas_credentials(f'{SCRAM} required username="a" password="b";', "PLAIN")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "Krb5LoginModule' does not fit kafka.sasl.mechanism=PLAIN"):
        jaas_credentials("com.sun.security.auth.module.Krb5LoginModule required;", "PLAIN")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          r"the login module \(the first word of kafka.sasl.jaas.config\)",
                          "is not one kafkawire supports") as info:
        jaas_credentials('com.acme.s3cretLoginModule required username="a";', "PLAIN")
    assert "s3cret" not in str(info.value)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "tokenauth=true", "delegation tokens"):
        jaas_credentials(f'{SCRAM} required username="a" password="b" tokenauth="true";',
                         "SCRAM-SHA-256")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "password missing"):
        jaas_credentials(f'{PLAIN} required username="a";', "PLAIN")


@pytest.mark.parametrize("jaas", [True, False])
@pytest.mark.parametrize("mechanism", ["PLAIN", "scram-sha-256", "SCRAM-SHA-512"])
def test_credentials_from_either_form(mechanism: str, jaas: bool) -> None:
    module = PLAIN if mechanism == "PLAIN" else SCRAM
    escaped = SECRET.replace("\\", "\\\\").replace('"', '\\"')
    creds = {"kafka.sasl.jaas.config": f'{module} required username="alice" '
                                       f'password="{escaped}";'} if jaas else \
        {"kafka.sasl.username": "alice", "kafka.sasl.password": SECRET}
    for use in (SOURCE, SINK):
        config = client_config(lower_keys({
            "kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": mechanism, **creds}), use)
        assert config.sasl == SaslConfig(mechanism.upper(), "alice", SECRET)
        assert config.tls is not None  # SASL_SSL: TLS too
        text = repr(config) + str(config) + repr(pickle.loads(pickle.dumps(config)))
        assert "s3cr" not in text and "password=<hidden>" in text


@pytest.mark.parametrize(("options", "kind", "message"), [
    ({"kafka.sasl.username": "a", "kafka.sasl.password": SECRET},
     "CONFLICTING_OPTIONS", r"do not apply to kafka.sasl.mechanism=GSSAPI \(Kerberos, the default\): set "
     "kafka.sasl.mechanism to PLAIN"),
    ({"kafka.sasl.jaas.config": f'{PLAIN} required username="a" password="{SECRET[:4]}";'},
     "SECURITY_SETTING", "GSSAPI .*takes com.sun.security.auth.module.Krb5LoginModule, not "
     "'org.apache.kafka.common.security.plain.PlainLoginModule'; set kafka.sasl.mechanism"),
    ({"kafka.sasl.mechanism": "OAUTHBEARER"}, "MISSING_OPTION", "OAUTHBEARER needs kafka.sasl.jaas.config"),
    ({"kafka.sasl.mechanism": "DIGEST-MD5"}, "UNSUPPORTED_VALUE", "must be one of PLAIN, SCRAM-SHA-256"),
    ({"kafka.sasl.mechanism": "PLAIN"}, "MISSING_OPTION", "needs credentials"),
    ({"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "a"}, "MISSING_OPTION", "needs credentials"),
    ({"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "", "kafka.sasl.password": SECRET},
     "SECURITY_SETTING", "user name is empty"),
    ({"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "a", "kafka.sasl.password": SECRET,
      "kafka.sasl.jaas.config": f'{PLAIN} required username="a" password="{SECRET[:4]}";'},
     "CONFLICTING_OPTIONS", "not both"),
    ({"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.kerberos.principal.to.local.rules": "x"},
     "REFUSED_OPTION", "'kafka.sasl.kerberos.principal.to.local.rules' is not supported yet"),
    ({"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.login.callback.handler.class": "x"},
     "CONFLICTING_OPTIONS", "applies to kafka.sasl.mechanism=OAUTHBEARER, not PLAIN"),
    ({"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.oauthbearer.token.unknown": "x"},
     "REFUSED_OPTION", "not supported yet"),
])
def test_refusals(options: dict, kind: str, message: str) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}",
                          message) as info:
        _config(**options)
    assert "s3cr" not in str(info.value)


def test_sasl_options_need_a_sasl_protocol() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "kafka.sasl.username", "SASL_PLAINTEXT or SASL_SSL"):
        client_config(lower_keys({"kafka.bootstrap.servers": "b:9092",
                                  "kafka.sasl.username": "a"}), SOURCE)


def test_sasl_plaintext_has_no_tls() -> None:
    config = _config(**{"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "a",
                        "kafka.sasl.password": "b"})
    assert config.tls is None and config.security_protocol == "SASL_PLAINTEXT"


@pytest.mark.parametrize(("versions", "expected"), [
    ({17: (0, 1), 36: (0, 2)}, (1, 2)),
    ({17: (0, 1), 36: (0, 1)}, (1, 1)),
    ({17: (0, 1), 36: (0, 7)}, (1, 2)),
    ({17: (0, 0), 36: (0, 2)}, (0, None)),
    ({17: (0, 1)}, (0, None)),
    ({}, (0, None)),
])
def test_version_choice(versions: dict, expected: tuple) -> None:
    assert choose_versions(versions) == expected


def test_parsed_source_and_sink_options_hide_secrets() -> None:
    """What partitions and writers carry (SourceOptions, SinkOptions) prints no secret."""
    escaped = SECRET.replace('"', '\\"')
    for creds in ({"kafka.sasl.jaas.config": f'{SCRAM} required username="alice" '
                                             f'password="{escaped}";'},
                  {"kafka.sasl.username": "alice", "kafka.sasl.password": SECRET}):
        opts = {"kafka.bootstrap.servers": "h:9093", "kafka.security.protocol": "SASL_SSL",
                "kafka.sasl.mechanism": "SCRAM-SHA-512", **creds}
        for parsed in (parse_source_options({**opts, "subscribe": "t"}),
                       parse_sink_options({**opts, "topic": "t"})):
            text = repr(parsed) + str(parsed) + repr(pickle.loads(pickle.dumps(parsed)))
            assert "password=<hidden>" in text and "username='alice'" in text
            assert "s3cr" not in text and "ScramLoginModule" not in text
