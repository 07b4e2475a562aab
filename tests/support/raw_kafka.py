"""A Kafka request in raw bytes, for the harness's own checks (is the broker up, what did the
fault proxy do to an answer): the fault harness does not rely on the client under test."""

from __future__ import annotations

import socket
import struct

METADATA = 3
CLIENT_ID = b"fault-harness"


def metadata_request(correlation: int) -> bytes:
    """A size-prefixed Metadata v1 request for all topics (which reads the broker's storage,
    unlike ApiVersions)."""
    body = (struct.pack(">hhih", METADATA, 1, correlation, len(CLIENT_ID)) + CLIENT_ID
            + struct.pack(">i", -1))
    return struct.pack(">i", len(body)) + body


def read_exactly(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None if the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def read_frame(sock: socket.socket) -> bytes | None:
    """One whole size-prefixed frame (prefix included), or None if the peer closes first."""
    head = read_exactly(sock, 4)
    if head is None:
        return None
    body = read_exactly(sock, struct.unpack(">i", head)[0])
    return None if body is None else head + body


def read_to_end(sock: socket.socket) -> bytes:
    """Everything until the peer closes (for answers the fault proxy cut)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def metadata_answer(port: int, correlation: int = 0x4B57, timeout: float = 2.0) -> bytes | None:
    """The whole Metadata response frame from 127.0.0.1:``port``; None if it closed first.
    Raises OSError (refused, reset, timed out)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(metadata_request(correlation))
        return read_frame(sock)


def answers_metadata(port: int, timeout: float = 2.0) -> bool:
    """Whether 127.0.0.1:``port`` answers Metadata with the request's correlation id."""
    correlation = 0x4B57
    try:
        frame = metadata_answer(port, correlation, timeout)
    except OSError:
        return False
    return frame is not None and struct.unpack(">i", frame[4:8])[0] == correlation
