"""Driver-side planning of a batch read: which partitions, which fixed offset ranges.

Offsets are resolved to numbers here, once, so every task reads a fixed [start, end) range
and a retried task reads exactly the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from .client.cluster import KafkaClient
from .client.config import ClientConfig
from .client.fetcher import FetchSettings
from .client.offsets import resolve_offsets
from .protocol.errors import ConfigurationError, error_for_code
from .source_options import SourceOptions


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


class KafkaInputPartition(InputPartition):
    """Everything a task needs to read its range, without asking the driver anything."""

    def __init__(self, index: int, rng: OffsetRange, client: ClientConfig, fetch: FetchSettings,
                 max_records_per_batch: int) -> None:
        super().__init__(index)
        self.range = rng
        self.client = client
        self.fetch = fetch
        self.max_records_per_batch = max_records_per_batch

    def __repr__(self) -> str:
        r = self.range
        return f"KafkaInputPartition({r.topic}-{r.partition} [{r.start}, {r.end}))"


def topic_partitions(client: KafkaClient, topics: tuple[str, ...]) -> list[tuple[str, int]]:
    md = client.fetch_metadata(topics)
    tps: list[tuple[str, int]] = []
    for topic in topics:
        info = md.topics.get(topic)
        if info is None or info.error_code:
            raise error_for_code(
                info.error_code if info else 3, topic=topic, context="Metadata",
                message="the subscribed topic does not exist (or is not visible to this client)",
            )
        tps.extend((topic, p) for p in sorted(info.partitions))
    return tps


def plan_ranges(client: KafkaClient, options: SourceOptions) -> list[OffsetRange]:
    tps = topic_partitions(client, options.topics)
    starts = resolve_offsets(client, options.starting.for_partitions(tps, "startingOffsets"))
    ends = resolve_offsets(client, options.ending.for_partitions(tps, "endingOffsets"))
    ranges = []
    for tp in tps:
        start, end = starts[tp], ends[tp]
        if start > end:
            raise ConfigurationError(
                f"the starting offset {start} of {tp[0]}-{tp[1]} is after its ending offset "
                f"{end}; check startingOffsets and endingOffsets"
            )
        ranges.append(OffsetRange(tp[0], tp[1], start, end))
    return ranges
