"""Fixtures for tests against the emulated legacy (0.8.2 / 0.9.0 / 0.10.0) brokers."""

from __future__ import annotations

import pytest

from tests.support.legacy_broker import LegacyBroker


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
