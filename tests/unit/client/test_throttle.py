"""KIP-219 on a connection (client/wire/connection.py): an answer's throttle_time_ms holds the next
request to that broker, from the versions where the client must throttle (Fetch v8+, Produce
v6+; before them the broker delayed its answer itself), within request.timeout.ms and the
operation's deadline. The wire-level proof is tests/faults/test_empty_fetches.py."""

from __future__ import annotations

import time

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.wire.connection import BrokerConnection, Deadline
from spark_kafka_wire.protocol.messages import FETCH, METADATA, PRODUCE


def _conn(deadline: Deadline | None = None, **config: object) -> BrokerConnection:
    return BrokerConnection("b1", 9092, ClientConfig.from_servers("b1:9092", **config),
                            deadline=lambda: deadline)


def test_only_versions_where_the_client_throttles_hold_the_next_request() -> None:
    conn = _conn()
    assert conn._throttle(FETCH, 7, {"throttle_time_ms": 300}) == 0
    assert conn._throttle(PRODUCE, 5, {"throttle_time_ms": 300}) == 0
    assert conn._throttle(METADATA, 12, {"throttle_time_ms": 300}) == 0  # not listed
    began = time.monotonic()
    conn._wait_for_throttle()
    assert time.monotonic() - began < 0.05
    assert conn._throttle(FETCH, 8, {"throttle_time_ms": 300}) == 300
    conn._wait_for_throttle()
    assert time.monotonic() - began >= 0.3 and conn.throttled_s > 0.25


def test_a_throttle_is_bounded_by_the_request_timeout_and_the_deadline() -> None:
    conn = _conn(request_timeout_ms=200)
    assert conn._throttle(PRODUCE, 6, {"throttle_time_ms": 2_000_000_000}) == 200
    began = time.monotonic()
    conn._wait_for_throttle()
    assert 0.19 <= time.monotonic() - began < 0.5
    soon = Deadline(time.monotonic() + 0.1, "kafka.delivery.timeout.ms")
    conn = _conn(soon, request_timeout_ms=5000)
    conn._throttle(FETCH, 11, {"throttle_time_ms": 3000})
    began = time.monotonic()
    conn._wait_for_throttle()
    assert time.monotonic() - began < 0.5
