"""A SASL-authenticating Kafka front (asyncio) that pipes authenticated traffic to Tansu.

Tansu stores no SASL users, so this front plays the broker's authenticator: it speaks Kafka
framing, answers ApiVersions (Tansu's answer, with SaslHandshake v0-1 and SaslAuthenticate
v0-2 advertised), SaslHandshake v0 (raw tokens follow, no SaslAuthenticate framing) and v1 +
SaslAuthenticate v0-2, runs a server-side mechanism from ``sasl_mechanisms`` and forwards
every other request to Tansu in order, pipelining kept. Like Kafka it:

* answers an unknown mechanism with UNSUPPORTED_SASL_MECHANISM (33) and the enabled list, and
  a failed authentication with SASL_AUTHENTICATION_FAILED (58) and a message, then closes;
* closes a connection that sends anything but ApiVersions/SaslHandshake before authenticating;
* enforces KIP-368: SaslAuthenticate v1+ returns ``session_lifetime_ms``; once it has passed, a
  request other than SaslHandshake/SaslAuthenticate closes the connection, while a
  re-authentication (same principal) on the open connection extends it.

``stats`` counts authentications, re-authentications, failures and expiry closes so that tests
can assert them. The server runs on its own event loop in a daemon thread.
"""

from __future__ import annotations

import asyncio
import collections
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from spark_kafka_wire.testing.embedded import free_port
from tests.support.certs import TestPki
from tests.support.sasl_mechanisms import (
    AuthenticationFailed,
    Credentials,
    ServerMechanism,
    make_mechanism,
)
from tests.support.tansu import HiddenTansu
from tests.support.tls_front import Stunnel

API_PRODUCE = 0
API_SASL_HANDSHAKE = 17
API_API_VERSIONS = 18
API_SASL_AUTHENTICATE = 36
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58
MAX_FRAME = 256 << 20
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
_CLOSE = object()


# ------------------------------------------------------------------------------ wire helpers


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _put_uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        if value < 0x80:
            out.append(value)
            return bytes(out)
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def _flexible(api_key: int, version: int) -> bool:
    """Whether a request uses header v2 (tagged fields), for the APIs this front parses."""
    return {API_PRODUCE: 9, API_API_VERSIONS: 3, API_SASL_AUTHENTICATE: 2}.get(api_key, 99) <= version


@dataclass(frozen=True)
class Request:
    api_key: int
    version: int
    correlation_id: int
    frame: bytes  # the whole request without the size prefix
    body_at: int  # where the body starts in frame

    @classmethod
    def parse(cls, frame: bytes) -> Request:
        api_key, version, correlation_id, client_len = struct.unpack_from(">hhih", frame)
        pos = 10 + max(client_len, 0)
        if _flexible(api_key, version):
            pos = _skip_tags(frame, pos)
        return cls(api_key, version, correlation_id, frame, pos)


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def _produce_expects_response(req: Request) -> bool:
    """Produce with acks=0 gets no response: the front must not wait for one."""
    pos = req.body_at
    if req.version >= 3:  # transactional_id comes first
        if req.version >= 9:
            n, pos = _uvarint(req.frame, pos)
            pos += max(n - 1, 0)
        else:
            (n,) = struct.unpack_from(">h", req.frame, pos)
            pos += 2 + max(n, 0)
    (acks,) = struct.unpack_from(">h", req.frame, pos)
    return acks != 0


def rewrite_api_versions(payload: bytes, version: int, sasl_versions: dict[int, tuple[int, int]],
                         drop: set[int]) -> bytes:
    """Tansu's ApiVersions response with the SASL APIs set to what this front implements."""
    (correlation_id, error) = struct.unpack_from(">ih", payload)
    if error != 0:
        return payload  # e.g. UNSUPPORTED_VERSION answered in v0 layout: pass it on
    pos = 6
    entries: dict[int, tuple[int, int, bytes]] = {}
    flexible = version >= 3
    if flexible:
        n, pos = _uvarint(payload, pos)
        n -= 1
    else:
        (n,) = struct.unpack_from(">i", payload, pos)
        pos += 4
    for _ in range(n):
        key, lo, hi = struct.unpack_from(">hhh", payload, pos)
        pos += 6
        tags = b""
        if flexible:
            end = _skip_tags(payload, pos)
            tags, pos = payload[pos:end], end
        entries[key] = (lo, hi, tags)
    rest = payload[pos:]  # throttle_time_ms (v1+) and the top-level tagged fields (v3+)
    for key in drop:
        entries.pop(key, None)
    for key, (lo, hi) in sasl_versions.items():
        entries[key] = (lo, hi, b"\x00" if flexible else b"")
    out = bytearray(struct.pack(">ih", correlation_id, 0))
    out += _put_uvarint(len(entries) + 1) if flexible else struct.pack(">i", len(entries))
    for key in sorted(entries):
        lo, hi, tags = entries[key]
        out += struct.pack(">hhh", key, lo, hi) + tags
    return bytes(out + rest)


