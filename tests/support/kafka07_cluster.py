"""A Kafka 0.7 cluster for tests: emulated 0.7 brokers (tests/support/kafka07_broker.py)
registered in a real ZooKeeper under a fresh chroot, as kafkawire's 0.7 support finds them.

The default is the issue's shape: brokers 1 and 2 with two partitions each of every topic, so a
topic's global partitions are 0 = 1-0, 1 = 1-1, 2 = 2-0, 3 = 2-1.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kazoo.client import KazooClient

from tests.support.kafka07_broker import Kafka07Broker


@dataclass
class Cluster07:
    zookeeper: str  # the ensemble's connect string
    chroot: str
    brokers: dict[int, Kafka07Broker] = field(default_factory=dict)
    # topic -> {broker id: partitions}, as created through create_topic
    topics: dict[str, dict[int, int]] = field(default_factory=dict)

    @property
    def connect(self) -> str:
        """zookeeper.connect for kafkawire: the ensemble and the cluster's chroot."""
        return self.zookeeper + self.chroot

    def options(self, **extra: str) -> dict[str, str]:
        """Source/sink options that reach this cluster."""
        return {"zookeeper.connect": self.connect, **extra}

    def add_broker(self, broker_id: int, **kwargs: object) -> Kafka07Broker:
        b = Kafka07Broker(broker_id=broker_id, **kwargs).start()  # type: ignore[arg-type]
        self.brokers[broker_id] = b
        b.register(self.zookeeper, self.chroot)
        return b

    def create_topic(self, name: str | None = None, partitions: int = 2,
                     on: Iterable[int] | None = None, **kwargs: object) -> str:
        """A topic with ``partitions`` partitions on each broker of ``on`` (every broker)."""
        name = name or f"t07-{uuid.uuid4().hex[:10]}"
        for broker_id in (on if on is not None else sorted(self.brokers)):
            self.brokers[broker_id].create_topic(name, partitions, **kwargs)  # type: ignore[arg-type]
            self.topics.setdefault(name, {})[broker_id] = partitions
        return name

    def location(self, topic: str, number: int) -> tuple[Kafka07Broker, int]:
        """The emulated broker and its partition behind global partition ``number``, counted
        here independently of kafkawire: registered broker ids ascending, then partitions."""
        pairs = [(self.brokers[bid], p) for bid, n in sorted(self.topics[topic].items())
                 if self.brokers[bid].registered for p in range(n)]
        return pairs[number]

    def partitions(self, topic: str) -> int:
        return sum(n for bid, n in self.topics[topic].items() if self.brokers[bid].registered)

    def stop(self) -> None:
        for b in self.brokers.values():
            b.stop()
        self.brokers.clear()


def start_cluster(zookeeper: str, broker_ids: Iterable[int] = (1, 2),
                  **kwargs: object) -> Cluster07:
    chroot = f"/kafka07-{uuid.uuid4().hex[:10]}"
    zk = KazooClient(hosts=zookeeper, timeout=15)
    zk.start(timeout=15)
    try:
        zk.ensure_path(chroot)
    finally:
        zk.stop()
        zk.close()
    cluster = Cluster07(zookeeper, chroot)
    try:
        for broker_id in broker_ids:
            cluster.add_broker(broker_id, **kwargs)
    except BaseException:
        cluster.stop()
        raise
    return cluster
