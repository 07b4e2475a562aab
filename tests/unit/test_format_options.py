"""``value.format`` / ``key.format`` and the Schema Registry settings (options/formats.py):
Confluent's setting names, the subject name strategies, credentials from each source, the
registry's TLS settings under their own names, and the operator's list of registries."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.registry.schema_registry import (
    ALLOWED_URLS,
    SchemaRegistryClient,
    check_registry_url,
)
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.options.formats import (
    ColumnFormat,
    FormatOptions,
    format_options,
    registry_config,
)
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options
from tests.support.errors import raises_condition

URL = "http://registry.example:8081"
AVRO = {"value.format": "avro", "schema.registry.url": URL}


def test_raw_columns_need_no_registry() -> None:
    assert format_options({}) == FormatOptions()
    assert format_options({"value.format": "RAW"}).columns == ()
    assert parse_source_options({"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}
                                ).formats == FormatOptions()


def test_avro_values_and_keys_with_confluent_settings() -> None:
    parsed = format_options({**AVRO, "key.format": "Avro",
                             "key.subject.name.strategy":
                                 "io.confluent.kafka.serializers.subject.RecordNameStrategy",
                             "value.schema.version": "3", "mode": "permissive",
                             "enableStableIdentifiersForUnionType": "true",
                             "recursiveFieldMaxDepth": "2"})
    assert parsed.value == ColumnFormat("value", "avro", "TopicNameStrategy", schema_version=3)
    assert parsed.key == ColumnFormat("key", "avro", "RecordNameStrategy")
    assert parsed.mode == "PERMISSIVE" and parsed.stable_union_ids
    assert parsed.recursive_field_max_depth == 2
    assert parsed.registry is not None and parsed.registry.urls == (URL,)
    # a write's options parse the same way (the sink's parser is pyspark-free for the CLI)
    sink = parse_sink_options({"kafka.bootstrap.servers": "h:9092", "topic": "t", **AVRO,
                               "auto.register.schemas": "false", "use.latest.version": "true"})
    assert sink.formats.value is not None and not sink.formats.auto_register
    assert sink.formats.use_latest_version


@pytest.mark.parametrize(("strategy", "subject"), [
    ("TopicNameStrategy", "orders-value"),
    ("RecordNameStrategy", "shop.Order"),
    ("TopicRecordNameStrategy", "orders-shop.Order"),
])
def test_subject_name_strategies(strategy: str, subject: str) -> None:
    fmt = format_options({**AVRO, "value.subject.name.strategy": strategy}).value
    assert fmt is not None and fmt.subject_for("orders", "shop.Order") == subject
    explicit = format_options({**AVRO, "value.subject.name.strategy": strategy,
                               "value.subject": "mine"}).value
    assert explicit is not None and explicit.subject_for("orders", "shop.Order") == "mine"


def test_a_record_strategy_read_needs_a_subject_or_an_id() -> None:
    fmt = format_options({**AVRO, "value.subject.name.strategy": "RecordNameStrategy"}).value
    assert fmt is not None
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "value.subject"):
        fmt.subject_for("orders")


@pytest.mark.parametrize(("options", "condition", "fact"), [
    ({"value.format": "avro"}, "MISSING_OPTION", "schema.registry.url"),
    ({**AVRO, "value.format": "parquet"}, "UNSUPPORTED_VALUE", "value.format"),
    ({**AVRO, "value.subject.name.strategy": "MyStrategy"}, "UNSUPPORTED_VALUE",
     "TopicRecordNameStrategy"),
    ({**AVRO, "value.schema.id": "4", "value.schema.version": "2"}, "CONFLICTING_OPTIONS",
     "value.schema.id, value.schema.version"),
    ({**AVRO, "value.schema.version": "0"}, "VALUE_OUT_OF_RANGE", "value.schema.version"),
    ({**AVRO, "mode": "DROPMALFORMED"}, "UNSUPPORTED_VALUE", "FAILFAST or PERMISSIVE"),
    ({**AVRO, "recursiveFieldMaxDepth": "13"}, "VALUE_OUT_OF_RANGE", "recursiveFieldMaxDepth"),
    ({**AVRO, "schema.registry.url": "file:///etc/passwd"}, "INVALID_VALUE", "http"),
    ({**AVRO, "basic.auth.credentials.source": "USER_INFO"}, "MISSING_OPTION",
     "basic.auth.user.info"),
    ({**AVRO, "basic.auth.credentials.source": "SASL_INHERIT"}, "CONFLICTING_OPTIONS",
     "PLAIN or SCRAM"),
    ({**AVRO, "basic.auth.credentials.source": "KEYCHAIN"}, "UNSUPPORTED_VALUE",
     "URL, USER_INFO or SASL_INHERIT"),
    ({**AVRO, "bearer.auth.credentials.source": "STATIC_TOKEN"}, "MISSING_OPTION",
     "bearer.auth.token"),
    ({**AVRO, "bearer.auth.credentials.source": "KERBEROS"}, "UNSUPPORTED_VALUE",
     "STATIC_TOKEN, OAUTHBEARER or SASL_OAUTHBEARER_INHERIT"),
    ({**AVRO, "bearer.auth.credentials.source": "OAUTHBEARER", "bearer.auth.client.id": "c",
      "bearer.auth.client.secret": "s"}, "MISSING_OPTION", "bearer.auth.issuer.endpoint.url"),
    ({**AVRO, "bearer.auth.credentials.source": "SASL_OAUTHBEARER_INHERIT",
      "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config":
      'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
      'password="p";'}, "CONFLICTING_OPTIONS", "OAUTHBEARER login"),
    ({**AVRO, "basic.auth.user.info": "u:p", "bearer.auth.token": "t"},
     "CONFLICTING_OPTIONS", "bearer.auth.token"),
])
def test_settings_that_cannot_work_fail_naming_the_option(options: dict, condition: str,
                                                          fact: str) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{condition}", fact):
        format_options(options)


def test_credentials_from_each_source_and_never_shown() -> None:
    info = registry_config({**AVRO, "basic.auth.user.info": "alice:s3cret"})
    assert info.user_info == "alice:s3cret"
    inherited = registry_config({
        **AVRO, "basic.auth.credentials.source": "SASL_INHERIT",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
                                  'required username="bob" password="hunter2";'})
    assert inherited.user_info == "bob:hunter2"
    in_url = registry_config({**AVRO, "schema.registry.url": "https://carol:pw%40x@r.example"})
    assert in_url.user_info is None and in_url.authorization(0) != {}
    bearer = registry_config({**AVRO, "bearer.auth.credentials.source": "STATIC_TOKEN",
                              "bearer.auth.token": "tok-123",
                              "bearer.auth.logical.cluster": "lsrc-1",
                              "bearer.auth.identity.pool.id": "pool-2"})
    assert bearer.bearer_token == "tok-123"
    assert dict(bearer.bearer_headers) == {"target-sr-cluster": "lsrc-1",
                                           "Confluent-Identity-Pool-Id": "pool-2"}
    for config in (info, inherited, in_url, bearer):
        shown = repr(config) + repr(format_options({**AVRO, "basic.auth.user.info": "alice:s3cret"}))
        for secret in ("s3cret", "hunter2", "pw@x", "pw%40x", "tok-123"):
            assert secret not in shown


def test_registry_tls_settings_are_parsed_under_their_own_names(tmp_path) -> None:
    missing = tmp_path / "nowhere.pem"
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "schema.registry.ssl.truststore.location") as caught:
        registry_config({**AVRO, "schema.registry.url": "https://r.example",
                         "schema.registry.ssl.truststore.location": str(missing)})
    assert "kafka.ssl" not in str(caught.value)
    # an https registry without settings trusts the system's CAs; http needs no TLS at all
    assert registry_config({**AVRO, "schema.registry.url": "https://r.example"}).tls is not None
    assert registry_config(AVRO).tls is None


def test_the_operators_list_of_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    env = ALLOWED_URLS.removeprefix("spark.").upper().replace(".", "_")
    monkeypatch.delenv(env, raising=False)
    check_registry_url("http://anything.example:1234")  # unset: any registry
    monkeypatch.setenv(env, "https://registry.example.com, http://10.0.0.5:8081/apis/ccompat/v7")
    check_registry_url("https://registry.example.com")
    check_registry_url("https://user:pw@registry.example.com/apis/ccompat/v7")
    check_registry_url("http://10.0.0.5:8081/apis/ccompat/v7")
    for refused in ("http://registry.example.com", "https://registry.example.com.evil.example",
                    "http://10.0.0.5:8081/other", "http://169.254.169.254/latest"):
        with raises_condition(ConfigurationError,
                              "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR",
                              "spark.kafkawire.schema.registry.allowed.urls", env) as caught:
            check_registry_url(refused)
        assert "pw" not in str(caught.value)
    # every client checks (the driver when the query is defined, each executor)
    with raises_condition(ConfigurationError,
                          "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR"):
        SchemaRegistryClient(registry_config({**AVRO, "schema.registry.url":
                                              "http://169.254.169.254"}))


def test_the_kafka_oauthbearer_login_s_tokens_can_be_inherited() -> None:
    inherited = registry_config({
        **AVRO, "bearer.auth.credentials.source": "SASL_OAUTHBEARER_INHERIT",
        "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.oauthbearer."
                                  'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="svc";'})
    assert inherited.oauth is not None and inherited.oauth.source == "unsecured"
    assert inherited.oauth.principal == "svc" and inherited.bearer_token is None
    header = inherited.authorization(0)["Authorization"]
    assert header.startswith("Bearer ") and len(header) > 20
