"""Leaders moving under a live read and write, on a two-broker Apache Kafka cluster (issue 28,
part 2; tests/support/kafka_cluster.py).

A topic of two partitions, each replicated on both brokers (replication factor 2, one leader
on each broker). While kafkawire's idempotent producer (acks=all) writes ids and its reader
follows the partitions (the client's own fetch loop: ListOffsets latest, then a range read),
the leaderships move:

1. broker 2 shuts down cleanly: Kafka's controlled shutdown hands its leaderships to broker 1
   first; the connections to broker 2 close and its partitions answer from broker 1;
2. broker 2 starts again and, once it is back in the ISR, a preferred-leader election
   (KIP-183, ElectLeaders; librdkafka's admin client) gives it its partition back: the
   client's requests to broker 1 for that partition are answered NOT_LEADER_OR_FOLLOWER;
3. (the soak variant) broker 2 is killed (kill -9) while it leads: the controller fences it
   after broker.session.timeout.ms and broker 1, in the ISR, leads.

Each move bumps the partition's leader epoch; the client has to refresh its metadata and go
on (KafkaClient.retry on NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH and socket errors).
Exact means: kafkawire's reader read each partition's ids in the order written, none lost or
twice, and librdkafka reads the topic back with every id exactly once (tests/support/
id_oracle.py). acks=all with both replicas in the ISR is what makes the kill -9 lossless: an
acknowledged batch is on the surviving replica.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pytest
from confluent_kafka import ElectionType, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from tests.support.apache_kafka import missing_tools
from tests.support.id_oracle import assert_exactly_once, id_bytes
from tests.support.kafka_cluster import KafkaCluster, wait_for
from tests.support.kept_logs import logs_kept_on_failure

pytestmark = [pytest.mark.broker]

CHUNK = 40  # ids per Producer.send: ids i go to partition i % 2
SOAK = pytest.mark.skipif(not os.environ.get("KAFKAWIRE_SOAK"),
                          reason="long variant: run with make soak (KAFKAWIRE_SOAK=1)")


@pytest.fixture(scope="module")
def cluster(request):
    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    started = KafkaCluster().start()
    with logs_kept_on_failure(request, started.stop, "the cluster", started.log_dirs):
        yield started


def _client(cluster: KafkaCluster) -> KafkaClient:
    # request.timeout.ms bounds each retry loop: longer than a fenced broker's 3 s session
    return KafkaClient(ClientConfig.from_servers(cluster.bootstrap_servers,
                                                 request_timeout_ms=20_000))


class Writer(threading.Thread):
    """kafkawire's idempotent producer (acks=all) writing ids 0, 1, ... until stopped."""

    def __init__(self, cluster: KafkaCluster, topic: str) -> None:
        super().__init__(daemon=True)
        self.client = _client(cluster)
        self.topic = topic
        self.written = 0
        self.producer_id = -1
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        settings = ProduceSettings(acks=-1, enable_idempotence=True, linger_ms=0)
        producer = Producer(self.client, settings)
        try:
            while not self.stop.is_set():
                ids = np.arange(self.written, self.written + CHUNK)
                values = pa.array([id_bytes(int(i)) for i in ids], pa.binary())
                # append numbers the batches (producer id, epoch, sequence): the
                # pre-encoded batches of Producer.send carry none
                producer.append(self.topic, values, values, (ids % 2).astype(np.int32),
                                int(time.time() * 1000))
                producer.flush()
                self.written += CHUNK
                self.producer_id = producer.producer_id
                time.sleep(0.01)
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.client.close()

    def wait_for_more(self, n: int, what: str, timeout_s: float = 60) -> None:
        target = self.written + n
        wait_for(lambda: self.error or self.written >= target, f"{n} more ids written {what}",
                 timeout_s)
        assert self.error is None, self.error


