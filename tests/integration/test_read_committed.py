"""read_committed against a real broker, checked by an oracle that walks the log itself.

librdkafka writes several transactional producers interleaved in one partition (some
transactions committed, some aborted, compressed or not), with plain and idempotent records
between them. Tansu lists
no aborted transactions in its Fetch answers, so kafkawire can only get this right by the
markers. ``tests/support/log_oracle.py`` fetches the raw log with kafka-python's protocol
classes and record reader and applies KIP-98's rule on its own; kafkawire must return exactly
its records, for the whole range and for the range cut anywhere into pieces (a piece may end
inside a transaction whose marker lies past it). Apache Kafka does list them, and the second
test shows kafkawire uses that list there (``TransactionCounts``), with librdkafka's
read_committed consumer as a second oracle.
"""

from __future__ import annotations

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import LATEST, READ_COMMITTED, resolve_offsets
from spark_kafka_wire.protocol.records import TransactionCounts
from tests.support.librdkafka import consume_all
from tests.support.log_oracle import (
    all_records,
    committed_records,
    decisions,
    read_log,
)
from tests.support.transactions import transactional_producer, wait_until_no_transaction_open

pytestmark = pytest.mark.broker


def write_interleaved(bootstrap: str, topic: str) -> None:
    """The scenario, one batch per step (each step flushed)."""
    a = transactional_producer(bootstrap)
    b = transactional_producer(bootstrap, **{"compression.type": "lz4"})
    c = transactional_producer(bootstrap, **{"compression.type": "gzip"})
    d = transactional_producer(bootstrap)
    plain = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                         "enable.idempotence": False})
    idempotent = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                              "enable.idempotence": True, "compression.type": "zstd"})

    def put(p: ck.Producer, *values: str) -> None:
        for v in values:
            p.produce(topic, key=v.encode()[:1], value=v.encode(), partition=0)
        assert p.flush(20) == 0

    a.begin_transaction()
    b.begin_transaction()
    put(a, "a1-0", "a1-1")
    put(plain, "p0")
    put(b, "b1-0", "b1-1", "b1-2")
    put(idempotent, "i0", "i1")
    put(a, "a1-2")
    b.abort_transaction(20)
    c.begin_transaction()
    put(c, "c1-0")
    a.commit_transaction(20)
    put(plain, "p1")
    b.begin_transaction()
    put(b, "b2-0", "b2-1")
    put(c, "c1-1")
    c.abort_transaction(20)
    a.begin_transaction()
    put(a, "a2-0")
    b.commit_transaction(20)
    put(idempotent, "i2")
    c.begin_transaction()
    put(c, "c2-0", "c2-1")
    c.commit_transaction(20)
    d.begin_transaction()
    put(d, "d-0")
    a.commit_transaction(20)
    put(plain, "p2")
    put(d, "d-1")
    d.abort_transaction(20)


def read(client, topic: str, start: int, end: int, **fetch: int) -> list:
    settings = FetchSettings(isolation_level=READ_COMMITTED, **fetch)
    out = []
    for chunk in fetch_range(client, topic, 0, start, end, settings):
        out.extend(zip(chunk.offsets.tolist(), chunk.keys.to_pylist(),
                       chunk.values.to_pylist(), strict=True))
    return out


def test_interleaved_transactions_match_the_log_oracle(bootstrap, client, new_topic):
    topic = new_topic(1, "txn-mix")
    write_interleaved(bootstrap, topic)
    wait_until_no_transaction_open(client, topic, 1)  # every marker written
    batches, high_watermark = read_log(bootstrap, topic, 0)
    # The scenario is what it says: both fates, plain data between, every transaction ended.
    assert set(decisions(batches).values()) == {True, False}
    assert any(not b.transactional and not b.control for b in batches)
    tp = (topic, 0)
    end = resolve_offsets(client, {tp: LATEST}, READ_COMMITTED)[tp]
    assert end == high_watermark
    expected = committed_records(batches, 0, end)
    values = [v for _, _, v in expected]
    assert b"b1-0" not in values and b"c1-1" not in values and b"d-0" not in values
    assert {b"a1-0", b"a2-0", b"b2-1", b"c2-1", b"p2", b"i2"} <= set(values)

    got = read(client, topic, 0, end)
    assert got == expected
    assert [o for o, _, _ in got] == sorted({o for o, _, _ in got})
    # Uncommitted reads return every record: the dropped ones are really in the log.
    uncommitted = [(o, k, v) for ch in fetch_range(client, topic, 0, 0, end)
                   for o, k, v in zip(ch.offsets.tolist(), ch.keys.to_pylist(),
                                      ch.values.to_pylist(), strict=True)]
    assert uncommitted == all_records(batches, 0, end) != expected
    # Small fetches: markers come in later answers than their records.
    assert read(client, topic, 0, end, max_partition_fetch_bytes=100,
                fetch_max_bytes=100) == expected

    # Pieces, cut anywhere (inside transactions too: a piece ending between a2-0 and a's
    # COMMIT looks past its end for it), concatenated give the whole.
    for cut in range(end + 1):
        assert read(client, topic, 0, cut) + read(client, topic, cut, end) == expected, cut
    for size in (1, 2, 3, 5):
        pieces = [read(client, topic, s, min(s + size, end)) for s in range(0, end, size)]
        assert [r for piece in pieces for r in piece] == expected, size
        for s, piece in zip(range(0, end, size), pieces, strict=True):
            assert piece == committed_records(batches, s, min(s + size, end))


