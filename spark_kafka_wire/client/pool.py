"""One KafkaClient (or Kafka 0.7 view) per configuration per Python process, reused across
tasks; ``shared_cluster`` gives either through the one interface the source asks
(``client/metadata/cluster_api.py``).

Spark reuses Python workers between tasks, so keeping connections open saves a TCP handshake
and an ApiVersions exchange per broker per task. Connections reconnect lazily after a failure.

Tasks take their client through ``task_client``, which also freezes the worker's heap once
(``freeze_worker_heap``): pyspark's worker daemon runs a full ``gc.collect()`` after every task
of a reused worker (pyspark/daemon.py), and a full collection walks every object the garbage
collector tracks, 66,000 to 100,000 in a worker that has imported pyspark, pyarrow and
kafkawire: 23 ms per task measured here on a loaded 2-core machine (0.0 ms once frozen), and
30 to 150 ms seen inside Spark's workers, paid between the micro-batches of a stream. ``gc.freeze()``
(https://docs.python.org/3/library/gc.html#gc.freeze) moves the objects alive at that moment,
almost all of them module-level, into a permanent generation that collections skip; objects
created later are collected as before. Frozen objects that become cyclic garbage are not
reclaimed, so the heap is frozen once per process, right after the first task's imports, when
what is alive is what lives as long as the worker.
"""

from __future__ import annotations

import atexit
import gc
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.metadata.cluster_adapters import Kafka07ClusterAdapter, KafkaCluster
from spark_kafka_wire.client.metadata.cluster_api import Cluster

# The 0.7 client is imported by the functions that build it: a Spark worker on a 0.8+ cluster
# (nearly every one) never pays its import (docs/benchmarks.md, "A write's first seconds").
if TYPE_CHECKING:
    from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster
    from spark_kafka_wire.client.kafka07.connection import Kafka07Connections

T = TypeVar("T")

_lock = threading.Lock()
_clients: dict[tuple[int, ClientConfig], KafkaClient] = {}
_clusters07: dict[tuple[int, ClientConfig], Kafka07Cluster] = {}
_connections07: dict[tuple[int, ClientConfig], Kafka07Connections] = {}


def shared_client(config: ClientConfig) -> KafkaClient:
    return _one_per_process(_clients, config, KafkaClient)


def _one_per_process(store: dict[tuple[int, ClientConfig], T], config: ClientConfig,
                     make: Callable[[ClientConfig], T]) -> T:
    key = (os.getpid(), config)
    with _lock:
        made = store.get(key)
        if made is None:
            made = store[key] = make(config)
        return made


def shared_kafka07(config: ClientConfig) -> Kafka07Cluster:
    """The driver's view of a Kafka 0.7 cluster (its ZooKeeper session and connections), one
    per configuration per process, like ``shared_client``. Only the 0.7 writer
    (``client/kafka07/writer.py``) takes it; everything else asks ``shared_cluster``."""
    from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster  # noqa: PLC0415

    return _one_per_process(_clusters07, config, Kafka07Cluster)


def shared_cluster(config: ClientConfig) -> Cluster:
    """The cluster ``config`` names, through the interface the source asks: the shared
    Kafka 0.7 view when ``config.kafka07``, else the shared KafkaClient. The adapters hold
    no state of their own, so a new one per call costs nothing."""
    if config.kafka07:
        return Kafka07ClusterAdapter(shared_kafka07(config))
    return KafkaCluster(shared_client(config))


def planner_client(config: ClientConfig) -> KafkaClient:
    """``shared_client`` for the driver's planning (a write's topic check): until it reaches
    a broker, a wrong kafka.bootstrap.servers (every address refused or without a DNS name)
    fails its first request at once instead of after the retries
    (``KafkaClient.first_contact_fails_fast``). Tasks keep the retry rule: a whole cluster
    refusing connections while a task starts is restarting."""
    client = shared_client(config)
    client.first_contact_fails_fast = True
    return client


def planner_cluster(config: ClientConfig) -> Cluster:
    """``shared_cluster`` for the driver's planning (a read's partitions and offsets, a
    stream's every trigger), its 0.8+ client a ``planner_client`` (a Kafka 0.7 cluster was
    found through ZooKeeper already)."""
    if not config.kafka07:
        planner_client(config)
    return shared_cluster(config)


def task_connections07(config: ClientConfig) -> Kafka07Connections:
    """Connections to Kafka 0.7 brokers for code that runs in a Spark task (no ZooKeeper: the
    planner gave each range its broker), reused across tasks like ``task_client``."""
    freeze_worker_heap()
    from spark_kafka_wire.client.kafka07.connection import Kafka07Connections  # noqa: PLC0415

    return _one_per_process(_connections07, config, Kafka07Connections)


_frozen_pid = 0


def freeze_worker_heap() -> None:
    """Freeze the objects alive now into the permanent generation, once per process (see the
    module docstring)."""
    global _frozen_pid
    if _frozen_pid != os.getpid():
        _frozen_pid = os.getpid()
        gc.freeze()


def task_client(config: ClientConfig) -> KafkaClient:
    """``shared_client`` for code that runs in a Spark task: the worker's heap is frozen on its
    first task (see the module docstring)."""
    freeze_worker_heap()
    return shared_client(config)


def close_all() -> None:
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()
        for cluster in _clusters07.values():
            cluster.close()
        _clusters07.clear()
        for conns in _connections07.values():
            conns.close()
        _connections07.clear()


atexit.register(close_all)
