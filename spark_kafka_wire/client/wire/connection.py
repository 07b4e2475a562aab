"""One TCP connection to one broker: the socket, TLS, SASL, timeouts, version choice.

The bytes are a ``WireSession``'s (client/wire/session.py, sans-I/O): it frames requests,
assembles answers and pairs them to their requests; this class moves the bytes between it and
the socket within the waits below. Requests may be pipelined: ``send`` returns a handle and
responses are read in send order (the broker answers in order on a connection). Any socket
failure closes the connection and raises BrokerConnectionError, so a half-read response can
never be mistaken for the next; a request still in flight when its connection closed fails
the same way when it is received. Every close says why (``CloseReason``, kept as
``closed_reason`` and named in the error a later use raises), and the hooks registered on the
connection's client (``hooks``, client/wire/hooks.py) see connects, requests, answers,
throttles and closes.

Produce with acks=0 gets no response from Kafka. Some brokers (Tansu) answer it anyway, so the
session skips frames answering requests sent without expecting a response (librdkafka ignores
such frames too); while nothing else is in flight they are drained without blocking, so they
never pile up in the socket buffer.

With SASL (client/security/sasl/) the connection logs in right after ApiVersions, before any other
request, and logs in again (KIP-368) before the next request sent with nothing in flight once
85% of the session lifetime the broker granted has passed.

A Kafka 0.7 broker (``broker_version_fallback`` 0.7.x) gets none of this: it drops the
connection on a request type it does not know, ApiVersions included, and its requests carry
no correlation id, client id or API version. Such a connection sends nothing when it opens,
and ``send_frame`` / ``receive_frame`` carry whole 0.7 requests and answers (size-prefixed
like every Kafka frame) with the same timeouts, deadline and TLS handling;
``client/kafka07/connection.py`` keeps their order, which is all that pairs them.

Every wait is bounded: a connect (and TLS handshake) by socket.connection.setup.timeout.ms,
sending a request and reading its answer by request.timeout.ms, and all of them by the
deadline of the operation under way, if its client set one (a write's delivery.timeout.ms):
a connection never waits past the time an operation promised to end by.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from spark_kafka_wire.client.config import ClientConfig, format_address
from spark_kafka_wire.client.errors import (
    CONFIGURATION,
    KAFKA07_UNSUPPORTED,
    ApiVersionsClosedError,
    ApiVersionsTimeoutError,
    BrokerConnectionError,
    ConfigurationError,
    ConnectionSetupTimeoutError,
    NotKafkaError,
    RequestTimeoutError,
    TlsHandshakeError,
)
from spark_kafka_wire.client.security.tls import (
    context_for,
    explain_verify_failure,
    peer_certificate,
)
from spark_kafka_wire.client.wire.answer_limits import LISTING_ANSWER_BYTES, SMALL_ANSWER_BYTES
from spark_kafka_wire.client.wire.hooks import (
    AnswerEvent,
    CloseEvent,
    CloseReason,
    ConnectEvent,
    HookRegistry,
    RequestEvent,
    ThrottleEvent,
)
from spark_kafka_wire.client.wire.session import (
    FrameRefused,
    InFlight,
    NeedData,
    WireSession,
    WrongCorrelation,
    answer_begins,
    frame_raw,
)
from spark_kafka_wire.protocol import framing
from spark_kafka_wire.protocol.bodies import ApiVersionsRequest
from spark_kafka_wire.protocol.engine import ApiSpec, RequestT, ResponseT
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.messages import API_VERSIONS, CLIENT_THROTTLES_FROM
from spark_kafka_wire.protocol.primitives import INT32_MAX
from spark_kafka_wire.protocol.versions import (
    BrokerVersions,
    choose_version,
    is_kafka07,
    parse_api_versions,
    versions_for_release,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Deadline:
    """When an operation must end (monotonic ``at``), and the setting that says so (named in
    the timeout errors of the waits it cut short)."""

    at: float
    setting: str


@dataclass(frozen=True)
class _Limit:
    """One wait's end: monotonic ``ends``, its length ``ms`` and, when the operation's
    deadline cut it short, that deadline's setting."""

    ends: float
    ms: int
    deadline: str | None


# Seconds a TLS handshake waits for the broker's first answer before checking, on a second
# connection, whether the port is a plaintext Kafka listener (``BrokerConnection._wrap``). A TLS
# listener answers a ClientHello in one round trip, so on a healthy one the check never runs;
# when it does, it costs a TLS listener one refused connection and the handshake goes on.
TLS_SILENCE_PROBE_S = 1.0