def write_across_partitions(bootstrap: str, topic: str) -> None:
    """Three transactional producers whose transactions span the topic's three partitions,
    interleaved, some committed and some aborted, with plain records between them."""
    a = transactional_producer(bootstrap)
    b = transactional_producer(bootstrap, **{"compression.type": "lz4"})
    c = transactional_producer(bootstrap)
    plain = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0,
                         "enable.idempotence": False})

    def put(p: ck.Producer, name: str, partitions: tuple[int, ...]) -> None:
        for part in partitions:
            for i in range(2):
                v = f"{name}-p{part}-{i}".encode()
                p.produce(topic, key=v[:1], value=v, partition=part)
        assert p.flush(20) == 0

    for round_ in range(2):
        a.begin_transaction()
        b.begin_transaction()
        put(a, f"a{round_}", (0, 1))
        put(b, f"b{round_}", (1, 2))
        put(plain, f"p{round_}", (0, 1, 2))
        c.begin_transaction()
        put(c, f"c{round_}", (0, 2))
        put(a, f"a{round_}x", (2,))
        b.abort_transaction(20)
        put(c, f"c{round_}x", (1,))
        a.commit_transaction(20) if round_ == 0 else a.abort_transaction(20)
        c.abort_transaction(20) if round_ == 0 else c.commit_transaction(20)


def test_aborted_transactions_the_broker_lists_are_dropped_by_the_list(
        bootstrap, client, new_topic, broker_kind):
    """Kafka lists the aborted transactions overlapping each Fetch answer; kafkawire drops
    their batches by that list, as the Java consumer does, and leaves only what the list does
    not cover to the markers. The rows are the same either way, so the read's
    TransactionCounts tell which rule decided: on Kafka every aborted batch of each partition
    is dropped by the list and none waits for its ABORT marker (a reader that ignored the list
    would count them as marker_aborted); on Tansu, which lists nothing, the markers decide
    them all. The records match the log-walking oracle, and on Kafka librdkafka's
    read_committed consumer, whose filtering relies on the list."""
    partitions = 3
    topic = new_topic(partitions, "txn-lists")
    write_across_partitions(bootstrap, topic)
    wait_until_no_transaction_open(client, topic, partitions)  # every marker written
    rc = {"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}
    oracle = consume_all(rc, topic, 60) if broker_kind == "kafka" else []
    for p in range(partitions):
        batches, high_watermark = read_log(bootstrap, topic, p)
        fates = list(decisions(batches).values())
        assert fates.count(True) and fates.count(False), (p, fates)  # both fates here
        tp = (topic, p)
        end = resolve_offsets(client, {tp: LATEST}, READ_COMMITTED)[tp]
        assert end == high_watermark  # every transaction ended
        expected = committed_records(batches, 0, end)
        for fetch in ({}, {"max_partition_fetch_bytes": 150, "fetch_max_bytes": 150}):
            counts = TransactionCounts()
            settings = FetchSettings(isolation_level=READ_COMMITTED, **fetch)
            got = [(o, k, v) for chunk in fetch_range(client, topic, p, 0, end, settings,
                                                      counts=counts)
                   for o, k, v in zip(chunk.offsets.tolist(), chunk.keys.to_pylist(),
                                      chunk.values.to_pylist(), strict=True)]
            assert got == expected, (p, fetch)
            assert counts.marker_committed == fates.count(True), (p, fetch, counts)
            if broker_kind == "kafka":
                assert counts == TransactionCounts(listed_aborted=fates.count(False),
                                                   marker_committed=fates.count(True)), \
                    (p, fetch)
            elif broker_kind == "tansu":
                assert counts.listed_aborted == 0
                assert counts.marker_aborted == fates.count(False), (p, fetch, counts)
        if broker_kind == "kafka":
            assert [v for _, _, v in expected] == [
                m.value() for m in oracle if m.partition() == p]
