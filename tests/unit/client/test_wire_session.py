"""The connection's sans-I/O core (client/wire/session.py) with bytes only, no socket: answers
split across chunks or several in one chunk, frames answering requests sent as expecting
none, an unknown correlation id, an abandoned request, answer limits. And, on a socket pair,
what BrokerConnection adds: a close reason named by a later use, and the hooks."""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import BrokerConnectionError
from spark_kafka_wire.client.wire.answer_limits import SMALL_ANSWER_BYTES
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.wire.hooks import (
    AnswerEvent,
    CloseEvent,
    CloseReason,
    ConnectionHooks,
    RequestEvent,
)
from spark_kafka_wire.client.wire.session import (
    Answer,
    FrameRefused,
    InFlight,
    NeedData,
    WireSession,
    WrongCorrelation,
    answer_begins,
)
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.messages import FIND_COORDINATOR, HEARTBEAT, METADATA, PRODUCE
from tests.support.errors import raises_condition


def _answer(cid: int, body: bytes = b"") -> bytes:
    """A response frame of header v0 (Metadata v1, Heartbeat v0): size, correlation id, body."""
    return struct.pack(">ii", 4 + len(body), cid) + body


def _sent(session: WireSession, spec: Any = METADATA, version: int = 1,
          expect_response: bool = True) -> InFlight[Any]:
    body: dict[str, Any] = {"topics": None} if spec is METADATA else {}
    if spec is PRODUCE:
        body = {"acks": 0, "timeout_ms": 1000, "topic_data": []}
    if spec is HEARTBEAT:
        body = {"group_id": "g", "generation_id": 1, "member_id": "m"}
    if spec is FIND_COORDINATOR:
        body = {"key": "g", "key_type": 0}
    inflight, parts = session.frame_request(spec, version, body, expect_response)
    frame = b"".join(bytes(p) for p in parts)
    assert struct.unpack_from(">i", frame, 0)[0] == len(frame) - 4
    assert struct.unpack_from(">hhi", frame, 4) == (spec.key, version, inflight.correlation_id)
    session.sent(inflight)
    return inflight


def _feed_all(session: WireSession, inflight: InFlight[Any], data: bytes,
              chunk: int) -> Answer:
    """Receive ``data`` ``chunk`` bytes at a time into the buffers the session asks to fill."""
    pos = 0
    while True:
        got = session.next_answer(inflight)
        if isinstance(got, Answer):
            return got
        n = min(chunk, len(got.buffer), len(data) - pos)
        assert n > 0, "the session asked for more than was sent"
        got.buffer[:n] = data[pos:pos + n]
        session.received(n)
        pos += n


def test_requests_are_framed_with_increasing_correlation_ids() -> None:
    s = WireSession("b1", "kafkawire")
    a, b = _sent(s), _sent(s)
    assert (a.correlation_id, b.correlation_id) == (1, 2) and s.in_flight == 2
    assert a.max_answer == 16 << 20 and _sent(s, HEARTBEAT, 0).max_answer == SMALL_ANSWER_BYTES


@pytest.mark.parametrize("chunk", [1, 3, 5, 1000])
def test_an_answer_split_across_chunks_is_assembled(chunk: int) -> None:
    s = WireSession("b1", None)
    inflight = _sent(s)
    got = _feed_all(s, inflight, _answer(1, b"body-bytes"), chunk)
    assert got.inflight is inflight and bytes(got.body) == b"body-bytes"
    assert got.size == 4 + 4 + 10 and s.in_flight == 0


def test_several_answers_in_one_chunk_each_go_to_their_request() -> None:
    s = WireSession("b1", None)
    first, second, third = _sent(s), _sent(s), _sent(s)
    s.receive_data(_answer(1, b"one") + _answer(2, b"two") + _answer(3, b"three")[:6])
    a = s.next_answer(first)
    b = s.next_answer(second)
    assert isinstance(a, Answer) and bytes(a.body) == b"one"
    assert isinstance(b, Answer) and bytes(b.body) == b"two"
    need = s.next_answer(third)
    assert isinstance(need, NeedData) and need.what == "Metadata" and need.inflight is third
    rest = _answer(3, b"three")[6:]
    need.buffer[:len(rest)] = rest
    s.received(len(rest))
    c = s.next_answer(third)
    assert isinstance(c, Answer) and bytes(c.body) == b"three"


def test_answers_are_taken_in_send_order() -> None:
    s = WireSession("b1", None)
    first, second = _sent(s), _sent(s)
    with pytest.raises(RuntimeError, match="in the order requests were sent"):
        s.next_answer(second)
    s.receive_data(_answer(1))
    assert isinstance(s.next_answer(first), Answer)


def test_an_unknown_correlation_id_is_refused() -> None:
    s = WireSession("b1", None)
    inflight = _sent(s)
    s.receive_data(_answer(99, b"x"))
    with pytest.raises(WrongCorrelation) as wrong:
        s.next_answer(inflight)
    assert wrong.value.got == 99 and wrong.value.inflight is inflight
    assert "expected 1, got 99 for Metadata" in str(wrong.value)


def test_an_abandoned_request_s_answer_is_read_and_dropped() -> None:
    s = WireSession("b1", None)
    prefetch, wanted = _sent(s), _sent(s)
    s.abandon(prefetch)
    s.receive_data(_answer(1, b"stale") + _answer(2, b"fresh"))
    got = s.next_answer(wanted)
    assert isinstance(got, Answer) and bytes(got.body) == b"fresh" and s.in_flight == 0


