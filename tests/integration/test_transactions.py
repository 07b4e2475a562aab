"""Transactions through the client, against the test broker: what the exactly-once sink relies
on (EndTxn from another connection, fencing, offsets inside a transaction) and what the broker
does where it departs from Kafka (no transaction timeout).

librdkafka's read_committed consumer is the oracle where every transaction committed, and on
Apache Kafka where some aborted too. Where a transaction was aborted, Tansu does not list it in
Fetch answers, so librdkafka would return its records; there kafkawire's read_committed reader
(which drops a transaction when its marker is an abort) and the last stable offset are checked
instead. Where the two brokers answer differently (the transaction timeout, fencing), each test
asserts Kafka's exact answer on Kafka (``broker_kind``) and Tansu's on Tansu.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql.types import BinaryType, StructField, StructType

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import BrokerConnectionError, ConfigurationError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import (
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    resolve_offsets,
)
from spark_kafka_wire.client.groups.group_offsets import (
    TRANSACTION_KEY_TYPE,
    fetch_group,
    find_coordinator,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from spark_kafka_wire.client.producer.idempotence import ProducerIdentity
from spark_kafka_wire.client.producer.transactions import (
    OpenTransaction,
    end_transaction,
    explain_transaction_error,
    init_transactions,
)
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.protocol.errors import ErrorCode, ProducerStateError, error_for_code
from spark_kafka_wire.protocol.messages import END_TXN
from spark_kafka_wire.protocol.records.batch import ATTR_CONTROL
from spark_kafka_wire.sink.batch_writer import KafkaWireBatchWriter
from spark_kafka_wire.sink.exactly_once import TaskBatch
from tests.support.apache_kafka import topic_on
from tests.support.errors import raises_condition
from tests.support.id_oracle import assert_exactly_once
from tests.support.librdkafka import consume_all
from tests.support.log_oracle import committed_records, decisions, read_log
from tests.support.request_log import RequestLog
from tests.support.transactions import task_transaction, wait_until_no_transaction_open
from tests.support.txn_log_oracle import assert_committed_exactly_once
from tests.support.write_support import stored_batches

pytestmark = pytest.mark.broker

SETTINGS = ProduceSettings(linger_ms=0)
#: transaction.timeout.ms of the transactions left open on purpose: long enough for a task's
#: writes on two busy cores, short enough to wait for.
TIMEOUT_MS = 2_000
#: When Kafka's coordinator must have aborted such a transaction: its timeout, the test
#: broker's abort check interval (0.5 s), the markers written, and room for a busy machine.
ABORTED_WITHIN_S = TIMEOUT_MS / 1000 + 10
#: The conditions of the codes whose error says the transactional id "was taken over by a
#: newer producer epoch" (explain_transaction_error, client/producer/transactions.py).
FENCED = tuple(f"KAFKA_BROKER_ERROR.{code.name}" for code in (
    ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_COORDINATOR_FENCED))


def _txn_settings(tid: str | None = None, **kw: Any) -> ProduceSettings:
    return replace(SETTINGS, transactional_id=tid or f"tx-{uuid.uuid4().hex[:10]}", **kw)


def _write(producer: Producer, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer.append(topic, None, pa.array(values, pa.binary()),
                    np.full(len(values), partition, np.int32), 1_700_000_000_000)
    producer.flush()


def _latest(client: KafkaClient, topic: str, isolation: int, partition: int = 0) -> int:
    tp = (topic, partition)
    return resolve_offsets(client, {tp: LATEST}, isolation)[tp]


MARKERS_WITHIN_S = 10.0
"""How long the coordinator may take to write a transaction's markers after EndTxn answered:
Kafka answers EndTxn before the markers are written (KIP-98's second phase), and until a
partition's marker is written its last stable offset stays before the transaction."""


def _ended_at(client: KafkaClient, topic: str, partition: int = 0) -> int:
    """The read_committed end of ``topic``-``partition`` once the transaction that EndTxn just
    ended has its marker there (the end reaches the high watermark); AssertionError after
    MARKERS_WITHIN_S."""
    deadline = time.monotonic() + MARKERS_WITHIN_S
    while True:
        stable = _latest(client, topic, READ_COMMITTED, partition)
        end = _latest(client, topic, READ_UNCOMMITTED, partition)
        if stable == end:
            return stable
        assert time.monotonic() < deadline, (
            f"no marker ends the transaction on {topic}-{partition} {MARKERS_WITHIN_S}s after "
            f"EndTxn: last stable offset {stable}, high watermark {end}")
        time.sleep(0.05)


def _committed_values(bootstrap: str, client: KafkaClient, topic: str, partition: int = 0
                      ) -> list[bytes]:
    """kafkawire's read_committed reader, checked against the log-walking oracle, once the
    partition's last transaction has its marker (called after EndTxn, which answers before the
    markers are written)."""
    end = _ended_at(client, topic, partition)
    rows: list[bytes] = []
    for chunk in fetch_range(client, topic, partition, 0, end,
                             FetchSettings(isolation_level=READ_COMMITTED)):
        rows += chunk.values.to_pylist()
    batches, high_watermark = read_log(bootstrap, topic, partition)
    assert rows == [v for _, _, v in committed_records(batches, 0, high_watermark)]
    return rows


def test_a_transaction_written_in_one_client_commits_from_another(bootstrap, client, new_topic):
    """The driver-side commit: a task writes and flushes, the driver (another connection, here
    another client) sends EndTxn with the producer id and epoch the task reported."""
    topic = new_topic(2, "txn")
    producer = Producer(client, _txn_settings())
    _write(producer, topic, [b"a%d" % i for i in range(50)], 0)
    _write(producer, topic, [b"b%d" % i for i in range(30)], 1)
    txn = producer.open_transaction()
    assert txn is not None and set(txn.partitions) == {(topic, 0), (topic, 1)}
    # Open: read_committed readers stop before it.
    assert _latest(client, topic, READ_COMMITTED) == 0
    assert _latest(client, topic, READ_UNCOMMITTED) == 50
    driver = KafkaClient(ClientConfig.from_servers(bootstrap))
    try:
        end_transaction(driver, OpenTransaction(txn.transactional_id, txn.producer_id,
                                                txn.epoch, txn.partitions), commit=True)
    finally:
        driver.close()
    # the coordinator writes the markers after EndTxn answered: until partition 1 has its
    # marker, a read_committed consumer ends there at offset 0 (seen once in CI)
    assert _ended_at(client, topic, 0) == 51  # 50 records + the commit marker
    assert _ended_at(client, topic, 1) == 31
    conf = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
    got = consume_all(conf, topic, 30)
    assert sorted(m.value() or b"" for m in got) == sorted([b"a%d" % i for i in range(50)]
                                               + [b"b%d" % i for i in range(30)])


def test_an_aborted_transaction_leaves_nothing_for_read_committed(bootstrap, client, new_topic,
                                                                  broker_kind):
    """On Kafka librdkafka's read_committed consumer agrees (the broker lists the transaction
    as aborted); Tansu lists nothing, so there only the markers decide."""
    topic = new_topic(1, "txn")
    producer = Producer(client, _txn_settings())
    _write(producer, topic, [b"x"] * 20)
    txn = producer.open_transaction()
    assert txn is not None
    end_transaction(client, txn, commit=False)
    assert _ended_at(client, topic) == 21  # the abort marker ends it
    assert _committed_values(bootstrap, client, topic) == []
    if broker_kind == "kafka":
        rc = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        assert consume_all(rc, topic, 30) == []


def test_a_new_holder_of_the_transactional_id_fences_the_old_one(bootstrap, client, new_topic,
                                                                 broker_kind):
    """Zombie fencing: a second InitProducerId for the id (a task's retry) aborts the first
    holder's open transaction; the first holder's next write fails, saying why (Kafka answers
    the stale epoch's Produce with INVALID_PRODUCER_EPOCH, whatever the Produce version)."""
    topic = new_topic(1, "txn")
    tid = f"tx-{uuid.uuid4().hex[:10]}"
    zombie = Producer(client, _txn_settings(tid))
    _write(zombie, topic, [b"zombie-%d" % i for i in range(10)])
    retry = Producer(client, _txn_settings(tid))
    _write(retry, topic, [b"retry-%d" % i for i in range(5)])
    new = retry.open_transaction()
    old = zombie.open_transaction()
    assert new is not None and old is not None
    assert (new.producer_id, new.epoch) != (old.producer_id, old.epoch)
    with raises_condition(ProducerStateError, "KAFKA_BROKER_ERROR.*",
                          "taken over by a newer producer epoch") as fenced:
        _write(zombie, topic, [b"late"])
    assert fenced.value.condition in FENCED, fenced.value
    if broker_kind == "kafka":
        assert fenced.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert fenced.value.context == "Produce"
    end_transaction(client, new, commit=True)
    assert _committed_values(bootstrap, client, topic) == [b"retry-%d" % i for i in range(5)]


def test_a_transaction_left_open_is_aborted_at_its_timeout_or_by_the_next_holder(
        bootstrap, client, new_topic, broker_kind):
    """A task killed with its transaction open. Kafka's coordinator aborts the transaction
    once it is older than its transaction.timeout.ms (KIP-98; it looks every
    transaction.abort.timed.out.transaction.cleanup.interval.ms, 0.5 s on the test broker): it
    writes the ABORT marker and bumps the epoch, so read_committed readers move on by
    themselves, librdkafka's read_committed consumer sees nothing of it, and the abandoned
    holder's EndTxn(commit) is refused (INVALID_TXN_STATE under the v2 protocol, fenced under
    the classic one). Tansu never enforces the timeout: the transaction
    blocks read_committed readers until the transactional id is initialised again (the task's
    retry, or the driver's abort), which aborts it."""
    if broker_kind == "external":
        pytest.skip("checks the test broker's own answer to an abandoned transaction (Kafka "
                    "aborts it at its timeout, Tansu never does); an external cluster's kind "
                    "is not guessed")
    topic = new_topic(1, "txn")
    tid = f"tx-{uuid.uuid4().hex[:10]}"
    left = Producer(client, _txn_settings(tid, transaction_timeout_ms=TIMEOUT_MS))
    _write(left, topic, [b"left-open"] * 3)
    began = time.monotonic()
    abandoned = left.open_transaction()
    assert abandoned is not None
    assert _latest(client, topic, READ_COMMITTED) == 0  # open: readers stop before it
    if broker_kind == "kafka":
        waited = wait_until_no_transaction_open(client, topic, 1, within_s=ABORTED_WITHIN_S)
        assert time.monotonic() - began >= TIMEOUT_MS / 1000 - 0.1, "aborted before its timeout"
        assert _latest(client, topic, READ_COMMITTED) == 4  # 3 records + the ABORT marker
        batches, _ = read_log(bootstrap, topic, 0)
        assert list(decisions(batches).values()) == [False]  # the marker is an ABORT
        rc = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        assert consume_all(rc, topic, 30) == []  # the broker lists it as aborted
        with raises_condition(ProducerStateError,
                              "KAFKA_BROKER_ERROR.INVALID_TXN_STATE" if abandoned.v2
                              else "KAFKA_BROKER_ERROR.PRODUCER_FENCED",
                              "kafka.transaction.timeout.ms") as late:
            end_transaction(client, abandoned, commit=True)
        # the transaction protocol v2 (KIP-890) takes the late commit for a retry of the
        # coordinator's abort (its epoch is the one before that abort's bump), with another
        # outcome; the classic protocol answers it as fenced
        assert late.value.code == (ErrorCode.INVALID_TXN_STATE if abandoned.v2
                                   else ErrorCode.PRODUCER_FENCED)
        print(f"Kafka aborted the abandoned transaction {waited:.1f}s after it was flushed")
    else:
        time.sleep(TIMEOUT_MS / 1000 + 1.5)
        assert _latest(client, topic, READ_COMMITTED) == 0  # still open (no timeout)
        init_transactions(client, tid, 60_000)
        assert _latest(client, topic, READ_COMMITTED) == 4
    assert _committed_values(bootstrap, client, topic) == []
    # The transactional id is usable again: the next holder's transaction commits.
    again = Producer(client, _txn_settings(tid))
    _write(again, topic, [b"after"])
    txn = again.open_transaction()
    assert txn is not None
    end_transaction(client, txn, commit=True)
    assert _committed_values(bootstrap, client, topic) == [b"after"]


def test_the_sink_recovers_from_a_dead_write_through_the_transaction_timeout(
        bootstrap, client, new_topic, broker_kind):
    """The exactly-once sink's story on Kafka when a micro-batch's task and driver both die
    mid-transaction (nothing is left to send EndTxn(abort) or initialise the ids again): with
    a small ``kafka.transaction.timeout.ms`` the coordinator aborts the dead tasks'
    transactions by itself, so read_committed readers of the topic are not blocked until the
    query restarts; the dead driver's commit (had it survived) is fenced; and the replay of
    the batch, same transactional ids, commits each id exactly once (librdkafka's
    read_committed consumer and the log-walking oracle agree). Tansu never times a
    transaction out (there the replay's InitProducerId aborts them:
    tests/faults/test_exactly_once_faults.py)."""
    if broker_kind != "kafka":
        pytest.skip("the transaction timeout is Kafka's (Tansu never aborts a transaction "
                    "by itself)")
    partitions = 2
    topic = new_topic(partitions, "eo-timeout")
    prefix = f"eo-{uuid.uuid4().hex[:8]}"
    options = parse_sink_options({"kafka.bootstrap.servers": bootstrap, "topic": topic,
                                  "kafka.transactional.id": prefix,
                                  "kafka.transaction.timeout.ms": str(TIMEOUT_MS)})
    assert options.produce.transaction_timeout_ms == TIMEOUT_MS
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    writer = KafkaWireBatchWriter(options, schema, streaming=True)
    query = str(uuid.uuid4())
    shares = [range(0, 100), range(100, 200)]
    rc = {"isolation.level": "read_committed"}

    # Batch 0 commits; batch 1's tasks write and flush, then the tasks and the driver die.
    writer.commit([task_transaction(client, options, prefix, i, TaskBatch(query, 0),
                                    shares[i], partitions) for i in range(2)])
    later = [range(200, 300), range(300, 400)]
    dead = [task_transaction(client, options, prefix, i, TaskBatch(query, 1), later[i],
                             partitions) for i in range(2)]
    assert _latest(client, topic, READ_COMMITTED) < _latest(client, topic, READ_UNCOMMITTED)

    wait_until_no_transaction_open(client, topic, partitions, within_s=ABORTED_WITHIN_S)
    assert_exactly_once(bootstrap, topic, range(200), rc)  # batch 0, nothing of batch 1
    for message in dead:  # the dead driver's EndTxn(commit), had it come now, is refused
        assert message.transaction is not None
        with raises_condition(ProducerStateError, "KAFKA_BROKER_ERROR.*",
                              "kafka.transaction.timeout.ms") as late:
            end_transaction(client, message.transaction, commit=True)
        assert late.value.condition in ("KAFKA_BROKER_ERROR.INVALID_TXN_STATE",
                                        "KAFKA_BROKER_ERROR.PRODUCER_FENCED"), late.value
        assert late.value.code in (ErrorCode.INVALID_TXN_STATE, ErrorCode.PRODUCER_FENCED)

    # The query restarts and replays batch 1 with the same transactional ids.
    replay = [task_transaction(client, options, prefix, i, TaskBatch(query, 1), later[i],
                               partitions) for i in range(2)]
    for old, new in zip(dead, replay, strict=True):
        assert old.transaction is not None and new.transaction is not None
        assert (new.transaction.producer_id, new.transaction.epoch) != (
            old.transaction.producer_id, old.transaction.epoch)
    writer.commit(list(replay))
    assert_exactly_once(bootstrap, topic, range(400), rc)
    _, log = assert_committed_exactly_once(bootstrap, topic, range(400))
    assert log.aborted == 200  # the dead batch's rows are in the log, aborted


def test_a_zombies_end_txn_is_fenced_and_the_connection_stays_usable(
        bootstrap, client, new_topic, broker_kind):
    """A task attempt left behind (a zombie) sends EndTxn after a newer holder of its
    transactional id initialised it. Kafka refuses it with PRODUCER_FENCED (EndTxn v2+; v0 and
    v1 answer INVALID_PRODUCER_EPOCH, KIP-588) on a connection that stays open; kafkawire
    raises ProducerStateError saying the id was taken over and what causes that, for either
    code. The newer holder's transaction is untouched and commits. Tansu closes the connection
    on the fenced EndTxn instead of answering."""
    topic = new_topic(1, "txn")
    tid = f"tx-{uuid.uuid4().hex[:10]}"
    zombie = Producer(client, _txn_settings(tid))
    _write(zombie, topic, [b"zombie"] * 3)
    old = zombie.open_transaction()
    newer = Producer(client, _txn_settings(tid))
    _write(newer, topic, [b"newer"] * 2)
    new = newer.open_transaction()
    assert old is not None and new is not None
    if broker_kind == "tansu":
        # Tansu closes the connection instead of answering; kafkawire takes that for a lost
        # connection and retries within kafka.request.timeout.ms, then says what happened
        zombie_driver = KafkaClient(ClientConfig.from_servers(bootstrap,
                                                              request_timeout_ms=2_000))
        try:
            with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                                  "connection closed by the broker while waiting for EndTxn"):
                end_transaction(zombie_driver, old, commit=True)
        finally:
            zombie_driver.close()
    else:
        coordinator = find_coordinator(client, tid, TRANSACTION_KEY_TYPE)
        with raises_condition(ProducerStateError, "KAFKA_BROKER_ERROR.*",
                              "taken over by a newer producer epoch") as err:
            end_transaction(client, old, commit=True)
        assert err.value.condition in FENCED, err.value
        assert "kafka.transaction.timeout.ms" in str(err.value)  # the other cause, named
    if broker_kind == "kafka":
        assert err.value.code == ErrorCode.PRODUCER_FENCED
        assert coordinator.version(END_TXN) == END_TXN.max_version
        assert coordinator.connected  # the answer did not close the connection
        fields = {"transactional_id": tid, "producer_id": old.producer_id,
                  "producer_epoch": old.epoch, "committed": True}
        # the same connection answers again; v1 is refused with the older code
        v1 = coordinator.request(END_TXN, fields, version=1)
        assert v1["error_code"] == ErrorCode.INVALID_PRODUCER_EPOCH
        explained = explain_transaction_error(
            error_for_code(v1["error_code"], context="EndTxn(commit)"), tid)
        assert isinstance(explained, ProducerStateError)
        assert "taken over by a newer producer epoch" in str(explained)
        assert coordinator.connected
        assert find_coordinator(client, tid, TRANSACTION_KEY_TYPE) is coordinator
    end_transaction(client, new, commit=True)
    assert _committed_values(bootstrap, client, topic) == [b"newer"] * 2


