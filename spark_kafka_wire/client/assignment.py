"""The range assignment of Kafka's consumer groups: which consumer of a group reads which
partitions of a topic.

This is the rebalancing algorithm of the Kafka design document ("Consumer rebalancing
algorithm", https://kafka.apache.org/documentation/#impl_consumerrebalance, and the 0.7
client notes on consumer balancing), which ZooKeeper-era consumers ran each on their own and
which Kafka's ``RangeAssignor`` (``partition.assignment.strategy`` ``range``) still applies
per topic: sort the topic's partitions, sort the consumers, and give each consumer one
contiguous run of the sorted partitions, ``len(partitions) // len(consumers)`` long, the first
``len(partitions) % len(consumers)`` consumers one more. Consumers beyond the partition count
get nothing; a partition is never shared.

Partitions are sorted by their natural order: numbers for Kafka 0.8 and later, (broker id,
partition) pairs for 0.7, whose partitions live per broker; sorting the pairs as numbers keeps
a broker's partitions together, as the design document asks ("so partitions on the same broker
are clustered together"). Consumer ids are sorted as strings, as Kafka sorts member ids.
Pure computation, no I/O: the CLI's ``lag`` uses it to show which live consumer of a
ZooKeeper-era group owns each partition, and users may call it to plan their own readers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

P = TypeVar("P", int, tuple[int, int])


def range_assign(partitions: Iterable[P], consumers: Iterable[str]) -> dict[str, list[P]]:
    """Each consumer's partitions of one topic (every consumer is a key, possibly with an empty
    list). Duplicates in either input count once."""
    ps = sorted(set(partitions))
    cs = sorted(set(consumers))
    if not cs:
        if ps:
            raise ValueError("partitions cannot be assigned to no consumer")
        return {}
    each, extra = divmod(len(ps), len(cs))
    out: dict[str, list[P]] = {}
    start = 0
    for i, c in enumerate(cs):
        length = each + (1 if i < extra else 0)
        out[c] = ps[start:start + length]
        start += length
    return out


def range_assign_topics(subscriptions: Mapping[str, Sequence[str]],
                        partitions: Mapping[str, Iterable[P]]) -> dict[str, dict[str, list[P]]]:
    """The range assignment of a group: ``subscriptions`` maps each consumer id to its topics,
    ``partitions`` each topic to its partitions. Each topic is assigned on its own among the
    consumers subscribed to it; the answer maps topic -> consumer -> partitions. A subscribed
    topic missing from ``partitions`` has none."""
    members: dict[str, list[str]] = {}
    for consumer, topics in subscriptions.items():
        for t in topics:
            members.setdefault(t, []).append(consumer)
    return {t: range_assign(partitions.get(t, ()), cs) for t, cs in sorted(members.items())}


def owners(assignment: Mapping[str, Sequence[P]]) -> dict[P, str]:
    """partition -> consumer, the inverse of one topic's assignment."""
    return {p: c for c, ps in assignment.items() for p in ps}
