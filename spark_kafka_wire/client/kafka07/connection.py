"""One connection to a Kafka 0.7 broker: requests and answers paired by their order.

A 0.7 request carries no correlation id: "answers come in order" on a connection is the only
pairing there is, so this class keeps the requests sent in a queue and hands each answer to
the oldest request that expects one (PRODUCE and MULTIPRODUCE expect none: "There is no
response to a PRODUCE Request"). Requests may be pipelined; a reader that stops early
abandons its request and the answer is read and dropped before the next one.

The socket, TLS, timeouts and the operation deadline are :class:`BrokerConnection`'s, made for
0.7 by ``broker_version_fallback`` 0.7.x: it sends no ApiVersions when it opens (a 0.7 broker
closes the connection on a request type it does not know) and carries whole frames. Any
failure closes the connection; what was in flight fails with it, and the next request opens a
new one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import CONFIGURATION, BrokerConnectionError, ConfigurationError
from spark_kafka_wire.client.wire.answer_limits import LISTING_ANSWER_BYTES, kafka07_fetch_limit
from spark_kafka_wire.client.wire.connection import BrokerConnection, Deadline
from spark_kafka_wire.client.wire.hooks import CloseReason
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.kafka07 import RequestType, expects_answer, split_answer
from spark_kafka_wire.protocol.versions import is_kafka07

__all__ = ["BrokerPartition", "Kafka07Connection", "Kafka07Connections", "Pending"]


# A PRODUCE that fails (a bad CRC, a malformed request) is answered by closing the connection,
# which the next read on it sees.
_PRODUCE_HINT = (". A Kafka 0.7 broker closes the connection when a PRODUCE sent before fails "
                 "its checks (a message CRC, a malformed message set), so that PRODUCE was "
                 "probably not written")


@dataclass(frozen=True)
class BrokerPartition:
    """A partition as a 0.7 broker holds it: ``partition`` of ``topic`` on ``host:port``."""

    host: str
    port: int
    topic: str
    partition: int

    @property
    def broker(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass
class Pending:
    """A request sent whose answer has not been read."""

    kind: RequestType
    what: str
    session: int  # the connection's session when sent: answers never cross a reconnect
    #: the most bytes its answer may announce (answer_limits)
    max_answer: int = LISTING_ANSWER_BYTES
    abandoned: bool = False


class Kafka07Connection:
    def __init__(self, host: str, port: int, config: ClientConfig,
                 deadline: Callable[[], Deadline | None] | None = None) -> None:
        if not is_kafka07(config.broker_version_fallback):
            raise ConfigurationError.of(
                CONFIGURATION, "KAFKA07_CONNECTION_NEEDS_07",
                broker_version_fallback=config.broker_version_fallback)
        self.conn = BrokerConnection(host, port, config, deadline=deadline)
        self.host, self.port = host, port
        self.name = self.conn.name
        self._pending: deque[Pending] = deque()
        self._session = 0
        self._unconfirmed_produce = False  # a PRODUCE sent since the last answer read

    def connect(self) -> None:
        if not self.conn.connected:
            self._pending.clear()
            self._session += 1
            self._unconfirmed_produce = False
            self.conn.connect()

    @property
    def connected(self) -> bool:
        return self.conn.connected

    def close(self, reason: CloseReason = CloseReason.CLIENT_CLOSED) -> None:
        self._pending.clear()
        self.conn.close(reason)

    def __enter__(self) -> Kafka07Connection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, kind: RequestType, frame: bytes, asked: int | None = None) -> Pending:
        """Send a whole request (``protocol.kafka07.encode_*``); the handle to its answer.
        ``asked``: the message bytes a FETCH or MULTIFETCH asks for (its max sizes), which
        bound the answer; any other answer is bounded as a listing (OFFSETS)."""
        if kind in (RequestType.FETCH, RequestType.MULTIFETCH) and asked is None:
            raise ValueError(f"a {kind.name} needs the bytes it asks for, which bound its answer")
        self.connect()
        limit = kafka07_fetch_limit(asked) if asked is not None else LISTING_ANSWER_BYTES
        pending = Pending(kind, kind.name, self._session, limit)
        try:
            self.conn.send_frame(frame, kind.name)
        except BaseException:
            self._failed()
            raise
        if expects_answer(kind):
            self._pending.append(pending)
        else:
            self._unconfirmed_produce = True
        return pending

    def receive(self, pending: Pending) -> tuple[int, memoryview]:
        """(ERROR_CODE, body) of the answer to ``pending``, in send order."""
        if not expects_answer(pending.kind):
            raise ValueError(f"a {pending.what} request has no answer")
        if pending.session != self._session or not self.conn.connected:
            raise BrokerConnectionError(
                self.name, f"the connection closed before the {pending.what} answer arrived")
        ahead = 0  # abandoned requests sent before this one: their answers come first
        for earlier in self._pending:
            if earlier is pending:
                break
            if not earlier.abandoned:
                raise RuntimeError("answers must be received in the order requests were sent")
            ahead += 1
        else:
            raise RuntimeError(f"this {pending.what} answer was already received")
        try:
            for _ in range(ahead):
                self.conn.receive_frame(self._pending[0].what, self._pending[0].max_answer)
                self._pending.popleft()
            frame = self.conn.receive_frame(pending.what, pending.max_answer)
            self._pending.popleft()
            self._unconfirmed_produce = False
            return split_answer(frame)
        except ProtocolError as exc:
            self._failed(CloseReason.PROTOCOL_ERROR)
            raise ProtocolError(exc.reason, broker=self.name) from None
        except BrokerConnectionError as exc:
            produced, self._unconfirmed_produce = self._unconfirmed_produce, False
            self._failed()
            if produced and type(exc) is BrokerConnectionError:
                raise BrokerConnectionError(self.name, exc.reason + _PRODUCE_HINT) from None
            raise
        except BaseException:
            self._failed()
            raise

    def request(self, kind: RequestType, frame: bytes,
                asked: int | None = None) -> tuple[int, memoryview]:
        return self.receive(self.send(kind, frame, asked))

    def abandon(self, pending: Pending) -> None:
        """Nobody will read ``pending``'s answer: it is read and dropped before the next."""
        pending.abandoned = True

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def _failed(self, reason: CloseReason = CloseReason.CLIENT_CLOSED) -> None:
        """Nothing in flight is answered any more; a connection not closed by its failure
        already closes for ``reason``."""
        self._pending.clear()
        self.conn.close(reason)


class Kafka07Connections:
    """One :class:`Kafka07Connection` per broker address, opened on first use."""

    def __init__(self, config: ClientConfig,
                 deadline: Callable[[], Deadline | None] | None = None) -> None:
        self.config = config
        self._deadline = deadline
        self._conns: dict[tuple[str, int], Kafka07Connection] = {}

    def get(self, host: str, port: int) -> Kafka07Connection:
        conn = self._conns.get((host, port))
        if conn is None:
            conn = self._conns[(host, port)] = Kafka07Connection(host, port, self.config,
                                                                 self._deadline)
        return conn

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def __enter__(self) -> Kafka07Connections:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
