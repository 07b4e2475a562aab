"""Two Apache Kafka brokers in one KRaft cluster, for leader changes (issue 28, part 2).

Node 1 is broker and controller (the only voter of the quorum), node 2 a broker only, formatted
with the same cluster id and pointed at node 1's controller. With one voter the quorum never
needs node 2: it can be stopped, killed and restarted while node 1's controller moves the
leaderships of its partitions (a 2-voter quorum would stall without either node). Each node is
an :class:`~tests.support.apache_kafka.ApacheKafka` with the PLAINTEXT and SASL_PLAINTEXT
listeners (no PKI), no authorizer, and a fast broker session (``broker.session.timeout.ms``
3 s), so that a killed broker is fenced, and its leaderships move, within seconds instead of
Kafka's default 9 s.
"""

from __future__ import annotations

import time

from tests.support.apache_kafka import ApacheKafka, cluster_id

#: Settings of both nodes: replication 2 where Kafka creates topics itself; a broker missing
#: for 3 s is fenced (its heartbeats every 0.5 s).
CLUSTER_SETTINGS = {
    "default.replication.factor": "2",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    # leaderships move back only when a test asks (ElectLeaders), not by the controller's
    # periodic rebalance, so a test knows when leaders change
    "auto.leader.rebalance.enable": "false",
}


class BrokerNode(ApacheKafka):
    """A broker-only node of the cluster whose controller is ``controller`` (set before
    ``start``)."""

    controller: ApacheKafka | None = None

    def _properties(self, data_dir: str) -> dict[str, str]:
        assert self.controller is not None, "a broker node needs its controller"
        props = super()._properties(data_dir)
        self.ports.pop("CONTROLLER", None)  # no controller listener: nothing to wait for
        listeners = [item for item in props["listeners"].split(",")
                     if not item.startswith("CONTROLLER://")]
        props.update({
            "process.roles": "broker",
            "node.id": str(self.node_id),
            "controller.quorum.voters": (
                f"{self.controller.node_id}@127.0.0.1:{self.controller.ports['CONTROLLER']}"),
            "listeners": ",".join(listeners),
        })
        return props


class KafkaCluster:
    """Node 1 (broker and controller) and node 2 (broker), started in that order."""

    def __init__(self, heap_mb: int = 384) -> None:
        shared = cluster_id()
        self.first = ApacheKafka(authorizer=False, heap_mb=heap_mb, cluster=shared,
                                 extra={**CLUSTER_SETTINGS, "node.id": "1"})
        self.second = BrokerNode(authorizer=False, heap_mb=heap_mb, cluster=shared,
                                 extra={**CLUSTER_SETTINGS, "node.id": "2"})
        self.second.controller = self.first

    @property
    def nodes(self) -> dict[int, ApacheKafka]:
        return {1: self.first, 2: self.second}

    def start(self) -> KafkaCluster:
        self.first.start()
        try:
            self.second.start()
        except BaseException:
            self.first.stop()
            raise
        return self

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.first.bootstrap()},{self.second.bootstrap()}"

    def stop(self, keep_logs: bool = False) -> None:
        self.second.stop(keep_logs)
        self.first.stop(keep_logs)

    def log_dirs(self) -> str:
        return " ".join(n.directory for n in self.nodes.values())


def wait_for(condition, what: str, timeout_s: float = 60.0, every_s: float = 0.2):
    """Poll ``condition()`` until it returns something true (returned), or AssertionError
    naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(every_s)
