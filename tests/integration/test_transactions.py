"""Transactions through the client, against the test broker: what the exactly-once sink relies
on (EndTxn from another connection, fencing, offsets inside a transaction) and what the broker
does where it departs from Kafka (no transaction timeout).

librdkafka's read_committed consumer is the oracle where every transaction committed. Where a
transaction was aborted, Tansu does not list it in Fetch answers, so librdkafka would return its
records; there kafkawire's read_committed reader (which drops a transaction when its marker is
an abort) and the last stable offset are checked instead.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.fetcher import FetchSettings, fetch_range
from spark_kafka_wire.client.group_offsets import fetch_group
from spark_kafka_wire.client.offsets import (
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    resolve_offsets,
)
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from spark_kafka_wire.client.producer.transactions import (
    OpenTransaction,
    end_transaction,
    init_transactions,
)
from spark_kafka_wire.protocol.errors import ProducerStateError
from tests.support.librdkafka import consume_all
from tests.support.log_oracle import committed_records, read_log

pytestmark = pytest.mark.broker

SETTINGS = ProduceSettings(linger_ms=0)


def _txn_settings(tid: str | None = None, **kw: object) -> ProduceSettings:
    return replace(SETTINGS, transactional_id=tid or f"tx-{uuid.uuid4().hex[:10]}", **kw)


def _write(producer: Producer, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer.append(topic, None, pa.array(values, pa.binary()),
                    np.full(len(values), partition, np.int32), 1_700_000_000_000)
    producer.flush()


def _latest(client: KafkaClient, topic: str, isolation: int, partition: int = 0) -> int:
    tp = (topic, partition)
    return resolve_offsets(client, {tp: LATEST}, isolation)[tp]


def _committed_values(bootstrap: str, client: KafkaClient, topic: str, partition: int = 0
                      ) -> list[bytes]:
    """kafkawire's read_committed reader, checked against the log-walking oracle."""
    end = _latest(client, topic, READ_COMMITTED, partition)
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
    conf = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
    got = consume_all(conf, topic, 30)
    assert sorted(m.value() for m in got) == sorted([b"a%d" % i for i in range(50)]
                                               + [b"b%d" % i for i in range(30)])
    assert _latest(client, topic, READ_COMMITTED) == 51  # 50 records + the commit marker


def test_an_aborted_transaction_leaves_nothing_for_read_committed(bootstrap, client, new_topic):
    topic = new_topic(1, "txn")
    producer = Producer(client, _txn_settings())
    _write(producer, topic, [b"x"] * 20)
    txn = producer.open_transaction()
    assert txn is not None
    end_transaction(client, txn, commit=False)
    assert _latest(client, topic, READ_COMMITTED) == 21  # the abort marker ends it
    assert _committed_values(bootstrap, client, topic) == []


def test_a_new_holder_of_the_transactional_id_fences_the_old_one(bootstrap, client, new_topic):
    """Zombie fencing: a second InitProducerId for the id (a task's retry) aborts the first
    holder's open transaction; the first holder's next write fails, saying why."""
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
    with pytest.raises(ProducerStateError, match="taken over by a newer producer epoch"):
        _write(zombie, topic, [b"late"])
    end_transaction(client, new, commit=True)
    assert _committed_values(bootstrap, client, topic) == [b"retry-%d" % i for i in range(5)]


def test_a_transaction_left_open_is_ended_by_the_next_holder(bootstrap, client, new_topic):
    """Kafka aborts a transaction open longer than transaction.timeout.ms; Tansu never does,
    so a transaction a killed task left open blocks read_committed readers until the
    transactional id is initialised again (the task's retry, or the driver's abort). Either
    way, after that InitProducerId the transaction is aborted and readers move on."""
    topic = new_topic(1, "txn")
    tid = f"tx-{uuid.uuid4().hex[:10]}"
    left = Producer(client, _txn_settings(tid, transaction_timeout_ms=1_000))
    _write(left, topic, [b"left-open"] * 3)
    time.sleep(2.5)
    after_timeout = _latest(client, topic, READ_COMMITTED)
    # 0: still open (Tansu); 4: the coordinator aborted it at its timeout (Kafka).
    assert after_timeout in (0, 4)
    init_transactions(client, tid, 60_000)
    assert _latest(client, topic, READ_COMMITTED) == 4
    assert _committed_values(bootstrap, client, topic) == []


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
        assert _latest(client, topic, READ_COMMITTED, p) == p + 2
        assert _committed_values(bootstrap, client, topic, p) == [b"p%d" % p] * (p + 1)


def test_a_broker_without_transactions_is_refused_clearly(legacy_broker):
    """Before Kafka 0.11 there is no InitProducerId and no record batch to mark."""
    broker = legacy_broker("0.10.0")
    broker.create_topic("old", 1)
    c = KafkaClient(ClientConfig.from_servers(broker.bootstrap_servers))
    try:
        producer = Producer(c, _txn_settings())
        with pytest.raises(ConfigurationError, match=r"transactions need Kafka 0.11\+"):
            _write(producer, "old", [b"v"])
    finally:
        c.close()
