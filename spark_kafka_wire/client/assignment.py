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

The leader of a classic group (``kafkawire consume --group``, client/group_member.py) assigns
with :func:`assign`: ``range`` as above, or ``roundrobin`` (Kafka's RoundRobinAssignor: every
subscribed partition of every topic, sorted by topic and partition, dealt in turn to the
sorted members, each skipping the members not subscribed to its topic). The names are the
protocol names Java's and librdkafka's consumers join with, so a kafkawire member shares a
group with them when they use the same ``partition.assignment.strategy``.
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


def sticky_assign(subscriptions: Mapping[str, Sequence[str]],
                  partitions: Mapping[str, Iterable[int]],
                  owned: Mapping[str, tuple[int, Sequence[tuple[str, int]]]]
                  ) -> dict[str, list[tuple[str, int]]]:
    """A balanced assignment that moves as few owned partitions as it can (module
    docstring); ``owned``: member -> (generation, partitions it owns)."""
    members = sorted(subscriptions)
    topics = {m: set(subscriptions[m]) for m in members}
    wanted = {(t, p) for t in set().union(*topics.values()) if members
              for p in set(partitions.get(t, ()))}
    plan: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    for tp, m in _claims(subscriptions, wanted, owned).items():
        plan[m].add(tp)

    def fewest(tp: tuple[str, int]) -> str | None:
        able = [m for m in members if tp[0] in topics[m]]
        return min(able, key=lambda m: (len(plan[m]), m)) if able else None

    for tp in sorted(wanted - set().union(*plan.values())):
        taker = fewest(tp)
        if taker is not None:
            plan[taker].add(tp)
    moved = True
    while moved:  # move single partitions from the fullest while that narrows the gap
        moved = False
        for giver in sorted(members, key=lambda m: (-len(plan[m]), m)):
            for tp in sorted(plan[giver], reverse=True):
                taker = fewest(tp)
                if taker is not None and len(plan[taker]) + 1 < len(plan[giver]):
                    plan[giver].remove(tp)
                    plan[taker].add(tp)
                    moved = True
                    break
            if moved:
                break
    return {m: sorted(ps) for m, ps in plan.items()}


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
