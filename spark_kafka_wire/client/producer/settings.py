"""Producer settings, named after the Java producer's (the ``kafka.`` prefix removed)."""

from __future__ import annotations

from dataclasses import dataclass

MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


@dataclass(frozen=True)
class ProduceSettings:
    acks: int = -1
    timeout_ms: int = 30_000
    compression: int = 0
    batch_size: int = 512 << 10
    max_request_size: int = 1 << 20
    retries: int = 2_147_483_647
    delivery_timeout_ms: int = 120_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    linger_ms: int = 5
    buffer_memory: int = 32 << 20
    max_in_flight: int = 5
    # True: required (error when the broker cannot); False: off; None: the default, on with
    # acks=all and retries > 0 where the broker supports it, silently off elsewhere.
    enable_idempotence: bool | None = None
    # Set: every batch is written in a transaction of this transactional id (transactions.py),
    # which the caller ends; idempotence is then required.
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000

    @property
    def idempotence_wanted(self) -> bool:
        if self.transactional_id is not None:
            return True
        if self.enable_idempotence is not None:
            return self.enable_idempotence
        return self.acks == -1 and self.retries > 0 and \
            self.max_in_flight <= MAX_IN_FLIGHT_FOR_IDEMPOTENCE
