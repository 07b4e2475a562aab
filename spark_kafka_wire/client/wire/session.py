"""A connection's protocol state without its socket (sans-I/O, as h11): requests framed,
answers assembled from bytes and paired to their requests.

``BrokerConnection`` (client/wire/connection.py) owns the socket, TLS, SASL, timeouts and the
operation's deadline; everything it knows about the bytes is here, so that the pairing rule
is written once and tested with bytes only (tests/unit/client/test_wire_session.py):

* ``frame_request`` gives a request its correlation id and frame; ``sent`` records it once
  written. Requests sent as expecting an answer wait in the in-flight table in send order (a
  broker answers in order on a connection); the correlation ids of those sent expecting none
  (Produce with acks=0) are remembered, a bounded number of them, because some brokers
  (Tansu) answer them anyway.
* ``next_answer(inflight)`` returns the answer to ``inflight`` or a ``NeedData``: where the
  next bytes go (received straight into the frame's own buffer, so a Fetch answer of
  megabytes is never copied) and which answer they belong to. On the way it drops, as before
  one, the answers of requests abandoned ahead of it and frames that answer a request sent
  as expecting none; any other correlation id is refused (``WrongCorrelation``).
* ``receive_data`` takes bytes read ahead of need (a non-blocking drain, a test), and
  ``drop_unsolicited`` drops, from those, the complete answers nobody asked for.
* every frame's size is checked against what its answer may announce
  (client/wire/answer_limits.py) before a byte of it is allocated (``FrameRefused``).

Failures are exceptions the connection turns into the public errors (it knows whether the
peer looks like Kafka at all) and after which it closes and ``reset``s the session.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, cast

from spark_kafka_wire.client.wire.answer_limits import LISTING_ANSWER_BYTES, answer_limit, too_large
from spark_kafka_wire.protocol import framing
from spark_kafka_wire.protocol.engine import ApiSpec, RequestT, ResponseT
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.primitives import INT32_MAX

__all__ = ["Answer", "FrameRefused", "InFlight", "NeedData", "WireSession", "WrongCorrelation",
           "answer_begins", "frame_raw"]

# Answers at least this large are received into uninitialised memory (``_allocate``).
UNINITIALISED_FROM = 64 * 1024
# Correlation ids of requests sent without expecting a response, remembered in case the broker
# answers anyway; Kafka never does, so the memory is bounded.
MAX_UNANSWERED = 4096
_CID = struct.Struct(">i")
# What a drain of the read-ahead bytes calls an answer too large: only requests that expect
# no answer (Produce with acks=0) are drained for.
_DRAINED = "the Produce answer"


@dataclass
class InFlight(Generic[ResponseT]):
    correlation_id: int
    spec: ApiSpec[Any, ResponseT]
    version: int
    expect_response: bool
    generation: int = 0  # the session's generation when sent (it changes on reset)
    abandoned: bool = False  # nobody will read the answer: the next receive drops it
    throttle_ms: int = 0  # the answer's KIP-219 throttle time, if honoured
    max_answer: int = LISTING_ANSWER_BYTES  # the most bytes its answer may announce
    sent_at: float = 0.0  # monotonic, when written; kept only for hooks (answer latency)


@dataclass(frozen=True)
class NeedData:
    """More bytes are needed: receive up to ``len(buffer)`` of them into ``buffer``, then call
    ``received`` with their count. ``what`` names the answer awaited (errors say it);
    ``frame`` numbers the frame they belong to (a new number: a new frame, whose wait a new
    time limit bounds); ``inflight`` is the request whose answer is read, None for a raw
    frame."""

    buffer: memoryview
    what: str
    frame: int
    inflight: InFlight[Any] | None


@dataclass(frozen=True)
class Answer:
    """The answer to ``inflight``: its ``frame`` (after the size prefix) and the ``body``
    after the response header in it; ``size``, its bytes on the wire (size prefix included)."""

    inflight: InFlight[Any]
    frame: memoryview
    body: memoryview

    @property
    def size(self) -> int:
        return 4 + len(self.frame)


class FrameRefused(Exception):
    """A frame's size prefix is no size or more than its answer may announce: ``head`` (its
    first four bytes) tells the connection whether the peer speaks another protocol."""

    def __init__(self, what: str, head: bytes, reason: str) -> None:
        super().__init__(reason)
        self.what, self.head, self.reason = what, head, reason


class WrongCorrelation(Exception):
    """The answer read for ``inflight`` carries another correlation id: the stream is not
    what was sent (or not Kafka at all, when it is the connection's first answer)."""

    def __init__(self, inflight: InFlight[Any], got: int) -> None:
        super().__init__(f"correlation id mismatch: expected {inflight.correlation_id}, "
                         f"got {got} for {inflight.spec.name}")
        self.inflight, self.got = inflight, got


def _allocate(n: int) -> memoryview:
    # A large answer (records) goes into uninitialised memory (every byte is received into
    # it): a bytearray would first be zero-filled, an extra pass over every fetched byte
    # (about 25 µs per 1.5 MB answer). Small answers (metadata, offsets) take a bytearray,
    # so that a command asking only for those never imports numpy
    # (tests/unit/test_cli_startup.py).
    if n < UNINITIALISED_FROM:
        return memoryview(bytearray(n))
    import numpy as np  # noqa: PLC0415 (loaded with the first records anyway)

    return np.empty(n, np.uint8).data


class WireSession:
    """The bytes of one connection to ``broker`` (its name, for errors); see the module
    docstring. ``reset`` starts a new session on a new socket: nothing sent before is
    answered there."""

    def __init__(self, broker: str, client_id: str | None) -> None:
        self.broker = broker
        self.client_id = client_id
        self.generation = 0
        self.unsolicited_dropped = 0  # answers to requests that expected none, dropped
        self._next_id = 1
        self._in_flight: deque[InFlight[Any]] = deque()
        self._unanswered: deque[int] = deque()
        self._unanswered_set: set[int] = set()
        self._ahead = bytearray()  # bytes received before they were needed
        self._frames = 0  # frames read whole, which numbers the next one (NeedData.frame)
        self._head = bytearray(4)  # the size prefix of the frame being read ...
        self._head_got = 0
        self._body: memoryview | None = None  # ... and its body, once the prefix is in
        self._body_got = 0

    # -- requests ----------------------------------------------------------------------------
    def frame_request(self, spec: ApiSpec[RequestT, ResponseT], version: int, body: RequestT,
                      expect_response: bool = True
                      ) -> tuple[InFlight[ResponseT], list[bytes | bytearray | memoryview]]:
        """The next request's handle and frame (in pieces, ``framing.encode_request_parts``);
        ``sent`` records it once written."""
        cid = self._next_id
        self._next_id = (cid + 1) & INT32_MAX
        parts = framing.encode_request_parts(spec, version, cid, self.client_id, body)
        return InFlight(cid, spec, version, expect_response, self.generation,
                        max_answer=answer_limit(spec, version, cast(dict[str, Any], body))
                        ), parts

    def sent(self, inflight: InFlight[Any]) -> None:
        """``inflight`` was written: its answer is awaited, or remembered as one to drop."""
        if inflight.expect_response:
            self._in_flight.append(inflight)
            return
        self._unanswered.append(inflight.correlation_id)
        self._unanswered_set.add(inflight.correlation_id)
        while len(self._unanswered) > MAX_UNANSWERED:
            self._unanswered_set.discard(self._unanswered.popleft())

    @property
    def in_flight(self) -> int:
        """Requests sent whose answers have not been read yet."""
        return len(self._in_flight)

    @staticmethod
    def abandon(inflight: InFlight[Any]) -> None:
        """Nobody will read ``inflight``'s answer: it is read and dropped before the next."""
        inflight.abandoned = True

    def reset(self) -> None:
        """The socket closed: nothing in flight is answered, nothing read ahead is kept."""
        self.generation += 1
        self._in_flight.clear()
        self._unanswered.clear()
        self._unanswered_set.clear()
        self._ahead.clear()
        self._frames += 1
        self._head_got = 0
        self._body = None
        self._body_got = 0

    # -- bytes in ----------------------------------------------------------------------------
    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        """Bytes received before an answer asked for them."""
        self._ahead += data

    @property
    def buffered(self) -> int:
        """Bytes received and not yet part of a frame."""
        return len(self._ahead)

    def received(self, n: int) -> None:
        """``n`` bytes were received into the last ``NeedData``'s buffer."""
        if self._body is None:
            self._head_got += n
        else:
            self._body_got += n

    def next_frame(self, what: str, max_size: int,
                   inflight: InFlight[Any] | None = None) -> NeedData | memoryview:
        """The next whole frame's bytes after its size prefix (a raw SASL token, a Kafka 0.7
        answer), or where more of them go. A prefix announcing more than ``max_size`` bytes
        is ``FrameRefused`` before anything is allocated for it."""
        if self._body is None:
            self._head_got += self._take_ahead(memoryview(self._head)[self._head_got:])
            if self._head_got < 4:
                return NeedData(memoryview(self._head)[self._head_got:], what, self._frames,
                                inflight)
            head = bytes(self._head)
            try:
                size = framing.frame_size(head)
            except ProtocolError as exc:
                raise FrameRefused(what, head, exc.reason) from None
            if size > max_size:
                subject = what if " " in what else f"the {what} answer"
                raise FrameRefused(what, head, too_large(subject, size, max_size))
            self._body, self._body_got = _allocate(size), 0
        self._body_got += self._take_ahead(self._body[self._body_got:])
        if self._body_got < len(self._body):
            return NeedData(self._body[self._body_got:], what, self._frames, inflight)
        frame, self._body, self._head_got = self._body, None, 0
        self._frames += 1
        return frame

    def _take_ahead(self, into: memoryview) -> int:
        n = min(len(into), len(self._ahead))
        if n:
            into[:n] = self._ahead[:n]
            del self._ahead[:n]
        return n

    def next_answer(self, inflight: InFlight[ResponseT]) -> NeedData | Answer:
        """The answer to ``inflight``, or where the next bytes go. Answers come in send order:
        those of requests abandoned ahead of it are read and dropped first (a RuntimeError if
        one ahead is not abandoned), and so is any frame whose correlation id is that of a
        request sent as expecting none. A frame carrying another id is ``WrongCorrelation``;
        a frame too short for its header a ProtocolError."""
        while True:
            front = self._in_flight[0] if self._in_flight else None
            if front is None or (front is not inflight and not front.abandoned):
                raise RuntimeError("responses must be received in the order requests were sent")
            got = self.next_frame(front.spec.name, front.max_answer, front)
            if isinstance(got, NeedData):
                return got
            if len(got) >= 4 and self._unanswered_set:
                (cid,) = _CID.unpack_from(got, 0)
                if cid in self._unanswered_set and cid != front.correlation_id:
                    self._unanswered_set.discard(cid)  # an answer nobody asked for (acks=0)
                    self.unsolicited_dropped += 1
                    continue
            self._in_flight.popleft()
            if front is not inflight:
                continue  # abandoned: read, and dropped
            try:
                cid, body = framing.split_response(front.spec, front.version, got)
            except ProtocolError as exc:
                raise ProtocolError(f"bad {front.spec.name} response header: {exc.reason}",
                                    broker=self.broker) from None
            if cid != front.correlation_id:
                raise WrongCorrelation(front, cid)
            return Answer(front, got, body)

    def drop_unsolicited(self) -> None:
        """Drop the complete answers at the start of the bytes read ahead that answer requests
        sent as expecting none; stop at the first that does not (the next answer read reports
        it) or is not complete."""
        while len(self._ahead) >= 8 and self._body is None and self._head_got == 0:
            try:
                size = framing.frame_size(bytes(self._ahead[:4]))
            except ProtocolError as exc:
                raise ProtocolError(exc.reason, broker=self.broker) from None
            if size > LISTING_ANSWER_BYTES:
                raise ProtocolError(too_large(_DRAINED, size, LISTING_ANSWER_BYTES),
                                    broker=self.broker)
            if len(self._ahead) < 4 + size:
                return
            (cid,) = _CID.unpack_from(self._ahead, 4)
            if cid not in self._unanswered_set:
                return  # not ours to drop: the next answer read reports it
            self._unanswered_set.discard(cid)
            self.unsolicited_dropped += 1
            del self._ahead[: 4 + size]


def frame_raw(token: bytes) -> bytes:
    """A SASL token outside Kafka's framing (after SaslHandshake v0): its length, its bytes."""
    return _CID.pack(len(token)) + token


def answer_begins(head: bytes, correlation_id: int, max_size: int) -> bool:
    """Whether ``head``, the first 8 bytes read after a request, begin an answer to it: a size
    from 4 to ``max_size`` and ``correlation_id`` (a probe's check, which reads no more)."""
    size, answered = struct.unpack(">ii", head[:8])
    return answered == correlation_id and 4 <= size <= max_size
