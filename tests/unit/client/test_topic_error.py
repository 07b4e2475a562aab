"""``topic_error``: the one wording of a topic a Metadata answer did not give (issue 46 item
15). "Does not exist" only where the broker said the topic is unknown; a refused DESCRIBE says
that alone, with the principal and the kafka-acls grant."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.metadata.cluster import TopicInfo, topic_error
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    LeaderNotAvailableError,
    TopicAuthorizationError,
    UnknownTopicOrPartitionError,
)

pytestmark = pytest.mark.unit
MISSING = "the subscribed topic does not exist"


def _info(code: int) -> TopicInfo:
    return TopicInfo(name="t", error_code=code, is_internal=False, partitions={})


@pytest.mark.parametrize("info", [None, _info(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])
def test_an_unknown_topic_is_said_to_be_missing(info: TopicInfo | None) -> None:
    error = topic_error("t", info, "User:bob", MISSING)
    assert isinstance(error, UnknownTopicOrPartitionError)
    assert f"in Metadata for topic 't': {MISSING}" in str(error)
    assert "User:bob" not in str(error)


def test_a_refused_describe_names_the_acl_and_nothing_else() -> None:
    error = topic_error("t", _info(ErrorCode.TOPIC_AUTHORIZATION_FAILED), "User:bob", MISSING)
    assert isinstance(error, TopicAuthorizationError) and error.principal == "User:bob"
    assert str(error) == (
        "[KAFKA_BROKER_ERROR.TOPIC_AUTHORIZATION_FAILED] Kafka error TOPIC_AUTHORIZATION_FAILED "
        "(29) in Metadata for topic 't'. User:bob is not authorized to DESCRIBE topic 't': "
        "grant User:bob DESCRIBE on topic 't' (kafka-acls --add --allow-principal User:bob "
        "--operation Describe --topic t); a reader needs Read and a writer Write, each of "
        "which includes Describe")


def test_another_code_is_not_called_a_missing_topic() -> None:
    error = topic_error("t", _info(ErrorCode.LEADER_NOT_AVAILABLE), None, MISSING)
    assert isinstance(error, LeaderNotAvailableError) and MISSING not in str(error)
