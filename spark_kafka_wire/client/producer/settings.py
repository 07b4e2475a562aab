"""Producer settings, named after the Java producer's (the ``kafka.`` prefix removed).

Their defaults are the option table's (``options/table.py``), so a producer built here writes
as a query given no such option does.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.client.errors import UNSUPPORTED_VALUE, ConfigurationError
from spark_kafka_wire.options.table import int_default, text_default
from spark_kafka_wire.protocol.compression import CODEC_NAMES

MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


def parse_acks(raw: str) -> int:
    """``kafka.acks``: ``all`` (or ``-1``), ``0`` or ``1``, as the Produce request's acks."""
    v = raw.strip().lower()
    if v in ("all", "-1"):
        return -1
    if v in ("0", "1"):
        return int(v)
    raise ConfigurationError.of(UNSUPPORTED_VALUE, option="kafka.acks", allowed="0, 1, all",
                                got=repr(raw))


@dataclass(frozen=True)
class ProduceSettings:
    acks: int = parse_acks(text_default("kafka.acks"))
    timeout_ms: int = int_default("kafka.request.timeout.ms")
    compression: int = CODEC_NAMES[text_default("kafka.compression.type")]
    # kafka.compression.<codec>.level of the codec in use; None: the codec's default
    compression_level: int | None = None
    batch_size: int = int_default("kafka.batch.size")
    max_request_size: int = int_default("kafka.max.request.size")
    retries: int = int_default("kafka.retries")
    delivery_timeout_ms: int = int_default("kafka.delivery.timeout.ms")
    retry_backoff_ms: int = int_default("kafka.retry.backoff.ms")
    retry_backoff_max_ms: int = int_default("kafka.retry.backoff.max.ms")
    linger_ms: int = int_default("kafka.linger.ms")
    buffer_memory: int = int_default("kafka.buffer.memory")
    max_in_flight: int = int_default("kafka.max.in.flight.requests.per.connection")
    # True: required (error when the broker cannot); False: off; None: the default, on with
    # acks=all and retries > 0 where the broker supports it, silently off elsewhere.
    enable_idempotence: bool | None = None
    # Set: every batch is written in a transaction of this transactional id (transactions.py),
    # which the caller ends; idempotence is then required.
    transactional_id: str | None = None
    transaction_timeout_ms: int = int_default("kafka.transaction.timeout.ms")

    @property
    def idempotence_wanted(self) -> bool:
        if self.transactional_id is not None:
            return True
        if self.enable_idempotence is not None:
            return self.enable_idempotence
        return self.acks == -1 and self.retries > 0 and \
            self.max_in_flight <= MAX_IN_FLIGHT_FOR_IDEMPOTENCE