def test_offsets_in_a_transaction_appear_only_when_it_commits(bootstrap, client, new_topic):
    """The streaming marker: TxnOffsetCommit inside the transaction, hidden until EndTxn
    commits it and discarded when it aborts; fetch_group lists it with every topic."""
    topic = new_topic(1, "txn")
    for commit in (False, True):
        producer = Producer(client, _txn_settings())
        _write(producer, topic, [b"v"])
        txn = producer.open_transaction()
        assert txn is not None
        group = txn.transactional_id
        producer.commit_offsets(group, {(topic, 0): (12345, "kafkawire marker")})
        assert fetch_group(client, group) == {}
        end_transaction(client, txn, commit=commit)
        # EndTxn returns before the markers are written, and until then Kafka leaves the
        # transaction's offsets out of OffsetFetch: they appear within moments
        deadline = time.monotonic() + 10
        offsets = fetch_group(client, group)
        while commit and not offsets and time.monotonic() < deadline:
            time.sleep(0.05)
            offsets = fetch_group(client, group)
        if commit:
            assert {tp: o for tp, (o, _) in offsets.items()} == {(topic, 0): 12345}
        else:
            assert offsets == {}


def test_every_partition_is_added_before_it_is_written(bootstrap, client, new_topic):
    """Tansu accepts a transactional write to a partition never added to the transaction and
    then never marks it; the producer adds each partition before its first batch, so the
    commit reaches all of them (each partition's read_committed end passes its marker)."""
    topic = new_topic(3, "txn")
    producer = Producer(client, _txn_settings())
    for p in range(3):
        _write(producer, topic, [b"p%d" % p] * (p + 1), p)
    txn = producer.open_transaction()
    assert txn is not None and sorted(txn.partitions) == [(topic, p) for p in range(3)]
    end_transaction(client, txn, commit=True)
    for p in range(3):
        assert _ended_at(client, topic, p) == p + 2
        assert _committed_values(bootstrap, client, topic, p) == [b"p%d" % p] * (p + 1)


