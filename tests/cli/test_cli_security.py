"""``--command-config`` on the secured test brokers: the same .properties a Kafka tool reads
(placeholders included) logs in with SASL over TLS or connects with TLS alone; librdkafka reads
what ``produce`` wrote through the same broker; a wrong password is one line, without it."""

from __future__ import annotations

import uuid

import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.options import SOURCE, client_config, lower_keys
from tests.cli.conftest import run_cli, tsv
from tests.support.librdkafka import consume
from tests.support.security_env import SASL_USERS

pytestmark = pytest.mark.broker

PASSWORD_ENV = "KAFKAWIRE_CLI_TEST_PASSWORD"


def sasl_ssl_properties(tmp_path, broker, pki, user: str = "alice") -> str:
    """A client.properties as a Kafka user writes it, the password from the environment."""
    path = tmp_path / "client.properties"
    path.write_text(
        "config.providers=env\n"
        "config.providers.env.class=org.apache.kafka.common.config.provider."
        "EnvVarConfigProvider\n"
        f"bootstrap.servers={broker.bootstrap_servers}\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f"    username=\"{user}\" password=\"${{env:{PASSWORD_ENV}}}\";\n"
        f"ssl.truststore.location={pki.ca_pem}\n"
        "ssl.truststore.type=PEM\n"
        "# producer and consumer keys of a shared file are skipped\n"
        "acks=all\nkey.serializer=org.apache.kafka.common.serialization.StringSerializer\n")
    return str(path)


def new_secured_topic(broker, conf: dict[str, str]) -> str:
    topic = f"cli-sec-{uuid.uuid4().hex[:12]}"
    with KafkaClient(client_config(lower_keys(conf), SOURCE)) as client:
        create_topics(client, [(topic, 1)])
    return topic


def test_check_and_produce_over_sasl_ssl(sasl_ssl_broker, pki, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(PASSWORD_ENV, SASL_USERS["alice"])
    props = sasl_ssl_properties(tmp_path, sasl_ssl_broker, pki)
    check = run_cli("--command-config", props, "check", env={PASSWORD_ENV: SASL_USERS["alice"]})
    assert check.exit_code == 0, check.stderr
    assert "SASL_SSL, SASL SCRAM-SHA-512 as 'alice', TLS verified against the configured CA" \
        in check.stdout
    assert "usable:" in check.stdout
    assert SASL_USERS["alice"] not in check.output

    from spark_kafka_wire import options_from_properties

    topic = new_secured_topic(sasl_ssl_broker, {
        k: v for k, v in options_from_properties(props).items()
        if k.startswith(("kafka.bootstrap", "kafka.security", "kafka.sasl", "kafka.ssl"))})
    written = run_cli("--command-config", props, "produce", topic, "-K", ":",
                      input=b"a:1\nb:2\nplain\n", env={PASSWORD_ENV: SASL_USERS["alice"]})
    assert written.exit_code == 0, written.stderr
    rd = {"bootstrap.servers": sasl_ssl_broker.bootstrap_servers, "security.protocol": "SASL_SSL",
          "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
          "sasl.password": SASL_USERS["alice"], "ssl.ca.location": pki.ca_pem}
    assert consume(rd, topic, 3) == [(b"a", b"1"), (b"b", b"2"), (None, b"plain")]
    tail = run_cli("--command-config", props, "tail", topic, "--format", "json",
                   env={PASSWORD_ENV: SASL_USERS["alice"]})
    assert tail.exit_code == 0, tail.stderr
    assert len(tail.stdout.splitlines()) == 3


def test_wrong_password_is_one_line_without_the_password(sasl_ssl_broker, pki, tmp_path,
                                                        monkeypatch) -> None:
    wrong = "not-alices-password-" + uuid.uuid4().hex[:6]
    monkeypatch.setenv(PASSWORD_ENV, wrong)
    props = sasl_ssl_properties(tmp_path, sasl_ssl_broker, pki)
    for command in (["check"], ["topics"]):
        result = run_cli("--command-config", props, *command, env={PASSWORD_ENV: wrong})
        assert result.exit_code == 1, result.output
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith("kafkawire: error: ")
        assert "SCRAM-SHA-512" in result.stderr or "authentication" in result.stderr.lower()
        assert wrong not in result.output and "Traceback" not in result.output


def test_check_over_tls_with_the_bootstrap_option_winning(tls_broker, pki, tmp_path) -> None:
    props = tmp_path / "tls.properties"
    props.write_text("bootstrap.servers=127.0.0.1:1\nsecurity.protocol=SSL\n"
                     f"ssl.truststore.location={pki.ca_p12}\n"
                     f"ssl.truststore.password={pki.store_password}\n")
    result = run_cli("--bootstrap-server", tls_broker.bootstrap_servers,
                     "--command-config", str(props), "check")
    assert result.exit_code == 0, result.stderr
    assert f"bootstrap: {tls_broker.bootstrap_servers} (SSL, TLS verified" in result.stdout
    assert pki.store_password not in result.output
    listed = run_cli("-b", tls_broker.bootstrap_servers, "-F", str(props), "topics")
    assert listed.exit_code == 0 and tsv(listed.stdout) is not None


def test_plaintext_client_on_a_tls_port_fails_in_one_line(tls_broker) -> None:
    result = run_cli("-b", tls_broker.bootstrap_servers, "topics")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
