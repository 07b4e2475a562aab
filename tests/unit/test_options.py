"""Option parsing: Spark-compatible names and rules, clear errors for the rest."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.config import parse_bootstrap
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options
from tests.support.errors import raises_condition

BASE = {"kafka.bootstrap.servers": "h1:9092,h2:9093", "subscribe": "a,b"}


def test_defaults_and_case_insensitive_keys() -> None:
    o = parse_source_options({"KAFKA.Bootstrap.Servers": "h:1", "SUBSCRIBE": " a , b,a "})
    assert o.client.bootstrap_servers == (("h", 1),)
    assert o.topics == ("a", "b")
    assert o.starting.default == -2 and o.ending.default == -1
    assert o.fetch.max_partition_fetch_bytes == 1 << 20 and o.fetch.check_crcs


def test_client_settings_are_passed_through() -> None:
    o = parse_source_options({**BASE, "kafka.client.id": "me", "kafka.request.timeout.ms": "1234",
                              "kafka.max.partition.fetch.bytes": "4096", "kafka.check.crcs": "false",
                              "kafka.fetch.max.wait.ms": "10"})
    assert o.client.client_id == "me" and o.client.request_timeout_ms == 1234
    assert o.fetch.max_partition_fetch_bytes == 4096 and not o.fetch.check_crcs
    assert o.fetch.max_wait_ms == 10


def test_json_offsets() -> None:
    o = parse_source_options({**BASE, "startingOffsets": '{"a":{"0":5,"1":-2},"b":{"0":-2}}',
                              "endingOffsets": '{"a":{"0":-1,"1":9},"b":{"0":3}}'})
    tps = [("a", 0), ("a", 1), ("b", 0)]
    assert o.starting.for_partitions(tps, "startingOffsets") == {("a", 0): 5, ("a", 1): -2, ("b", 0): -2}
    assert o.ending.for_partitions(tps, "endingOffsets") == {("a", 0): -1, ("a", 1): 9, ("b", 0): 3}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE", "lacks a-2"):
        o.starting.for_partitions(tps + [("a", 2)], "startingOffsets")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                          "not subscribed or do not exist: b-0"):
        o.starting.for_partitions(tps[:2], "startingOffsets")


def test_no_options_at_all_points_to_a_temporary_view() -> None:
    """A catalog table USING kafkawire reaches the source with no option at all (Spark keeps
    none for Python data source tables): the error says so; a query missing only the
    brokers does not get that hint."""
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          r"'kafka.bootstrap.servers' is required.*No option at all reached "
                          r"kafkawire.*CREATE TEMPORARY VIEW"):
        parse_source_options({})
    with pytest.raises(ConfigurationError) as missing:
        parse_source_options({"subscribe": "t"})
    assert "'kafka.bootstrap.servers' is required" in str(missing.value)
    assert "No option at all" not in str(missing.value)


@pytest.mark.parametrize(
    "extra,kind,message",
    [
        ({"kafka.bootstrap.servers": ""}, "MISSING_OPTION", "'kafka.bootstrap.servers' is required"),
        ({"kafka.bootstrap.servers": "host:notaport"}, "INVALID_VALUE", "is not host:port"),
        ({"subscribe": None}, "MISSING_OPTION", "'subscribe', 'subscribePattern' or 'assign' is required"),
        ({"endingOffsets": "earliest"}, "UNSUPPORTED_VALUE", "endingOffsets cannot be earliest"),
        ({"startingOffsets": "latest"}, "UNSUPPORTED_VALUE", "startingOffsets cannot be latest"),
        ({"startingOffsets": '{"a":{"0":-1}}'}, "UNSUPPORTED_VALUE", "startingOffsets for a-0 cannot be latest"),
        ({"endingOffsets": '{"a":{"0":-2}}'}, "UNSUPPORTED_VALUE", "endingOffsets for a-0 cannot be earliest"),
        ({"startingOffsets": "yesterday"}, "INVALID_VALUE", "must be 'earliest', 'latest' or JSON"),
        ({"startingOffsets": '{"a":{"0":-3}}'}, "INVALID_VALUE", "must be an integer >= -2"),
        ({"startingOffsets": '{"a":{"x":1}}'}, "INVALID_VALUE", "partition 'x' of 'a' is not a number"),
        ({"kafka.auto.offset.reset": "earliest"}, "REFUSED_OPTION", "set the source option 'startingOffsets'"),
        ({"kafka.enable.auto.commit": "true"}, "REFUSED_OPTION", "offsets are tracked by Spark"),
        ({"kafka.key.deserializer": "x"}, "REFUSED_OPTION", "keys are always read as bytes"),
        ({"kafka.value.deserializer": "x"}, "REFUSED_OPTION", "values are always read as bytes"),
        ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.username": "a",
          "kafka.sasl.password": "b"}, "CONFLICTING_OPTIONS", "do not apply to kafka.sasl.mechanism=GSSAPI"),
        ({"kafka.sasl.jaas.config": "secret-stuff"}, "CONFLICTING_OPTIONS", "SASL_PLAINTEXT or SASL_SSL"),
        ({"kafka.frobnicate": "1"}, "UNKNOWN_OPTION", "unknown Kafka client option.*kafka.frobnicate"),
        ({"kafka.request.timeout.ms": "soon"}, "INVALID_VALUE", "kafka.request.timeout.ms must be an integer"),
        ({"assign": '{"a":[0]}'}, "CONFLICTING_OPTIONS", "only one of the options 'subscribe', 'subscribePattern' or "
         "'assign' can be given; got subscribe, assign"),
        ({"includeHeaders": "yes"}, "INVALID_VALUE", "includeHeaders must be true or false"),
    ],
)
def test_source_errors(extra: dict, kind: str, message: str) -> None:
    opts = {**BASE, **extra}
    opts = {k: v for k, v in opts.items() if v is not None}
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}", message):
        parse_source_options(opts)


def test_secrets_never_appear_in_errors() -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_source_options({**BASE, "kafka.sasl.jaas.config": "password=hunter2"})
    assert "hunter2" not in str(info.value)


def test_sink_options() -> None:
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", "kafka.acks": "1",
                            "kafka.compression.type": "gzip", "kafka.batch.size": "1000",
                            "kafka.max.request.size": "5000"})
    assert o.topic == "t" and o.produce.acks == 1 and o.produce.compression == 1
    assert o.produce.batch_size == 1000 and o.produce.max_request_size == 5000
    d = parse_sink_options({"kafka.bootstrap.servers": "h:1"})
    assert d.topic is None and d.produce.acks == -1 and d.produce.compression == 0


@pytest.mark.parametrize(
    "extra,kind,facts",
    [
        ({"kafka.acks": "2"}, "UNSUPPORTED_VALUE", ["kafka.acks", "0, 1, all", "got '2'"]),
        ({"kafka.compression.type": "brotli"}, "UNSUPPORTED_VALUE",
         ["kafka.compression.type", "none, gzip, snappy, lz4, zstd", "'brotli'"]),
        ({"topic": "  "}, "MISSING_OPTION", ["option 'topic' is empty"]),
        ({"kafka.value.serializer": "x"}, "REFUSED_OPTION",
         ["kafka.value.serializer", "values are always written as bytes"]),
    ],
)
def test_sink_errors(extra: dict, kind: str, facts: list[str]) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}", *facts):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", **extra})


@pytest.mark.parametrize("name,codec", [("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3), ("ZSTD", 4)])
def test_every_codec_is_accepted(name: str, codec: int) -> None:
    o = parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.compression.type": name})
    assert o.produce.compression == codec


def test_legacy_broker_options() -> None:
    o = parse_source_options({**BASE, "kafka.api.version.request": "false",
                              "kafka.broker.version.fallback": "0.8.2.2"})
    assert o.client.api_version_request is False and o.client.broker_version_fallback == "0.8.2.2"
    assert parse_source_options(BASE).client.api_version_request is True
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE",
                          "kafka.broker.version.fallback: unknown broker release"):
        parse_source_options({**BASE, "kafka.broker.version.fallback": "0.6"})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "kafka.broker.version.fallback=0.7", "give zookeeper.connect"):
        parse_source_options({**BASE, "kafka.broker.version.fallback": "0.7"})


def test_parse_bootstrap_forms() -> None:
    assert parse_bootstrap("a:1, b:2,,PLAINTEXT://c:3,[::1]:4,d") == [
        ("a", 1), ("b", 2), ("c", 3), ("::1", 4), ("d", 9092)]
    with pytest.raises(ConfigurationError):
        parse_bootstrap(" , ")
    with pytest.raises(ConfigurationError):
        parse_bootstrap("a:70000")


@pytest.mark.parametrize("key", ["kafka.auto.offset.reset", "kafka.enable.auto.commit",
                                 "kafka.key.deserializer", "kafka.value.deserializer"])
def test_consumer_settings_spark_refuses_are_accepted_by_the_sink(key: str) -> None:
    """Spark refuses them for its source only; its sink hands them to a producer that does not
    use them."""
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                          f"Kafka option '{key}'"):
        parse_source_options({**BASE, key: "x"})
    assert parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", key: "x"}).topic


@pytest.mark.parametrize("key", ["kafka.key.serializer", "kafka.value.serializer"])
def test_serializers_spark_refuses_for_its_sink_are_accepted_by_the_source(key: str) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                          f"Kafka option '{key}'"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t", key: "x"})
    assert parse_source_options({**BASE, key: "x"}).topics


def test_interceptors_are_refused_everywhere() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                          "kafka.interceptor.classes", "JVM classes"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.interceptor.classes": "x"})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                          "kafka.interceptor.classes", "JVM classes"):
        parse_source_options({**BASE, "kafka.interceptor.classes": "x"})


def test_misspelt_security_keys_are_errors_naming_the_intended_key(tmp_path) -> None:
    from spark_kafka_wire.options import edit_distance, misspelt_security_key

    assert edit_distance("secuirty.protocol", "security.protocol") == 1  # a swap is one edit
    assert misspelt_security_key("secuirty.protocol") == "security.protocol"
    assert misspelt_security_key("key.serializer") is None  # a Java client setting
    assert misspelt_security_key("schema.registry.url") is None  # unknown, but not security
    props = tmp_path / "client.properties"
    props.write_text("secuirty.protocol=SSL\n")
    for parse, extra in ((parse_source_options, {"subscribe": "t"}),
                         (parse_sink_options, {"topic": "t"})):
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION",
                              r"'secuirty\.protocol'", r"'security\.protocol'"):
            parse({"kafka.bootstrap.servers": "b:9092", "kafkaConfigFile": str(props),
                   **extra})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION",
                          "'sasl.mechansim'", r"did you mean 'sasl\.mechanism'"):
        parse_source_options({"kafka.bootstrap.servers": "b:9092", "subscribe": "t",
                              "kafka.sasl.mechansim": "PLAIN"})