def test_a_broker_without_transactions_is_refused_clearly(legacy_broker):
    """Before Kafka 0.11 there is no InitProducerId and no record batch to mark."""
    broker = legacy_broker("0.10.0")
    broker.create_topic("old", 1)
    c = KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers))
    try:
        producer = Producer(c, _txn_settings())
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION") as info:
            _write(producer, "old", [b"v"])
        assert re.search(r"transactions need Kafka 0.11\+", str(info.value)), info.value
    finally:
        c.close()


@pytest.fixture
def sent_requests() -> Iterator[RequestLog[tuple[str, int]]]:
    """(API name, version) of every request the connections of the clients it ``watch``es
    send, in order: what went on the wire (their request hooks)."""
    sent: RequestLog[tuple[str, int]] = RequestLog(lambda e: (e.api, e.version))
    yield sent
    sent.close()


@pytest.fixture(scope="module")
def transaction_v1_kafka(broker_kind):
    """bootstrap servers of a dedicated Apache Kafka 4 broker whose ``transaction.version``
    is downgraded to 1 (UpdateFeatures, KIP-584, sent by kafka-python's admin client, as an
    operator keeps a cluster on the classic transaction protocol with kafka-features.sh),
    once new connections report the new level."""
    if broker_kind != "kafka":
        pytest.skip("transaction.version is a feature Apache Kafka 4 finalizes")
    from tests.support.apache_kafka import ApacheKafka, missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    broker = ApacheKafka(authorizer=False, heap_mb=384).start()
    try:
        from kafka.admin import KafkaAdminClient  # type: ignore[import-untyped]

        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers)
        try:
            done = admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)})
        finally:
            admin.close()
        assert done == {"transaction.version": "OK"}, done
        deadline = time.monotonic() + 30
        while True:
            probe = KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers))
            try:
                level = probe.any_connection().finalized_features.get("transaction.version")
            finally:
                probe.close()
            if level == 1:
                break
            assert time.monotonic() < deadline, f"transaction.version still {level}"
            time.sleep(0.2)
        yield broker.bootstrap_servers
    finally:
        broker.stop()


