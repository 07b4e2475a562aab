"""The heartbeat thread of a group member (client/groups/group_member.py, issue 45 item 9) outlives
what a heartbeat meets: a malformed answer, a TLS alert, a failed SASL re-authentication, an
error code, a bug. The coordinator here is a fake connection: the thing under test is the
thread's control flow, not a broker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import SaslAuthenticationError, TlsHandshakeError
from spark_kafka_wire.client.groups import group_member
from spark_kafka_wire.client.groups.group_member import GroupMember, MemberSettings
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.protocol.errors import ErrorCode, KafkaError, ProtocolError
from spark_kafka_wire.protocol.messages import HEARTBEAT
from tests.support.errors import raises_condition

Answer = Callable[[], Any]


def malformed() -> Any:
    """What BrokerConnection.receive does with a Heartbeat answer cut short: the decoder's
    ProtocolError (the connection is closed)."""
    return HEARTBEAT.decode_response(4, b"\x00\x00\x00")


def code(c: int) -> Answer:
    return lambda: {"throttle_time_ms": 0, "error_code": c}


def raises(exc: Exception) -> Answer:
    def answer() -> Any:
        raise exc
    return answer


class Coordinator:
    """A fake coordinator connection answering each Heartbeat with the next of ``answers``
    (the last one again once they run out)."""

    name = "coordinator.example:9092 (node 1)"
    config = ClientConfig.from_servers("coordinator.example:9092")  # an error names its user

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.heartbeats = 0

    def request(self, spec: Any, body: Any) -> Any:
        assert spec is HEARTBEAT and body["member_id"] == "m-1"
        self.heartbeats += 1
        return self.answers.pop(0)() if len(self.answers) > 1 else self.answers[0]()


@pytest.fixture
def member(monkeypatch) -> Iterator[Callable[..., tuple[GroupMember, list[Coordinator]]]]:
    """A member of generation 5 whose heartbeats go to fake coordinators: the first one given,
    then (each time the member looks the coordinator up again) the next."""
    made: list[GroupMember] = []

    def make(*coordinators: list[Answer], session_timeout_ms: int = 45_000
             ) -> tuple[GroupMember, list[Coordinator]]:
        fakes = [Coordinator(a) for a in coordinators]
        found: list[Coordinator] = []

        def find(client: Any, group: str) -> Coordinator:
            found.append(fakes[min(len(found), len(fakes) - 1)])
            return found[-1]

        monkeypatch.setattr(group_member, "find_coordinator", find)
        client = KafkaClient(ClientConfig.from_servers(
            "127.0.0.1:1", retry_backoff_ms=5, retry_backoff_max_ms=20))
        m = GroupMember(client, MemberSettings("g", ("t",), session_timeout_ms=session_timeout_ms,
                                               heartbeat_interval_ms=10))
        m.member_id, m.generation = "m-1", 5
        m._answered = time.monotonic()
        m._thread = threading.Thread(target=m._heartbeats, daemon=True)
        m._thread.start()
        made.append(m)
        return m, found

    yield make
    for m in made:
        m._stop.set()
        assert m._thread is not None
        m._thread.join(5)


def eventually(check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.01)


def test_a_malformed_answer_is_retried_on_a_new_connection(member) -> None:
    """Before: the ProtocolError ended the thread; the member heartbeated no more and never
    heard of the rebalance (this test timed out waiting for needs_rejoin)."""
    m, found = member([malformed], [code(0), code(0), code(ErrorCode.REBALANCE_IN_PROGRESS)])
    eventually(lambda: m.needs_rejoin)
    assert len(found) == 2 and found[1].heartbeats == 3  # looked up again, then heartbeated
    assert m._thread is not None and m._thread.is_alive()


def test_a_coordinator_unanswering_for_a_session_timeout_makes_the_member_join_again(
        member) -> None:
    """Malformed answers for longer than the session timeout: the coordinator has dropped the
    member by then, so it is told to join again (before: the first one ended the thread)."""
    m, found = member([malformed], session_timeout_ms=300)
    eventually(lambda: m.needs_rejoin)
    assert len(found) >= 2
    assert m._thread is not None and m._thread.is_alive()


def _raised(m: GroupMember, kind: type[Exception]) -> Callable[[], bool]:
    """Whether ``needs_rejoin`` raises ``kind`` now (False while it answers)."""
    def check() -> bool:
        try:
            return m.needs_rejoin and False
        except kind:
            return True
    return check


def test_tls_and_sasl_failures_are_raised_to_the_caller_and_heartbeats_go_on(member) -> None:
    """A TLS alert, then a refused SASL re-authentication: neither is retried (a wrong
    password retried may lock the account), each reaches the caller typed, and the heartbeats
    go on for a caller that carries on (before: the TlsHandshakeError ended the thread and
    nothing reached the caller)."""
    tls = TlsHandshakeError("coordinator.example:9092", "sslv3 alert bad record mac", "SSL")
    sasl = SaslAuthenticationError("coordinator.example:9092", "Authentication failed",
                                   "SASL_SSL", "SCRAM-SHA-512", "alice")
    m, found = member([raises(tls), raises(sasl), code(0),
                       code(ErrorCode.REBALANCE_IN_PROGRESS)])
    eventually(_raised(m, TlsHandshakeError))
    eventually(_raised(m, SaslAuthenticationError))
    eventually(lambda: m.needs_rejoin)
    assert found[0].heartbeats == 4


def test_an_error_code_no_retry_helps_is_raised_to_the_caller_and_heartbeats_go_on(member
                                                                                   ) -> None:
    """Before: the thread ended after handing the error over; a caller that went on had no
    heartbeats any more."""
    denied = code(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    m, found = member([denied, code(0), code(ErrorCode.REBALANCE_IN_PROGRESS)])
    with raises_condition(KafkaError, "KAFKA_BROKER_ERROR.GROUP_AUTHORIZATION_FAILED",
                          "GROUP_AUTHORIZATION_FAILED"):
        eventually(lambda: m.needs_rejoin)
    eventually(lambda: m.needs_rejoin)
    assert found[0].heartbeats == 3


def test_an_unexpected_failure_is_raised_to_the_caller(member) -> None:
    """A bug in a heartbeat (here: a KeyError) is the caller's to see, not a thread's silent
    death (before: the thread ended and needs_rejoin stayed False)."""
    m, _ = member([raises(KeyError("error_code"))])
    eventually(_raised(m, KeyError))
    assert m._thread is not None and m._thread.is_alive()


def test_malformed_is_the_decoders_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        malformed()
