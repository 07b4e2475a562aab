"""A TCP proxy in front of the test broker that breaks connections on command.

Network faults are what a client meets in production and what a broker on loopback never
shows: an answer cut half way, a peer that stops answering, a reset, a refused connect, bytes
changed on the wire. The proxy forwards Kafka frames between the client and the broker (the
broker advertises the proxy's port, so every connection of the client passes through it) and a
test switches faults on and off while its client runs. It is frame aware: requests and
responses are 4-byte big-endian size prefixed, so a response can be matched to its request's
API key through the correlation id, and "the next Fetch response" can be corrupted or cut.

Everything runs on one asyncio loop in a daemon thread; the control methods are thread-safe
and take effect before they return (a connection reset by :meth:`FaultProxy.reset` is reset
when the call returns). Faults act on responses (broker to client); :meth:`FaultProxy.stall`
can hold requests too, and :meth:`FaultProxy.hold_requests` holds the requests of one API key
only (an EndTxn, say), so a test can stop a client exactly between two steps of a protocol and
kill it there. Offsets within a frame count from the frame's first byte, the size prefix
included: 0-3 are the size, 4-7 the correlation id, 8 on the response body.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
CONTROL_TIMEOUT_S = 10.0
KAFKA_MAX_REQUEST_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default
STREAM_LIMIT = 1 << 20


@dataclass(frozen=True)
class ProxyStats:
    """A snapshot of the proxy's counters since it started."""

    connections: int  # accepted
    open_connections: int
    requests: int  # request frames forwarded to the broker
    responses: int  # response frames (whole or cut) forwarded to the client
    bytes_to_broker: int
    bytes_to_client: int
    faults: int  # cuts, corruptions and truncations applied (not resets, refusals, stalls)
    held: int = 0  # request frames hold_requests is holding now
    held_in_all: int = 0  # request frames it has held since it started


@dataclass
class _Hold:
    """hold_requests: let ``let_pass`` frames of ``api_key`` through, then hold the rest."""

    api_key: int
    let_pass: int
    released: asyncio.Event = field(default_factory=asyncio.Event)
    drop: bool = False
    passed: int = 0


@dataclass
class _CutAfter:
    n_bytes: int
    times: int | None
    counted: dict[int, int] = field(default_factory=dict)  # link id -> bytes since armed


@dataclass
class _FrameFault:
    kind: str  # "corrupt" or "truncate"
    position: int  # corrupt: offset of the byte; truncate: bytes kept
    xor: int
    skip: int
    times: int | None
    api_key: int | None


@dataclass
class _FetchRewrite:
    empty: bool
    throttle_ms: int | None
    times: int | None
    below_wait_ms: int | None = None  # only answers to Fetches that allowed less than this


@dataclass(frozen=True)
class FetchEvent:
    """A Fetch frame the proxy forwarded: when (monotonic), which way, on which connection,
    for an answer its throttle_time_ms and for a request its max_wait_ms (v4 to v11)."""

    at: float
    kind: str  # "request" (to the broker) or "response" (to the client)
    link: int
    throttle_ms: int | None = None
    max_wait_ms: int | None = None


FETCH_KEY = 1


def fetch_request_max_wait_ms(frame: bytes, version: int) -> int | None:
    """The max_wait_ms of a Fetch request frame (size prefix excluded), v4 to v11 (request
    header v1: api key, version, correlation id, client id; then replica_id, max_wait_ms);
    None for other versions."""
    if not 4 <= version <= 11 or len(frame) < 10:
        return None
    (client_id,) = struct.unpack_from(">h", frame, 8)
    pos = 10 + max(client_id, 0) + 4  # past the client id and replica_id
    return struct.unpack_from(">i", frame, pos)[0] if len(frame) >= pos + 4 else None


