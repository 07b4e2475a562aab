"""Write options (``df.write.format("kafkawire")``, the CLI's ``produce``), parsed once on
the driver: here in options/, beside the read side's client settings, so the CLI parses a
produce exactly as a query does without importing the Spark write side (sink/).

``kafka.*`` producer settings keep the Java client's names, defaults and validation rules
(ProducerConfig), so a write configured for Spark's built-in sink behaves the same here;
``kafka.partitioner`` takes librdkafka's partitioner names (a Java ``partitioner.class`` is a
JVM class and cannot run here). Differences, each deliberate:

* ``kafka.batch.size`` defaults to 512 KiB (Java: 16 KiB): a Spark task has its rows at hand,
  so bigger batches mean fewer requests and better compression.
* ``kafka.linger.ms`` (Java and librdkafka default 5) bounds how long a partition's rows wait
  in the task for more rows to fill ``batch.size``; it is checked whenever Spark hands over the
  next Arrow batch, and the task sends everything left when its rows end. 0 sends each Arrow
  batch's rows at once.
* ``kafka.delivery.timeout.ms`` below ``linger.ms + request.timeout.ms`` is accepted (Java
  refuses it): the delivery timeout is checked between attempts, each bounded by the request
  timeout, so a write gives up after at most delivery.timeout.ms plus one request timeout.
* A missing topic is an error naming it unless ``kafka.allow.auto.create.topics=true`` (the
  Java producer's setting, default true there: the broker then creates it if its
  ``auto.create.topics.enable`` allows) or ``createTopic=true`` (kafkawire: CreateTopics with
  ``createTopicPartitions`` / ``createTopicReplicationFactor``, broker defaults when unset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    KAFKA07_UNSUPPORTED,
    MISSING_OPTION,
    UNSUPPORTED_VALUE,
    VALUE_OUT_OF_RANGE,
    ConfigurationError,
)
from spark_kafka_wire.client.metadata.cluster import check_topic_name
from spark_kafka_wire.client.producer import MAX_IN_FLIGHT_FOR_IDEMPOTENCE, ProduceSettings
from spark_kafka_wire.client.producer.settings import parse_acks
from spark_kafka_wire.options import (
    DEFAULT_PARTITIONER,
    MAX_WIRE_STRING,
    PARTITIONERS,
    SINK,
    bool_default,
    bool_value,
    client_config,
    given,
    int_value,
    lower_keys,
    option,
    optional_int,
    text_value,
    warn_unknown_options,
    wire_text,
    with_config_file,
)
from spark_kafka_wire.options.formats import FormatOptions, format_options
from spark_kafka_wire.protocol.compression import CODEC_NAMES
from spark_kafka_wire.protocol.errors import shown


@dataclass(frozen=True)
class TopicCreation:
    """How a missing topic is created: by the broker on metadata requests (auto), or by
    CreateTopics (explicit); -1 = the broker's default."""

    auto: bool = bool_default("kafka.allow.auto.create.topics")
    explicit: bool = bool_default("createTopic")
    partitions: int = -1
    replication_factor: int = -1


@dataclass(frozen=True)
class SinkOptions:
    client: ClientConfig
    topic: str | None
    produce: ProduceSettings
    partitioner: str = DEFAULT_PARTITIONER
    create: TopicCreation = TopicCreation()
    # kafka.transactional.id: exactly-once writes, each task's transactional id starts with it
    transactional_prefix: str | None = None
    # value.format / key.format and the registry (parsed; schemas are settled by the writer)
    formats: FormatOptions = FormatOptions()


def _idempotence(opts: dict[str, str], acks: int, retries: int, in_flight: int) -> bool | None:
    """Java's rules (ProducerConfig.postProcessAndValidateIdempotenceConfigs): on by default;
    acks other than all, or retries=0, turn a defaulted idempotence off and make an explicit
    one an error; more than 5 requests in flight is an error whenever it is on."""
    explicit = given(opts, "kafka.enable.idempotence") is not None
    enabled = bool_value(opts, "kafka.enable.idempotence")
    if not enabled:
        return False
    disable = False
    if retries == 0:
        if explicit:
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "IDEMPOTENCE_RETRIES")
        disable = True
    if acks != -1:
        if explicit:
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "IDEMPOTENCE_ACKS", acks=acks)
        disable = True
    if in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, "IDEMPOTENCE_IN_FLIGHT",
            max_in_flight_for_idempotence=MAX_IN_FLIGHT_FOR_IDEMPOTENCE,
            in_flight=shown(in_flight, within=given(opts, 'kafka.max.in.flight.requests.per.connection')))
    if disable:
        return False
    return True if explicit else None


# Room left in a transactional id (a protocol string) for "-" and a task's partition number.
_TASK_SUFFIX = 11


def _transactional_prefix(opts: dict[str, str], idempotence: bool | None) -> str | None:
    """``kafka.transactional.id``: the prefix of every task's transactional id. Like Java's
    producer, a transactional id needs idempotence: acks=all, retries > 0, at most 5 requests
    in flight, and enable.idempotence not false."""
    raw = wire_text(opts, "kafka.transactional.id")
    if raw is None:
        if given(opts, "kafka.transaction.timeout.ms") is not None:
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "TRANSACTION_TIMEOUT_ALONE")
        return None
    prefix = raw.strip()
    if not prefix:
        raise ConfigurationError.of(MISSING_OPTION, "TRANSACTIONAL_ID_EMPTY")
    if len(prefix.encode("utf-8")) > MAX_WIRE_STRING - _TASK_SUFFIX:
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, "TRANSACTIONAL_ID_TOO_LONG", max_wire_string=MAX_WIRE_STRING)
    if idempotence is False:
        raise ConfigurationError.of(CONFLICTING_OPTIONS, "TRANSACTIONS_NEED_IDEMPOTENCE")
    return prefix


