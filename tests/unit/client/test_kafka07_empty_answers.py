"""A Kafka 0.7 range read meeting answers with no message below the range's end (segment
ends; a log that no longer reaches the end) follows the rule of every reader
(client/fetching/empty_answers.py): waited for within kafka.request.timeout.ms, not a count of 20."""

from __future__ import annotations

import time

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import FetchStalledError
from spark_kafka_wire.client.kafka07.fetch import fetch_range
from spark_kafka_wire.protocol.kafka07 import encode_message_set

MESSAGES = encode_message_set([b"one", b"two", b"three"])
CONFIG = ClientConfig.from_servers("b07:9092", broker_version_fallback="0.7.2",
                                   request_timeout_ms=1500, retry_backoff_ms=1,
                                   retry_backoff_max_ms=4)


class _Broker:
    """Stands for a Kafka07Connection: ``empty`` answers hold nothing, then the messages."""

    name = "b07:9092"

    def __init__(self, empty: int | None) -> None:
        self.empty = empty  # None: empty for good
        self.fetches = 0

        class _Conn:  # what the rule reads: the config and the operation's deadline
            config = CONFIG

            @staticmethod
            def operation_deadline() -> None:
                return None

        self.conn = _Conn()

    def send(self, kind, frame, asked=None):  # noqa: ANN001, ANN201
        self.fetches += 1
        return self.fetches

    def receive(self, pending):  # noqa: ANN001, ANN201
        if self.empty is None or pending <= self.empty:
            return 0, memoryview(b"")
        return 0, memoryview(MESSAGES)

    def abandon(self, pending) -> None:  # noqa: ANN001
        pass


def test_more_than_twenty_empty_answers_within_the_budget_are_waited_for() -> None:
    broker = _Broker(empty=40)
    chunks = list(fetch_range(broker, "t", 0, 0, len(MESSAGES)))  # type: ignore[arg-type]
    assert [v for c in chunks for v in c.values.to_pylist()] == [b"one", b"two", b"three"]
    assert broker.fetches == 41


def test_empty_answers_past_the_budget_fail_naming_time_place_and_option() -> None:
    broker = _Broker(empty=None)
    began = time.monotonic()
    with pytest.raises(FetchStalledError) as info:
        list(fetch_range(broker, "t", 0, 0, len(MESSAGES)))  # type: ignore[arg-type]
    seconds = time.monotonic() - began
    assert 1.4 <= seconds < 3.0, seconds
    text = str(info.value)
    assert "1500 ms of kafka.request.timeout.ms ran out" in text
    assert f"the range ends at byte offset {len(MESSAGES)}" in text
    assert "topic 't', partition 0, offset 0, broker b07:9092" in text
