"""The producer against a real broker (Tansu) and the legacy emulator: idempotence, retries
after real socket faults, pipelining, acks=0, linger/batch.size/buffer.memory, partitioners.

Faults are real: our socket to the broker is shut down while responses are pending (after
the broker has appended what it received, so the answers, not the data, are lost), or a
request is withheld from the broker and answered NOT_LEADER_OR_FOLLOWER in its place while
the following requests reach the broker, which then answers them OUT_OF_ORDER_SEQUENCE_NUMBER.

Tansu facts these tests rely on (measured; a real Kafka broker behaves the same unless noted):
a re-sent idempotent batch is answered DUPLICATE_SEQUENCE_NUMBER (46) and not stored again (Kafka
answers NONE with the original offset); a sequence gap is answered 45; Tansu answers Produce
with acks=0 although Kafka never does.
"""

from __future__ import annotations

import re
import socket
import struct
import time
import uuid

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from spark_kafka_wire.client.producer import sender as producer_module
from spark_kafka_wire.client.producer.partitioner import assign_partitions
from spark_kafka_wire.client.wire.hooks import ConnectionHooks
from spark_kafka_wire.client.wire.session import InFlight
from spark_kafka_wire.errors import (
    ConfigurationError,
    DeliveryFailedError,
    DeliveryTimeoutError,
    KafkaError,
)
from spark_kafka_wire.protocol.messages import METADATA, PRODUCE
from tests.support.errors import raises_condition
from tests.support.write_support import consume, end_offsets, librdkafka_placement, stored_batches

pytestmark = pytest.mark.broker

BASE_TS = 1_700_000_000_000


@pytest.fixture
def own_client(bootstrap: str):
    """A client of the test's own: faults are injected into its connections."""
    c = KafkaClient(ClientConfig.from_servers(bootstrap, request_timeout_ms=5000))
    yield c
    c.close()


def _values(n: int, tag: str = "v") -> list[bytes]:
    return [f"{tag}-{i:04d}".encode() for i in range(n)]


def _write(p: Producer, topic: str, values: list[bytes], partitions: np.ndarray | None = None,
           keys: list[bytes | None] | None = None) -> None:
    parts = np.zeros(len(values), np.int32) if partitions is None else partitions
    key_arr = None if keys is None else pa.array(keys, pa.binary())
    p.append(topic, key_arr, pa.array(values, pa.binary()), parts, BASE_TS)
    p.flush()


def _log(client: KafkaClient, topic: str, partition: int = 0) -> list[bytes]:
    end = end_offsets(client, topic, partition + 1)[partition]
    return [v for r in fetch_range(client, topic, partition, 0, end) for v in r.values.to_pylist()]


class DropAfterAppend:
    """Close our socket when a Produce response is awaited, once the broker has appended every
    record sent so far: the records are stored, their acknowledgements are lost."""

    def __init__(self, monkeypatch, conn, observer: KafkaClient, topic: str, times: int = 1,
                 wait_for_append: bool = True) -> None:
        self.conn, self.observer, self.topic = conn, observer, topic
        self.times, self.wait = times, wait_for_append
        self.sent_records = 0  # of distinct batches: a re-sent batch may be deduplicated
        self._seen: set[bytes] = set()
        self.faults = 0
        self._send, self._receive = conn.send, conn.receive
        monkeypatch.setattr(conn, "send", self.send)
        monkeypatch.setattr(conn, "receive", self.receive)

    def send(self, spec, body, version=None, expect_response=True):
        if spec is PRODUCE:
            for t in body["topic_data"]:
                for pd in t["partition_data"]:
                    records = bytes(pd["records"])  # a batch may be a view of its buffer
                    if records not in self._seen:
                        self._seen.add(records)
                        self.sent_records += struct.unpack_from(">i", pd["records"], 57)[0]
        return self._send(spec, body, version, expect_response)

    def receive(self, inflight, limit=None):
        if inflight.spec is PRODUCE and self.faults < self.times and self.conn._sock is not None:
            self.faults += 1
            deadline = time.monotonic() + 10
            while self.wait and sum(end_offsets(self.observer, self.topic, 1).values()) \
                    < self.sent_records:
                assert time.monotonic() < deadline, "the broker did not append what it got"
                time.sleep(0.01)
            sock = self.conn._sock
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()  # answers already in the kernel buffer are lost too
        return self._receive(inflight, limit)


# ------------------------------------------------------------------------------ idempotence