# Seconds the first ApiVersions request of a plaintext connection waits for an answer before
# checking, on a second connection, whether the port is an HTTP server (which waits for the
# end of a line Kafka's bytes never send, and answers only when the connection closes). A
# Kafka broker answers ApiVersions in milliseconds, so the check runs only for silent peers;
# one that is no HTTP server (a Kafka 0.9 broker, which leaves ApiVersions unanswered, closes
# the check's connection) is waited for as before, within the same request timeout.
HTTP_SILENCE_PROBE_S = 1.0
# What the check sends: an HTTP server answers it with a status line ("HTTP/1.x ...").
_HTTP_PROBE = b"HEAD / HTTP/1.0\r\n\r\n"


def _not_a_tls_record(exc: ssl.SSLError) -> bool:
    """OpenSSL's words for a peer whose bytes are not TLS records at all."""
    reason = (exc.reason or str(exc)).upper()
    return "WRONG_VERSION_NUMBER" in reason or "RECORD_LAYER" in reason \
        or "PACKET_LENGTH_TOO_LONG" in reason
# getaddrinfo's answers that a name has no address (not EAI_AGAIN, a resolver that failed)
_NO_SUCH_NAME = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA")
                          if hasattr(socket, name))


def _nothing_listens(exc: OSError) -> bool:
    """A connect that failed because nothing takes connections at the address: refused (no
    listener on the port) or a host name without an address. Another attempt a moment later
    meets the same unless a broker is starting there."""
    return isinstance(exc, ConnectionRefusedError) or (
        isinstance(exc, socket.gaierror) and exc.errno in _NO_SUCH_NAME)


def _evidence(kind: str | None, sasl: bool, seen: str) -> str:
    """What a NotKafkaError says: what the server looks like (``kind``, from
    ``framing.foreign_protocol``), what was ``seen``, and what to set."""
    if kind is None:
        return (f"{seen}, where a Kafka broker's answer begins with its size and echoes the "
                "request's correlation id. Check that kafka.bootstrap.servers names a Kafka "
                "broker's listener (host:port)")
    if kind.startswith("a TLS port"):
        return (f"it looks like {kind}: set kafka.security.protocol="
                f"{'SASL_SSL' if sasl else 'SSL'}, or use the broker's plaintext listener")
    advice = ", not a web server, a Schema Registry or a REST proxy" \
        if kind == "an HTTP server" else ""
    return (f"it looks like {kind} ({seen}). kafka.bootstrap.servers names Kafka brokers' "
            f"listeners (host:port){advice}")


