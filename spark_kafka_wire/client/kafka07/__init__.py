"""A client for Kafka 0.7 brokers: fetch byte ranges, ask OFFSETS, produce message sets.

Selected by ``broker_version_fallback`` 0.7.x (e.g. ``0.7.2``). A partition is addressed as a
0.7 broker holds it: (broker host:port, topic, partition on that broker); which brokers hold
which partitions is ZooKeeper's to say (``/brokers/ids``, ``/brokers/topics/<topic>/<id>``),
a concern of the layers above. Offsets are byte positions in the partition's log.
"""

from __future__ import annotations

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings07
from spark_kafka_wire.client.kafka07.connection import (
    BrokerPartition,
    Kafka07Connection,
    Kafka07Connections,
)
from spark_kafka_wire.client.kafka07.fetch import (
    fetch_once,
    fetch_range,
    multifetch,
)
from spark_kafka_wire.client.kafka07.offsets import earliest_offset, latest_offset, offsets_before
from spark_kafka_wire.client.kafka07.produce import multiproduce, produce

__all__ = [
    "BrokerPartition",
    "FetchSettings07",
    "Kafka07Connection",
    "Kafka07Connections",
    "earliest_offset",
    "fetch_once",
    "fetch_range",
    "latest_offset",
    "multifetch",
    "multiproduce",
    "offsets_before",
    "produce",
]
