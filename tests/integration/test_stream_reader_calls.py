"""The streaming source answers the same way however often, and in whatever order, Spark calls it.

Spark asks for ``initialOffset()`` more than once before the first batch runs and again after
a restart, calls ``partitions(o, o)`` when it resumes from a checkpoint, and may repeat other
calls. These tests drive the stream reader the way Spark's runner does (offsets as JSON
round-tripped through ``json``), against the real broker while records keep arriving between
the calls, so a method that resolves anything anew shows up as a different answer.
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from spark_kafka_wire.client.groups.group_offsets import commit_offsets, fetch_committed
from spark_kafka_wire.client.producer import Producer, ProduceSettings, encode_partitioned
from spark_kafka_wire.source.offsets_json import START_KEY
from spark_kafka_wire.source.options import parse_stream_options
from spark_kafka_wire.source.planning import OffsetRange
from spark_kafka_wire.source.stream_reader import KafkaWireStreamReader

pytestmark = pytest.mark.broker


def _produce(client, topic: str, partitions: int, n: int) -> None:
    values = pa.array([b"v%d" % i for i in range(n)], pa.binary())
    parts = (np.arange(n) % partitions).astype(np.int32)
    Producer(client, ProduceSettings()).send(encode_partitioned(
        topic, None, values, parts, ProduceSettings(), 1_700_000_000_000))


def _reader(bootstrap: str, **options: str) -> KafkaWireStreamReader:
    return KafkaWireStreamReader(parse_stream_options(
        {"kafka.bootstrap.servers": bootstrap, **options}))


def _wire(doc: dict) -> dict:
    """What the Python runner hands back: Spark stores and returns offsets as JSON text."""
    return json.loads(json.dumps(doc))


def _sorted(ranges) -> list[OffsetRange]:
    return sorted(ranges, key=lambda r: (r.topic, r.partition, r.start))


def _ranges(parts) -> list[OffsetRange]:
    return _sorted(r for p in parts for r in p.ranges)


@pytest.mark.parametrize("start", ["latest", "timestamp", "group"])
def test_initial_offsets_are_resolved_once_per_query(bootstrap, client, new_topic, start):
    topic = new_topic(2, "calls-init")
    _produce(client, topic, 2, 20)
    options = {"subscribe": topic}
    if start == "timestamp":  # no record that late: every partition starts at latest
        options.update({"startingTimestamp": str(4_000_000_000_000),
                        "startingOffsetsByTimestampStrategy": "latest"})
    elif start == "group":
        group = f"calls-{uuid.uuid4().hex[:8]}"
        commit_offsets(client, group, {(topic, 0): 3, (topic, 1): 4})
        options.update({"startingOffsets": "group", "kafka.group.id": group})
    reader = _reader(bootstrap, **options)
    first = reader.initialOffset()
    _produce(client, topic, 2, 10)
    if start == "group":  # someone else moves the group meanwhile
        commit_offsets(client, group, {(topic, 0): 8, (topic, 1): 9})
    assert reader.initialOffset() == first
    expected = {"latest": {"0": 10, "1": 10}, "timestamp": {"0": 10, "1": 10},
                "group": {"0": 3, "1": 4}}[start]
    assert first == {topic: expected}


def test_a_replayed_first_batch_reads_the_range_its_first_run_planned(bootstrap, client, new_topic):
    topic = new_topic(2, "calls-replay")
    _produce(client, topic, 2, 20)
    crashed = _reader(bootstrap, subscribe=topic)
    start = _wire(crashed.initialOffset())
    assert start == {topic: {"0": 10, "1": 10}}
    _produce(client, topic, 2, 8)
    end = _wire(crashed.latestOffset(start, ReadAllAvailable()))
    assert end == {topic: {"0": 14, "1": 14}, START_KEY: {topic: {"0": 10, "1": 10}}}
    # the query dies after Spark wrote `end` to its checkpoint; records keep arriving
    _produce(client, topic, 2, 6)
    restarted = _reader(bootstrap, subscribe=topic)
    assert restarted.partitions(end, end) == []  # setLatestSeenOffset(end)
    again = _wire(restarted.initialOffset())
    assert again == {topic: {"0": 17, "1": 17}}  # `latest` has moved on: a new query run
    expected = [OffsetRange(topic, 0, 10, 14), OffsetRange(topic, 1, 10, 14)]
    assert _ranges(restarted.partitions(again, end)) == expected
    assert _ranges(crashed.partitions(start, end)) == expected
    # the next batch starts at the recorded end, its own end records nothing
    nxt = _wire(restarted.latestOffset(end, ReadAllAvailable()))
    assert nxt == {topic: {"0": 17, "1": 17}}
    assert _ranges(restarted.partitions(end, nxt)) == [OffsetRange(topic, 0, 14, 17),
                                                       OffsetRange(topic, 1, 14, 17)]


def test_partitions_appearing_during_a_batch_record_their_start(bootstrap, client, new_topic):
    prefix = f"callsgrow{uuid.uuid4().hex[:6]}"
    first = new_topic(1, prefix)
    _produce(client, first, 1, 5)
    reader = _reader(bootstrap, subscribePattern=f"^{prefix}-", startingOffsets="earliest")
    start = _wire(reader.initialOffset())
    end = _wire(reader.latestOffset(start, ReadAllAvailable()))
    second = new_topic(2, prefix)
    _produce(client, second, 2, 6)
    _produce(client, first, 1, 2)
    nxt = _wire(reader.latestOffset(end, ReadAllAvailable()))
    assert nxt == {first: {"0": 7}, second: {"0": 3, "1": 3},
                   START_KEY: {second: {"0": 0, "1": 0}}}
    assert _ranges(reader.partitions(end, nxt)) == _sorted([
        OffsetRange(first, 0, 5, 7), OffsetRange(second, 0, 0, 3), OffsetRange(second, 1, 0, 3)])


def test_repeated_calls_give_the_same_answers(bootstrap, client, new_topic):
    topic = new_topic(2, "calls-repeat")
    _produce(client, topic, 2, 40)
    group = f"calls-{uuid.uuid4().hex[:8]}"
    reader = _reader(bootstrap, subscribe=topic, startingOffsets="earliest",
                     maxOffsetsPerTrigger="10", commitOffsets="kafka",
                     **{"kafka.group.id": group})
    reader.prepareForTriggerAvailableNow()
    start = _wire(reader.initialOffset())
    _produce(client, topic, 2, 40)  # after the availableNow run began: not part of it
    reader.prepareForTriggerAvailableNow()  # a second call does not move the run's end
    limit = ReadMaxRows(10)
    end = _wire(reader.latestOffset(start, limit))
    assert end == _wire(reader.latestOffset(start, limit))
    assert reader.reportLatestOffset() == reader.reportLatestOffset() == {topic: {"0": 20, "1": 20}}
    assert _ranges(reader.partitions(start, end)) == _ranges(reader.partitions(start, end))
    reader.commit(end)
    reader.commit(end)
    assert fetch_committed(client, group, [(topic, 0), (topic, 1)]) == {(topic, 0): 5, (topic, 1): 5}
    # the availableNow run ends where it was when the run began, however often it is asked
    while True:
        nxt = _wire(reader.latestOffset(end, limit))
        if nxt == end:
            break
        end = nxt
    assert {k: v for k, v in end.items() if k != START_KEY} == {topic: {"0": 20, "1": 20}}


def test_a_batch_admitted_by_min_offsets_stays_admitted_when_asked_again(bootstrap, client,
                                                                         new_topic):
    topic = new_topic(1, "calls-min")
    reader = _reader(bootstrap, subscribe=topic, startingOffsets="earliest",
                     minOffsetsPerTrigger="5", maxTriggerDelay="1h")
    start = _wire(reader.initialOffset())
    limit = reader.getDefaultReadLimit()
    assert _wire(reader.latestOffset(start, limit)) == start  # the first trigger: no data
    _produce(client, topic, 1, 3)
    assert _wire(reader.latestOffset(start, limit)) == start  # fewer than 5: held back
    _produce(client, topic, 1, 3)
    end = _wire(reader.latestOffset(start, limit))
    assert end == {topic: {"0": 6}, START_KEY: {topic: {"0": 0}}}
    _produce(client, topic, 1, 1)
    # asked again from the same start: still admitted (one more record arrived meanwhile)
    assert _wire(reader.latestOffset(start, limit)) == {topic: {"0": 7},
                                                        START_KEY: {topic: {"0": 0}}}
    # the next batch waits for 5 new offsets again
    assert _wire(reader.latestOffset(end, limit)) == end


def test_min_offsets_per_trigger_lets_a_querys_first_trigger_through(bootstrap, client,
                                                                     new_topic):
    """Spark's maxTriggerDelay clock starts at 0 (lastTriggerMillis), so a query's first
    trigger goes through with whatever is there; the clock then runs from that trigger."""
    topic = new_topic(1, "calls-min-first")
    _produce(client, topic, 1, 3)
    reader = _reader(bootstrap, subscribe=topic, startingOffsets="earliest",
                     minOffsetsPerTrigger="50", maxTriggerDelay="1h")
    start = _wire(reader.initialOffset())
    limit = reader.getDefaultReadLimit()
    end = _wire(reader.latestOffset(start, limit))
    assert end == {topic: {"0": 3}, START_KEY: {topic: {"0": 0}}}  # 3 < 50, yet admitted
    _produce(client, topic, 1, 3)
    assert _wire(reader.latestOffset(end, limit)) == end  # now held back for an hour


def test_min_offsets_per_trigger_counts_what_is_available_not_the_capped_batch(
        bootstrap, client, new_topic):
    """With minOffsetsPerTrigger = maxOffsetsPerTrigger = 50 over 3 partitions, the capped batch
    holds 3 * 16 offsets (shares rounded down); Spark's delayBatch compares the 300 available
    offsets with 50, so the batch goes through."""
    topic = new_topic(3, "calls-min-max")
    _produce(client, topic, 3, 300)
    reader = _reader(bootstrap, subscribe=topic, startingOffsets="earliest",
                     minOffsetsPerTrigger="50", maxOffsetsPerTrigger="50", maxTriggerDelay="1h")
    start = _wire(reader.initialOffset())
    limit = reader.getDefaultReadLimit()
    first = _wire(reader.latestOffset(start, limit))  # a query's first trigger goes through
    second = _wire(reader.latestOffset(first, limit))
    assert second[topic] == {"0": 32, "1": 32, "2": 32}


def test_a_topic_deleted_between_metadata_and_offsets_is_a_vanished_topic(
        bootstrap, client, new_topic, monkeypatch, broker_kind):
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION to the offset lookups of a topic deleted after
    the metadata that listed it: latestOffset looks at the topics again and the partitions
    have vanished (failOnDataLoss decides in partitions()), instead of failing the query."""
    if broker_kind != "kafka":
        pytest.skip("Apache Kafka's answer to a deleted topic's offset lookups; Tansu answers "
                    "them with offset 0 instead (test_streaming's offset-changed path)")
    from spark_kafka_wire.client.metadata.admin import delete_topics
    from spark_kafka_wire.source import stream_reader as module

    kept, doomed = new_topic(1, "calls-kept"), new_topic(1, "calls-doomed")
    _produce(client, kept, 1, 3)
    _produce(client, doomed, 1, 2)
    # the deleted topic's lookups are retried for up to kafka.request.timeout.ms before
    # latestOffset looks at the topics again: 5 s here rather than the default 30 s
    reader = _reader(bootstrap, subscribe=f"{kept},{doomed}", startingOffsets="earliest",
                     **{"kafka.request.timeout.ms": "5000"})
    first = _wire(reader.latestOffset(_wire(reader.initialOffset()), ReadAllAvailable()))
    assert first[doomed] == {"0": 2}
    listed = module.assigned_partitions
    stale = listed(reader._client(), reader.options.source.strategy, missing_ok=True)
    delete_topics(client, [doomed])
    calls = []

    def stale_once(*args, **kwargs):  # the metadata read just before the deletion
        calls.append(1)
        return stale if len(calls) == 1 else listed(*args, **kwargs)

    monkeypatch.setattr(module, "assigned_partitions", stale_once)
    _produce(client, kept, 1, 2)
    end = _wire(reader.latestOffset(first, ReadAllAvailable()))
    assert len(calls) >= 2  # looked again after the lookups failed
    assert end[kept] == {"0": 5} and doomed not in end