def test_answers_to_requests_sent_as_expecting_none_are_dropped() -> None:
    """A broker that answers Produce acks=0 (Tansu): the frames are dropped, wherever they
    come; without an answer awaited, only complete ones at the start of the bytes read ahead
    (the next answer read reports anything else)."""
    s = WireSession("b1", None)
    unanswered = _sent(s, PRODUCE, 3, expect_response=False)
    assert s.in_flight == 0
    s.receive_data(_answer(unanswered.correlation_id, b"ack") + _answer(5)[:3])
    s.drop_unsolicited()
    assert s.unsolicited_dropped == 1 and s.buffered == 3
    s = WireSession("b1", None)
    u1 = _sent(s, PRODUCE, 3, expect_response=False)
    wanted = _sent(s)
    s.receive_data(_answer(u1.correlation_id, b"ack") + _answer(wanted.correlation_id, b"md"))
    got = s.next_answer(wanted)
    assert isinstance(got, Answer) and bytes(got.body) == b"md"
    assert s.unsolicited_dropped == 1


def test_a_frame_larger_than_its_answer_may_be_is_refused_before_it_is_allocated() -> None:
    s = WireSession("b1", None)
    inflight = _sent(s, FIND_COORDINATOR, 1)
    s.receive_data(struct.pack(">i", SMALL_ANSWER_BYTES + 1))
    with pytest.raises(FrameRefused, match="the FindCoordinator answer announces") as refused:
        s.next_answer(inflight)
    assert refused.value.head == struct.pack(">i", SMALL_ANSWER_BYTES + 1)
    s = WireSession("b1", None)
    s.receive_data(b"HTTP/1.1 400")
    with pytest.raises(FrameRefused, match="not speaking Kafka") as foreign:
        s.next_frame("ApiVersions", SMALL_ANSWER_BYTES)
    assert foreign.value.head == b"HTTP"


def test_a_frame_too_short_for_its_header_is_a_protocol_error() -> None:
    s = WireSession("b1", None)
    inflight = _sent(s)
    s.receive_data(struct.pack(">i", 2) + b"\x00\x01")
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "bad Metadata response header"):
        s.next_answer(inflight)


def test_a_reset_forgets_what_was_in_flight_and_read_ahead() -> None:
    s = WireSession("b1", None)
    old = _sent(s)
    s.receive_data(b"\x00\x00")
    s.reset()
    assert s.in_flight == 0 and s.buffered == 0 and old.generation != s.generation


def test_a_probe_s_answer_begins_with_a_size_and_its_correlation_id() -> None:
    assert answer_begins(struct.pack(">ii", 100, 7), 7, 1000)
    assert not answer_begins(struct.pack(">ii", 100, 8), 7, 1000)
    assert not answer_begins(struct.pack(">ii", 2000, 7), 7, 1000)


# ------------------------------------------------------------------ on a connection


@pytest.fixture
def pair() -> Any:
    a, b = socket.socketpair()
    conn = BrokerConnection("broker.example", 9092, ClientConfig.from_servers(
        "broker.example:9092", request_timeout_ms=300), node_id=3)
    conn._sock = a  # connected: what connect() leaves, without an ApiVersions exchange
    conn.api_versions = {METADATA.key: (0, 1)}
    yield conn, b
    conn.close(CloseReason.CLIENT_CLOSED)
    b.close()


def test_a_later_use_names_why_the_connection_closed(pair: Any) -> None:
    conn, _peer = pair
    inflight = conn.send(METADATA, {"topics": None})
    with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION.REQUEST_TIMEOUT",
                          "no response to Metadata"):
        conn.receive(inflight)  # the peer never answers
    assert conn.closed_reason is CloseReason.TIMED_OUT and not conn.connected
    with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                          r"connection is closed \(TIMED_OUT\)"):
        conn.send(METADATA, {"topics": None})
    with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                          r"before the Metadata response arrived \(TIMED_OUT\)"):
        conn.receive(inflight)
    conn.close(CloseReason.CLIENT_CLOSED)
    assert conn.closed_reason is CloseReason.TIMED_OUT  # the first reason is the cause


def test_hooks_see_requests_answers_and_the_close(pair: Any) -> None:
    conn, peer = pair
    seen: list[object] = []
    hooks = conn.hooks.add(ConnectionHooks(on_request=seen.append, on_answer=seen.append,
                                           on_close=seen.append))
    inflight = conn.send(METADATA, {"topics": None})
    size = struct.unpack(">i", peer.recv(4))[0]
    peer.recv(size)
    # Metadata v1: no brokers, controller -1, no topics
    peer.sendall(_answer(inflight.correlation_id, struct.pack(">iii", 0, -1, 0)))
    got = conn.receive(inflight)
    assert (got["brokers"], got["controller_id"], got["topics"]) == ([], -1, [])
    conn.close(CloseReason.CLIENT_CLOSED)
    request, answer, close = seen
    assert isinstance(request, RequestEvent) and request.api == "Metadata"
    assert request.size == 4 + size and request.broker == conn.name
    assert isinstance(answer, AnswerEvent) and answer.version == 1 and answer.size == 20
    assert answer.latency_s >= 0 and bytes(answer.frame[:4]) == struct.pack(">i", 1)
    assert close == CloseEvent(conn.name, CloseReason.CLIENT_CLOSED)
    conn.hooks.remove(hooks)
    assert not conn.hooks
