"""Every user option, parsed once and validated on the driver.

Names and semantics follow Spark's built-in kafka source and sink (keys are case-insensitive,
``kafka.``-prefixed keys are client settings with the prefix removed), so switching formats
means changing one string. Anything kafkawire does not support yet fails loudly rather than
being ignored: silently dropping, say, a security setting would connect in plaintext.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .client.config import ClientConfig, parse_bootstrap
from .client.fetcher import FetchSettings
from .client.offsets import EARLIEST, LATEST
from .client.producer import ProduceSettings
from .protocol.compression import CODEC_NAMES
from .protocol.errors import ConfigurationError
from .protocol.versions import versions_for_release

# Spark refuses these for its kafka source/sink; we refuse them with the same reasons.
_REJECTED = {
    "auto.offset.reset": "set the source option 'startingOffsets' instead",
    "enable.auto.commit": "the source does not commit offsets through the consumer; "
    "offsets are tracked by Spark",
    "key.deserializer": "keys are always read as bytes; use DataFrame operations to "
    "deserialize them",
    "value.deserializer": "values are always read as bytes; use DataFrame operations to "
    "deserialize them",
    "key.serializer": "keys are always written as bytes; serialize them in the DataFrame",
    "value.serializer": "values are always written as bytes; serialize them in the DataFrame",
    "interceptor.classes": "Kafka interceptors are JVM classes; they cannot run here",
}

# Client settings kafkawire understands today; others under kafka.* fail (see _client_config).
_IGNORED_CLIENT_KEYS = {
    "linger.ms",  # a task sends as soon as its batches are full; nothing waits to fill them
    "group.id",  # used by later features (offset commits); harmless for batch reads
    "session.timeout.ms", "heartbeat.interval.ms", "max.poll.records", "max.poll.interval.ms",
    "receive.buffer.bytes", "send.buffer.bytes", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "connections.max.idle.ms", "buffer.memory", "max.block.ms",
    "security.protocol",  # only PLAINTEXT, checked below
}

_NOT_YET = {
    "assign": "the 'assign' option", "subscribepattern": "the 'subscribePattern' option",
    "startingtimestamp": "startingTimestamp", "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "minpartitions": "minPartitions", "maxrecordsperpartition": "maxRecordsPerPartition",
}


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in options.items()}


def _int(opts: dict[str, str], key: str, default: int, minimum: int = 0, shown: str | None = None) -> int:
    raw = opts.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigurationError(f"{shown or key} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigurationError(f"{shown or key} must be >= {minimum}, got {value}")
    return value


def _bool(opts: dict[str, str], key: str, default: bool, shown: str | None = None) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    v = raw.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigurationError(f"{shown or key} must be true or false, got {raw!r}")


def _kafka_settings(opts: dict[str, str]) -> dict[str, str]:
    return {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}


def _client_config(opts: dict[str, str], known: set[str]) -> tuple[ClientConfig, dict[str, str]]:
    kafka = _kafka_settings(opts)
    for key, why in _REJECTED.items():
        if key in kafka:
            raise ConfigurationError(f"Kafka option 'kafka.{key}' is not supported: {why}")
    servers = kafka.get("bootstrap.servers", "").strip()
    if not servers:
        raise ConfigurationError(
            "option 'kafka.bootstrap.servers' is required: set it to the brokers' "
            "host:port list, e.g. .option('kafka.bootstrap.servers', 'broker1:9092')"
        )
    protocol = kafka.get("security.protocol", "PLAINTEXT").upper()
    if protocol != "PLAINTEXT":
        raise ConfigurationError(
            f"kafka.security.protocol={protocol} is not supported yet; kafkawire speaks "
            "PLAINTEXT only in this release"
        )
    for key in kafka:
        if key.startswith(("sasl.", "ssl.")):
            raise ConfigurationError(
                f"'kafka.{key}' is not supported yet (TLS and SASL come in a later release); "
                "refusing to connect without the security you asked for"
            )
    allowed = known | _IGNORED_CLIENT_KEYS | {
        "bootstrap.servers", "client.id", "request.timeout.ms",
        "socket.connection.setup.timeout.ms", "retry.backoff.ms", "retry.backoff.max.ms",
        "metadata.max.age.ms", "api.version.request", "broker.version.fallback",
    }
    unknown = sorted(k for k in kafka if k not in allowed)
    if unknown:
        raise ConfigurationError(
            "unsupported Kafka client option(s): "
            + ", ".join(f"'kafka.{k}'" for k in unknown)
            + ". See the README for the kafka.* settings kafkawire understands"
        )
    ki = {k: v for k, v in kafka.items()}
    fallback = kafka.get("broker.version.fallback", "0.10.0").strip()
    try:
        versions_for_release(fallback)
    except ValueError as exc:
        raise ConfigurationError(f"kafka.broker.version.fallback: {exc}") from None
    config = ClientConfig(
        bootstrap_servers=tuple(parse_bootstrap(servers)),
        client_id=kafka.get("client.id", "spark-kafka-wire"),
        request_timeout_ms=_int(ki, "request.timeout.ms", 30_000, 1, "kafka.request.timeout.ms"),
        connect_timeout_ms=_int(
            ki, "socket.connection.setup.timeout.ms", 10_000, 1,
            "kafka.socket.connection.setup.timeout.ms",
        ),
        retry_backoff_ms=_int(ki, "retry.backoff.ms", 100, 0, "kafka.retry.backoff.ms"),
        retry_backoff_max_ms=_int(ki, "retry.backoff.max.ms", 1000, 0, "kafka.retry.backoff.max.ms"),
        metadata_max_age_ms=_int(ki, "metadata.max.age.ms", 300_000, 0, "kafka.metadata.max.age.ms"),
        api_version_request=_bool(ki, "api.version.request", True, "kafka.api.version.request"),
        broker_version_fallback=fallback,
    )
    return config, kafka


@dataclass(frozen=True)
class OffsetSpec:
    """``earliest``/``latest`` for every partition, or a JSON map topic → partition → offset
    (-2 earliest, -1 latest)."""

    default: int | None
    specific: dict[tuple[str, int], int] = field(default_factory=dict)

    def for_partitions(self, tps: list[tuple[str, int]], option: str) -> dict[tuple[str, int], int]:
        if self.default is not None:
            return {tp: self.default for tp in tps}
        missing = sorted(set(tps) - set(self.specific))
        extra = sorted(set(self.specific) - set(tps))
        if missing or extra:
            parts = []
            if missing:
                parts.append("it lacks " + ", ".join(f"{t}-{p}" for t, p in missing))
            if extra:
                parts.append("it names partitions that are not subscribed or do not exist: "
                             + ", ".join(f"{t}-{p}" for t, p in extra))
            raise ConfigurationError(
                f"{option} must give an offset for every subscribed partition: "
                + "; ".join(parts)
            )
        return {tp: self.specific[tp] for tp in tps}


def parse_offsets(raw: str | None, option: str, default: int, allow_earliest: bool, allow_latest: bool) -> OffsetSpec:
    if raw is None:
        return OffsetSpec(default)
    text = raw.strip()
    word = text.lower()
    if word in ("earliest", "latest"):
        value = EARLIEST if word == "earliest" else LATEST
        _check_special(value, option, allow_earliest, allow_latest, None)
        return OffsetSpec(value)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise ConfigurationError(
            f"{option} must be 'earliest', 'latest' or JSON like "
            f"{{\"topic\":{{\"0\":23,\"1\":-2}}}}, got {raw!r}"
        ) from None
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise ConfigurationError(f"{option} JSON must map topic -> {{partition: offset}}, got {raw!r}")
    specific: dict[tuple[str, int], int] = {}
    for topic, parts in doc.items():
        for p, off in parts.items():
            try:
                pi = int(p)
            except ValueError:
                raise ConfigurationError(f"{option}: partition {p!r} of {topic!r} is not a number") from None
            if not isinstance(off, int) or isinstance(off, bool) or off < -2:
                raise ConfigurationError(
                    f"{option}: offset for {topic}-{p} must be an integer >= -2, got {off!r}"
                )
            _check_special(off, option, allow_earliest, allow_latest, f"{topic}-{pi}")
            specific[(topic, pi)] = off
    return OffsetSpec(None, specific)


def _check_special(value: int, option: str, allow_earliest: bool, allow_latest: bool, where: str | None) -> None:
    at = f" for {where}" if where else ""
    if value == EARLIEST and not allow_earliest:
        raise ConfigurationError(f"{option}{at} cannot be earliest (-2) for batch queries")
    if value == LATEST and not allow_latest:
        raise ConfigurationError(f"{option}{at} cannot be latest (-1) for batch queries")


@dataclass(frozen=True)
class SourceOptions:
    client: ClientConfig
    topics: tuple[str, ...]
    starting: OffsetSpec
    ending: OffsetSpec
    fetch: FetchSettings
    max_records_per_batch: int


def parse_source_options(options: Mapping[str, str]) -> SourceOptions:
    opts = _lower(options)
    for key, name in _NOT_YET.items():
        if key in opts:
            raise ConfigurationError(f"{name} is not supported yet by kafkawire; use 'subscribe'")
    if _bool(opts, "includeheaders", False, "includeHeaders"):
        raise ConfigurationError("includeHeaders=true is not supported yet by kafkawire")
    client, kafka = _client_config(opts, {
        "max.partition.fetch.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "fetch.min.bytes",
        "check.crcs", "isolation.level",
    })
    subscribe = opts.get("subscribe")
    if subscribe is None:
        raise ConfigurationError(
            "one of the options 'subscribe', 'subscribePattern' or 'assign' is required; "
            "kafkawire supports 'subscribe' (a comma-separated list of topics)"
        )
    topics = tuple(dict.fromkeys(t.strip() for t in subscribe.split(",") if t.strip()))
    if not topics:
        raise ConfigurationError("option 'subscribe' names no topic")
    isolation = kafka.get("isolation.level", "read_uncommitted").lower()
    if isolation != "read_uncommitted":
        raise ConfigurationError(
            f"kafka.isolation.level={isolation} is not supported yet; use read_uncommitted"
        )
    fetch = FetchSettings(
        max_partition_fetch_bytes=_int(kafka, "max.partition.fetch.bytes", 1 << 20, 1,
                                       "kafka.max.partition.fetch.bytes"),
        fetch_max_bytes=_int(kafka, "fetch.max.bytes", 50 << 20, 1, "kafka.fetch.max.bytes"),
        max_wait_ms=_int(kafka, "fetch.max.wait.ms", 500, 0, "kafka.fetch.max.wait.ms"),
        min_bytes=_int(kafka, "fetch.min.bytes", 1, 0, "kafka.fetch.min.bytes"),
        check_crcs=_bool(kafka, "check.crcs", True, "kafka.check.crcs"),
    )
    return SourceOptions(
        client=client,
        topics=topics,
        starting=parse_offsets(opts.get("startingoffsets"), "startingOffsets", EARLIEST,
                               allow_earliest=True, allow_latest=False),
        ending=parse_offsets(opts.get("endingoffsets"), "endingOffsets", LATEST,
                             allow_earliest=False, allow_latest=True),
        fetch=fetch,
        max_records_per_batch=_int(opts, "maxrecordsperbatch", 10_000, 1, "maxRecordsPerBatch"),
    )


@dataclass(frozen=True)
class SinkOptions:
    client: ClientConfig
    topic: str | None
    produce: ProduceSettings


def _acks(raw: str | None) -> int:
    if raw is None:
        return -1
    v = raw.strip().lower()
    if v in ("all", "-1"):
        return -1
    if v in ("0", "1"):
        return int(v)
    raise ConfigurationError(f"kafka.acks must be 0, 1 or all, got {raw!r}")


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    client, kafka = _client_config(opts, {
        "acks", "compression.type", "batch.size", "max.request.size", "retries",
        "delivery.timeout.ms", "request.timeout.ms",
    })
    codec_name = kafka.get("compression.type", "none").strip().lower()
    if codec_name not in CODEC_NAMES:
        raise ConfigurationError(
            f"kafka.compression.type must be one of {', '.join(CODEC_NAMES)}, got {codec_name!r}"
        )
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise ConfigurationError("option 'topic' is empty")
    produce = ProduceSettings(
        acks=_acks(kafka.get("acks")),
        timeout_ms=client.request_timeout_ms,
        compression=CODEC_NAMES[codec_name],
        batch_size=_int(kafka, "batch.size", 512 << 10, 1, "kafka.batch.size"),
        max_request_size=_int(kafka, "max.request.size", 1 << 20, 1, "kafka.max.request.size"),
        retries=_int(kafka, "retries", 2_147_483_647, 0, "kafka.retries"),
        delivery_timeout_ms=_int(kafka, "delivery.timeout.ms", 120_000, 1, "kafka.delivery.timeout.ms"),
        retry_backoff_ms=client.retry_backoff_ms,
    )
    return SinkOptions(client=client, topic=topic.strip() if topic else None, produce=produce)