def test_on_a_transaction_version_1_kafka_the_classic_protocol_is_used(
        transaction_v1_kafka, sent_requests):
    """The v2 protocol only where the cluster finalized it: on a Kafka 4 broker kept at
    ``transaction.version`` 1 (which still offers EndTxn v5 and Produce v12, so the versions
    alone would mislead), kafkawire adds partitions and the group with AddPartitionsToTxn and
    AddOffsetsToTxn, sends Produce v8, TxnOffsetCommit v3 and EndTxn v4, and the markers carry
    the transaction's own epoch; the commit is exactly what librdkafka reads committed."""
    bootstrap = transaction_v1_kafka
    c = sent_requests.watch(KafkaClient(ClientConfig.from_servers(bootstrap)))
    try:
        conn = c.any_connection()
        assert conn.finalized_features.get("transaction.version") == 1
        assert conn.api_versions[END_TXN.key][1] >= 5
        topic = topic_on(c, 2, "txn-tv1")
        producer = Producer(c, _txn_settings())
        _write(producer, topic, [b"a%d" % i for i in range(4)], 0)
        _write(producer, topic, [b"b%d" % i for i in range(2)], 1)
        txn = producer.open_transaction()
        assert txn is not None and not txn.v2 and not producer.transaction_v2
        producer.commit_offsets(txn.transactional_id, {(topic, 0): (55, "tv1")})
        assert end_transaction(c, txn, commit=True) == ProducerIdentity(txn.producer_id,
                                                                        txn.epoch)
        versions = {name: {v for n, v in sent_requests if n == name}
                    for name, _ in sent_requests}
        assert versions["Produce"] == {8} and versions["EndTxn"] == {4}
        assert versions["AddPartitionsToTxn"] == {3} and versions["TxnOffsetCommit"] == {3}
        assert "AddOffsetsToTxn" in versions
        for partition in (0, 1):
            assert {(b.producer_id, b.producer_epoch)
                    for b in stored_batches(c, topic, partition)} == {
                (txn.producer_id, txn.epoch)}  # data and marker: no bump
        rc = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        assert sorted(m.value() or b"" for m in consume_all(rc, topic, 30)) == sorted(
            [b"a%d" % i for i in range(4)] + [b"b%d" % i for i in range(2)])
    finally:
        c.close()