def test_idempotent_batches_carry_producer_id_and_sequences(own_client, client, new_topic):
    topic = new_topic(2, "idem")
    p = Producer(own_client, ProduceSettings(batch_size=200, linger_ms=0))
    values = _values(60)
    _write(p, topic, values, np.array([i % 2 for i in range(60)], np.int32))
    assert p.idempotent and p.producer_id >= 0 and p.records_sent == 60
    for part in (0, 1):
        batches = stored_batches(client, topic, part)
        counts = [b.records for b in batches]
        assert len(batches) > 2 and sum(counts) == 30
        assert {(b.producer_id, b.producer_epoch) for b in batches} == {
            (p.producer_id, p.producer_epoch)}
        # per partition: start at 0, advance by each batch's record count
        assert [b.base_sequence for b in batches] == np.cumsum([0, *counts[:-1]]).tolist()
    second = Producer(own_client, ProduceSettings())
    _write(second, topic, [b"x"])
    assert second.producer_id not in (-1, p.producer_id)  # one producer id per Producer (task)


def test_non_idempotent_batches_carry_no_producer_id(own_client, client, new_topic):
    topic = new_topic(1, "no-idem")
    for settings in (ProduceSettings(enable_idempotence=False), ProduceSettings(acks=1)):
        p = Producer(own_client, settings)
        _write(p, topic, _values(5))
        assert not p.idempotent and p.producer_id == -1
    assert {(b.producer_id, b.base_sequence) for b in stored_batches(client, topic, 0)} == {(-1, -1)}


def test_a_resent_batch_is_stored_once(own_client, client, new_topic, monkeypatch):
    """The same batch (same producer id and sequence) sent again is answered
    DUPLICATE_SEQUENCE_NUMBER (Tansu) or with its first offset (Kafka, for the last five
    batches of a producer, the most that can be in flight), counts as written, and is not
    stored again."""
    topic = new_topic(1, "dedup")
    p = Producer(own_client, ProduceSettings(batch_size=100, linger_ms=0))
    dispatched = []
    original = p.dispatch
    monkeypatch.setattr(p, "dispatch", lambda bs: (dispatched.extend(bs), original(bs))[1])
    values = _values(20)
    _write(p, topic, values)
    assert len(dispatched) > 1
    again = [producer_module.PendingBatch(b.topic, b.partition, b.data, b.records,
                                          b.base_sequence) for b in dispatched[-5:]]
    p.send(again)  # would raise if 46 were treated as an error
    assert p.records_sent == 20 + sum(b.records for b in again)  # acknowledged twice ...
    assert _log(client, topic) == values  # ... stored once


def test_dropped_connection_idempotent_retry_writes_each_record_once(
        own_client, client, new_topic, monkeypatch):
    topic = new_topic(1, "drop-idem")
    p = Producer(own_client, ProduceSettings(batch_size=120, max_in_flight=5, linger_ms=0,
                                             retry_backoff_ms=10))
    p.prepare(topic)
    fault = DropAfterAppend(monkeypatch, own_client.leader_connection(topic, 0), client, topic)
    refreshed: list[set] = []
    refresh = own_client.refresh_metadata
    monkeypatch.setattr(own_client, "refresh_metadata",
                        lambda topics=None: (refreshed.append(set(topics)), refresh(topics))[1])
    values = _values(200)
    _write(p, topic, values)
    assert fault.faults == 1 and p.requests_sent > len(stored_batches(client, topic, 0))
    assert refreshed == [{topic}]  # the retry went out after a metadata refresh
    assert p.records_sent == 200
    assert _log(client, topic) == values  # in order, no duplicate


def test_dropped_connection_without_idempotence_duplicates(own_client, client, new_topic,
                                                           monkeypatch):
    """The same fault without idempotence: the retry stores again what was stored (Spark's
    sink is at-least-once); this is what idempotence prevents above."""
    topic = new_topic(1, "drop-dup")
    p = Producer(own_client, ProduceSettings(batch_size=120, max_in_flight=5, linger_ms=0,
                                             retry_backoff_ms=10, enable_idempotence=False))
    p.prepare(topic)
    fault = DropAfterAppend(monkeypatch, own_client.leader_connection(topic, 0), client, topic)
    values = _values(200)
    _write(p, topic, values)
    stored = _log(client, topic)
    assert fault.faults == 1 and len(stored) > len(values)
    assert set(stored) == set(values)


