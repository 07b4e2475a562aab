"""The socket side the emulated brokers share (tests/support/legacy_broker.py, the 0.8-0.10
brokers, and tests/support/kafka07_broker.py, the 0.7 broker): a loopback listener, a thread per
connection, and size-prefixed frames (``int32 size | request``), which every Kafka protocol from
0.7 to today uses. What a request means is each emulator's own (``handle``); like them, this
shares no code with spark_kafka_wire.
"""

from __future__ import annotations

import socket
import struct
import threading


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None when the peer closes (or the socket fails) first."""
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class FrameServer:
    """Accepts connections on ``host`` (a free port, ``port`` once started) and serves each in
    a thread: a frame in, ``handle(frame)``'s bytes out (b"": no answer; None: close the
    connection). Subclasses set ``thread_name`` and may refuse sizes in ``size_ok`` and
    connections beyond ``max_connections``."""

    thread_name = "emulated-broker"
    max_connections = 1 << 30

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.connections_accepted = 0
        self._lock: threading.Lock | threading.RLock = threading.RLock()
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._conns: dict[socket.socket, threading.Thread] = {}
        self._stopping = threading.Event()

    def handle(self, frame: bytes) -> bytes | None:
        raise NotImplementedError

    def size_ok(self, size: int) -> bool:
        return size > 0

    def start_listening(self) -> None:
        if self._listener is not None:
            return
        self._stopping.clear()
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((self.host, 0))
        lsock.listen(16)
        lsock.settimeout(0.2)
        self._listener = lsock
        self.port = lsock.getsockname()[1]
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"{self.thread_name}-{self.port}", daemon=True)
        self._accept_thread.start()

    def stop_listening(self) -> None:
        """Close the listener and every connection, and wait for their threads."""
        self._stopping.set()
        lsock, self._listener = self._listener, None
        if lsock is not None:
            try:
                lsock.shutdown(socket.SHUT_RDWR)  # wakes the accept() at once on Linux
            except OSError:
                pass
            lsock.close()
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)
            self._accept_thread = None
        with self._lock:
            conns = list(self._conns.items())
            self.stopping_locked()
        for sock, _ in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for _, thread in conns:
            thread.join(timeout=5)

    def stopping_locked(self) -> None:
        """Called under the lock while stopping (wake anything waiting on it)."""

    def _accept_loop(self) -> None:
        while not self._stopping.is_set():
            lsock = self._listener
            if lsock is None:
                return
            try:
                sock, _ = lsock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                if len(self._conns) >= self.max_connections:
                    sock.close()
                    continue
                self.connections_accepted += 1
                thread = threading.Thread(target=self._serve, args=(sock,), daemon=True,
                                          name=f"{self.thread_name}-{self.port}-conn")
                self._conns[sock] = thread
            sock.settimeout(None)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            while not self._stopping.is_set():
                head = recv_exact(sock, 4)
                if head is None:
                    return
                (size,) = struct.unpack(">i", head)
                if not self.size_ok(size):
                    return
                frame = recv_exact(sock, size)
                if frame is None:
                    return
                out = self.handle(frame)
                if out is None:
                    return
                if out:
                    sock.sendall(out)
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.pop(sock, None)
            try:
                sock.close()
            except OSError:
                pass
