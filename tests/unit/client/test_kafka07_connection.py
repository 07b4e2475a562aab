"""A Kafka 0.7 connection: nothing sent on connect, answers paired by order, abandoned answers
dropped, a produce refused by a closed connection explained. Against a scripted socket peer."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import BrokerConnectionError, ConfigurationError
from spark_kafka_wire.client.kafka07 import Kafka07Connection
from spark_kafka_wire.client.wire.answer_limits import SMALL_ANSWER_BYTES
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.wire.hooks import CloseReason
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.kafka07 import RequestType, encode_fetch, encode_produce
from spark_kafka_wire.protocol.messages import METADATA
from tests.support.errors import raises_condition


def _wait_closed(s: socket.socket) -> None:
    """Until the client closes: a close with our answer unread is a reset, the same end."""
    try:
        while s.recv(4096):
            pass
    except ConnectionResetError:
        pass


def _recv_frame(s: socket.socket) -> bytes | None:
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack(">i", head)
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return body


@pytest.fixture
def peer() -> Iterator[Callable[[Callable[[socket.socket], None]], tuple[str, int]]]:
    """A one-connection server running ``script(sock)``; yields its address."""
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def start(script: Callable[[socket.socket], None]) -> tuple[str, int]:
        ls = socket.socket()
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        listeners.append(ls)

        def run() -> None:
            conn, _ = ls.accept()
            with conn:
                script(conn)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
        return ls.getsockname()

    yield start
    for t in threads:
        t.join(timeout=5)
    for ls in listeners:
        ls.close()


def config(host: str, port: int, release: str = "0.7.2") -> ClientConfig:
    return ClientConfig(((host, port),), broker_version_fallback=release,
                        request_timeout_ms=5_000)


def test_a_07_connection_sends_nothing_when_it_opens(peer) -> None:
    seen: list[bytes | None] = []
    done = threading.Event()

    def script(s: socket.socket) -> None:
        s.settimeout(0.3)
        try:
            seen.append(s.recv(100))
        except TimeoutError:
            seen.append(None)
        done.set()

    host, port = peer(script)
    conn = BrokerConnection(host, port, config(host, port))
    assert conn.kafka07
    conn.connect()  # with api_version_request left on: 0.7 wins, no ApiVersions
    assert conn.connected and conn.api_versions == {}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          "not a Kafka 0.7 request"):
        conn.send(METADATA, {"topics": []})
    assert done.wait(5)
    conn.close(CloseReason.CLIENT_CLOSED)
    assert seen == [None]


def test_answers_are_paired_by_order_and_abandoned_ones_dropped(peer) -> None:
    def script(s: socket.socket) -> None:
        got = [_recv_frame(s) for _ in range(4)]  # FETCH, PRODUCE, FETCH, FETCH
        kinds = [struct.unpack_from(">h", g)[0] for g in got if g]
        assert kinds == [1, 0, 1, 1]
        for i in (1, 2, 3):  # answers to the three FETCHes only
            s.sendall(struct.pack(">ih", 3, 0) + bytes([i]))
        _recv_frame(s)

    host, port = peer(script)
    with Kafka07Connection(host, port, config(host, port)) as c:
        first = c.send(RequestType.FETCH, encode_fetch("t", 0, 0, 10), 10)
        c.send(RequestType.PRODUCE, encode_produce("t", 0, b""))
        second = c.send(RequestType.FETCH, encode_fetch("t", 0, 0, 10), 10)
        third = c.send(RequestType.FETCH, encode_fetch("t", 0, 0, 10), 10)
        assert c.in_flight == 3
        code, body = c.receive(first)
        with pytest.raises(RuntimeError):
            c.receive(third)  # the second's answer comes first
        assert code == 0 and bytes(body) == b"\x01"
        c.abandon(second)
        assert bytes(c.receive(third)[1]) == b"\x03"  # the second's answer read and dropped
        with pytest.raises(RuntimeError):
            c.receive(third)
        assert c.in_flight == 0


def test_a_closed_connection_after_a_produce_says_the_produce_was_refused(peer) -> None:
    def script(s: socket.socket) -> None:
        _recv_frame(s)
        _recv_frame(s)  # the PRODUCE and the FETCH; then close, as 0.7 does on a bad CRC

    host, port = peer(script)
    c = Kafka07Connection(host, port, config(host, port))
    c.send(RequestType.PRODUCE, encode_produce("t", 0, b"\x00\x00\x00\x05\x00junk"))
    pending = c.send(RequestType.FETCH, encode_fetch("t", 0, 0, 10), 10)
    with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                          "closes the connection when a PRODUCE"):
        c.receive(pending)
    assert not c.connected


def test_a_07_connection_needs_a_07_release() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          "0.7.x"):
        Kafka07Connection("127.0.0.1", 1, config("127.0.0.1", 1, "0.8.2"))


def test_a_fetch_answer_announcing_more_than_was_asked_is_refused_unread(peer) -> None:
    """Issue 45: a 0.7 answer could announce up to 1 GiB whatever was asked, and was read
    whole before the FETCH's size was checked; now its size prefix is checked against the
    bytes asked (plus room for headers) and the connection closed unread."""
    announced = 10 + SMALL_ANSWER_BYTES + 1

    def script(s: socket.socket) -> None:
        _recv_frame(s)
        s.sendall(struct.pack(">ih", announced, 0))  # and nothing more: never read
        _wait_closed(s)

    host, port = peer(script)
    c = Kafka07Connection(host, port, config(host, port))
    pending = c.send(RequestType.FETCH, encode_fetch("t", 0, 0, 10), 10)
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", f"announces {announced} bytes"):
        c.receive(pending)
    assert not c.connected
    with pytest.raises(ValueError, match="needs the bytes it asks for"):
        c.send(RequestType.MULTIFETCH, b"")