class LoseFirstProduce:
    """The first Produce request never reaches the broker; a NOT_LEADER_OR_FOLLOWER answer
    stands in for it. The requests pipelined after it do reach the broker."""

    def __init__(self, monkeypatch, conn, topic: str) -> None:
        self.conn, self.topic = conn, topic
        self.lost: InFlight | None = None
        self.codes: list[int] = []
        self._send, self._receive = conn.send, conn.receive
        monkeypatch.setattr(conn, "send", self.send)
        monkeypatch.setattr(conn, "receive", self.receive)

    def send(self, spec, body, version=None, expect_response=True):
        if spec is PRODUCE and self.lost is None:
            self.lost = InFlight(-1, spec, self.conn.version(spec), True, self.conn.generation)
            return self.lost
        return self._send(spec, body, version, expect_response)

    def receive(self, inflight, limit=None):
        if inflight is self.lost:
            return {"responses": [{"name": self.topic, "partition_responses": [
                {"index": 0, "error_code": 6, "error_message": "simulated stale leader"}]}]}
        resp = self._receive(inflight, limit)
        if inflight.spec is PRODUCE:
            self.codes += [p["error_code"] for t in resp["responses"]
                           for p in t["partition_responses"]]
        return resp


def test_out_of_order_after_a_lost_batch_is_retried_in_order(own_client, client, new_topic,
                                                             monkeypatch):
    topic = new_topic(1, "ooo")
    p = Producer(own_client, ProduceSettings(batch_size=120, max_in_flight=5, linger_ms=0,
                                             retry_backoff_ms=10))
    p.prepare(topic)
    values = _values(100)
    # the producer's first batch is stored before the fault: Kafka takes any sequence from a
    # producer it holds no state for (KIP-360), so a gap shows only after one
    _write(p, topic, values[:5])
    fault = LoseFirstProduce(monkeypatch, own_client.leader_connection(topic, 0), topic)
    _write(p, topic, values[5:])
    assert 45 in fault.codes  # the broker saw the gap the lost batch left ...
    assert _log(client, topic) == values  # ... and the retry restored the order


@pytest.mark.parametrize(("in_flight", "ordered"), [(1, True), (5, False)])
def test_without_idempotence_order_holds_with_one_request_in_flight(
        own_client, client, new_topic, monkeypatch, in_flight, ordered):
    """As with the Java client: without idempotence only max.in.flight=1 keeps a partition's
    order across a retry; with more in flight the retried batch lands after later ones."""
    topic = new_topic(1, "order")
    p = Producer(own_client, ProduceSettings(batch_size=120, max_in_flight=in_flight,
                                             linger_ms=0, retry_backoff_ms=10,
                                             enable_idempotence=False))
    p.prepare(topic)
    LoseFirstProduce(monkeypatch, own_client.leader_connection(topic, 0), topic)
    values = _values(100)
    _write(p, topic, values)
    stored = _log(client, topic)
    assert sorted(stored) == values  # each once: nothing had been stored by the lost request
    assert (stored == values) is ordered


def test_retries_zero_fails_at_the_first_fault(own_client, client, new_topic, monkeypatch):
    topic = new_topic(1, "no-retry")
    p = Producer(own_client, ProduceSettings(retries=0, linger_ms=0))
    p.prepare(topic)
    DropAfterAppend(monkeypatch, own_client.leader_connection(topic, 0), client, topic)
    with raises_condition(DeliveryFailedError, "KAFKAWIRE_DELIVERY_FAILED",
                          rf"topic '{topic}', partition 0", r"after 1 attempts",
                          r"kafka.retries=0", "connection"):
        _write(p, topic, _values(5))
    # the failed write left no unread response behind: the same client keeps working
    assert own_client.leader_connection(topic, 0).request(METADATA, {"topics": None})["brokers"]


def test_delivery_timeout_bounds_retries(own_client, client, new_topic, monkeypatch):
    topic = new_topic(1, "deadline")
    p = Producer(own_client, ProduceSettings(delivery_timeout_ms=1000, retry_backoff_ms=20,
                                             retry_backoff_max_ms=50, linger_ms=0))
    p.prepare(topic)
    # a fault at every attempt; after 500 of them the write would succeed and this test fail
    fault = DropAfterAppend(monkeypatch, own_client.leader_connection(topic, 0), client, topic,
                            times=500, wait_for_append=False)
    with raises_condition(DeliveryTimeoutError, "KAFKAWIRE_DELIVERY_FAILED.DELIVERY_TIMEOUT",
                          rf"topic '{topic}', partition 0",
                          r"kafka.delivery.timeout.ms=1000 \(\d+ attempts\)"):
        _write(p, topic, _values(3))
    assert 1 < fault.faults < 500


