"""What a Spark task reads: planned fixed offset ranges, from either kind of cluster.

A task never asks the planner's cluster view anything: on Kafka 0.8+ it finds each range's
leader with its own shared client and fetches packed ranges together (``multi_fetch``); on
Kafka 0.7, which has no Metadata request, the planner recorded where each range's partition
is (``cluster_api.Cluster.locator``) and the task reads there with FETCH, range by range,
without ZooKeeper. Which path is the plan's to say (it carries locations or not), so the
source reads both through this one function.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from spark_kafka_wire.client.cluster_api import PartitionLocation
from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetch_settings import FetchSettings, FetchSettings07
from spark_kafka_wire.client.kafka07.cluster import read_range
from spark_kafka_wire.client.multi_fetch import fetch_ranges
from spark_kafka_wire.client.pool import task_client, task_connections07
from spark_kafka_wire.protocol.records.columns import DecodedRecords

PlannedRange = tuple[str, int, int, int]
"""(topic, partition, start, end): the records at offsets [start, end)."""


def read_planned(config: ClientConfig, ranges: Sequence[PlannedRange], fetch: FetchSettings,
                 fail_on_data_loss: bool,
                 locations: Sequence[PartitionLocation] | None = None,
                 fetch07: FetchSettings07 | None = None,
                 ) -> Iterator[tuple[int, DecodedRecords]]:
    """Chunks of records of non-empty ``ranges``, each with the index of its range.
    ``locations`` (Kafka 0.7, one per range) and ``fetch07`` come from the plan."""
    if locations is None:
        if ranges:
            yield from fetch_ranges(task_client(config), ranges, fetch, fail_on_data_loss)
        return
    assert fetch07 is not None, "a Kafka 0.7 plan carries its FETCH settings"
    conns = task_connections07(config)
    for i, ((_, _, start, end), loc) in enumerate(zip(ranges, locations, strict=True)):
        for chunk in read_range(conns, loc, start, end, fetch07, fail_on_data_loss):
            yield i, chunk