def test_on_a_transaction_version_2_broker_kafkawire_writes_with_the_v2_protocol(
        bootstrap, client, new_topic, broker_kind, sent_requests):
    """Kafka 4 finalizes ``transaction.version`` 2 (KIP-890 part 2). kafkawire then writes
    its transactions with the v2 protocol, as Java's producer does: Produce v12 adds each
    partition to the transaction (no AddPartitionsToTxn), TxnOffsetCommit v5 adds the group
    (no AddOffsetsToTxn), and EndTxn v5 ends the transaction, bumping the epoch: the markers
    carry the epoch after the bump, and EndTxn answers the producer id and epoch of the next
    transaction. Committed records and offsets are what they are with the classic protocol
    (librdkafka's read_committed consumer as the oracle). Tansu finalizes nothing: there the
    classic requests go out."""
    sent_requests.watch(client)
    topic = new_topic(2, "txn-tv2")
    producer = Producer(client, _txn_settings())
    _write(producer, topic, [b"a%d" % i for i in range(5)], 0)
    _write(producer, topic, [b"b%d" % i for i in range(3)], 1)
    txn = producer.open_transaction()
    assert txn is not None
    group = txn.transactional_id
    producer.commit_offsets(group, {(topic, 0): (777, "tv2 marker")})
    following = end_transaction(client, txn, commit=True)
    names = [name for name, _ in sent_requests]
    versions = {name: {v for n, v in sent_requests if n == name} for name in names}
    v2 = broker_kind == "kafka"
    if broker_kind != "external":
        assert producer.transaction_v2 == txn.v2 == v2
        assert ("AddPartitionsToTxn" in names) != v2 and ("AddOffsetsToTxn" in names) != v2
    if v2:
        conn = client.any_connection()
        assert conn.finalized_features.get("transaction.version") == 2
        assert versions["Produce"] == {12}
        assert versions["TxnOffsetCommit"] == {5} and versions["EndTxn"] == {5}
        assert following == ProducerIdentity(txn.producer_id, txn.epoch + 1)
        # the driver's retry after a lost answer carries the epoch before the bump: Kafka
        # answers it as the same end, with the same identity (KIP-890's retry rule) ...
        assert end_transaction(client, txn, commit=True) == following
        # ... and refuses the other outcome
        with pytest.raises(ProducerStateError) as other:
            end_transaction(client, txn, commit=False)
        assert other.value.code == ErrorCode.INVALID_TXN_STATE
    elif broker_kind == "tansu":
        assert versions["Produce"] == {8} and versions["EndTxn"] == {4}
        assert following == ProducerIdentity(txn.producer_id, txn.epoch)
    for partition, count in ((0, 5), (1, 3)):
        batches = stored_batches(client, topic, partition)
        data = [b for b in batches if not b.attributes & ATTR_CONTROL]
        markers = [b for b in batches if b.attributes & ATTR_CONTROL]
        assert sum(b.records for b in data) == count and len(markers) == 1
        assert {(b.producer_id, b.producer_epoch) for b in data} == {
            (txn.producer_id, txn.epoch)}
        if broker_kind != "external":  # v2: the marker is written after the bump
            assert (markers[0].producer_id, markers[0].producer_epoch) == (
                following.producer_id, following.epoch)
    assert _committed_values(bootstrap, client, topic, 1) == [b"b%d" % i for i in range(3)]
    if v2:
        rc = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
        assert sorted(m.value() or b"" for m in consume_all(rc, topic, 30)) == sorted(
            [b"a%d" % i for i in range(5)] + [b"b%d" % i for i in range(3)])
    deadline = time.monotonic() + 10  # the offsets appear once the markers are written
    while not fetch_group(client, group) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert {tp: o for tp, (o, _) in fetch_group(client, group).items()} == {(topic, 0): 777}


