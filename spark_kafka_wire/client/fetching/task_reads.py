"""What a Spark task reads: the :class:`TaskRead` its cluster planned, from either kind.

A task never asks the planner's cluster view anything: on Kafka 0.8+ it finds each range's
leader with its own shared client and fetches packed ranges together (``multi_fetch``); on
Kafka 0.7, which has no Metadata request, the planner recorded where each range's partition
is (``cluster_api.Cluster.task_read``) and the task reads there with FETCH, range by range,
without ZooKeeper. Which path is the plan's to say (it carries locations or not), so the
source reads both through this one function and never knows which it took.
"""

from __future__ import annotations

from collections.abc import Iterator

from spark_kafka_wire.client.fetching.fetch_settings import fetch_settings07
from spark_kafka_wire.client.fetching.multi_fetch import fetch_ranges
from spark_kafka_wire.client.metadata.cluster_api import PlannedRange, TaskRead
from spark_kafka_wire.client.pool import task_client, task_connections07
from spark_kafka_wire.protocol.records.columns import DecodedRecords

__all__ = ["PlannedRange", "read_planned"]


def read_planned(read: TaskRead) -> Iterator[tuple[int, DecodedRecords]]:
    """Chunks of records of ``read``'s ranges, each with the index of its range."""
    ranges = read.ranges
    if read.locations is None:
        if ranges:
            yield from fetch_ranges(task_client(read.config), ranges, read.fetch,
                                    read.fail_on_data_loss)
        return
    # the 0.7 client, imported only where a plan says 0.7: a 0.8+ worker never pays for it
    from spark_kafka_wire.client.kafka07.cluster import read_range  # noqa: PLC0415

    fetch = fetch_settings07(read.fetch)
    conns = task_connections07(read.config)
    for i, ((_, _, start, end), loc) in enumerate(zip(ranges, read.locations, strict=True)):
        for chunk in read_range(conns, loc, start, end, fetch, read.fail_on_data_loss):
            yield i, chunk
