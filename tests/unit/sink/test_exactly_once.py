"""The exactly-once sink's pure parts: batch markers, and what transactional errors tell users."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.producer.transactions import explain_transaction_error
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.protocol.errors import AuthorizationError, ErrorCode, error_for_code
from spark_kafka_wire.sink.exactly_once import (
    BATCH_BITS,
    TaskBatch,
    committed_batch,
    marker_metadata,
    marker_offset,
    task_transactional_id,
)
from tests.support.errors import raises_condition

Q1 = "d0bc55c5-6f13-4243-90ea-e6daea3c7c40"
Q2 = "0d6a4f0e-0a4b-4f5c-9d3e-4d1a3b2c1e0f"


def _markers(*entries: tuple[int, str]) -> dict:
    return {("t", i): e for i, e in enumerate(entries)}


def test_marker_roundtrip_with_and_without_metadata() -> None:
    b = TaskBatch(Q1, 41)
    offset = marker_offset(b)
    assert 0 <= offset < 1 << 63  # a valid, non-negative committed offset
    assert offset & ((1 << BATCH_BITS) - 1) == 41
    assert committed_batch(_markers((offset, marker_metadata(b))), Q1) == 41
    assert committed_batch(_markers((offset, "")), Q1) == 41  # a broker that drops metadata


def test_markers_of_another_query_are_not_ours() -> None:
    mine, theirs = TaskBatch(Q1, 3), TaskBatch(Q2, 900)
    markers = _markers((marker_offset(theirs), ""), (marker_offset(mine), ""))
    assert committed_batch(markers, Q1) == 3
    assert committed_batch(_markers((marker_offset(theirs), "")), Q1) is None
    # Same fingerprint bits but metadata naming another query: not ours.
    forged = (marker_offset(mine), marker_metadata(TaskBatch(Q2, 3)))
    assert committed_batch(_markers(forged), Q1) is None


def test_the_latest_marker_counts_and_plain_offsets_are_ignored() -> None:
    markers = _markers((marker_offset(TaskBatch(Q1, 7)), ""), (marker_offset(TaskBatch(Q1, 9)), ""),
                       (1234, ""), (-1, ""))
    assert committed_batch(markers, Q1) == 9
    assert committed_batch({}, Q1) is None


def test_batch_ids_beyond_the_marker_are_refused() -> None:
    assert marker_offset(TaskBatch(Q1, (1 << BATCH_BITS) - 1)) > 0
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          "does not fit"):
        marker_offset(TaskBatch(Q1, 1 << BATCH_BITS))


def test_task_transactional_ids() -> None:
    assert task_transactional_id("orders-copy", 7) == "orders-copy-7"


@pytest.mark.parametrize(("code", "says"), [
    (ErrorCode.PRODUCER_FENCED, "another task attempt or query uses the same "
                                "kafka.transactional.id prefix, or the transaction outlived "
                                "kafka.transaction.timeout.ms"),
    (ErrorCode.INVALID_PRODUCER_EPOCH, "taken over by a newer producer epoch"),
    (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
     "not authorized to WRITE transactional id 'p-3': grant the client's principal WRITE on "
     "transactional id 'p-3' (kafka-acls --add --allow-principal User:<principal> "
     "--operation Write --transactional-id p-3)"),
    (ErrorCode.INVALID_TRANSACTION_TIMEOUT, "kafka.transaction.timeout.ms is above the "
                                            "broker's transaction.max.timeout.ms"),
    (ErrorCode.INVALID_TXN_STATE, "not in a state that allows this"),
])
def test_transactional_errors_say_what_to_do(code: ErrorCode, says: str) -> None:
    raw = error_for_code(code, topic="out", partition=2, broker="b:9092", context="EndTxn")
    explained = explain_transaction_error(raw, "p-3")
    assert type(explained) is type(raw) and explained.code == code
    assert says in str(explained)
    assert "EndTxn" in str(explained) and "b:9092" in str(explained)


def test_an_unauthorized_transactional_id_is_an_authorization_error() -> None:
    raw = error_for_code(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, context="InitProducerId")
    assert isinstance(explain_transaction_error(raw, "p-0"), AuthorizationError)


def test_other_errors_pass_unchanged() -> None:
    raw = error_for_code(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert explain_transaction_error(raw, "p-0") is raw


@pytest.mark.parametrize(("code", "where", "says"), [
    (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
     {"transactional_id": "job-3", "context": "InitProducerId"},
     "grant User:a WRITE on every transactional id starting with 'job' (kafka-acls --add "
     "--allow-principal User:a --operation Write --resource-pattern-type prefixed "
     "--transactional-id job)"),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, {"group": "job-3", "context": "TxnOffsetCommit"},
     "--operation Read --resource-pattern-type prefixed --group job)"),
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, {"topic": "out", "context": "Produce"},
     "--operation Write --topic out)"),
])
def test_a_task_refused_its_id_is_told_to_grant_the_prefix(code, where, says) -> None:
    """Every task's transactional id (and marker group) is the prefix plus its partition: the
    writer advises one PREFIXED ACL, not an ACL per task."""
    from types import SimpleNamespace

    from spark_kafka_wire.sink.batch_writer import KafkaWireBatchWriter

    writer = object.__new__(KafkaWireBatchWriter)
    writer.options = SimpleNamespace(client=SimpleNamespace(kafka07=False),  # type: ignore[assignment]
                                     transactional_prefix="job")

    def refuse(iterator: object) -> None:
        raise error_for_code(code, principal="User:a", **where)

    writer._write = refuse  # type: ignore[method-assign,assignment]
    with pytest.raises(AuthorizationError) as raised:
        writer.write(iter(()))
    assert raised.value.code == code and says in str(raised.value)
