"""Why a connection closed, and typed hooks that observe every connection of a client.

``CloseReason``: every close of a ``BrokerConnection`` says why; the connection keeps it
(``closed_reason``) and names it in the error a later use raises, so "connection is closed"
says whether it timed out, the broker hung up or the bytes made no sense.

Hooks (the idea of franz-go kgo's hooks, our own shape): a ``ConnectionHooks`` holds the
callbacks one observer wants (connect, request written, answer read, throttle, close), each
with a small frozen event; ``HookRegistry`` holds those registered on one client
(``KafkaClient.hooks``), shared by all its connections, so tests and metrics observe the wire
without patching the connection. A connection with nothing registered builds no event and
reads no clock for them. A hook runs on the thread doing the I/O, between the write or read
and the code waiting for it: it must be quick, and an exception it raises reaches that code.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["AnswerEvent", "CloseEvent", "CloseReason", "ConnectEvent", "ConnectionHooks",
           "HookRegistry", "RequestEvent", "ThrottleEvent"]


class CloseReason(enum.Enum):
    """Why a connection closed (its value says it in words)."""

    CLIENT_CLOSED = "its owner closed it (a client closed, answers it will not read)"
    TIMED_OUT = "a send or an answer took longer than request.timeout.ms or the deadline"
    PEER_CLOSED = "the broker closed the connection"
    IO_ERROR = "the operating system reported a send or receive failure"
    PROTOCOL_ERROR = "the broker's bytes broke the protocol (size, header, correlation id)"
    NOT_KAFKA = "the peer speaks another protocol (HTTP, TLS, SSH) or is no Kafka broker"
    TLS_ERROR = "a TLS alert or failure after the handshake"
    AUTH_FAILED = "the SASL login failed"
    SETUP_FAILED = "the ApiVersions exchange that sets a connection up failed"
    REAUTHENTICATE = "a SASL session too short to re-authenticate in: logging in anew"


@dataclass(frozen=True)
class ConnectEvent:
    """A connection set up (TLS, ApiVersions and SASL done; ``error`` None) or not."""

    broker: str
    error: BaseException | None
    elapsed_s: float


@dataclass(frozen=True)
class RequestEvent:
    """A request written whole: ``size`` bytes (size prefix included) of ``body``."""

    broker: str
    api: str
    version: int
    size: int
    body: Mapping[str, Any]


@dataclass(frozen=True)
class AnswerEvent:
    """An answer read and paired: ``size`` bytes on the wire, ``latency_s`` after its request
    was written; ``frame`` its bytes after the size prefix (header included), valid while
    the answer is."""

    broker: str
    api: str
    version: int
    size: int
    latency_s: float
    throttle_ms: int
    frame: memoryview


@dataclass(frozen=True)
class ThrottleEvent:
    """An answer asked this client to hold its next request to the broker (KIP-219)."""

    broker: str
    api: str
    ms: int


@dataclass(frozen=True)
class CloseEvent:
    broker: str
    reason: CloseReason


@dataclass(frozen=True)
class ConnectionHooks:
    """One observer's callbacks; those left None are not called."""

    on_connect: Callable[[ConnectEvent], None] | None = None
    on_request: Callable[[RequestEvent], None] | None = None
    on_answer: Callable[[AnswerEvent], None] | None = None
    on_throttle: Callable[[ThrottleEvent], None] | None = None
    on_close: Callable[[CloseEvent], None] | None = None


class HookRegistry:
    """The hooks registered on one client, called by each of its connections in the order
    they were added. False while empty: connections test that before building an event."""

    def __init__(self) -> None:
        self._hooks: tuple[ConnectionHooks, ...] = ()

    def add(self, hooks: ConnectionHooks) -> ConnectionHooks:
        self._hooks = (*self._hooks, hooks)
        return hooks

    def remove(self, hooks: ConnectionHooks) -> None:
        self._hooks = tuple(h for h in self._hooks if h is not hooks)

    def __bool__(self) -> bool:
        return bool(self._hooks)

    def connected(self, event: ConnectEvent) -> None:
        for h in self._hooks:
            if h.on_connect is not None:
                h.on_connect(event)

    def request_written(self, event: RequestEvent) -> None:
        for h in self._hooks:
            if h.on_request is not None:
                h.on_request(event)

    def answer_read(self, event: AnswerEvent) -> None:
        for h in self._hooks:
            if h.on_answer is not None:
                h.on_answer(event)

    def throttled(self, event: ThrottleEvent) -> None:
        for h in self._hooks:
            if h.on_throttle is not None:
                h.on_throttle(event)

    def closed(self, event: CloseEvent) -> None:
        for h in self._hooks:
            if h.on_close is not None:
                h.on_close(event)