class Reader(threading.Thread):
    """kafkawire's reader following both partitions: ListOffsets latest, then the range."""

    def __init__(self, cluster: KafkaCluster, topic: str) -> None:
        super().__init__(daemon=True)
        self.client = _client(cluster)
        self.topic = topic
        self.got: dict[int, list[bytes]] = {0: [], 1: []}
        self.position = {0: 0, 1: 0}
        self.until: dict[int, int] | None = None  # set: read to these offsets, then stop
        self.error: BaseException | None = None

    def run(self) -> None:
        fetch = FetchSettings(max_partition_fetch_bytes=4096, max_wait_ms=200)
        try:
            while True:
                until = self.until
                ends = resolve_offsets(self.client, {(self.topic, p): LATEST for p in (0, 1)})
                for p in (0, 1):
                    end = ends[(self.topic, p)]
                    for chunk in fetch_range(self.client, self.topic, p, self.position[p], end,
                                             fetch):
                        self.got[p] += chunk.values.to_pylist()
                    self.position[p] = max(self.position[p], end)
                if until is not None and all(self.position[p] >= until[p] for p in (0, 1)):
                    return
                time.sleep(0.02)
        except BaseException as exc:
            self.error = exc
        finally:
            self.client.close()


def _partition_state(client: KafkaClient, topic: str, p: int) -> tuple[int, int, tuple]:
    """(leader, leader epoch, ISR) of a partition, from fresh metadata; (-1, -1, ()) while the
    broker asked does not list it yet (a new topic reaches each broker's metadata a moment
    after CreateTopics answers, as KRaft brokers replay the controller's records)."""
    topic_info = client.fetch_metadata([topic]).topics.get(topic)
    info = topic_info.partitions.get(p) if topic_info is not None else None
    if info is None:
        return -1, -1, ()
    return info.leader, info.leader_epoch, tuple(sorted(info.isr))


def _leader_is(client: KafkaClient, topic: str, p: int, node: int):
    return lambda: _partition_state(client, topic, p)[0] == node


def _both_in_isr(client: KafkaClient, topic: str):
    return lambda: all(_partition_state(client, topic, p)[2] == (1, 2) for p in (0, 1))


def _elect_preferred(cluster: KafkaCluster, topic: str, p: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    result = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, p)]).result(30)
    errors = [e for e in result.values() if e is not None]
    assert not errors, errors


def _new_topic(cluster: KafkaCluster, watch: KafkaClient) -> str:
    """Two partitions on both brokers: partition 0 led by broker 2, partition 1 by broker 1
    (the first replica listed is the preferred leader); returns once both ISRs are full."""
    topic = f"leaders-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2,
                                  replica_assignment=[[2, 1], [1, 2]])])[topic].result(30)
    wait_for(_both_in_isr(watch, topic), "both replicas in the ISR")
    return topic


def _move_leaders(cluster: KafkaCluster, watch: KafkaClient, topic: str, kill: bool,
                  between: Callable[[str], None]) -> None:
    """The moves of the module docstring; ``between(what)`` lets the work go on after each."""
    between("before any move")
    # 1. controlled shutdown of broker 2: partition 0 moves to broker 1
    cluster.second.shutdown()
    wait_for(_leader_is(watch, topic, 0, 1), "partition 0 led by broker 1")
    between("with broker 2 stopped")
    # 2. broker 2 back, in the ISR again, preferred leader of partition 0 again
    cluster.second.restart()
    wait_for(_both_in_isr(watch, topic), "broker 2 back in the ISR")
    _elect_preferred(cluster, topic, 0)
    wait_for(_leader_is(watch, topic, 0, 2), "partition 0 led by broker 2 again")
    between("after the election")
    if kill:
        # 3. broker 2 dies while it leads partition 0
        cluster.second.kill()
        wait_for(_leader_is(watch, topic, 0, 1), "partition 0 led by broker 1 after kill")
        between("with broker 2 killed")
        cluster.second.restart()
        wait_for(_both_in_isr(watch, topic), "broker 2 back in the ISR after kill")
        between("with broker 2 back")


