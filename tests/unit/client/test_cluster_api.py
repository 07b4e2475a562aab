"""Both cluster adapters implement the one interface the source and the CLI ask
(``client/metadata/cluster_api.py``), checked statically (mypy, through the annotated assignments
below and ``pool.shared_cluster``) and at run time (the Protocol is runtime_checkable)."""

from __future__ import annotations

import inspect

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.metadata.cluster_adapters import Kafka07ClusterAdapter, KafkaCluster
from spark_kafka_wire.client.metadata.cluster_api import Cluster
from spark_kafka_wire.client.pool import shared_cluster
from tests.support.errors import raises_condition

MEMBERS = sorted(n for n in vars(Cluster) if not n.startswith("_"))


def _kafka07() -> Kafka07ClusterAdapter:
    view = Kafka07Cluster.__new__(Kafka07Cluster)  # no ZooKeeper session: nothing is asked
    view.config = ClientConfig(bootstrap_servers=(), broker_version_fallback="0.7.2",
                               zookeeper_connect="zk:2181")
    return Kafka07ClusterAdapter(view)


def test_both_adapters_are_clusters() -> None:
    kafka: Cluster = KafkaCluster(KafkaClient(ClientConfig(bootstrap_servers=(("h", 9092),))))
    kafka07: Cluster = _kafka07()
    assert isinstance(kafka, Cluster) and isinstance(kafka07, Cluster)
    for adapter in (KafkaCluster, Kafka07ClusterAdapter):
        assert [m for m in MEMBERS if not hasattr(adapter, m)] == []
        for m in MEMBERS:
            wanted = getattr(Cluster, m)
            if callable(wanted):
                assert list(inspect.signature(getattr(adapter, m)).parameters) == \
                    list(inspect.signature(wanted).parameters), (adapter, m)


def test_what_differs_is_asked_not_checked() -> None:
    kafka = KafkaCluster(KafkaClient(ClientConfig(bootstrap_servers=(("h", 9092),))))
    kafka07 = _kafka07()
    assert (not kafka.offsets_count_records, kafka.has_group_coordinator) == (False, True)
    assert (not kafka07.offsets_count_records, kafka07.has_group_coordinator) == (True, False)
    read = kafka.task_read(kafka.config, [("t", 0, 0, 5), ("t", 1, 3, 3)], FetchSettings(),
                           True)
    assert kafka.layout(["t"]) is None and read.locations is None and read.has_timestamps
    assert read.ranges == (("t", 0, 0, 5),)
    assert kafka.batch_end(("t", 0), 5, 17, FetchSettings()) == 17
    assert kafka.last_records_starts(("t", 0), 10, 3, 100) == [90]
    assert kafka.last_records_starts(("t", 0), 10, 95, 100) == [95]
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          "no group coordinator.*zk:2181"):
        kafka07.commit_offsets("g", {("t", 0): 1}, "kafkawire")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          "no group coordinator"):
        kafka07.committed_offsets("g", [("t", 0)])


def test_the_pool_hands_out_the_adapter_of_the_configured_kind() -> None:
    config = ClientConfig(bootstrap_servers=(("h", 9092),))
    first, again = shared_cluster(config), shared_cluster(config)
    assert isinstance(first, KafkaCluster) and isinstance(again, KafkaCluster)
    assert first.client is again.client  # one client per configuration per process
