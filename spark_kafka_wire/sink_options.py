"""Sink options (``df.write.format("kafkawire")``), parsed once on the driver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .client.config import ClientConfig
from .client.producer import ProduceSettings
from .options import client_config, int_option, lower_keys
from .protocol.compression import CODEC_NAMES
from .protocol.errors import ConfigurationError


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
    opts = lower_keys(options)
    client, kafka = client_config(opts, {
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
        batch_size=int_option(kafka, "batch.size", 512 << 10, 1, "kafka.batch.size"),
        max_request_size=int_option(kafka, "max.request.size", 1 << 20, 1, "kafka.max.request.size"),
        retries=int_option(kafka, "retries", 2_147_483_647, 0, "kafka.retries"),
        delivery_timeout_ms=int_option(kafka, "delivery.timeout.ms", 120_000, 1, "kafka.delivery.timeout.ms"),
        retry_backoff_ms=client.retry_backoff_ms,
    )
    return SinkOptions(client=client, topic=topic.strip() if topic else None, produce=produce)