def _topic_creation(opts: dict[str, str]) -> TopicCreation:
    auto = bool_value(opts, "kafka.allow.auto.create.topics")
    explicit = bool_value(opts, "createTopic")
    sizes = (option("createTopicPartitions"), option("createTopicReplicationFactor"))
    partitions, replication = (optional_int(opts, o) for o in sizes)
    if not explicit:
        for o in sizes:
            if o.key in opts:
                raise ConfigurationError.of(
                    CONFLICTING_OPTIONS, "CREATE_TOPIC_ONLY", option=o.name)
    return TopicCreation(auto, explicit, -1 if partitions is None else partitions,
                         -1 if replication is None else replication)


def _compression_level(opts: Mapping[str, str], codec_name: str) -> int | None:
    """The level of the codec in use (None: the codec's default); every level option is
    checked whatever the codec, as Java's producer checks them."""
    gzip = int_value(opts, "kafka.compression.gzip.level")
    if gzip == 0:  # Deflater's -1 (default) or 1..9, as Java allows
        raise ConfigurationError.of(VALUE_OUT_OF_RANGE,
                                    option=option("kafka.compression.gzip.level").name,
                                    bound="-1 or 1 to 9", got="0")
    lz4 = optional_int(opts, "kafka.compression.lz4.level")
    zstd = int_value(opts, "kafka.compression.zstd.level")
    return {"gzip": None if gzip == -1 else gzip, "lz4": lz4, "zstd": zstd}.get(codec_name)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    warn_unknown_options(lower_keys(options), SINK)
    opts = with_config_file(lower_keys(options), SINK)
    client = client_config(opts, SINK)
    codec_name = text_value(opts, "kafka.compression.type").strip().lower()
    if codec_name not in CODEC_NAMES:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("kafka.compression.type").name,
                                    allowed=", ".join(CODEC_NAMES), got=repr(codec_name))
    topic = given(opts, "topic")
    if topic is not None and not topic.strip():
        raise ConfigurationError.of(MISSING_OPTION, "TOPIC_EMPTY")
    if topic is not None:
        check_topic_name(topic.strip(), "option 'topic'")
    raw_partitioner = text_value(opts, "kafka.partitioner")
    partitioner = raw_partitioner.strip().lower()
    if partitioner not in PARTITIONERS:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("kafka.partitioner").name,
                                    allowed=f"{', '.join(PARTITIONERS)} (librdkafka's names)",
                                    got=repr(raw_partitioner))
    acks = parse_acks(text_value(opts, "kafka.acks"))
    retries = int_value(opts, "kafka.retries")
    in_flight = int_value(opts, "kafka.max.in.flight.requests.per.connection")
    linger = int_value(opts, "kafka.linger.ms")
    # Java also requires delivery.timeout.ms >= linger.ms + request.timeout.ms; here the
    # delivery timeout is checked between attempts (an attempt itself ends within
    # request.timeout.ms), so any positive value works and none is refused.
    delivery = int_value(opts, "kafka.delivery.timeout.ms")
    enable_idempotence = _idempotence(opts, acks, retries, in_flight)
    prefix = _transactional_prefix(opts, enable_idempotence)
    produce = ProduceSettings(
        acks=acks,
        timeout_ms=client.request_timeout_ms,
        compression=CODEC_NAMES[codec_name],
        compression_level=_compression_level(opts, codec_name),
        batch_size=int_value(opts, "kafka.batch.size"),
        max_request_size=int_value(opts, "kafka.max.request.size"),
        retries=retries,
        delivery_timeout_ms=delivery,
        retry_backoff_ms=client.retry_backoff_ms,
        retry_backoff_max_ms=client.retry_backoff_max_ms,
        linger_ms=linger,
        buffer_memory=int_value(opts, "kafka.buffer.memory"),
        max_in_flight=in_flight,
        enable_idempotence=enable_idempotence,
        transaction_timeout_ms=int_value(opts, "kafka.transaction.timeout.ms"),
    )
    create = _topic_creation(opts)
    if client.plain_messages:
        _check_plain_messages(opts, codec_name, prefix, create)
        produce = replace(produce, enable_idempotence=False)
    formats = format_options(opts)
    if client.plain_messages and formats.columns:
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "FORMATS")
    return SinkOptions(client=client, topic=topic.strip() if topic else None, produce=produce,
                       partitioner=partitioner, create=create, transactional_prefix=prefix,
                       formats=formats)


PLAIN_MESSAGE_CODECS = ("none", "gzip", "snappy")


def _check_plain_messages(opts: dict[str, str], codec_name: str, prefix: str | None,
                          create: TopicCreation) -> None:
    """What a cluster of plain messages (``ClientConfig.plain_messages``: Kafka 0.7) cannot
    do, refused before anything is written (client/kafka07/writer.py says what 0.7 writes
    mean)."""
    if prefix is not None:
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "TRANSACTIONS")
    if given(opts, "kafka.enable.idempotence") is not None and \
            bool_value(opts, "kafka.enable.idempotence"):
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "IDEMPOTENCE")
    if codec_name not in PLAIN_MESSAGE_CODECS:
        raise ConfigurationError.of(
            KAFKA07_UNSUPPORTED, "CODEC", codec_name=codec_name,
            codecs=', '.join(PLAIN_MESSAGE_CODECS))
    if create.explicit:
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "CREATE_TOPIC")