def test_retry_backoff_doubles_up_to_the_maximum(own_client, client, new_topic, monkeypatch):
    topic = new_topic(1, "backoff")
    sleeps: list[float] = []

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            sleeps.append(seconds)

    monkeypatch.setattr(producer_module, "time", Clock)
    monkeypatch.setattr(producer_module.random, "random", lambda: 0.5)  # no jitter
    p = Producer(own_client, ProduceSettings(retry_backoff_ms=10, retry_backoff_max_ms=40,
                                             linger_ms=0))
    p.prepare(topic)
    DropAfterAppend(monkeypatch, own_client.leader_connection(topic, 0), client, topic, times=5)
    values = _values(4)
    _write(p, topic, values)
    assert sleeps == pytest.approx([0.01, 0.02, 0.04, 0.04, 0.04])
    assert _log(client, topic) == values


def test_a_sequence_gap_bumps_the_epoch_and_renumbers(own_client, client, new_topic):
    """45 with no earlier failed batch means the broker lost the producer's state: as the Java
    producer (KIP-360), the epoch is bumped and the batches re-numbered from 0, stored once."""
    topic = new_topic(1, "seq-gap")
    p = Producer(own_client, ProduceSettings(batch_size=100, max_in_flight=5, linger_ms=0))
    p.prepare(topic)
    first = (p.producer_id, p.producer_epoch)
    values = _values(60)
    _write(p, topic, values[:10])  # the broker holds the producer's state (see above)
    p.sequences[(topic, 0)] = 1000  # as if earlier batches had been lost by the broker
    _write(p, topic, values[10:])
    assert p.epoch_bumps == 1 and (p.producer_id, p.producer_epoch) != first
    assert _log(client, topic) == values
    batches = stored_batches(client, topic, 0)
    renumbered = [b for b in batches if (b.producer_id, b.producer_epoch) != first]
    assert renumbered and renumbered[0].base_sequence == 0
    assert {(b.producer_id, b.producer_epoch) for b in renumbered} == {(p.producer_id,
                                                                        p.producer_epoch)}


def test_a_gap_after_renumbering_is_fatal_and_closes_pending_requests(
        own_client, client, new_topic, monkeypatch, broker_kind):
    """If the broker refuses even the re-numbered batches, its state is inconsistent: the
    write fails naming it, and no unread answer is left on the connection."""
    if broker_kind != "tansu":
        pytest.skip("Apache Kafka cannot refuse them: its epoch bump of a non-transactional "
                    "producer is a new producer id, whose first sequence it takes whatever it "
                    "is (KIP-360); Tansu's refusal is the case this guards (an external "
                    "cluster's kind is not guessed)")
    topic = new_topic(1, "fatal-seq")
    p = Producer(own_client, ProduceSettings(batch_size=100, max_in_flight=5, linger_ms=0))
    p.prepare(topic)
    _write(p, topic, _values(10))  # the broker holds the producer's state (see above)
    p.sequences[(topic, 0)] = 1000
    real_restamp = producer_module.restamp_batch
    monkeypatch.setattr(producer_module, "restamp_batch",  # re-numbered from 7, not 0
                        lambda data, pid, epoch, seq: real_restamp(data, pid, epoch, seq + 7))
    with raises_condition(KafkaError,
                          "KAFKA_BROKER_ERROR.OUT_OF_ORDER_SEQUENCE_NUMBER") as info:
        _write(p, topic, _values(50))
    assert re.search(r"OUT_OF_ORDER_SEQUENCE_NUMBER.*partition 0.*refused "
                     r"sequence 0 of producer id \d+ epoch \d+ although the epoch had been "
                     r"bumped", str(info.value)), info.value
    assert end_offsets(client, topic, 1) == {0: 10}
    conn = own_client.leader_connection(topic, 0)
    assert conn.in_flight == 0 and conn.request(METADATA, {"topics": None})["brokers"]


# ------------------------------------------------------------------------------- pipelining