def rewrite_fetch_response(frame: bytes, version: int, empty: bool,
                           throttle_ms: int | None) -> bytes:
    """A Fetch response frame (size prefix included; v4 to v11, Kafka's non-flexible layouts
    from its protocol guide, read here without the client's codecs) with every partition's
    records replaced by none (``empty``) and throttle_time_ms set (``throttle_ms``)."""
    if not 4 <= version <= 11:
        raise ValueError(f"the fault proxy rewrites Fetch v4 to v11, not v{version}")
    out = bytearray(frame[:8])  # size (fixed below), correlation id
    pos = 8
    throttle = struct.unpack_from(">i", frame, pos)[0] if throttle_ms is None else throttle_ms
    out += struct.pack(">i", throttle)
    pos += 4
    if version >= 7:
        out += frame[pos:pos + 6]  # error_code, session_id
        pos += 6

    def take(n: int) -> None:
        nonlocal pos
        out.extend(frame[pos:pos + n])
        pos += n

    def int32() -> int:
        return struct.unpack_from(">i", frame, pos)[0]

    topics = int32()
    take(4)
    for _ in range(topics):
        take(2 + struct.unpack_from(">h", frame, pos)[0])  # topic name
        partitions = int32()
        take(4)
        for _ in range(partitions):
            take(4 + 2 + 8 + 8 + (8 if version >= 5 else 0))  # index .. log_start_offset
            aborted = int32()
            take(4 + 16 * max(aborted, 0))
            if version >= 11:
                take(4)  # preferred_read_replica
            size = int32()
            if empty:
                out += struct.pack(">i", 0)
                pos += 4 + max(size, 0)
            else:
                take(4 + max(size, 0))
    if pos != len(frame):
        raise ValueError(f"Fetch v{version} answer of {len(frame)} bytes parsed to {pos}")
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


