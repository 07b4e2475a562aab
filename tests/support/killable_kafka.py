"""An Apache Kafka broker that a fault test may kill -9 and start again, behind a fault proxy
(issue 28, part 2).

:class:`KillableKafka` has the interface of :class:`~tests.support.durable_tansu.DurableBroker`
(``bootstrap``, ``proxy``, ``new_topic``, ``crash_and_restart``), so the scenarios written for
the durable Tansu run on Kafka unchanged. The broker (tests/support/apache_kafka.py: KRaft,
combined roles, one node) advertises the proxy's port for its PLAINTEXT listener, so every
client connection goes through the :class:`~tests.support.fault_proxy.FaultProxy`, whose byte
counters time the faults.

The crash is a real one: kill -9 of the JVM first, with requests in flight, then what the
kernel does to a dead process's sockets (every connection closed, connects refused), then a
start on the same ports, node id and log directory. Unlike the durable Tansu
(``DurableBroker.crash_and_restart``), Kafka needs no courtesy before the kill: a batch it
acknowledged is in its log file, in the page cache, which outlives the process; at the start
it recovers the log segments written since its last flush and rebuilds the idempotent
producers' state (sequence numbers) from them, so a re-sent batch is still recognised.
"""

from __future__ import annotations

import time
import uuid

from tests.support.apache_kafka import ApacheKafka
from tests.support.fault_proxy import FaultProxy
from tests.support.librdkafka import create_topic

#: A restarted node's partitions lead again only once the controller has fenced its previous
#: incarnation: after broker.session.timeout.ms (Kafka's 9 s by default; measured: a restart
#: took 11.6 s, 10 of them waiting for that). 3 s, with heartbeats every 0.5 s.
FAST_SESSION = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


class _ProxiedKafka(ApacheKafka):
    """ApacheKafka advertising ``advertised_port`` for PLAINTEXT (set before ``start``)."""

    advertised_port: int = 0

    def _properties(self, data_dir: str) -> dict[str, str]:
        props = super()._properties(data_dir)
        props["advertised.listeners"] = ",".join(
            f"PLAINTEXT://127.0.0.1:{self.advertised_port}" if item.startswith("PLAINTEXT://")
            else item for item in props["advertised.listeners"].split(","))
        return props


class KillableKafka:
    """One Kafka broker and the FaultProxy it advertises. :meth:`close` stops both."""

    def __init__(self, heap_mb: int = 512) -> None:
        self.proxy = FaultProxy(target_port=0).start()
        self.kafka = _ProxiedKafka(authorizer=False, heap_mb=heap_mb, extra=dict(FAST_SESSION))
        self.kafka.advertised_port = self.proxy.port
        self.crashes = 0
        try:
            self.kafka.start()
        except BaseException:
            self.proxy.stop()
            raise
        self.proxy.target_port = self.kafka.ports["PLAINTEXT"]

    @property
    def bootstrap(self) -> str:
        """bootstrap.servers for clients: the proxy, which Kafka advertises."""
        return self.proxy.address

    def new_topic(self, partitions: int = 1, prefix: str = "k") -> str:
        topic = f"{prefix}-{uuid.uuid4().hex[:12]}"
        create_topic({"bootstrap.servers": self.bootstrap}, topic, partitions)
        return topic

    def crash_and_restart(self, down_s: float = 1.0) -> float:
        """kill -9, connections closed and connects refused for ``down_s``, then Kafka started
        again on its log; returns the seconds its start took."""
        self.kafka.kill()
        self.crashes += 1
        self.proxy.refuse()
        self.proxy.cut_all()
        time.sleep(down_s)
        began = time.monotonic()
        self.kafka.restart()
        took = time.monotonic() - began
        self.proxy.accept()
        return took

    def close(self, keep_logs: bool = False) -> None:
        try:
            self.proxy.stop()
        finally:
            self.kafka.stop(keep_logs)

    def __enter__(self) -> KillableKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(keep_logs=exc[0] is not None)
