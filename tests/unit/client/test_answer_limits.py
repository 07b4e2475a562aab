"""Each answer's size prefix is checked against what that answer may be before a byte of it is
read (client/wire/answer_limits.py, issue 45 item 13): a broker announcing a 17 MiB Metadata
answer, a 2 MiB Heartbeat or a Fetch answer far beyond what the Fetch asked for gets a
ProtocolError naming the broker, the API and the size, and the connection is closed."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.offsets import fetch_body
from spark_kafka_wire.client.wire.answer_limits import (
    FETCH_ANSWER_SLACK,
    LISTING_ANSWER_BYTES,
    SMALL_ANSWER_BYTES,
    answer_limit,
)
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.wire.hooks import CloseReason
from spark_kafka_wire.protocol import messages as m
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.messages import FETCH, HEARTBEAT, METADATA
from tests.support.frame_server import recv_exact


class Peer:
    """The broker's end of a socket pair: reads one request, then sends ``announced`` as the
    answer's size and ``sent`` bytes of it (a correlation id of 1, then zeros)."""

    def __init__(self, sock: socket.socket, announced: int, sent: int) -> None:
        self.sock, self.announced, self.sent = sock, announced, sent
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        head = recv_exact(self.sock, 4)
        if head is None or recv_exact(self.sock, struct.unpack(">i", head)[0]) is None:
            return
        body = struct.pack(">i", 1) + bytes(max(0, self.sent - 4))
        try:
            self.sock.sendall(struct.pack(">i", self.announced) + body[:self.sent])
        except OSError:
            pass  # the client closed on the size prefix, as it should


@pytest.fixture
def pair() -> Iterator[tuple[BrokerConnection, socket.socket]]:
    a, b = socket.socketpair()
    conn = BrokerConnection("broker.example", 9092, ClientConfig.from_servers(
        "broker.example:9092", request_timeout_ms=5_000), node_id=7)
    conn._sock = a  # connected: what connect() leaves, without an ApiVersions exchange
    conn.api_versions = {METADATA.key: (0, 12), HEARTBEAT.key: (0, 4), FETCH.key: (4, 12)}
    yield conn, b
    conn.close(CloseReason.CLIENT_CLOSED)
    b.close()


def _refused(conn: BrokerConnection, peer: socket.socket, spec, body, announced: int,
             sent: int) -> ProtocolError:
    server = Peer(peer, announced, sent)
    with pytest.raises(ProtocolError) as caught:
        conn.request(spec, body)
    server.thread.join(10)
    assert not conn.connected  # closed unread: the rest of the frame is never taken for an answer
    error = caught.value
    assert error.broker == "broker.example:9092 (node 7)"
    assert f"the {spec.name} answer announces {announced} bytes" in error.reason
    return error


def test_a_metadata_answer_larger_than_a_listing_may_be_is_refused_unread(pair) -> None:
    """Before: the 16 MiB were read whole (a valid answer would then have been decoded at 20
    to 30 times its size); these zeros failed to decode only after that."""
    conn, peer = pair
    error = _refused(conn, peer, METADATA, {"topics": None}, LISTING_ANSWER_BYTES + 1,
                     LISTING_ANSWER_BYTES + 1)
    assert f"more than the {LISTING_ANSWER_BYTES} bytes" in error.reason
    assert "fewer topics" in error.reason  # what to do


def test_a_heartbeat_answer_of_megabytes_is_refused(pair) -> None:
    conn, peer = pair
    body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    error = _refused(conn, peer, HEARTBEAT, body, 2 * SMALL_ANSWER_BYTES, 2 * SMALL_ANSWER_BYTES)
    assert f"more than the {SMALL_ANSWER_BYTES} bytes" in error.reason


def test_a_fetch_answer_is_bounded_by_what_the_fetch_asked_for(pair) -> None:
    """Only the size prefix is sent: the refusal needs no byte more (before: the client waited
    for the announced 101 MiB until its request timeout, 5 s here)."""
    conn, peer = pair
    body = fetch_body({("t", 0): 0}, 1 << 20, 1 << 20, 500, 1, 0)
    limit = (1 << 20) + FETCH_ANSWER_SLACK
    error = _refused(conn, peer, FETCH, body, limit + 1, 0)
    assert "kafka.fetch.max.bytes" in error.reason


def test_an_answer_within_its_limit_is_read_as_before(pair) -> None:
    conn, peer = pair
    answer = HEARTBEAT.encode_response(4, {"throttle_time_ms": 0, "error_code": 0})
    frame = struct.pack(">i", 1) + b"\x00" + answer  # header v1: correlation id, no tags

    def serve() -> None:
        head = recv_exact(peer, 4)
        assert head is not None and recv_exact(peer, struct.unpack(">i", head)[0]) is not None
        peer.sendall(struct.pack(">i", len(frame)) + frame)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    body = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    assert conn.request(HEARTBEAT, body, version=4)["error_code"] == 0
    server.join(10)
    assert conn.connected


def test_the_limit_of_each_kind_of_answer() -> None:
    fetch = fetch_body({("t", p): 0 for p in range(3)}, 1 << 20, 50 << 20, 500, 1, 0)
    # v3+: max_bytes, at most the partitions' together; before v3 only the partitions'
    assert answer_limit(FETCH, 12, fetch) == (3 << 20) + FETCH_ANSWER_SLACK
    assert answer_limit(FETCH, 12, {**fetch, "max_bytes": 1 << 20}) == \
        (1 << 20) + FETCH_ANSWER_SLACK
    assert answer_limit(FETCH, 2, {**fetch, "max_bytes": 1}) == (3 << 20) + FETCH_ANSWER_SLACK
    for spec in (m.API_VERSIONS, m.HEARTBEAT, m.FIND_COORDINATOR, m.SASL_AUTHENTICATE,
                 m.LEAVE_GROUP, m.END_TXN):
        assert answer_limit(spec, 0, {}) == SMALL_ANSWER_BYTES, spec.name
    for spec in (m.METADATA, m.LIST_OFFSETS, m.OFFSET_FETCH, m.DESCRIBE_GROUPS, m.JOIN_GROUP,
                 m.SYNC_GROUP, m.PRODUCE, m.DESCRIBE_CONFIGS):
        assert answer_limit(spec, 0, {}) == LISTING_ANSWER_BYTES, spec.name
