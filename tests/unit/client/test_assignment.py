"""The range assignment (client/assignment.py): the design document's examples and, for many
random groups, the same answer as kafka-python's RangePartitionAssignor (Kafka's rules)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from kafka.coordinator.assignors.range import RangePartitionAssignor

from spark_kafka_wire.client.assignment import owners, range_assign, range_assign_topics


def test_design_document_example_three_consumers_two_brokers() -> None:
    # "If there are three Consumers, two Brokers, and three partitions in each, the split
    # might look like: A: [0-0, 0-1], B: [0-2, 1-0], C: [1-1, 1-2]" (0.7 client notes)
    parts = [(b, p) for b in (1, 0) for p in (2, 1, 0)]  # any order in, sorted out
    assert range_assign(parts, ["C", "A", "B"]) == {
        "A": [(0, 0), (0, 1)], "B": [(0, 2), (1, 0)], "C": [(1, 1), (1, 2)]}


@pytest.mark.parametrize(("partitions", "sizes"), [(16, [4, 4, 4, 4]), (18, [5, 5, 4, 4])])
def test_extra_partitions_go_to_the_first_consumers(partitions: int, sizes: list[int]) -> None:
    # "you could have a distribution like 4-4-4-4 or 5-5-4-4, but never 4-4-4-5 or 4-5-4-4"
    got = range_assign(range(partitions), ["c1", "c2", "c3", "c4"])
    assert [len(v) for v in got.values()] == sizes
    assert [p for v in got.values() for p in v] == list(range(partitions))


def test_broker_ids_sort_as_numbers_and_consumers_as_strings() -> None:
    parts = [(10, 0), (2, 0), (2, 1)]
    got = range_assign(parts, ["host-10:uuid", "host-9:uuid"])
    # broker 2 before broker 10; "host-10" before "host-9" as Kafka sorts member ids
    assert got == {"host-10:uuid": [(2, 0), (2, 1)], "host-9:uuid": [(10, 0)]}


def test_more_consumers_than_partitions_and_no_consumers() -> None:
    assert range_assign([0, 1], ["a", "b", "c"]) == {"a": [0], "b": [1], "c": []}
    assert range_assign([], ["a"]) == {"a": []}
    assert range_assign([], []) == {}
    with pytest.raises(ValueError, match="no consumer"):
        range_assign([0], [])
    assert owners({"a": [0, 2], "b": [1]}) == {0: "a", 2: "a", 1: "b"}


def _kafka_python(subscriptions: dict[str, list[str]], partitions: dict[str, list[int]]
                  ) -> dict[str, dict[str, list[int]]]:
    cluster = SimpleNamespace(partitions_for_topic=lambda t: set(partitions.get(t, ())))
    members = [SimpleNamespace(member_id=m, group_instance_id=None,
                               metadata=SimpleNamespace(topics=topics))
               for m, topics in subscriptions.items()]
    answer = RangePartitionAssignor.assign(cluster, members)
    out: dict[str, dict[str, list[int]]] = {}
    for member, a in answer.items():
        for topic, parts in a.assigned_partitions:
            out.setdefault(topic, {})[member] = list(parts)
    return out


@pytest.mark.parametrize("seed", range(200))
def test_same_as_kafkas_range_assignor(seed: int) -> None:
    rng = random.Random(seed)
    topics = [f"t{i}" for i in range(rng.randint(1, 4))]
    partitions = {t: rng.sample(range(40), rng.randint(1, 30)) for t in topics}
    subscriptions = {f"consumer-{rng.randint(0, 10**6)}-{i}": rng.sample(topics, rng.randint(1, len(topics)))
                     for i in range(rng.randint(1, 12))}
    ours = range_assign_topics(subscriptions, partitions)
    theirs = _kafka_python(subscriptions, partitions)
    assert set(ours) == {t for ts in subscriptions.values() for t in ts}
    assert ours == theirs
