"""Option parsing shared by the source and the sink: client settings and typed helpers.

Names and semantics follow Spark's built-in kafka source and sink (keys are case-insensitive,
``kafka.``-prefixed keys are client settings with the prefix removed), so switching formats
means changing one string. Anything kafkawire does not support yet fails loudly rather than
being ignored: silently dropping, say, a security setting would connect in plaintext.
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_kafka_wire.client.config import ClientConfig, parse_bootstrap
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.protocol.versions import versions_for_release

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
    "linger.ms",  # a producer setting: the sink reads it (sink_options); the source ignores it
    "group.id",  # used by later features (offset commits); harmless for batch reads
    "session.timeout.ms", "heartbeat.interval.ms", "max.poll.records", "max.poll.interval.ms",
    "receive.buffer.bytes", "send.buffer.bytes", "reconnect.backoff.ms",
    "reconnect.backoff.max.ms", "connections.max.idle.ms", "buffer.memory", "max.block.ms",
    "security.protocol",  # only PLAINTEXT, checked below
}

def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): str(v) for k, v in options.items()}


def int_option(opts: dict[str, str], key: str, default: int, minimum: int = 0, shown: str | None = None) -> int:
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


def bool_option(opts: dict[str, str], key: str, default: bool, shown: str | None = None) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    v = raw.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigurationError(f"{shown or key} must be true or false, got {raw!r}")


def kafka_settings(opts: dict[str, str]) -> dict[str, str]:
    return {k[len("kafka."):]: v for k, v in opts.items() if k.startswith("kafka.")}


def client_config(opts: dict[str, str], known: set[str]) -> tuple[ClientConfig, dict[str, str]]:
    kafka = kafka_settings(opts)
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
        request_timeout_ms=int_option(ki, "request.timeout.ms", 30_000, 1, "kafka.request.timeout.ms"),
        connect_timeout_ms=int_option(
            ki, "socket.connection.setup.timeout.ms", 10_000, 1,
            "kafka.socket.connection.setup.timeout.ms",
        ),
        retry_backoff_ms=int_option(ki, "retry.backoff.ms", 100, 0, "kafka.retry.backoff.ms"),
        retry_backoff_max_ms=int_option(ki, "retry.backoff.max.ms", 1000, 0, "kafka.retry.backoff.max.ms"),
        metadata_max_age_ms=int_option(ki, "metadata.max.age.ms", 300_000, 0, "kafka.metadata.max.age.ms"),
        api_version_request=bool_option(ki, "api.version.request", True, "kafka.api.version.request"),
        broker_version_fallback=fallback,
    )
    return config, kafka