@pytest.mark.parametrize("in_flight", [1, 3])
def test_requests_are_pipelined_up_to_max_in_flight(own_client, client, new_topic, monkeypatch,
                                                    in_flight):
    topic = new_topic(1, "pipe")
    p = Producer(own_client, ProduceSettings(batch_size=100, max_in_flight=in_flight,
                                             linger_ms=0))
    p.prepare(topic)
    conn = own_client.leader_connection(topic, 0)
    outstanding: list[int] = []
    # after each request written to the leader: the requests awaiting answers on it
    counting = own_client.hooks.add(ConnectionHooks(
        on_request=lambda e: outstanding.append(conn.in_flight) if e.broker == conn.name
        else None))
    values = _values(120)
    _write(p, topic, values)
    own_client.hooks.remove(counting)
    assert p.requests_sent > 5
    assert max(outstanding) == in_flight == p.max_in_flight_seen
    assert _log(client, topic) == values


# ----------------------------------------------------------------------------------- acks=0


def test_acks0_does_not_wait_for_a_broker_that_never_answers(legacy_broker):
    """The emulated 0.10.0 broker, like Kafka, never answers acks=0: waiting for an answer
    would end in a request timeout instead of success."""
    broker = legacy_broker("0.10.0")
    topic = f"acks0-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    config = ClientConfig.from_servers(broker.bootstrap_servers, request_timeout_ms=1000)
    with KafkaClient(config) as c:
        p = Producer(c, ProduceSettings(acks=0, batch_size=100, linger_ms=0))
        values = _values(40)
        _write(p, topic, values, np.array([i % 2 for i in range(40)], np.int32))
        assert p.records_sent == 40 and not p.idempotent
        conn = c.leader_connection(topic, 0)
        assert conn.in_flight == 0
        assert conn.request(METADATA, {"topics": [{"name": topic}]})["topics"][0]["name"] == topic
    for part in (0, 1):
        assert [m[4] for m in broker.messages(topic, part)] == values[part::2]
    produce = [r for r in broker.requests if r.api_key == 0]
    assert len(produce) > 2 and {r.detail["acks"] for r in produce} == {0}


def test_acks0_on_a_broker_that_answers_anyway(own_client, client, bootstrap, new_topic,
                                              broker_kind):
    """Tansu answers Produce with acks=0 (Kafka does not): the answers are dropped, not
    mistaken for the answers of later requests on the same connection."""
    topic = new_topic(1, "acks0-tansu")
    p = Producer(own_client, ProduceSettings(acks=0, batch_size=100, linger_ms=0))
    values = _values(50)
    _write(p, topic, values)
    conn = own_client.leader_connection(topic, 0)
    assert conn.in_flight == 0  # nothing was waited for
    got = conn.request(METADATA, {"topics": [{"name": topic}]})  # same connection
    assert got["topics"][0]["name"] == topic
    if broker_kind != "external":
        assert (conn.unsolicited_dropped > 0) == (broker_kind == "tansu")  # Tansu did answer
    assert [c.value for c in consume(bootstrap, topic, 1, 50)] == values


# ----------------------------------------------------------- linger.ms, batch.size, memory


def _append_in_pieces(p: Producer, topic: str, values: list[bytes], piece: int) -> list[int]:
    """Append ``piece`` rows at a time; the requests sent after each append."""
    sent = []
    for i in range(0, len(values), piece):
        chunk = values[i:i + piece]
        p.append(topic, None, pa.array(chunk, pa.binary()), np.zeros(len(chunk), np.int32),
                 BASE_TS)
        sent.append(p.requests_sent)
    return sent


def test_linger_lets_rows_of_several_appends_share_a_batch(own_client, client, new_topic):
    values = _values(100)  # 6 + 21 = 27 bytes each by our estimate: 2700 bytes
    lingering, eager = new_topic(1, "linger"), new_topic(1, "eager")
    p = Producer(own_client, ProduceSettings(linger_ms=600_000, batch_size=1000))
    sent = _append_in_pieces(p, lingering, values, 5)
    assert sent[0] == 0  # 5 rows do not fill a batch: they wait
    assert 0 < sent[-1] < 5  # full batches went out while rows kept arriving
    p.flush()
    q = Producer(own_client, ProduceSettings(linger_ms=0, batch_size=1000))
    assert _append_in_pieces(q, eager, values, 5) == list(range(1, 21))  # one per append
    q.flush()
    assert [b.records for b in stored_batches(client, lingering, 0)] == [37, 37, 26]
    assert len(stored_batches(client, eager, 0)) == 20
    assert _log(client, lingering) == _log(client, eager) == values


