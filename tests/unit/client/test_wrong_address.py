"""A planner's first request (pool.planner_client, issue 46 item 7): when every bootstrap
address refuses the connection or has a name without an address, it fails at once, not after
the retries of kafka.request.timeout.ms (30 s by default); anything else, and every request
that is not a planner's, keeps the retry rule. (In Spark: tests/spark/test_wrong_address.py.)"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.pool import planner_client
from spark_kafka_wire.errors import NoBrokersAvailableError


def _refused() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that takes connections and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"127.0.0.1:{s.getsockname()[1]}"


@pytest.mark.parametrize("servers", [
    lambda: _refused(),
    lambda: "no-such-broker.invalid:9092",
    lambda: f"{_refused()},no-such-broker.invalid:9092,{_refused()}",
])
def test_every_address_refused_or_unresolvable_fails_planning_at_once(servers) -> None:
    config = ClientConfig.from_servers(servers())  # request.timeout.ms: 30 s
    started = time.monotonic()
    with pytest.raises(NoBrokersAvailableError) as raised:
        planner_client(config).fetch_metadata([])
    assert time.monotonic() - started < 1
    assert raised.value.nothing_listens
    assert "could be reached" in str(raised.value) and "cannot connect" in str(raised.value)


def test_a_planners_client_has_no_io_of_its_own() -> None:
    """Marking a client as a planner's connects nothing: planning asks when it needs to."""
    client = planner_client(ClientConfig.from_servers("no-such-broker.invalid:9092"))
    assert client.first_contact_fails_fast and not client.request_counts()


def test_an_address_that_takes_connections_keeps_the_retry_rule(silent: str) -> None:
    """One silent server among refused ones: not a wrong address for sure (a broker may be
    starting there), so the timeout and its rule decide, not the refusals."""
    config = ClientConfig.from_servers(f"{_refused()},{silent}", request_timeout_ms=300,
                                       connect_timeout_ms=300)
    with pytest.raises(NoBrokersAvailableError) as raised:
        planner_client(config).fetch_metadata([])
    assert not raised.value.nothing_listens


def test_requests_outside_planning_keep_retrying_a_refused_address() -> None:
    """Only planning fails at once: a task's or the CLI's request retries a refused address
    within its budget, as a broker restarting refuses connections for a while."""
    config = ClientConfig.from_servers(_refused(), request_timeout_ms=2000)
    started = time.monotonic()
    with KafkaClient(config) as client, pytest.raises(NoBrokersAvailableError):
        client.fetch_metadata([])
    assert time.monotonic() - started >= 1  # backoffs of 0.1, 0.2, 0.4, 0.8 s