def _moves(cluster: KafkaCluster, kill: bool, record_fact) -> None:
    watch = _client(cluster)
    topic = _new_topic(cluster, watch)
    epoch0 = _partition_state(watch, topic, 0)[1]
    writer, reader = Writer(cluster, topic), Reader(cluster, topic)
    writer.start()
    reader.start()
    began = time.monotonic()
    try:
        _move_leaders(cluster, watch, topic, kill, lambda what: writer.wait_for_more(400, what))
    finally:
        writer.stop.set()
        writer.join(60)
    assert writer.error is None, writer.error
    assert writer.producer_id >= 0, "the writer was not idempotent"
    epochs = _partition_state(watch, topic, 0)[1] - epoch0
    final = resolve_offsets(watch, {(topic, p): LATEST for p in (0, 1)})
    reader.until = {p: final[(topic, p)] for p in (0, 1)}
    reader.join(120)
    assert not reader.is_alive(), f"the reader did not reach {reader.until}: {reader.position}"
    assert reader.error is None, reader.error
    n = writer.written
    assert_exactly_once(cluster.bootstrap_servers, topic, range(n))
    for p in (0, 1):
        expected = [id_bytes(i) for i in range(p, n, 2)]
        got = reader.got[p]
        first = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                     None)
        assert got == expected, (f"partition {p}: read {len(got)} ids for {len(expected)} "
                                 f"written; first difference at index {first}")
    watch.close()
    record_fact(f"{n} ids written and read exactly once through {epochs} leader epochs of "
                f"partition 0 in {time.monotonic() - began:.1f} s")
    assert epochs >= (3 if kill else 2), epochs


def test_reads_and_writes_go_on_while_leaders_move(cluster, record_fact):
    """Controlled shutdown and preferred-leader election: exact reads and writes."""
    _moves(cluster, kill=False, record_fact=record_fact)


@pytest.mark.soak
@SOAK
def test_reads_and_writes_go_on_when_a_leader_is_killed(cluster, record_fact):
    """The same, then kill -9 of the leader: broker 1 (in the ISR) takes over."""
    _moves(cluster, kill=True, record_fact=record_fact)


@pytest.mark.spark
@pytest.mark.soak
@SOAK
def test_soak_spark_stream_while_leaders_move(spark, cluster, tmp_path, record_fact):
    """A kafkawire streaming query (processing-time trigger, parquet sink) follows the topic
    while librdkafka writes ids steadily and the leaders move, kill -9 included: the sink
    holds every id once. The driver's offset lookups and the tasks' Fetches meet the moved
    leaders (NOT_LEADER_OR_FOLLOWER, closed connections) and retry within
    kafka.request.timeout.ms; a task runs once on local[2], so no task retry hides a fault."""
    from tests.faults.test_spark_faults import _await_batches, _batches_done, _sink_ids
    from tests.support.id_producer import SteadyIdProducer

    watch = _client(cluster)
    topic = _new_topic(cluster, watch)
    sink, checkpoint = str(tmp_path / "sink"), str(tmp_path / "checkpoint")
    began = time.monotonic()
    with SteadyIdProducer(cluster.bootstrap_servers, topic, 2000) as producer:
        producer.wait_for(1000)
        q = (spark.readStream.format("kafkawire")
             .option("kafka.bootstrap.servers", cluster.bootstrap_servers)
             .option("subscribe", topic).option("startingOffsets", "earliest")
             .option("kafka.request.timeout.ms", "30000").load().select("value")
             .writeStream.format("parquet").option("path", sink)
             .option("checkpointLocation", checkpoint).trigger(processingTime="1 second")
             .start())
        try:
            _move_leaders(cluster, watch, topic, True,
                          lambda what: _await_batches(q, _batches_done(q) + 2))
            n = producer.stop()
            q.processAllAvailable()
            batches = _batches_done(q)
        finally:
            q.stop()
    watch.close()
    count = _sink_ids(spark, sink, n)
    record_fact(f"stream of {n} ids, {batches} batches through leader moves and a kill -9 in "
                f"{time.monotonic() - began:.1f} s: {count.summary()}")
    count.assert_exactly_once()