# ------------------------------------------------------------------------------ the front


@dataclass
class AuthEvent:
    mechanism: str
    principal: str | None
    reauthentication: bool
    handshake_version: int
    authenticate_version: int | None  # None: SaslHandshake v0, raw tokens
    extensions: dict[str, str]
    at: float = field(default_factory=time.monotonic)


@dataclass
class FrontStats:
    authentications: list[AuthEvent] = field(default_factory=list)  # successes, re-auth included
    failures: list[str] = field(default_factory=list)  # messages sent with error 33/58
    expired_closes: int = 0  # connections closed because their session lifetime had passed
    unauthenticated_closes: int = 0  # connections closed for a request before authenticating
    connections: int = 0
    errors: list[str] = field(default_factory=list)  # requests the front could not parse

    @property
    def reauthentications(self) -> list[AuthEvent]:
        return [e for e in self.authentications if e.reauthentication]

    def principals(self) -> list[str | None]:
        return [e.principal for e in self.authentications]


class SaslFront:
    """SASL on 127.0.0.1:``port`` in front of a plaintext broker at 127.0.0.1:``upstream_port``.

    ``mechanisms``: enabled mechanism names. ``session_lifetime_ms``: KIP-368 lifetime sent in
    SaslAuthenticate v1+ (0: none). ``advertise_authenticate=False`` advertises no
    SaslAuthenticate and SaslHandshake v0 only, which makes clients use raw tokens (the
    pre-1.0 protocol).
    """

    def __init__(self, port: int, upstream_port: int, credentials: Credentials,
                 mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
                                                "OAUTHBEARER"),
                 session_lifetime_ms: int = 0, advertise_authenticate: bool = True,
                 gssapi_factory: Callable[[], ServerMechanism] | None = None) -> None:
        self.port = port
        self.upstream_port = upstream_port
        self.credentials = credentials
        self.mechanisms = tuple(mechanisms)
        self.session_lifetime_ms = session_lifetime_ms
        self.advertise_authenticate = advertise_authenticate
        self.gssapi_factory = gssapi_factory
        self.stats = FrontStats()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- lifecycle (called from the test's thread)

    def start(self) -> SaslFront:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"sasl-front-{self.port}",
                                        daemon=True)
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        try:
            future.result(START_TIMEOUT_S)
        except BaseException:
            self.stop()
            raise
        return self

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    def stop(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        if loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(STOP_TIMEOUT_S)
            finally:
                loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        loop.close()

    def __enter__(self) -> SaslFront:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- connections (on the front's event loop)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self.stats.connections += 1
        try:
            await _Connection(self, reader, writer).run()
        except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception as e:  # a malformed request: close it, keep it for the test to see
            self.stats.errors.append(f"{type(e).__name__}: {e}")
        finally:
            self._connections.discard(task)
            writer.close()


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    if not 0 <= size <= MAX_FRAME:
        raise ConnectionError(f"frame of {size} bytes")
    return await reader.readexactly(size)


class _Connection:
    """One client connection: requests in, responses out in request order."""

    def __init__(self, front: SaslFront, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.front = front
        self.reader = reader
        self.writer = writer
        self.outbox: asyncio.Queue[asyncio.Future] = asyncio.Queue()
        self.waiting_upstream: collections.deque[tuple[asyncio.Future, Callable | None]] = (
            collections.deque())
        self.upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self.principal: str | None = None  # set once authenticated
        self.mechanism_name: str | None = None
        self.expires_at: float | None = None  # monotonic deadline of the session
        self.handshake_version = 0
        self.mechanism: ServerMechanism | None = None  # exchange in progress
        self.raw_tokens = False  # after SaslHandshake v0
        self.lifetime_ms = 0  # session lifetime granted by the last authentication

    def respond(self, data: bytes | object) -> None:
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(data)
        self.outbox.put_nowait(fut)

    async def run(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        upstream_task: asyncio.Task | None = None
        read: asyncio.Task | None = None
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.front.upstream_port)
            self.upstream = (up_reader, up_writer)
            upstream_task = asyncio.create_task(self._upstream_loop(up_reader))
            while not sender.done():
                read = asyncio.create_task(_read_frame(self.reader))
                done, _ = await asyncio.wait({read, sender}, return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    read.cancel()
                    break
                if not self._handle(read.result()):
                    self.respond(_CLOSE)
                    await asyncio.wait({sender}, timeout=STOP_TIMEOUT_S)
                    break
        finally:
            for task in (sender, upstream_task, read):
                if task is not None:
                    task.cancel()
                    if task.done() and not task.cancelled():
                        task.exception()  # retrieved: a closed connection is no error here
            if self.upstream is not None:
                self.upstream[1].close()

    async def _send_loop(self) -> None:
        while True:
            data = await (await self.outbox.get())
            if data is _CLOSE:
                return
            self.writer.write(data)
            await self.writer.drain()

    async def _upstream_loop(self, up_reader: asyncio.StreamReader) -> None:
        try:
            while True:
                payload = await _read_frame(up_reader)
                fut, transform = self.waiting_upstream.popleft()
                fut.set_result(_frame(transform(payload) if transform else payload))
        except (asyncio.IncompleteReadError, ConnectionError):
            self.respond(_CLOSE)  # the broker went away: so does the client connection

    def _forward(self, req: Request, transform: Callable[[bytes], bytes] | None = None) -> None:
        assert self.upstream is not None
        if req.api_key != API_PRODUCE or _produce_expects_response(req):
            fut = asyncio.get_running_loop().create_future()
            self.waiting_upstream.append((fut, transform))
            self.outbox.put_nowait(fut)
        self.upstream[1].write(_frame(req.frame))

    # -- request dispatch; False closes the connection after what is queued has been sent

    def _handle(self, frame: bytes) -> bool:
        if self.raw_tokens:
            return self._raw_token(frame)
        req = Request.parse(frame)
        if req.api_key == API_API_VERSIONS:
            self._forward(req, lambda payload: self._api_versions(payload, req.version))
            return True
        if req.api_key == API_SASL_HANDSHAKE:
            return self._handshake(req)
        if req.api_key == API_SASL_AUTHENTICATE:
            return self._authenticate(req)
        if self.principal is None or self.mechanism is not None:
            self.front.stats.unauthenticated_closes += 1
            return False
        if self.expires_at is not None and time.monotonic() > self.expires_at:
            self.front.stats.expired_closes += 1
            return False
        self._forward(req)
        return True

    def _api_versions(self, payload: bytes, version: int) -> bytes:
        if self.front.advertise_authenticate:
            return rewrite_api_versions(payload, version, {API_SASL_HANDSHAKE: (0, 1),
                                                           API_SASL_AUTHENTICATE: (0, 2)}, set())
        return rewrite_api_versions(payload, version, {API_SASL_HANDSHAKE: (0, 0)},
                                    {API_SASL_AUTHENTICATE})

    def _handshake(self, req: Request) -> bool:
        (n,) = struct.unpack_from(">h", req.frame, req.body_at)
        name = req.frame[req.body_at + 2:req.body_at + 2 + n].decode("utf-8", "replace")
        enabled = self.front.mechanisms
        error = 0
        if req.version > (1 if self.front.advertise_authenticate else 0):
            error = 35  # UNSUPPORTED_VERSION
        elif name not in enabled:
            error = UNSUPPORTED_SASL_MECHANISM
            self.front.stats.failures.append(f"unsupported mechanism {name}")
        elif self.principal is not None and name != self.mechanism_name:
            error = ILLEGAL_SASL_STATE  # KIP-368: a re-authentication keeps its mechanism
            self.front.stats.failures.append(f"re-authentication switched to {name}")
        body = struct.pack(">ih", req.correlation_id, error) + struct.pack(">i", len(enabled))
        body += b"".join(_string(m) for m in enabled)
        self.respond(_frame(body))
        if error:
            return False
        self.mechanism = make_mechanism(name, self.front.credentials, self.front.gssapi_factory)
        self.handshake_version = req.version
        self.raw_tokens = req.version == 0
        return True

    def _authenticate(self, req: Request) -> bool:
        if self.mechanism is None or self.raw_tokens:
            self.front.stats.failures.append("SaslAuthenticate without SaslHandshake v1")
            self.respond(self._auth_response(req, ILLEGAL_SASL_STATE,
                                             "SaslAuthenticate without SaslHandshake v1", b"", 0))
            return False
        pos = req.body_at
        if req.version >= 2:
            n, pos = _uvarint(req.frame, pos)
            token = req.frame[pos:pos + n - 1]
        else:
            (n,) = struct.unpack_from(">i", req.frame, pos)
            token = req.frame[pos + 4:pos + 4 + n]
        try:
            challenge = self.mechanism.step(bytes(token))
        except AuthenticationFailed as e:
            self.front.stats.failures.append(str(e))
            self.respond(self._auth_response(req, SASL_AUTHENTICATION_FAILED, str(e), b"", 0))
            return False
        lifetime = 0
        if self.mechanism.done:
            failure = self._complete(req.version)
            if failure is not None:
                self.respond(self._auth_response(req, SASL_AUTHENTICATION_FAILED, failure, b"", 0))
                return False
            lifetime = self.lifetime_ms
        self.respond(self._auth_response(req, 0, None, challenge or b"", lifetime))
        return True

    def _raw_token(self, frame: bytes) -> bool:
        assert self.mechanism is not None
        try:
            challenge = self.mechanism.step(frame)
        except AuthenticationFailed as e:
            self.front.stats.failures.append(str(e))
            return False  # Kafka closes a v0 exchange without an error frame
        if self.mechanism.done:
            failure = self._complete(None)
            if failure is not None:
                return False
            self.raw_tokens = False
        if challenge is not None:  # GSSAPI's last step: Kafka sends no raw token at all
            self.respond(_frame(challenge))
        return True

    def _complete(self, authenticate_version: int | None) -> str | None:
        """Record a finished exchange; a message if it must still be refused."""
        mech, self.mechanism = self.mechanism, None
        assert mech is not None
        reauth = self.principal is not None
        if reauth and mech.principal != self.principal:
            message = (f"Cannot change principals during re-authentication from "
                       f"{self.principal} to {mech.principal}")
            self.front.stats.failures.append(message)
            return message
        self.principal, self.mechanism_name = mech.principal, mech.name
        self.front.stats.authentications.append(AuthEvent(
            mechanism=mech.name, principal=mech.principal, reauthentication=reauth,
            handshake_version=self.handshake_version, authenticate_version=authenticate_version,
            extensions=dict(mech.extensions)))
        # The configured lifetime, shortened to the credential's own expiry (Kafka's rule).
        lifetime = self.front.session_lifetime_ms
        if lifetime and mech.credential_expiry is not None:
            lifetime = min(lifetime, max(int((mech.credential_expiry - time.time()) * 1000), 1))
        self.lifetime_ms = lifetime
        self.expires_at = time.monotonic() + lifetime / 1000 if lifetime else None
        return None

    def _auth_response(self, req: Request, error: int, message: str | None, token: bytes,
                       lifetime_ms: int) -> bytes:
        if req.version >= 2:
            out = struct.pack(">ib", req.correlation_id, 0)  # header v1: no tagged fields
            out += struct.pack(">h", error)
            if message is None:
                out += b"\x00"
            else:
                data = message.encode()
                out += _put_uvarint(len(data) + 1) + data
            out += _put_uvarint(len(token) + 1) + token
            out += struct.pack(">q", lifetime_ms) + b"\x00"
            return _frame(out)
        out = struct.pack(">ih", req.correlation_id, error)
        out += struct.pack(">h", -1) if message is None else _string(message)
        out += struct.pack(">i", len(token)) + token
        if req.version >= 1:
            out += struct.pack(">q", lifetime_ms)
        return _frame(out)


# ------------------------------------------------------------------------------ assembled


@dataclass
class SaslBroker:
    """Tansu behind the SASL front, optionally behind stunnel too (SASL_SSL).

    ``bootstrap_servers`` is the outermost port, the one Tansu advertises.
    """

    port: int
    front: SaslFront
    tansu: HiddenTansu
    stunnel: Stunnel | None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def stats(self) -> FrontStats:
        return self.front.stats

    #: what the tests read of a broker kind (Apache Kafka's listeners say "kafka")
    kind: ClassVar[str] = "front"
    #: the host part of the Kerberos service principal the front accepts (it also takes
    #: kafka/127.0.0.1, the name a client derives from the address)
    kerberos_host: ClassVar[str] = "localhost"

    @property
    def signed_tokens(self) -> SaslBroker:
        """Where OAUTHBEARER tokens signed by the test token endpoint go: this front, which
        validates signed and unsecured tokens alike (Apache Kafka has a listener for each,
        tests/support/kafka_observer.KafkaListener.signed_tokens)."""
        return self

    def stop(self) -> None:
        if self.stunnel is not None:
            self.stunnel.stop()
        self.front.stop()
        self.tansu.stop()

    def __enter__(self) -> SaslBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_sasl_broker(credentials: Credentials, pki: TestPki | None = None,
                      **front_options: Any) -> SaslBroker:
    """Start Tansu, the SASL front and, with ``pki``, stunnel (its server certificate) outside.

    ``front_options`` go to ``SaslFront`` (mechanisms, session_lifetime_ms, ...).
    """
    outer = free_port()
    front_port = free_port() if pki is not None else outer
    tansu = HiddenTansu(outer).start()
    front: SaslFront | None = None
    try:
        front = SaslFront(front_port, tansu.port, credentials, **front_options).start()
        stunnel = Stunnel(outer, front_port, pki.server).start() if pki is not None else None
    except BaseException:
        if front is not None:
            front.stop()
        tansu.stop()
        raise
    return SaslBroker(port=outer, front=front, tansu=tansu, stunnel=stunnel)
