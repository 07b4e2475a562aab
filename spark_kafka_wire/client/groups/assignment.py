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

The leader of a classic group (``kafkawire consume --group``, client/groups/group_member.py) assigns
with :func:`assign`: ``range`` as above, or ``roundrobin`` (Kafka's RoundRobinAssignor: every
subscribed partition of every topic, sorted by topic and partition, dealt in turn to the
sorted members, each skipping the members not subscribed to its topic). The names are the
protocol names Java's and librdkafka's consumers join with, so a kafkawire member shares a
group with them when they use the same ``partition.assignment.strategy``.
"""

from __future__ import annotations

import heapq
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


#: The assignors a kafkawire member offers, by their protocol names.
RANGE, ROUNDROBIN, COOPERATIVE_STICKY = "range", "roundrobin", "cooperative-sticky"
ASSIGNORS = (RANGE, ROUNDROBIN, COOPERATIVE_STICKY)
#: The assignors whose members keep their partitions through a rebalance (KIP-429).
COOPERATIVE = (COOPERATIVE_STICKY,)


def roundrobin_assign(subscriptions: Mapping[str, Sequence[str]],
                      partitions: Mapping[str, Iterable[int]]) -> dict[str, list[tuple[str, int]]]:
    """Kafka's RoundRobinAssignor: each member id of ``subscriptions`` -> its (topic,
    partition) pairs. Partitions of all subscribed topics in (topic, partition) order go to
    the sorted members in turn; a member not subscribed to a partition's topic is passed
    over (the turn moves on to the next that is)."""
    members = sorted(subscriptions)
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in members}
    subscribed = {m: set(subscriptions[m]) for m in members}
    topics = sorted(set().union(*subscribed.values())) if members else []
    turn = 0
    for topic in topics:
        for p in sorted(set(partitions.get(topic, ()))):
            while topic not in subscribed[members[turn % len(members)]]:
                turn += 1
            out[members[turn % len(members)]].append((topic, p))
            turn += 1
    return out


def _claims(subscriptions: Mapping[str, Sequence[str]], wanted: set[tuple[str, int]],
            owned: Mapping[str, tuple[int, Sequence[tuple[str, int]]]]
            ) -> dict[tuple[str, int], str]:
    """partition -> the member that owns it now: a partition still subscribed to, claimed by
    the member of the latest generation (ties: the first member id)."""
    claims: dict[tuple[str, int], str] = {}
    for m in sorted(owned, key=lambda m: (-owned[m][0], m)):
        if m not in subscriptions:
            continue
        for tp in owned[m][1]:
            if tp in wanted and tp[0] in subscriptions[m]:
                claims.setdefault(tp, m)
    return claims


class _Loads:
    """How many partitions each member holds, for finding the member with the fewest that may
    take a topic in O(log n): members with the same subscription are interchangeable, so each
    such class keeps a heap of (count, member id), whose stale entries (a count since changed)
    are dropped when they surface; a topic asks only the classes subscribed to it."""

    def __init__(self, topics: Mapping[str, frozenset[str]], counts: dict[str, int]) -> None:
        self.counts = counts
        self.cls = {m: ts for m, ts in topics.items()}
        self.heaps: dict[frozenset[str], list[tuple[int, str]]] = {}
        for m in sorted(topics):
            self.heaps.setdefault(topics[m], []).append((counts[m], m))
        for h in self.heaps.values():
            heapq.heapify(h)
        self.able: dict[str, list[frozenset[str]]] = {}
        for ts in self.heaps:
            for t in ts:
                self.able.setdefault(t, []).append(ts)

    def add(self, m: str, n: int) -> None:
        self.counts[m] += n
        heapq.heappush(self.heaps[self.cls[m]], (self.counts[m], m))

    def fewest(self, topic: str) -> str | None:
        """The member subscribed to ``topic`` holding the fewest partitions (ties: the first
        member id); None if no member is."""
        best: tuple[int, str] | None = None
        for ts in self.able.get(topic, ()):
            h = self.heaps[ts]
            while h[0][0] != self.counts[h[0][1]]:
                heapq.heappop(h)
            if best is None or h[0] < best:
                best = h[0]
        return None if best is None else best[1]


def sticky_assign(subscriptions: Mapping[str, Sequence[str]],
                  partitions: Mapping[str, Iterable[int]],
                  owned: Mapping[str, tuple[int, Sequence[tuple[str, int]]]]
                  ) -> dict[str, list[tuple[str, int]]]:
    """A balanced assignment that moves as few owned partitions as it can (module
    docstring); ``owned``: member -> (generation, partitions it owns).

    Each member keeps what it owns; the partitions nobody owns go, in order, each to the
    member subscribed to its topic that holds the fewest; then, while the fullest member
    holds two more than the emptiest that may take one of its topics, the fullest gives its
    highest partition of that topic away. The same plan as asking every member from the
    fullest down after each move, as this did before in O(P^2) for P partitions, but in
    O((P + M) log P) for M members of one subscription (times its topic count, at most): the
    leader computes it between JoinGroup and SyncGroup, while its session runs. A member found
    with nothing to give is asked again only after a move, which under one subscription for
    all never comes (the plan is balanced by then)."""
    members = sorted(subscriptions)
    topics = {m: frozenset(subscriptions[m]) for m in members}
    wanted = {(t, p) for t in set().union(*topics.values()) if members
              for p in set(partitions.get(t, ()))}
    # member -> topic -> max-heap (negated) of its partitions of the topic
    held: dict[str, dict[str, list[int]]] = {m: {} for m in members}
    claimed = _claims(subscriptions, wanted, owned)
    for (t, p), m in claimed.items():
        held[m].setdefault(t, []).append(-p)
    for by_topic in held.values():
        for h in by_topic.values():
            heapq.heapify(h)
    loads = _Loads(topics, {m: sum(map(len, held[m].values())) for m in members})
    for t, p in sorted(wanted - claimed.keys()):
        taker = loads.fewest(t)
        if taker is not None:
            heapq.heappush(held[taker].setdefault(t, []), -p)
            loads.add(taker, 1)
    givers = [(-loads.counts[m], m) for m in members]
    heapq.heapify(givers)
    stuck: list[str] = []  # givers found with nothing to give, asked again after a move
    while givers:
        count, giver = heapq.heappop(givers)
        if -count != loads.counts[giver]:
            continue  # stale: its count changed since
        for t in sorted((t for t, h in held[giver].items() if h), reverse=True):
            taker = loads.fewest(t)
            if taker is not None and loads.counts[taker] + 1 < loads.counts[giver]:
                heapq.heappush(held[taker].setdefault(t, []), heapq.heappop(held[giver][t]))
                loads.add(giver, -1)
                loads.add(taker, 1)
                for m in (giver, taker, *stuck):
                    heapq.heappush(givers, (-loads.counts[m], m))
                stuck.clear()
                break
        else:
            stuck.append(giver)
    return {m: sorted((t, -p) for t, h in held[m].items() for p in h) for m in members}


def cooperative_assign(subscriptions: Mapping[str, Sequence[str]],
                       partitions: Mapping[str, Iterable[int]],
                       owned: Mapping[str, tuple[int, Sequence[tuple[str, int]]]]
                       ) -> dict[str, list[tuple[str, int]]]:
    """KIP-429's first round: the sticky plan without the partitions that move from one
    member to another (their owners give them up; the next rebalance assigns them)."""
    plan = sticky_assign(subscriptions, partitions, owned)
    wanted = {tp for ps in plan.values() for tp in ps}
    now = _claims(subscriptions, wanted, owned)
    return {m: [tp for tp in ps if now.get(tp, m) == m] for m, ps in plan.items()}


def assign(assignor: str, subscriptions: Mapping[str, Sequence[str]],
           partitions: Mapping[str, Iterable[int]],
           owned: Mapping[str, tuple[int, Sequence[tuple[str, int]]]] | None = None
           ) -> dict[str, list[tuple[str, int]]]:
    """A group leader's assignment: member id -> its (topic, partition) pairs, sorted; every
    member is a key. ``partitions``: each topic's partition ids (a topic missing has none);
    ``owned``: member -> (generation, partitions owned), which cooperative-sticky keeps."""
    if assignor == ROUNDROBIN:
        return roundrobin_assign(subscriptions, partitions)
    if assignor == COOPERATIVE_STICKY:
        return cooperative_assign(subscriptions, partitions, owned or {})
    if assignor != RANGE:
        raise ValueError(f"unknown assignor {assignor!r}; kafkawire offers {', '.join(ASSIGNORS)}")
    out: dict[str, list[tuple[str, int]]] = {m: [] for m in subscriptions}
    for topic, by_member in range_assign_topics(subscriptions, partitions).items():
        for m, ps in by_member.items():
            out[m] += [(topic, p) for p in ps]
    return {m: sorted(tps) for m, tps in out.items()}


def owners(assignment: Mapping[str, Sequence[P]]) -> dict[P, str]:
    """partition -> consumer, the inverse of one topic's assignment."""
    return {p: c for c, ps in assignment.items() for p in ps}
