"""Sink option parsing: Java producer names, defaults and rules (ProducerConfig), plus
kafkawire's topic creation options."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.producer import ProduceSettings
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.options.produce import parse_sink_options
from tests.support.errors import raises_condition

B = {"kafka.bootstrap.servers": "h:1"}


def _parse(**extra: str):
    return parse_sink_options({**B, **extra})


def test_defaults() -> None:
    o = parse_sink_options(B)
    p = o.produce
    assert (p.acks, p.linger_ms, p.batch_size, p.max_in_flight) == (-1, 5, 512 << 10, 5)
    assert (p.buffer_memory, p.max_request_size) == (32 << 20, 1 << 20)
    assert (p.retries, p.delivery_timeout_ms) == (2_147_483_647, 120_000)
    assert (p.retry_backoff_ms, p.retry_backoff_max_ms) == (100, 1000)
    assert p.enable_idempotence is None and p.idempotence_wanted  # on by default, like Java
    assert o.partitioner == "murmur2_random"
    assert not o.create.auto and not o.create.explicit


def test_transactional_prefix() -> None:
    assert parse_sink_options(B).transactional_prefix is None
    o = _parse(**{"KAFKA.TRANSACTIONAL.ID": " orders-copy ", "kafka.transaction.timeout.ms": "5000"})
    assert o.transactional_prefix == "orders-copy"  # the tasks add -<partition>
    assert o.produce.transaction_timeout_ms == 5000
    assert o.produce.transactional_id is None  # set per task
    assert _parse(**{"kafka.transactional.id": "t"}).produce.transaction_timeout_ms == 900_000


def test_every_producer_setting_is_read() -> None:
    o = parse_sink_options({**B, "KAFKA.LINGER.MS": "0", "kafka.batch.size": "0",
                            "kafka.buffer.memory": "1000", "kafka.max.request.size": "5000",
                            "kafka.max.in.flight.requests.per.connection": "2",
                            "kafka.retries": "3", "kafka.delivery.timeout.ms": "700",
                            "kafka.retry.backoff.ms": "7", "kafka.retry.backoff.max.ms": "70",
                            "kafka.request.timeout.ms": "900", "kafka.acks": "ALL",
                            "kafka.partitioner": "Consistent_Random"})
    p = o.produce
    assert (p.linger_ms, p.batch_size, p.buffer_memory, p.max_request_size) == (0, 0, 1000, 5000)
    assert (p.max_in_flight, p.retries, p.delivery_timeout_ms) == (2, 3, 700)
    assert (p.retry_backoff_ms, p.retry_backoff_max_ms, p.timeout_ms) == (7, 70, 900)
    assert p.acks == -1 and o.partitioner == "consistent_random"


@pytest.mark.parametrize("name", ["murmur2_random", "murmur2", "consistent_random",
                                  "consistent", "fnv1a_random", "fnv1a", "random"])
def test_partitioners(name: str) -> None:
    assert _parse(**{"kafka.partitioner": name}).partitioner == name


# Java: ProducerConfig.postProcessAndValidateIdempotenceConfigs
@pytest.mark.parametrize(("extra", "expected"), [
    ({}, None),  # defaulted on
    ({"kafka.enable.idempotence": "true"}, True),
    ({"kafka.enable.idempotence": "false"}, False),
    ({"kafka.acks": "1"}, False),  # a defaulted idempotence yields to acks
    ({"kafka.acks": "0"}, False),
    ({"kafka.retries": "0"}, False),
    ({"kafka.enable.idempotence": "false", "kafka.acks": "1"}, False),
    ({"kafka.enable.idempotence": "false",
      "kafka.max.in.flight.requests.per.connection": "10"}, False),
    ({"kafka.max.in.flight.requests.per.connection": "5"}, None),
])
def test_idempotence_resolution(extra: dict, expected: bool | None) -> None:
    assert _parse(**extra).produce.enable_idempotence is expected


@pytest.mark.parametrize(("extra", "kind", "message"), [
    ({"kafka.enable.idempotence": "true", "kafka.acks": "1"},
     "CONFLICTING_OPTIONS", r"kafka.acks must be all to use kafka.enable.idempotence=true \(got acks=1\)"),
    ({"kafka.enable.idempotence": "true", "kafka.acks": "0"}, "CONFLICTING_OPTIONS", r"got acks=0"),
    ({"kafka.enable.idempotence": "true", "kafka.retries": "0"},
     "CONFLICTING_OPTIONS", r"kafka.retries must be non-zero when kafka.enable.idempotence=true"),
    # Java refuses more than 5 in flight whenever idempotence is on, even defaulted, and
    # even when acks=1 is about to turn a defaulted idempotence off
    ({"kafka.max.in.flight.requests.per.connection": "6"},
     "CONFLICTING_OPTIONS", r"max.in.flight.requests.per.connection must be at most 5; got 6"),
    ({"kafka.max.in.flight.requests.per.connection": "6", "kafka.acks": "1"}, "CONFLICTING_OPTIONS", r"got 6"),
    ({"kafka.enable.idempotence": "maybe"}, "INVALID_VALUE", r"kafka.enable.idempotence must be true or false"),
])
def test_idempotence_errors(extra: dict, kind: str, message: str) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}", message):
        _parse(**extra)


def test_idempotence_wanted_follows_settings() -> None:
    assert ProduceSettings().idempotence_wanted
    assert not ProduceSettings(acks=1).idempotence_wanted
    assert not ProduceSettings(retries=0).idempotence_wanted
    assert ProduceSettings(acks=1, enable_idempotence=True).idempotence_wanted
    assert not ProduceSettings(enable_idempotence=False).idempotence_wanted


@pytest.mark.parametrize(("extra", "kind", "message"), [
    ({"kafka.partitioner": "sticky"}, "UNSUPPORTED_VALUE", r"kafka.partitioner must be one of murmur2_random, "
     r"murmur2, consistent_random, consistent, fnv1a_random, fnv1a, random.*got 'sticky'"),
    ({"kafka.partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner"},
     "REFUSED_OPTION", r"'kafka.partitioner.class' is not supported: it names a JVM class.*kafka.partitioner"),
    ({"kafka.transactional.id": " "}, "MISSING_OPTION", r"kafka.transactional.id is empty"),
    ({"kafka.transactional.id": "t" * 32760}, "VALUE_OUT_OF_RANGE", r"kafka.transactional.id is too long"),
    ({"kafka.transactional.id": "tx", "kafka.acks": "1"}, "CONFLICTING_OPTIONS", r"needs the idempotent producer"),
    ({"kafka.transactional.id": "tx", "kafka.enable.idempotence": "false"},
     "CONFLICTING_OPTIONS", r"needs the idempotent producer"),
    ({"kafka.transactional.id": "tx", "kafka.retries": "0"}, "CONFLICTING_OPTIONS", r"needs the idempotent producer"),
    ({"kafka.transaction.timeout.ms": "1000"},
     "CONFLICTING_OPTIONS", r"kafka.transaction.timeout.ms takes effect only with kafka.transactional.id"),
    ({"kafka.transactional.id": "tx", "kafka.transaction.timeout.ms": "0"},
     "VALUE_OUT_OF_RANGE", r"kafka.transaction.timeout.ms must be >= 1"),
    ({"kafka.linger.ms": "-1"}, "VALUE_OUT_OF_RANGE", r"kafka.linger.ms must be >= 0"),
    ({"kafka.batch.size": "big"}, "INVALID_VALUE", r"kafka.batch.size must be an integer"),
    ({"kafka.max.in.flight.requests.per.connection": "0"}, "VALUE_OUT_OF_RANGE", r"must be >= 1"),
    ({"kafka.buffer.memory": "0"}, "VALUE_OUT_OF_RANGE", r"kafka.buffer.memory must be >= 1"),
    ({"kafka.delivery.timeout.ms": "0"}, "VALUE_OUT_OF_RANGE", r"kafka.delivery.timeout.ms must be >= 1"),
    ({"kafka.retries": "-1"}, "VALUE_OUT_OF_RANGE", r"kafka.retries must be >= 0"),
    ({"createTopicPartitions": "3"}, "CONFLICTING_OPTIONS", r"createTopicPartitions takes effect only with createTopic"),
    ({"createTopic": "true", "createTopicPartitions": "0"}, "VALUE_OUT_OF_RANGE", r"createTopicPartitions must be >= 1"),
    ({"createTopic": "yes"}, "INVALID_VALUE", r"createTopic must be true or false"),
    ({"kafka.allow.auto.create.topics": "1"}, "INVALID_VALUE", r"kafka.allow.auto.create.topics must be true"),
    ({"kafka.key.serializer": "x"}, "REFUSED_OPTION", r"keys are always written as bytes"),
])
def test_errors(extra: dict, kind: str, message: str) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}", message):
        _parse(**extra)


def test_topic_creation_options() -> None:
    c = _parse(createTopic="true", createTopicPartitions="6",
               createTopicReplicationFactor="3").create
    assert (c.explicit, c.auto, c.partitions, c.replication_factor) == (True, False, 6, 3)
    c = _parse(createtopic="TRUE").create
    assert (c.explicit, c.partitions, c.replication_factor) == (True, -1, -1)
    assert _parse(**{"kafka.allow.auto.create.topics": "true"}).create.auto


def test_delivery_timeout_below_linger_plus_request_timeout_is_accepted() -> None:
    # Java refuses this combination; here the delivery timeout is checked between attempts
    p = _parse(**{"kafka.delivery.timeout.ms": "5000", "kafka.request.timeout.ms": "5000"}).produce
    assert p.delivery_timeout_ms == 5000 and p.linger_ms == 5


@pytest.mark.parametrize(("extra", "level"), [
    ({"kafka.compression.type": "gzip", "kafka.compression.gzip.level": "1"}, 1),
    ({"kafka.compression.type": "gzip", "kafka.compression.gzip.level": "-1"}, None),
    ({"kafka.compression.type": "gzip"}, None),  # -1: zlib's default, 6, as Java's Deflater
    ({"kafka.compression.type": "lz4", "kafka.compression.lz4.level": "17"}, 17),
    ({"kafka.compression.type": "lz4"}, None),  # lz4's fast mode
    ({"kafka.compression.type": "zstd", "kafka.compression.zstd.level": "-5"}, -5),
    ({"kafka.compression.type": "zstd"}, 3),
    # a level applies to its codec only
    ({"kafka.compression.type": "zstd", "kafka.compression.gzip.level": "9"}, 3),
    ({"kafka.compression.type": "snappy", "kafka.compression.zstd.level": "9"}, None),
    ({"kafka.compression.gzip.level": "9"}, None),
])
def test_compression_level_of_the_codec_in_use(extra: dict, level: int | None) -> None:
    assert _parse(**extra).produce.compression_level == level


@pytest.mark.parametrize(("name", "value"), [
    ("gzip", "0"), ("gzip", "10"), ("gzip", "-2"), ("lz4", "0"), ("lz4", "18"),
    ("zstd", "23"), ("zstd", "-131073"),
])
def test_compression_levels_out_of_java_ranges_are_refused(name: str, value: str) -> None:
    """KIP-390's ranges, checked whatever the codec, as Java's producer checks them."""
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE",
                          f"kafka.compression.{name}.level"):
        _parse(**{f"kafka.compression.{name}.level": value})


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd"])
def test_batches_are_compressed_at_the_level_asked(codec: str) -> None:
    """The producer's batches carry the records compressed at the option's level: the same
    bytes as the codec at that level gives, not those of its default."""
    import numpy as np
    import pyarrow as pa

    from spark_kafka_wire.client.producer.accumulator import Rows, encode_chunk
    from spark_kafka_wire.protocol.compression import CODEC_NAMES, compress
    from spark_kafka_wire.protocol.records.batch import HEADER_SIZE

    values = pa.array([f"value {i} {'abc' * (i % 7)} {i * 7919 % 1000}".encode()
                       for i in range(400)], pa.binary())
    rows = Rows(None, values, np.full(400, 1_600_000_000_000, np.int64), None,
                np.full(400, 40, np.int64))
    level = {"gzip": 1, "lz4": 12, "zstd": 19}[codec]
    plain = bytes(encode_chunk(rows, 2, ProduceSettings()))[HEADER_SIZE:]
    asked = _parse(**{"kafka.compression.type": codec,
                      f"kafka.compression.{codec}.level": str(level)}).produce
    blob = bytes(encode_chunk(rows, 2, asked))[HEADER_SIZE:]
    assert blob == compress(CODEC_NAMES[codec], plain, level=level)
    assert blob != compress(CODEC_NAMES[codec], plain)  # the default level differs