def test_rows_older_than_linger_go_out_with_the_next_append(own_client, client, new_topic):
    topic = new_topic(1, "linger-time")
    p = Producer(own_client, ProduceSettings(linger_ms=1, batch_size=1 << 20))
    _append_in_pieces(p, topic, _values(3), 3)
    assert p.requests_sent == 0
    time.sleep(0.02)  # the buffered rows are now older than linger.ms
    _append_in_pieces(p, topic, _values(3, "w"), 3)
    assert p.requests_sent == 1  # everything buffered, the new rows too
    p.flush()
    assert _log(client, topic) == _values(3) + _values(3, "w")


def test_buffer_memory_bounds_what_waits(own_client, client, new_topic):
    topic = new_topic(1, "memory")
    p = Producer(own_client, ProduceSettings(linger_ms=600_000, batch_size=1 << 20,
                                             buffer_memory=200))
    sent = _append_in_pieces(p, topic, _values(20), 2)  # 62 bytes per append
    assert sent[:4] == [0, 0, 0, 1]  # the 4th append passes 200 bytes: all is sent
    p.flush()
    assert _log(client, topic) == _values(20)


# ------------------------------------------------------------------------------ idempotence
#                                                                        on legacy brokers


def test_idempotence_on_a_broker_without_init_producer_id(legacy_broker):
    broker = legacy_broker("0.10.0")
    topic = f"legacy-idem-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    config = ClientConfig.from_servers(broker.bootstrap_servers, request_timeout_ms=2000)
    with KafkaClient(config) as c:
        p = Producer(c, ProduceSettings())  # defaulted: silently off
        _write(p, topic, _values(3))
        assert not p.idempotent and p.records_sent == 3
        explicit = Producer(c, ProduceSettings(enable_idempotence=True))
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION") as info:
            _write(explicit, topic, _values(3, "x"))
        assert re.search(rf"kafka.enable.idempotence=true cannot be "
                         rf"honoured for topic '{topic}'.*Kafka 0.11\+", str(info.value)), \
            info.value
    assert [m[4] for m in broker.messages(topic, 0)] == _values(3)
    assert {r.api_key for r in broker.requests} <= {0, 3, 18}  # never InitProducerId (22)


# ------------------------------------------------------------------------------ partitioners

PARTITIONS = 5
KEYS: list[bytes | None] = (
    [f"order-{i:04d}".encode() for i in range(150)] + [bytes([i, 255 - i]) * (i % 9) for i in
                                                       range(1, 40)]
    + [None] * 30 + [b""] * 30
)
# which keys each partitioner places deterministically (the others carry no promise)
DETERMINISTIC = {
    "murmur2_random": lambda k: k is not None,
    "murmur2": lambda k: True,
    "consistent_random": lambda k: bool(k),
    "consistent": lambda k: True,
    "fnv1a_random": lambda k: k is not None,
    "fnv1a": lambda k: True,
    "random": lambda k: False,
}


@pytest.mark.parametrize("partitioner", list(DETERMINISTIC))
def test_placement_matches_librdkafka(own_client, bootstrap, new_topic, partitioner):
    ours, theirs = new_topic(PARTITIONS, "place"), new_topic(PARTITIONS, "place-rdk")
    keys = KEYS
    parts = assign_partitions(pa.array(keys, pa.binary()), len(keys), PARTITIONS,
                              partitioner=partitioner)
    values = [b"%d" % i for i in range(len(keys))]  # the value says which key it was
    _write(Producer(own_client, ProduceSettings()), ours, values, parts, keys)
    mine = {int(c.value): c.partition for c in consume(bootstrap, ours, PARTITIONS, len(keys))}
    librd = librdkafka_placement(bootstrap, theirs, keys, partitioner)
    fixed = [i for i, k in enumerate(keys) if DETERMINISTIC[partitioner](k)]
    differ = [(keys[i], mine[i], librd[i]) for i in fixed if mine[i] != librd[i]]
    assert not differ, f"{len(differ)} keys placed differently (key, ours, librdkafka)"
    assert len({librd[i] for i in fixed}) == (PARTITIONS if fixed else 0)
    free = [i for i in range(len(keys)) if i not in set(fixed)]
    if free:  # rows without a placement promise: we spread them (librdkafka sticks to one
        # random partition for sticky.partitioning.linger.ms, so its choice is not compared)
        assert len({mine[i] for i in free}) == PARTITIONS
