"""Producer settings, named after the Java producer's (the ``kafka.`` prefix removed).

Their defaults are ``client/defaults.py``'s, which the option table reads too, so a producer
built here writes as a query given no such option does.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.client import defaults
from spark_kafka_wire.client.errors import UNSUPPORTED_VALUE, ConfigurationError
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
    acks: int = parse_acks(defaults.ACKS)
    timeout_ms: int = defaults.REQUEST_TIMEOUT_MS
    compression: int = CODEC_NAMES[defaults.COMPRESSION_TYPE]
    # kafka.compression.<codec>.level of the codec in use; None: the codec's default
    compression_level: int | None = None
    batch_size: int = defaults.BATCH_SIZE
    max_request_size: int = defaults.MAX_REQUEST_SIZE
    retries: int = defaults.RETRIES
    delivery_timeout_ms: int = defaults.DELIVERY_TIMEOUT_MS
    retry_backoff_ms: int = defaults.RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = defaults.RETRY_BACKOFF_MAX_MS
    linger_ms: int = defaults.LINGER_MS
    buffer_memory: int = defaults.BUFFER_MEMORY
    max_in_flight: int = defaults.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION
    # True: required (error when the broker cannot); False: off; None: the default, on with
    # acks=all and retries > 0 where the broker supports it, silently off elsewhere.
    enable_idempotence: bool | None = None
    # Set: every batch is written in a transaction of this transactional id (transactions.py),
    # which the caller ends; idempotence is then required.
    transactional_id: str | None = None
    transaction_timeout_ms: int = defaults.TRANSACTION_TIMEOUT_MS

    @property
    def idempotence_wanted(self) -> bool:
        if self.transactional_id is not None:
            return True
        if self.enable_idempotence is not None:
            return self.enable_idempotence
        return self.acks == -1 and self.retries > 0 and \
            self.max_in_flight <= MAX_IN_FLIGHT_FOR_IDEMPOTENCE
