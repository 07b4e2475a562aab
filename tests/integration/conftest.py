"""Fixtures for tests against the emulated brokers: legacy (0.8.2 / 0.9.0 / 0.10.0) and 0.7
(with the independent 0.7 client samsa)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.kafka07_broker import Kafka07Broker
from tests.support.legacy_broker import LegacyBroker
from tests.support.samsa07.client import Client
from tests.support.samsa07.handlers import ThreadingHandler


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


@pytest.fixture
def broker() -> Iterator[Callable[..., Kafka07Broker]]:
    """Factory: a started emulated 0.7 broker, stopped after the test."""
    started: list[Kafka07Broker] = []

    def make(**kwargs: object) -> Kafka07Broker:
        b = Kafka07Broker(**kwargs).start()  # type: ignore[arg-type]
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


@pytest.fixture
def samsa() -> Iterator[Callable[[Kafka07Broker], Client]]:
    """Factory: a samsa 0.7 client connected to an emulated broker, closed after the test."""
    clients: list[Client] = []

    def make(b: Kafka07Broker) -> Client:
        c = Client(b.host, ThreadingHandler(), port=b.port, timeout=10)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.disconnect()
