"""Admin requests whose controller moved (NOT_CONTROLLER) are sent again after a metadata
refresh, never reported as a missing topic."""

from __future__ import annotations

from types import SimpleNamespace

from spark_kafka_wire.client.metadata import admin
from spark_kafka_wire.protocol.errors import ErrorCode, NotControllerError
from tests.support.errors import raises_condition


class _Conn:
    name = "b1:9092"

    def __init__(self, answers: list[dict]) -> None:
        self.answers = answers

    def request(self, spec, body):
        return self.answers.pop(0)


class _Client:
    """Retries retriable errors as cluster.retry does (a few times), refreshing metadata."""

    config = SimpleNamespace(principal=None)

    def __init__(self, answers: list[dict]) -> None:
        self.conn = _Conn(answers)
        self.refreshes = 0

    def fetch_metadata(self, topics):
        self.refreshes += 1
        return SimpleNamespace(controller_id=1)

    def broker(self, node_id):
        return self.conn

    def retry(self, attempt, what, retries=None):
        for _ in range(3):
            try:
                return attempt()
            except Exception as exc:  # noqa: BLE001
                if not getattr(exc, "invalid_metadata", False):
                    raise
                last = exc
        raise last


def _answer(code: int) -> dict:
    return {"responses": [{"name": "t", "error_code": int(code), "error_message": None}]}


def test_a_moved_controller_is_asked_again() -> None:
    client = _Client([_answer(ErrorCode.NOT_CONTROLLER), _answer(ErrorCode.NONE)])
    admin.delete_topics(client, ["t"])  # type: ignore[arg-type]
    assert client.refreshes == 2 and not client.conn.answers


def test_a_controller_that_keeps_moving_fails_as_not_controller() -> None:
    client = _Client([_answer(ErrorCode.NOT_CONTROLLER)] * 3)
    with raises_condition(NotControllerError, "KAFKA_BROKER_ERROR.NOT_CONTROLLER",
                          "topic 't'", "broker b1:9092", "DeleteTopics"):
        admin.delete_topics(client, ["t"])  # type: ignore[arg-type]