def test_a_producer_writes_its_next_transaction_with_the_identity_endtxn_answered(
        bootstrap, client, new_topic, broker_kind):
    """A producer that ends its own transaction goes on with the next one without a new
    InitProducerId: under the v2 protocol (Kafka 4) with the epoch EndTxn v5 bumped, its
    sequences numbered from 0 again; classic (Tansu) with the same epoch. Kafka accepts the
    second transaction's batches only with the new epoch, so both committing shows the
    producer followed the bump."""
    topic = new_topic(1, "txn-next")
    producer = Producer(client, _txn_settings())
    _write(producer, topic, [b"first-%d" % i for i in range(4)])
    first = producer.open_transaction()
    assert first is not None
    producer.end_own_transaction(commit=True)
    _write(producer, topic, [b"second-%d" % i for i in range(3)])
    second = producer.open_transaction()
    assert second is not None and second.producer_id == first.producer_id
    if broker_kind == "kafka":
        assert second.epoch == first.epoch + 1
    elif broker_kind == "tansu":
        assert second.epoch == first.epoch
    producer.end_own_transaction(commit=True)
    data = [b for b in stored_batches(client, topic, 0) if not b.attributes & ATTR_CONTROL]
    assert [(b.producer_epoch, b.base_sequence) for b in data] == [
        (first.epoch, 0), (second.epoch, 0 if second.epoch != first.epoch else 4)]
    assert _committed_values(bootstrap, client, topic) == (
        [b"first-%d" % i for i in range(4)] + [b"second-%d" % i for i in range(3)])