class BrokerConnection:
    def __init__(self, host: str, port: int, config: ClientConfig, node_id: int | None = None,
                 deadline: Callable[[], Deadline | None] | None = None,
                 hooks: HookRegistry | None = None):
        """``deadline``: the deadline of the operation under way, asked before each wait;
        ``hooks``: those of the client this connection belongs to (else its own)."""
        self.host = host
        self.port = port
        self.node_id = node_id
        self.config = config
        self._deadline = deadline
        self.name = format_address(host, port) + (
            f" (node {node_id})" if node_id is not None else "")
        self._sock: socket.socket | None = None
        self._wire = WireSession(self.name, config.client_id)
        self.hooks = hooks if hooks is not None else HookRegistry()
        self.closed_reason: CloseReason | None = None  # why the last socket closed
        self.api_versions: BrokerVersions = {}
        # the cluster's finalized features as this broker reported them (ApiVersions v3+)
        self.finalized_features: dict[str, int] = {}
        self._reauth_at: float | None = None  # KIP-368: when to log in again (monotonic)
        self._reauth_reconnects = False  # ... on a new connection (plan_reauthentication)
        self._logged_in = False  # this socket has logged in once: the next login re-authenticates
        self._throttled_until = 0.0  # KIP-219: no request before this (monotonic)
        self.throttled_s = 0.0  # seconds send() waited for throttles, in all
        self.authentications = 0  # SASL logins on this connection, re-authentications included
        # Requests sent on this connection, by API name ("Fetch", "ListOffsets", ...): what a
        # read or write cost in round trips (KafkaClient.request_counts sums them).
        self.requests_sent: Counter[str] = Counter()
        # Bytes of the answers read, by API name (each frame's size, its size prefix too).
        self.bytes_received: Counter[str] = Counter()
        # A Kafka 0.7 broker: no ApiVersions, no correlation ids (send_frame/receive_frame).
        self.kafka07 = is_kafka07(config.broker_version_fallback)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self._sock is not None

    @property
    def generation(self) -> int:
        """Sessions this connection has had: it changes on every close, and a request sent in
        an earlier one is never answered."""
        return self._wire.generation

    @property
    def unsolicited_dropped(self) -> int:
        """Answers to requests that expected none, dropped (see the module docstring)."""
        return self._wire.unsolicited_dropped

    def _closed(self, what: str = "connection is closed") -> BrokerConnectionError:
        """The error of a use after a close, naming the close's reason when there was one."""
        reason = f" ({self.closed_reason.name})" if self.closed_reason is not None else ""
        return BrokerConnectionError(self.name, what + reason)

    def connect(self) -> None:
        if self._sock is not None:
            return
        if not self.hooks:
            self._connect()
            return
        began = time.monotonic()
        try:
            self._connect()
        except BaseException as exc:
            self.hooks.connected(ConnectEvent(self.name, exc, time.monotonic() - began))
            raise
        self.hooks.connected(ConnectEvent(self.name, None, time.monotonic() - began))

    def _connect(self) -> None:
        if self.kafka07:
            if self.config.sasl is not None:
                raise ConfigurationError.of(
                    KAFKA07_UNSUPPORTED, "SASL", name=self.name)
            self._open()  # and nothing else: a 0.7 broker drops unknown requests
            self.api_versions = {}
            return
        if not self.config.api_version_request:
            self._open()
            self.api_versions = versions_for_release(self.config.broker_version_fallback)
            self._login_or_close()
            return
        version: int | None = API_VERSIONS.max_version
        while version is not None:
            self._open()
            try:
                version = self._negotiate(version)
            except RequestTimeoutError as exc:
                # No answer at all: another version would wait as long again. A real Kafka
                # 0.9.0.1 answers nothing to ApiVersions (tests/compat), so say how to pin it.
                self.close(CloseReason.TIMED_OUT)
                raise ApiVersionsTimeoutError(exc) from None
            except NotKafkaError:
                self.close(CloseReason.NOT_KAFKA)  # no broker of another version: none tried
                raise
            except BrokerConnectionError as exc:
                self.close(CloseReason.SETUP_FAILED)
                if version == 0:
                    raise ApiVersionsClosedError(
                        self.name,
                        f"{exc.reason}. The broker closed the connection on an ApiVersions "
                        "request: brokers older than 0.10 do that. For a 0.8 or 0.9 broker "
                        "set kafka.api.version.request=false and kafka.broker.version.fallback "
                        "to its release (e.g. 0.8.2 or 0.9.0); a Kafka 0.7 broker has no "
                        "Metadata request and is reached through its ZooKeeper instead: give "
                        "zookeeper.connect (host:port[/chroot]; the brokers' registrations "
                        "there select kafka.broker.version.fallback=0.7.x)",
                    ) from None
                # Brokers before KIP-511 may close on an ApiVersions version they do not
                # know instead of answering UNSUPPORTED_VERSION: retry with v0, which all of them know.
                version = 0
            except BaseException:
                self.close(CloseReason.SETUP_FAILED)
                raise
        self._login_or_close()

    def _login_or_close(self) -> None:
        if self.config.sasl is None:
            return
        try:
            self._login()
        except BaseException:
            self.close(CloseReason.AUTH_FAILED)
            raise

    def _login(self) -> None:
        """SASL right after ApiVersions (and TLS), before any other request; again when a
        KIP-368 session nears its end."""
        assert self.config.sasl is not None
        # the SASL mechanisms, imported by the first connection that logs in: a process on
        # an unauthenticated cluster never pays for their import (docs/benchmarks.md)
        from spark_kafka_wire.client.security.sasl.authenticate import (  # noqa: PLC0415
            authenticate,
            plan_reauthentication,
        )

        started = time.monotonic()
        lifetime = authenticate(self, self.config.sasl, self.config.security_protocol)
        self.authentications += 1
        plan = plan_reauthentication(lifetime, started, time.monotonic(), self._logged_in)
        self._logged_in = True
        self._reauth_at = None if plan is None else plan.at
        self._reauth_reconnects = plan is not None and plan.reconnect

    def send_raw(self, token: bytes) -> None:
        """A SASL token outside Kafka's framing (after SaslHandshake v0): length, bytes."""
        if self._sock is None:
            raise self._closed()
        try:
            self._sock.settimeout(self.config.request_timeout_ms / 1000)
            self._sock.sendall(frame_raw(token))
        except ssl.SSLError as exc:
            raise self._tls_error(exc) from None
        except OSError as exc:
            self.close(CloseReason.IO_ERROR)
            raise BrokerConnectionError(self.name, f"send failed: {exc}") from None

    def receive_raw(self) -> bytes:
        """The broker's next raw SASL token (after SaslHandshake v0)."""
        return bytes(self._read_frame("a SASL token", SMALL_ANSWER_BYTES))

    def operation_deadline(self) -> Deadline | None:
        """The deadline of the operation under way, if its client set one."""
        return self._deadline() if self._deadline is not None else None

    def _limit(self, timeout_ms: int) -> _Limit:
        """A wait of up to ``timeout_ms`` from now, cut short by the operation's deadline."""
        now = time.monotonic()
        ends = now + timeout_ms / 1000
        deadline = self._deadline() if self._deadline is not None else None
        if deadline is not None and deadline.at < ends:
            return _Limit(deadline.at, max(0, round((deadline.at - now) * 1000)),
                          deadline.setting)
        return _Limit(ends, timeout_ms, None)

    def _open(self) -> None:
        limit = self._limit(self.config.connect_timeout_ms)
        timeout = limit.ends - time.monotonic()
        if timeout <= 0:
            raise ConnectionSetupTimeoutError(self.name, "connect", limit.ms, limit.deadline)
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except TimeoutError:
            raise ConnectionSetupTimeoutError(self.name, "connect", limit.ms,
                                              limit.deadline) from None
        except OSError as exc:
            error = BrokerConnectionError(self.name, f"cannot connect: {exc.strerror or exc}")
            error.nothing_listens = _nothing_listens(exc)
            raise error from None
        except (UnicodeError, ValueError) as exc:  # a name no resolver takes ("a..b", NUL)
            error = BrokerConnectionError(self.name, f"cannot connect: the host name cannot be "
                                          f"looked up ({exc})")
            error.nothing_listens = True
            raise error from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.config.tls is not None:
            sock = self._wrap(sock, limit)
        self._sock = sock
        self.closed_reason = None

    def _wrap(self, sock: socket.socket, limit: _Limit) -> socket.socket:
        """TLS around the connected socket (the handshake runs here, within the connect
        timeout); a failed verification is a TlsHandshakeError that says why.

        A listener that does not speak TLS is told apart at once, not after the connect
        timeout (see ``_not_tls``): it answers the ClientHello with bytes that are no TLS
        record (OpenSSL's WRONG_VERSION_NUMBER), or closes (Kafka reads the ClientHello as a
        frame of about 369 MB, more than socket.request.max.bytes), or says nothing while it
        waits for those 369 MB (Tansu). The last two also happen to TLS listeners (a broker
        shutting down, an overloaded one), so they are only called "not TLS" when a plaintext
        ApiVersions request to the same port is answered (``_speaks_plaintext_kafka``); a
        silent peer is asked after ``TLS_SILENCE_PROBE_S`` and the handshake then goes on
        waiting for the rest of the connect timeout if the answer was no."""
        assert self.config.tls is not None
        ctx = context_for(self.config.tls)
        timeout = self.config.connect_timeout_ms / 1000
        try:
            tls_sock = ctx.wrap_socket(sock, server_hostname=self.host,
                                       do_handshake_on_connect=False)
        except (ssl.SSLError, OSError) as exc:
            sock.close()
            raise BrokerConnectionError(self.name, f"cannot start TLS: {exc}") from None
        probed = False
        while True:
            remaining = limit.ends - time.monotonic()
            try:
                if remaining <= 0:
                    raise TimeoutError
                tls_sock.settimeout(remaining if probed else min(remaining, TLS_SILENCE_PROBE_S))
                tls_sock.do_handshake()
                return tls_sock
            except ssl.SSLCertVerificationError as exc:
                tls_sock.close()
                cert = peer_certificate(self.host, self.port, timeout)
                raise TlsHandshakeError(self.name, explain_verify_failure(exc, self.host, cert),
                                        self.config.security_protocol) from None
            except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError,
                    ConnectionError) as exc:
                tls_sock.close()
                if self._speaks_plaintext_kafka(limit):
                    raise self._not_tls("closed the connection on the TLS ClientHello and "
                                        "answered a plaintext Kafka request") from None
                reason = getattr(exc, "strerror", None) or exc
                raise BrokerConnectionError(
                    self.name, f"connection lost during the TLS handshake: {reason}. "
                    "If this persists, check that the broker's listener speaks SSL") from None
            except ssl.SSLError as exc:
                tls_sock.close()
                if _not_a_tls_record(exc):
                    raise self._not_tls("answered the TLS ClientHello with bytes that are no "
                                        f"TLS record ({exc.reason})") from None
                raise self._tls_error(exc) from None
            except TimeoutError:
                if not probed and time.monotonic() < limit.ends:
                    probed = True
                    if self._speaks_plaintext_kafka(limit):
                        tls_sock.close()
                        raise self._not_tls("said nothing to the TLS ClientHello and answered "
                                            "a plaintext Kafka request") from None
                    continue
                tls_sock.close()
                raise ConnectionSetupTimeoutError(self.name, "TLS handshake", limit.ms,
                                                  limit.deadline) from None
            except OSError as exc:
                tls_sock.close()
                raise BrokerConnectionError(
                    self.name, f"connection lost during the TLS handshake: "
                    f"{exc.strerror or exc}. If this persists, check that the broker's "
                    "listener speaks SSL") from None

    def _not_tls(self, evidence: str) -> TlsHandshakeError:
        """The listener speaks plaintext, not TLS: not retriable (every attempt meets the same
        listener), with the settings that fit it."""
        plain = "SASL_PLAINTEXT" if self.config.sasl is not None else "PLAINTEXT"
        return TlsHandshakeError(
            self.name, f"the listener does not speak TLS: it {evidence}. Use "
            f"kafka.security.protocol={plain} for this port, or the broker's TLS (SSL "
            "listener) port", self.config.security_protocol)

    def _speaks_plaintext_kafka(self, limit: _Limit) -> bool:
        """Whether the broker's port answers an ApiVersions v0 request sent in plaintext on a
        connection of its own, within ``limit``: proof that it is a plaintext listener. A TLS
        listener answers with an alert or closes, a silent peer stays silent: False."""
        cid = INT32_MAX  # an id the connection's own requests reach only after 2**31 of them
        frame = b"".join(bytes(part) for part in framing.encode_request_parts(
            API_VERSIONS, 0, cid, self.config.client_id, ApiVersionsRequest()))
        remaining = limit.ends - time.monotonic()
        if remaining <= 0:
            return False
        try:
            with socket.create_connection((self.host, self.port), timeout=remaining) as probe:
                probe.sendall(frame)
                head = b""
                while len(head) < 8:
                    remaining = limit.ends - time.monotonic()
                    if remaining <= 0:
                        return False
                    probe.settimeout(remaining)
                    chunk = probe.recv(8 - len(head))
                    if not chunk:
                        return False
                    head += chunk
        except (OSError, ValueError):
            return False
        return answer_begins(head, cid, SMALL_ANSWER_BYTES)

    def _check_silence(self, limit: _Limit) -> None:
        """The first ApiVersions of a plaintext connection: when nothing has come back after
        ``HTTP_SILENCE_PROBE_S``, a NotKafkaError if the port answers an HTTP request (see
        HTTP_SILENCE_PROBE_S); otherwise the answer is waited for as usual."""
        sock = self._sock
        if sock is None or self.config.tls is not None or self._wire.buffered:
            return
        wait = min(HTTP_SILENCE_PROBE_S, limit.ends - time.monotonic())
        if wait <= 0 or select.select([sock], [], [], wait)[0]:
            return
        answer = self._probe_http(limit)
        if answer is not None:
            self.close(CloseReason.NOT_KAFKA)
            raise NotKafkaError(self.name, _evidence(
                "an HTTP server", self.config.sasl is not None,
                f"it left ApiVersions unanswered and answered an HTTP request with {answer!r}"))

    def _probe_http(self, limit: _Limit) -> bytes | None:
        """The status line's start (``HTTP/1.1 200``) with which the port answers an HTTP
        request sent on a connection of its own within ``HTTP_SILENCE_PROBE_S`` (and
        ``limit``), or None: no HTTP server."""
        ends = min(limit.ends, time.monotonic() + HTTP_SILENCE_PROBE_S)
        try:
            with socket.create_connection((self.host, self.port),
                                          timeout=max(0.001, ends - time.monotonic())) as probe:
                probe.sendall(_HTTP_PROBE)
                head = b""
                while len(head) < 12:
                    remaining = ends - time.monotonic()
                    if remaining <= 0:
                        break
                    probe.settimeout(remaining)
                    chunk = probe.recv(12 - len(head))
                    if not chunk:
                        break
                    head += chunk
        except (OSError, ValueError):
            return None
        return head if head.startswith(b"HTTP/") else None

    def _foreign(self, head: bytes | memoryview, what: str) -> NotKafkaError | None:
        """The NotKafkaError of an answer whose first bytes ``head`` are no Kafka size prefix:
        another protocol's (``framing.foreign_protocol``), or anything at all in answer to
        the first request of a connection, ApiVersions. None otherwise (a Kafka stream that
        went wrong later stays a ProtocolError)."""
        kind = framing.foreign_protocol(head)
        if kind is None and what != API_VERSIONS.name:
            return None
        return NotKafkaError(self.name, _evidence(kind, self.config.sasl is not None,
                                                  f"its answer begins {bytes(head)!r}"))

    def _tls_error(self, exc: ssl.SSLError) -> TlsHandshakeError | BrokerConnectionError:
        """A TLS alert or protocol failure, with what to check. With TLS 1.3 a broker that
        refuses our client certificate says so only after the handshake, on the first read.
        A connection that merely ends (EOF, close_notify) stays a retriable connection error."""
        reason = exc.reason or str(exc)
        if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)):
            self.close(CloseReason.PEER_CLOSED)
            return BrokerConnectionError(self.name, f"TLS connection closed: {reason}")
        if "CERTIFICATE" in reason.upper() or "UNKNOWN_CA" in reason.upper():
            advice = ("the broker refused the client certificate or requires one (mutual TLS): "
                      "check kafka.ssl.keystore.* (or kafka.ssl.certificate.location and "
                      "kafka.ssl.key.location) and that the broker trusts its CA")
        elif _not_a_tls_record(exc):
            advice = "the broker did not answer in TLS: check that this listener speaks SSL"
        else:
            advice = ("check kafka.ssl.enabled.protocols, kafka.ssl.protocol and "
                      "kafka.ssl.cipher.suites against the broker's TLS settings")
        self.close(CloseReason.TLS_ERROR)
        return TlsHandshakeError(self.name, f"{reason}: {advice}", self.config.security_protocol)

    def close(self, reason: CloseReason) -> None:
        """Close the socket, if open, for ``reason`` (kept as ``closed_reason`` until the next
        connect; closing a closed connection keeps the first reason, the cause). What was in
        flight is never answered: receiving it raises."""
        sock, self._sock = self._sock, None
        self._wire.reset()
        self._reauth_at = None
        self._reauth_reconnects = False
        self._logged_in = False
        if sock is None:
            return
        self.closed_reason = reason
        try:
            sock.close()
        except OSError:
            pass
        if self.hooks:
            self.hooks.closed(CloseEvent(self.name, reason))

    def __enter__(self) -> BrokerConnection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(CloseReason.CLIENT_CLOSED)

    def _negotiate(self, version: int) -> int | None:
        """One ApiVersions exchange; the next version to try, or None when done."""
        inflight = self.send(API_VERSIONS, ApiVersionsRequest(), version=version)
        limit = self._limit(self.config.request_timeout_ms)
        self._check_silence(limit)
        body: Any = self.receive(inflight, limit)
        result = parse_api_versions(version, body["__raw__"])  # receive() leaves it raw
        if result.retry_version is None:
            self.api_versions = result.ranges
            self.finalized_features = result.finalized
            return None
        if result.retry_version >= version:
            raise BrokerConnectionError(self.name, "ApiVersions negotiation did not converge")
        return result.retry_version

    def version(self, spec: ApiSpec) -> int:
        """The version of ``spec`` to use with this broker."""
        return choose_version(spec, self.api_versions, self.name)

    # -- requests ----------------------------------------------------------------------------
    def send(
        self,
        spec: ApiSpec[RequestT, ResponseT],
        body: RequestT,
        version: int | None = None,
        expect_response: bool = True,
    ) -> InFlight[ResponseT]:
        if self._sock is None:
            raise self._closed()
        if self._reauth_at is not None and not self._wire.in_flight \
                and time.monotonic() >= self._reauth_at:
            self._reauth_at = None
            if self._reauth_reconnects:  # a session too short to re-authenticate in
                log.info("broker %s granted a SASL session too short to re-authenticate in "
                         "(Kafka takes one re-authentication a second): logging in on a new "
                         "connection", self.name)
                self.close(CloseReason.REAUTHENTICATE)
                self.connect()
            else:
                self._login_or_close()
        if self.kafka07:
            raise ConfigurationError.of(
                CONFIGURATION, "NOT_A_KAFKA07_REQUEST", spec=spec.name, name=self.name,
                broker_version_fallback=self.config.broker_version_fallback)
        if version is None:
            version = self.version(spec)
        self._wait_for_throttle()
        inflight, frame = self._wire.frame_request(spec, version, body, expect_response)
        self._send_bytes(frame, spec.name)
        self.requests_sent[spec.name] += 1
        self._wire.sent(inflight)
        if self.hooks:
            inflight.sent_at = time.monotonic()
            self.hooks.request_written(RequestEvent(
                self.name, spec.name, version, sum(len(memoryview(p).cast("B")) for p in frame),
                cast(dict[str, Any], body)))
        if not expect_response and not self._wire.in_flight:
            self._drain_unsolicited()
        return inflight

    def _wait_for_throttle(self) -> None:
        """KIP-219: after an answer that carried a throttle time, send nothing to this broker
        before it has passed (a broker mutes the connection meanwhile). The operation's
        deadline still ends the wait; the request then times out against it as usual."""
        wait = self._throttled_until - time.monotonic()
        if wait <= 0:
            return
        deadline = self._deadline() if self._deadline is not None else None
        if deadline is not None:
            wait = min(wait, deadline.at - time.monotonic())
        if wait > 0:
            time.sleep(wait)
            self.throttled_s += wait

    def _throttle(self, spec: ApiSpec, version: int, answer: dict[str, Any]) -> int:
        """The throttle time ``answer`` asks this client to honour (0: none), noted so that
        the next send waits for it. A throttle longer than request.timeout.ms (never sent by
        a sane broker: Kafka's is bounded by its quota window, 11 s by default) is honoured
        for request.timeout.ms only; a request sent into a still muted connection just waits
        there, within its own timeout."""
        if version < CLIENT_THROTTLES_FROM.get(spec.key, 1 << 15):
            return 0
        ms = min(int(answer.get("throttle_time_ms") or 0), self.config.request_timeout_ms)
        if ms > 0:
            self._throttled_until = max(self._throttled_until, time.monotonic() + ms / 1000)
            if self.hooks:
                self.hooks.throttled(ThrottleEvent(self.name, spec.name, ms))
        return max(0, ms)

    def _send_bytes(self, parts: list[Any], what: str) -> None:
        """Write a whole frame, given in pieces, within request.timeout.ms (and the
        operation's deadline)."""
        assert self._sock is not None
        limit = self._limit(self.config.request_timeout_ms)
        try:
            self._send_frame(self._sock, parts, limit)
        except TimeoutError:
            self.close(CloseReason.TIMED_OUT)
            raise RequestTimeoutError(self.name, f"sending {what}", limit.ms,
                                      limit.deadline) from None
        except ssl.SSLError as exc:
            raise self._tls_error(exc) from None
        except OSError as exc:
            self.close(CloseReason.IO_ERROR)
            raise BrokerConnectionError(self.name, f"send failed: {exc}") from None

    def send_frame(self, frame: bytes | memoryview, what: str) -> None:
        """Send a request framed by the caller (its size prefix included), as is: a Kafka 0.7
        request, which has no header this class could write. ``what`` names it in errors."""
        if self._sock is None:
            raise self._closed()
        self._send_bytes([frame], what)

    def receive_frame(self, what: str, max_size: int) -> memoryview:
        """The next frame's bytes after its size prefix (a Kafka 0.7 answer), read within
        request.timeout.ms; ``what`` names the awaited answer in errors. A frame announcing
        more than ``max_size`` (what the request may be answered with, ``answer_limits``)
        closes the connection unread."""
        return self._read_frame(what, max_size)

    @staticmethod
    def _send_frame(sock: socket.socket, parts: list[Any], limit: _Limit) -> None:
        """Send a frame given in pieces (``framing.encode_request_parts``): one ``sendmsg``
        call gathers them (no copy into one buffer first); TLS sends them one by one."""
        timeout = limit.ends - time.monotonic()
        if timeout <= 0:
            raise TimeoutError
        sock.settimeout(timeout)
        if len(parts) == 1 or isinstance(sock, ssl.SSLSocket):
            for part in parts:
                sock.sendall(part)
            return
        views = [memoryview(part).cast("B") for part in parts]
        while True:
            sent = sock.sendmsg(views)
            while views and sent >= len(views[0]):
                sent -= len(views.pop(0))
            if not views:
                return
            views[0] = views[0][sent:]
            timeout = limit.ends - time.monotonic()
            if timeout <= 0:
                raise TimeoutError
            sock.settimeout(timeout)

    @property
    def in_flight(self) -> int:
        """Requests sent whose responses have not been read yet."""
        return self._wire.in_flight

    def _drain_unsolicited(self) -> None:
        """Read, without blocking, responses to requests that expected none, and drop them."""
        sock = self._sock
        if sock is None:
            return
        try:
            sock.setblocking(False)
            # no more than one answer's worth ahead: what a broker streams past that waits
            # in the socket (the next receive() reads it), not in the session
            while self._wire.buffered < LISTING_ANSWER_BYTES:
                try:
                    chunk = sock.recv(65536)
                except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                    break
                if not chunk:
                    self.close(CloseReason.PEER_CLOSED)
                    raise BrokerConnectionError(
                        self.name,
                        "the broker closed the connection after a request that expects no "
                        "response (Kafka does so when a Produce with acks=0 fails)",
                    )
                self._wire.receive_data(chunk)
        except ssl.SSLError as exc:
            raise self._tls_error(exc) from None
        except OSError as exc:
            self.close(CloseReason.IO_ERROR)
            raise BrokerConnectionError(self.name, f"receive failed: {exc}") from None
        finally:
            if self._sock is not None:
                self._sock.setblocking(True)
        try:
            self._wire.drop_unsolicited()
        except ProtocolError:
            self.close(CloseReason.PROTOCOL_ERROR)
            raise

    def receive(self, inflight: InFlight[ResponseT], limit: _Limit | None = None) -> ResponseT:
        """Read the response to ``inflight`` (responses to earlier requests must be read
        first), within ``limit`` (by default request.timeout.ms from now, for each frame
        read)."""
        if not inflight.expect_response:
            return cast(ResponseT, {})  # acks=0: no answer, and nothing in it
        spec, version = inflight.spec, inflight.version
        if inflight.generation != self._wire.generation or self._sock is None:
            raise self._closed(f"the connection closed before the {spec.name} response arrived")
        frame, frame_limit = -1, limit
        while True:
            try:
                event = self._wire.next_answer(inflight)
            except FrameRefused as refused:
                raise self._refused(refused) from None
            except WrongCorrelation as wrong:
                self.close(CloseReason.PROTOCOL_ERROR)
                if spec.key == API_VERSIONS.key:  # the connection's first answer
                    raise NotKafkaError(self.name, _evidence(
                        None, self.config.sasl is not None, f"its answer to ApiVersions carries "
                        f"correlation id {wrong.got}, not {inflight.correlation_id}")) from None
                raise ProtocolError(str(wrong), broker=self.name) from None
            except ProtocolError:
                self.close(CloseReason.PROTOCOL_ERROR)
                raise
            if not isinstance(event, NeedData):
                break
            if event.frame != frame:  # a new frame: the caller's limit, or a fresh one
                frame = event.frame
                frame_limit = limit if limit is not None and event.inflight is inflight \
                    else self._limit(self.config.request_timeout_ms)
            assert frame_limit is not None
            self._receive_into(event, frame_limit)
        self.bytes_received[spec.name] += event.size
        if spec.key == API_VERSIONS.key:
            # parsed by the negotiation, which knows the fallback rule
            answer = cast(ResponseT, {"__raw__": event.body})
        else:
            try:
                answer = spec.decode_response(version, event.body)
            except ProtocolError as exc:
                # Damaged or foreign bytes: the size prefix that delimited this answer may be
                # damaged too, so nothing more is read from this connection (as after a
                # correlation id mismatch); the next request opens a new one.
                self.close(CloseReason.PROTOCOL_ERROR)
                raise ProtocolError(exc.reason, broker=self.name) from None
            inflight.throttle_ms = self._throttle(spec, version, cast(dict[str, Any], answer))
        if self.hooks:
            self.hooks.answer_read(AnswerEvent(
                self.name, spec.name, version, event.size,
                time.monotonic() - inflight.sent_at if inflight.sent_at else 0.0,
                inflight.throttle_ms, event.frame))
        return answer

    def abandon(self, inflight: InFlight) -> None:
        """Give up on reading the answer to ``inflight`` without blocking now.

        A reader that sent a request ahead (a prefetch) and then stops, or needs another one,
        abandons it; the connection reads and drops that answer before the next one it is
        asked for, so the connection stays usable by other readers of the same worker.
        """
        self._wire.abandon(inflight)

    def request(self, spec: ApiSpec[RequestT, ResponseT], body: RequestT,
                version: int | None = None) -> ResponseT:
        return self.receive(self.send(spec, body, version))

    def _read_frame(self, what: str, max_size: int, limit: _Limit | None = None
                    ) -> memoryview:
        """The next frame's bytes, within ``limit`` (by default request.timeout.ms from now);
        one announcing more than ``max_size`` bytes (the limit of the answer awaited,
        ``answer_limits``) closes the connection before it is read, and one whose size is
        another protocol's bytes is a NotKafkaError (``_foreign``)."""
        if self._sock is None:
            raise self._closed()
        if limit is None:
            limit = self._limit(self.config.request_timeout_ms)
        while True:
            try:
                got = self._wire.next_frame(what, max_size)
            except FrameRefused as refused:
                raise self._refused(refused) from None
            if not isinstance(got, NeedData):
                return got
            self._receive_into(got, limit)

    def _refused(self, refused: FrameRefused) -> NotKafkaError | ProtocolError:
        """A frame refused on its size prefix: the connection closes, and the error says
        whether the peer speaks another protocol (``_foreign``)."""
        foreign = self._foreign(refused.head, refused.what)
        self.close(CloseReason.PROTOCOL_ERROR if foreign is None else CloseReason.NOT_KAFKA)
        return foreign or ProtocolError(refused.reason, broker=self.name)

    def _receive_into(self, need: NeedData, limit: _Limit) -> None:
        """Receive some of the bytes ``need`` asks for, within ``limit``."""
        sock = self._sock
        if sock is None:
            raise self._closed()
        remaining = limit.ends - time.monotonic()
        if remaining <= 0:
            self.close(CloseReason.TIMED_OUT)
            raise RequestTimeoutError(self.name, need.what, limit.ms, limit.deadline)
        try:
            sock.settimeout(remaining)
            k = sock.recv_into(need.buffer, len(need.buffer))
        except TimeoutError:
            self.close(CloseReason.TIMED_OUT)
            raise RequestTimeoutError(self.name, need.what, limit.ms, limit.deadline) from None
        except ssl.SSLError as exc:
            raise self._tls_error(exc) from None
        except OSError as exc:
            self.close(CloseReason.IO_ERROR)
            raise BrokerConnectionError(self.name, f"receive failed: {exc}") from None
        if k == 0:
            self.close(CloseReason.PEER_CLOSED)
            raise BrokerConnectionError(
                self.name,
                f"connection closed by the broker while waiting for {need.what} (it may not "
                "support the request version, or it is shutting down)",
            )
        self._wire.received(k)
