"""Fixtures for tests against the emulated legacy (0.8.2 / 0.9.0 / 0.10.0) brokers."""

from __future__ import annotations

import pytest

from ..legacy_broker import LegacyBroker


@pytest.fixture
def legacy_broker():
    """Factory: a started LegacyBroker of the given release, stopped after the test."""
    started: list[LegacyBroker] = []

    def make(release: str, **kwargs: object) -> LegacyBroker:
        broker = LegacyBroker(release, **kwargs).start()  # type: ignore[arg-type]
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.stop()


def legacy_client_missing() -> str | None:
    """Why kafkawire cannot talk to legacy brokers yet, or None once the support has landed.

    Only a missing feature skips: an ImportError, missing ClientConfig fields, or the decoder
    saying legacy message sets are "not supported yet". Anything else runs the tests, so a
    regression fails loudly instead of skipping.
    """
    try:
        from spark_kafka_wire.client import fetcher, producer  # noqa: F401
        from spark_kafka_wire.client.config import ClientConfig
        from spark_kafka_wire.protocol.records import decode_record_batches
    except ImportError as exc:
        return f"legacy client support not landed (import failed: {exc})"
    fields = set(ClientConfig.__dataclass_fields__)
    need = {"api_version_request", "broker_version_fallback"}
    if not need <= fields:
        return f"legacy client support not landed (ClientConfig lacks {sorted(need - fields)})"
    if not hasattr(producer.Producer, "record_magic"):
        return "legacy client support not landed (Producer.record_magic missing)"
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    builder = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 20)
    builder.append(0, None, b"k", b"v")
    try:
        decode_record_batches(bytes(builder.build()), start_offset=0, end_offset=1)
    except Exception as exc:
        if "not supported yet" in str(exc):
            return f"legacy client support not landed ({exc})"
    return None


@pytest.fixture
def legacy_client_support() -> None:
    reason = legacy_client_missing()
    if reason:
        pytest.skip(reason)
