"""Kafka error codes map to typed families that know whether to retry and refresh."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.errors import RequestTimeoutError
from spark_kafka_wire.protocol.errors import (
    ERRORS,
    BrokerRequestTimedOutError,
    InvalidMetadataError,
    KafkaError,
    NotControllerError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    RetriableError,
    UnknownTopicOrPartitionError,
    check_error,
    error_for_code,
)

# Codes that mean "refresh metadata and retry": the leader or partition metadata is stale (each
# code's meaning: https://kafka.apache.org/protocol#protocol_error_codes).
REFRESH = [3, 5, 6, 9, 56, 74, 78]


@pytest.mark.parametrize("code", REFRESH)
def test_metadata_refresh_codes(code: int) -> None:
    exc = error_for_code(code)
    assert isinstance(exc, InvalidMetadataError) and exc.retriable and exc.invalid_metadata


def test_families() -> None:
    assert isinstance(error_for_code(1), OffsetOutOfRangeError) and not error_for_code(1).retriable
    for code in (10, 18):
        assert isinstance(error_for_code(code), RecordTooLargeError)
        assert not error_for_code(code).retriable
    assert isinstance(error_for_code(7), RetriableError) and not error_for_code(7).invalid_metadata


def test_message_names_the_place() -> None:
    exc = error_for_code(6, topic="orders", partition=3, offset=17, broker="b1:9092", context="Fetch")
    text = str(exc)
    for part in ("NOT_LEADER_OR_FOLLOWER (6)", "in Fetch", "topic 'orders'", "partition 3",
                 "offset 17", "broker b1:9092"):
        assert part in text


def test_unknown_code_still_typed() -> None:
    exc = error_for_code(31999)
    assert type(exc) is KafkaError and exc.code == 31999 and "31999" in str(exc)


def test_check_error() -> None:
    check_error(0)
    with pytest.raises(OffsetOutOfRangeError):
        check_error(1, topic="t")


def test_table_codes_are_unique_and_named() -> None:
    assert all(spec.code == code and spec.name.isupper() for code, (spec, _) in ERRORS.items())


def test_not_controller_is_stale_metadata_not_a_missing_topic() -> None:
    """NOT_CONTROLLER (41) once mapped to UnknownTopicOrPartitionError, which a reader takes
    for a deleted topic; it only means the controller moved: retry after a refresh."""
    exc = error_for_code(41, topic="t", context="CreateTopics")
    assert type(exc) is NotControllerError
    assert isinstance(exc, InvalidMetadataError) and exc.retriable and exc.invalid_metadata
    assert not isinstance(exc, UnknownTopicOrPartitionError)


def test_the_brokers_request_timed_out_is_not_the_clients_timeout() -> None:
    exc = error_for_code(7)
    assert type(exc) is BrokerRequestTimedOutError and exc.retriable
    assert not isinstance(exc, RequestTimeoutError)
    with pytest.warns(DeprecationWarning, match="BrokerRequestTimedOutError"):
        from spark_kafka_wire.errors import RequestTimedOutError  # noqa: PLC0415
    assert RequestTimedOutError is BrokerRequestTimedOutError