class _Link:
    """One client connection and its connection to the broker: three tasks, one per flow
    (requests; responses read; responses written, so that a delay or stall holds answers
    without stopping the proxy from reading them)."""

    def __init__(self, proxy: FaultProxy, link_id: int, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.proxy = proxy
        self.id = link_id
        self.client_r, self.client_w = reader, writer
        self.broker_w: asyncio.StreamWriter | None = None
        # correlation id -> (API key, API version) of requests in flight
        self.pending: dict[int, tuple[int, int]] = {}
        self.fetch_waits: dict[int, int | None] = {}  # correlation id -> Fetch max_wait_ms
        self.queue: asyncio.Queue[tuple[float, bytes, bool] | None] = asyncio.Queue()
        self.tasks: list[asyncio.Task] = []
        self.closed = False

    async def run(self) -> None:
        try:
            broker_r, broker_w = await asyncio.open_connection(
                "127.0.0.1", self.proxy.target_port, limit=STREAM_LIMIT)
        except OSError:  # the broker is down: the client sees its connection closed
            self.close()
            return
        self.broker_w = broker_w
        if self.closed:
            broker_w.close()
            return
        self.tasks = [asyncio.create_task(self._requests()),
                      asyncio.create_task(self._read_responses(broker_r)),
                      asyncio.create_task(self._write_responses())]

    async def _requests(self) -> None:
        proxy = self.proxy
        assert self.broker_w is not None
        try:
            while True:
                head = await self.client_r.readexactly(4)
                (size,) = struct.unpack(">i", head)
                limit = proxy.max_request_bytes
                if size < 0 or (limit is not None and size > limit):
                    break  # as Kafka closes on a frame over socket.request.max.bytes
                body = await self.client_r.readexactly(size)
                api_key = wait_ms = None
                if size >= 8:
                    api_key, api_version, correlation = struct.unpack(">hhi", body[:8])
                    self.pending[correlation] = (api_key, api_version)
                    if api_key == FETCH_KEY:
                        wait_ms = fetch_request_max_wait_ms(body, api_version)
                        self.fetch_waits[correlation] = wait_ms
                if not await proxy._may_forward(api_key):
                    break  # a held frame dropped: the client "died" before it was sent
                await proxy._requests_flow.wait()
                self.broker_w.write(head + body)
                await self.broker_w.drain()
                if api_key == FETCH_KEY:
                    proxy._fetch_events.append(FetchEvent(time.monotonic(), "request", self.id,
                                                          max_wait_ms=wait_ms))
                proxy._requests += 1
                proxy._bytes_to_broker += 4 + size
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:
            self.close()

    async def _read_responses(self, broker_r: asyncio.StreamReader) -> None:
        head = b""
        try:
            while True:
                head = await broker_r.readexactly(4)
                (size,) = struct.unpack(">i", head)
                body = await broker_r.readexactly(max(size, 0))
                self.queue.put_nowait((time.monotonic(), head + body, True))
                head = b""
        except asyncio.IncompleteReadError as exc:  # the broker closed mid-frame: pass it on
            if head + exc.partial:
                self.queue.put_nowait((time.monotonic(), head + exc.partial, False))
        except OSError:
            pass
        finally:
            self.queue.put_nowait(None)

    async def _write_responses(self) -> None:
        proxy = self.proxy
        try:
            while True:
                item = await self.queue.get()
                if item is None:
                    break
                read_at, frame, whole = item
                while (wait := read_at + proxy._delay - time.monotonic()) > 0:
                    await asyncio.sleep(min(wait, 0.05))  # re-read: delay(0) releases at once
                await proxy._responses_flow.wait()
                data, cut, throttle = proxy._apply_faults(self, frame, whole)
                if data:
                    self.client_w.write(data)
                    await self.client_w.drain()
                    if throttle is not None:
                        proxy._fetch_events.append(
                            FetchEvent(time.monotonic(), "response", self.id, throttle))
                    proxy._responses += 1
                    proxy._bytes_to_client += len(data)
                if cut:
                    break
        except OSError:
            pass
        finally:
            self.close()

    def close(self, rst: bool = False) -> None:
        """Close both sides (FIN after what is already written), or with ``rst`` reset the
        client's side: SO_LINGER 0 and abort send an RST and drop unsent bytes."""
        if self.closed:
            return
        self.closed = True
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()
        if rst:
            sock = self.client_w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.client_w.transport.abort()
        else:
            self.client_w.close()
        if self.broker_w is not None:
            self.broker_w.close()
        self.proxy._links.pop(self.id, None)


class FaultProxy:
    """Forwards 127.0.0.1:``port`` (a free port by default) to 127.0.0.1:``target_port``.

    Faults, all thread-safe and reverted together by :meth:`pass_through`:

    - :meth:`delay`: every response is held ``seconds`` after it was read (pipelining kept);
    - :meth:`stall`: connections are accepted, nothing is forwarded (responses, and requests
      unless ``requests=False``, which lets the broker act on requests it never answers);
    - :meth:`cut_after`: a connection is closed once ``n_bytes`` of responses were forwarded;
    - :meth:`corrupt` / :meth:`truncate`: one byte of a response frame is changed / a frame is
      cut short and its connection closed, optionally only responses to one API key;
    - :meth:`cut_all` / :meth:`reset`: every open connection is closed (FIN) / reset (RST) now;
    - :meth:`refuse` / :meth:`accept`: the listening socket is closed, so connects are refused,
      and opened again on the same port;
    - :meth:`hold_requests` / :meth:`release_held`: request frames of one API key are held
      (each holds its connection's later requests too) after ``after`` passed, until released,
      forwarded or dropped with their connections;
    - :meth:`rewrite_fetches`: Fetch answers emptied of records and/or given a throttle time,
      optionally only those to Fetches allowing less than a max_wait_ms
      (:meth:`fetch_events` logs when each Fetch went by, for timing checks).
    """

    def __init__(self, target_port: int, port: int | None = None,
                 max_request_bytes: int | None = None) -> None:
        """``max_request_bytes``: close a connection whose next request frame announces more
        bytes, as Kafka does past socket.request.max.bytes (its default: KAFKA_MAX_REQUEST_BYTES)
        where Tansu waits for them all; None forwards any size."""
        from spark_kafka_wire.testing.embedded import free_port

        self.target_port = target_port
        self.port = port or free_port()
        self.max_request_bytes = max_request_bytes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._links: dict[int, _Link] = {}
        self._next_id = 0
        self._delay = 0.0
        self._cut: _CutAfter | None = None
        self._frame_faults: list[_FrameFault] = []
        self._fetch_rewrite: _FetchRewrite | None = None
        self._fetch_events: list[FetchEvent] = []
        self._hold: _Hold | None = None
        self._held = self._held_in_all = 0
        self._requests_flow: asyncio.Event
        self._responses_flow: asyncio.Event
        self._connections = self._requests = self._responses = self._faults = 0
        self._bytes_to_broker = self._bytes_to_client = 0

    @property
    def address(self) -> str:
        """host:port for bootstrap.servers."""
        return f"127.0.0.1:{self.port}"

    # ------------------------------------------------------------------------ life cycle

    def start(self) -> FaultProxy:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name=f"fault-proxy-{self.port}",
                                        daemon=True)
        self._thread.start()

        async def setup() -> None:
            self._requests_flow = asyncio.Event()
            self._responses_flow = asyncio.Event()
            self._requests_flow.set()
            self._responses_flow.set()
            await self._listen()

        try:
            self._call(setup)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Close the listener and every connection, then end the loop and its thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def shutdown() -> None:
            self._close_listener()
            tasks = [t for link in list(self._links.values()) for t in link.tasks]
            for link in list(self._links.values()):
                link.close()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self._call(shutdown)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(CONTROL_TIMEOUT_S)
            if not thread.is_alive():
                loop.close()
            self._loop = self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------------ controls

    def pass_through(self) -> None:
        """Forward everything untouched again: no delay, no stall, no armed cut, corruption,
        truncation or hold, and the listener open. Held requests and responses flow on."""

        async def clear() -> None:
            self._end_hold(drop=False)
            self._delay = 0.0
            self._cut = None
            self._fetch_rewrite = None
            self._frame_faults.clear()
            self._requests_flow.set()
            self._responses_flow.set()
            await self._listen()

        self._call(clear)

    def delay(self, seconds: float) -> None:
        """Hold every response ``seconds`` after the proxy read it (0 releases held ones)."""

        def set_delay() -> None:
            self._delay = max(0.0, seconds)

        self._call_sync(set_delay)

    def stall(self, requests: bool = True) -> None:
        """Accept connections, answer nothing: responses are held (and requests too, unless
        ``requests`` is False: then the broker executes requests whose answers never come)."""

        def hold() -> None:
            self._responses_flow.clear()
            if requests:
                self._requests_flow.clear()

        self._call_sync(hold)

    def hold_requests(self, api_key: int, after: int = 0) -> None:
        """Forward the next ``after`` request frames of ``api_key``, then hold every later one
        until :meth:`release_held` (or :meth:`pass_through`). A held frame also holds the
        requests behind it on its connection, as a client blocked on its answer would not send
        them; other connections and other API keys flow. Replaces an earlier hold (whose held
        frames are forwarded)."""

        def arm() -> None:
            self._end_hold(drop=False)
            self._hold = _Hold(api_key, after)

        self._call_sync(arm)

    def release_held(self, drop: bool = False) -> int:
        """End the hold: the held frames are forwarded, or with ``drop`` thrown away and their
        connections closed (what reaches the broker when the client was killed before writing
        them). Returns how many frames were held."""
        return self._call_sync(lambda: self._end_hold(drop))

    def wait_until_held(self, count: int = 1, timeout: float = 60.0) -> ProxyStats:
        """Until :meth:`hold_requests` holds ``count`` frames at once."""
        return self.wait_for(lambda s: s.held >= count, timeout, f"{count} held request(s)")

    def cut_after(self, n_bytes: int, times: int | None = 1) -> None:
        """Close a connection (FIN) once ``n_bytes`` of responses have been forwarded on it,
        counted from this call for open connections and from the connect for new ones; so
        a response can be cut in its middle. ``times`` connections are cut, then the rule is
        spent (None: every connection, until :meth:`pass_through`)."""

        def arm() -> None:
            self._cut = _CutAfter(n_bytes, times)

        self._call_sync(arm)

    def corrupt(self, offset: int, xor: int = 0xFF, skip: int = 0, times: int | None = 1,
                api_key: int | None = None) -> None:
        """XOR the byte at ``offset`` of a response frame (offset 0 is the size prefix's first
        byte) with ``xor``: the next frame after ``skip`` others, ``times`` frames in all (None:
        all), only responses to requests of ``api_key`` if given. A frame shorter than
        ``offset`` + 1 is passed untouched and does not count."""
        self._add_frame_fault(_FrameFault("corrupt", offset, xor & 0xFF, skip, times, api_key))

    def truncate(self, n_bytes: int, skip: int = 0, times: int | None = 1,
                 api_key: int | None = None) -> None:
        """Forward only the first ``n_bytes`` of a response frame (after ``skip`` frames;
        ``api_key`` as in :meth:`corrupt`), then close its connection: a truncated answer.
        ``truncate(0, api_key=0)`` loses a Produce acknowledgement after the broker stored
        the batch."""
        self._add_frame_fault(_FrameFault("truncate", n_bytes, 0, skip, times, api_key))

    def rewrite_fetches(self, empty: bool = True, throttle_ms: int | None = None,
                        times: int | None = None, below_wait_ms: int | None = None) -> None:
        """Rewrite the next ``times`` Fetch answers (None: all, until :meth:`pass_through`):
        with ``empty`` every partition's records are taken out (the rest, high watermark
        included, kept), as a broker whose storage lags its high watermark answers; with
        ``throttle_ms`` the answer's throttle_time_ms is set, as a quota-throttled broker
        answers (KIP-219). With ``below_wait_ms`` only the answers to Fetches whose
        max_wait_ms is below it are rewritten (the others pass and do not count), as a broker
        answers whose storage read is cut at the request's max_wait_ms and takes that long
        (Tansu on S3 listing a large partition, issue 44). Fetch v4 to v11 (see
        :func:`rewrite_fetch_response`)."""

        def arm() -> None:
            self._fetch_rewrite = _FetchRewrite(empty, throttle_ms, times, below_wait_ms)

        self._call_sync(arm)

    def fetch_events(self) -> list[FetchEvent]:
        """Every Fetch request forwarded to the broker and Fetch answer forwarded to the
        client, in order, with the throttle time each answer carried."""
        return self._call_sync(lambda: list(self._fetch_events))

    def cut_all(self) -> None:
        """Close every open connection now (FIN); held responses are dropped."""
        self._call_sync(lambda: self._close_links(rst=False))

    def reset(self) -> None:
        """Reset every open connection now: the client reads ECONNRESET."""
        self._call_sync(lambda: self._close_links(rst=True))

    def refuse(self) -> None:
        """Close the listening socket: new connects fail with ECONNREFUSED; open connections
        stay (cut them with :meth:`cut_all`)."""
        self._call_sync(self._close_listener)

    def accept(self) -> None:
        """Listen again on the same port after :meth:`refuse`."""
        self._call(self._listen)

    def stats(self) -> ProxyStats:
        return self._call_sync(lambda: ProxyStats(
            self._connections, len(self._links), self._requests, self._responses,
            self._bytes_to_broker, self._bytes_to_client, self._faults, self._held,
            self._held_in_all))

    def wait_for(self, condition: Callable[[ProxyStats], bool], timeout: float = 10.0,
                 what: str = "condition") -> ProxyStats:
        """Poll :meth:`stats` until ``condition`` holds; AssertionError after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            stats = self.stats()
            if condition(stats):
                return stats
            if time.monotonic() > deadline:
                raise AssertionError(f"fault proxy: {what} not reached in {timeout}s: {stats}")
            time.sleep(0.02)

    # ------------------------------------------------------------------------ loop side

    def _call(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if self._loop is None:
            raise RuntimeError("the fault proxy is not running")
        future = asyncio.run_coroutine_threadsafe(fn(), self._loop)
        return future.result(CONTROL_TIMEOUT_S)

    def _call_sync(self, fn: Callable[[], T]) -> T:
        async def run() -> T:
            return fn()

        return self._call(run)

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._on_client, "127.0.0.1", self.port, reuse_address=True, limit=STREAM_LIMIT)

    def _close_listener(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()  # closes the listening socket at once; connections stay

    def _close_links(self, rst: bool) -> None:
        for link in list(self._links.values()):
            link.close(rst=rst)

    async def _on_client(self, reader: asyncio.StreamReader,
                         writer: asyncio.StreamWriter) -> None:
        self._connections += 1
        self._next_id += 1
        link = _Link(self, self._next_id, reader, writer)
        self._links[link.id] = link
        await link.run()

    async def _may_forward(self, api_key: int | None) -> bool:
        """Whether a request frame of ``api_key`` goes on, after holding it if the hold says
        so; False: it was dropped."""
        hold = self._hold
        if hold is None or api_key != hold.api_key:
            return True
        if hold.passed < hold.let_pass:
            hold.passed += 1
            return True
        self._held += 1
        self._held_in_all += 1
        try:
            await hold.released.wait()
        finally:
            self._held -= 1
        return not hold.drop

    def _end_hold(self, drop: bool) -> int:
        hold, self._hold = self._hold, None
        if hold is None:
            return 0
        held = self._held
        hold.drop = drop
        hold.released.set()
        return held

    def _add_frame_fault(self, fault: _FrameFault) -> None:
        self._call_sync(lambda: self._frame_faults.append(fault))

    def _apply_faults(self, link: _Link, frame: bytes, whole: bool
                      ) -> tuple[bytes, bool, int | None]:
        """The bytes to forward for one response frame, whether to close after them and, for
        a whole Fetch answer, the throttle time it carries (None otherwise)."""
        api_key = version = wait_ms = None
        if whole and len(frame) >= 8:
            correlation = struct.unpack(">i", frame[4:8])[0]
            api_key, version = link.pending.pop(correlation, (None, None))
            wait_ms = link.fetch_waits.pop(correlation, None)
        throttle = None
        if api_key == FETCH_KEY and version is not None:
            frame, throttle = self._rewrite_fetch(frame, version, wait_ms)
        data, close = frame, False
        for fault in list(self._frame_faults):
            if fault.api_key is not None and fault.api_key != api_key:
                continue
            if fault.kind == "corrupt" and fault.position >= len(data):
                continue
            if fault.skip > 0:
                fault.skip -= 1
                continue
            if fault.kind == "corrupt":
                i = fault.position
                data = data[:i] + bytes([data[i] ^ fault.xor]) + data[i + 1:]
            else:
                data, close = data[:fault.position], True
            self._spend(fault)
            if close:
                break
        cut = self._cut
        if cut is not None and not close:
            sent = cut.counted.get(link.id, 0)
            if sent + len(data) >= cut.n_bytes:
                data, close = data[:cut.n_bytes - sent], True
                cut.counted.pop(link.id, None)
                self._spend(cut)
            else:
                cut.counted[link.id] = sent + len(data)
        return data, close, throttle

    def _rewrite_fetch(self, frame: bytes, version: int, wait_ms: int | None
                       ) -> tuple[bytes, int | None]:
        """A Fetch answer through the armed :meth:`rewrite_fetches` rule, and its throttle
        time (None below v1, which has none); ``wait_ms``: its request's max_wait_ms."""
        rule = self._fetch_rewrite
        if rule is not None and rule.below_wait_ms is not None:
            if wait_ms is None:
                raise ValueError(f"the fault proxy reads max_wait_ms of Fetch v4 to v11, not "
                                 f"v{version}")
            if wait_ms >= rule.below_wait_ms:
                rule = None  # the broker had the time it needs: the answer passes
        if rule is not None:
            frame = rewrite_fetch_response(frame, version, rule.empty, rule.throttle_ms)
            self._faults += 1
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    self._fetch_rewrite = None
        if version < 1:
            return frame, None
        return frame, struct.unpack_from(">i", frame, 8)[0]

    def _spend(self, rule: _FrameFault | _CutAfter) -> None:
        self._faults += 1
        if rule.times is None:
            return
        rule.times -= 1
        if rule.times > 0:
            return
        if isinstance(rule, _CutAfter):
            self._cut = None
        else:
            self._frame_faults.remove(rule)
