"""An HTTP proxy in front of the test Schema Registry that misbehaves on command (issue 32).

Fault injection, not a mock: every request it does not answer with a fault goes to the real
registry (Apicurio, ``tests/support/schema_registry.py``) and its answer comes back
unchanged, so a test that survives a fault gets the registry's real answer after it. What it
adds is what a real registry will not do on command: answer a 5xx (or a 429) the next N times,
redirect, answer more bytes than the client's limit (with or without a Content-Length), answer
an HTML page instead of JSON, hold an answer past the client's timeout, close a connection
without answering. It also records each request's method, path and headers, so a test can see
what the client sent (its ``Authorization`` header) and how many times.

One ``ThreadingHTTPServer`` on a free loopback port in a daemon thread; ``stop`` shuts it down.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Fault:
    """One scripted answer: ``status`` with ``body`` (and ``headers``); ``length`` overrides
    the Content-Length header (None: the body's length; -1: none, the body ends when the
    connection closes); ``delay_s`` waits before answering; ``close`` closes the connection
    without any answer; ``stall_after`` / ``stall_s`` pause half way through the body."""

    status: int = 503
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    length: int | None = None
    delay_s: float = 0.0
    close: bool = False
    #: after this many bytes of the body, wait ``stall_s`` before the rest (a client that
    #: reads only up to its limit has gone by then)
    stall_after: int | None = None
    stall_s: float = 0.0


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased


class RegistryFaultProxy:
    """Forwards to ``upstream`` (a registry's base URL, e.g. ``.../apis/ccompat/v7``) at
    ``url`` (the same path), answering the scripted faults first."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults: deque[Fault] = deque()
        self.seen: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def root(self) -> str:
        assert self._server is not None, "the proxy is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        """The registry's URL through the proxy: the upstream's path on the proxy's port."""
        path = urllib.request.urlparse(self.upstream).path
        return self.root + path

    def then(self, *faults: Fault) -> RegistryFaultProxy:
        """Answer the next requests with ``faults``, in order; then forward again."""
        with self._lock:
            self.faults.extend(faults)
        return self

    def start(self) -> RegistryFaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # the tests read ``seen``, not stderr

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    proxy.seen.append(SeenRequest(self.command, self.path,
                                                  {k.lower(): v for k, v in self.headers.items()}))
                    fault = proxy.faults.popleft() if proxy.faults else None
                if fault is not None:
                    self._fault(fault)
                else:
                    self._forward(body)

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 (http.server's naming)

            def _fault(self, fault: Fault) -> None:
                if fault.delay_s:
                    time.sleep(fault.delay_s)
                if fault.close:
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(fault.status)
                for name, value in fault.headers.items():
                    self.send_header(name, value)
                if fault.length is None:
                    self.send_header("Content-Length", str(len(fault.body)))
                elif fault.length >= 0:
                    self.send_header("Content-Length", str(fault.length))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    if fault.stall_after is not None:
                        self.wfile.write(fault.body[:fault.stall_after])
                        self.wfile.flush()
                        time.sleep(fault.stall_s)
                        self.wfile.write(fault.body[fault.stall_after:])
                    else:
                        self.wfile.write(fault.body)
                except OSError:
                    pass  # the client stopped reading (the oversized answers)
                self.close_connection = True

            def _forward(self, body: bytes | None) -> None:
                prefix = urllib.request.urlparse(proxy.upstream).path
                path = self.path[len(prefix):] if self.path.startswith(prefix) else self.path
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() in ("accept", "content-type")}
                request = urllib.request.Request(proxy.upstream + path, data=body,
                                                 method=self.command, headers=headers)
                try:
                    with urllib.request.urlopen(request, timeout=30) as answer:
                        status, data = answer.status, answer.read()
                        kind = answer.headers.get("Content-Type", "application/json")
                except urllib.error.HTTPError as error:
                    status, data = error.code, error.read()
                    kind = error.headers.get("Content-Type", "application/json")
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        name="registry-fault-proxy")
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> RegistryFaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
