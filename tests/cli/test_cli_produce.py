"""``kafkawire produce`` beyond plain lines, read back by librdkafka (confluent-kafka): headers,
tombstones and timestamps from options; JSON lines carrying each record's own key, value,
headers, partition and timestamp (``tail --format json`` piped into ``produce --input-format
jsonl`` copies a topic exactly); key and value formats; a transaction per run (``--txn-id``)
that commits all of the input or, when a line fails, none of it."""

from __future__ import annotations

import uuid

import confluent_kafka as ck
import pytest

from tests.cli.test_cli_commands import rd_consume_all, rd_produce

pytestmark = pytest.mark.broker

T0 = 1_767_323_045_000  # 2026-01-02T03:04:05Z


def by_offset(messages: list[ck.Message]) -> list[ck.Message]:
    return sorted(messages, key=lambda m: (m.partition(), m.offset()))


def test_headers_tombstones_and_a_timestamp_from_options(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-produce-h")
    result = kw("produce", topic, "-K", ":", "-H", "source=cli", "-H", "flag", "-H", "eq=a=b",
                "-Z", "--timestamp", "2026-01-02T03:04:05Z", input=b"k1:v1\nk2:\nk3:v3\n")
    assert result.exit_code == 0, result.stderr
    got = by_offset(rd_consume_all(bootstrap, topic, 1, 3))
    assert [(m.key(), m.value()) for m in got] == [(b"k1", b"v1"), (b"k2", None),
                                                   (b"k3", b"v3")]
    assert all(m.headers() == [("source", b"cli"), ("flag", None), ("eq", b"a=b")]
               for m in got)
    assert all(m.timestamp() == (ck.TIMESTAMP_CREATE_TIME, T0) for m in got)


def test_key_and_value_formats(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-produce-fmt")
    result = kw("produce", topic, "-K", "\\t", "--key-format", "hex", "--value-format",
                "base64", input=b"00ff\tAAEC\n6b\taGk=\n")
    assert result.exit_code == 0, result.stderr
    got = by_offset(rd_consume_all(bootstrap, topic, 1, 2))
    assert [(m.key(), m.value()) for m in got] == [(b"\x00\xff", b"\x00\x01\x02"),
                                                   (b"k", b"hi")]
    bad = kw("produce", topic, "--value-format", "json", input=b'{"a": 1}\n\n{"a": }\n')
    assert bad.exit_code == 1
    assert "line 3: the value is not json" in bad.stderr
    assert f"the 1 record of the lines before it was written to {topic}" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    last = by_offset(rd_consume_all(bootstrap, topic, 1, 3))[-1]
    assert (last.offset(), last.value()) == (2, b'{"a": 1}')


def test_tail_json_piped_into_produce_copies_a_topic_exactly(kw, bootstrap, new_topic) -> None:
    """Binary keys and values, null keys and values, repeated and null headers and CreateTimes
    from librdkafka: the copy has each record at the same partition and offset."""
    source, copy = new_topic(2, "cli-copy-src"), new_topic(2, "cli-copy-dst")
    records = []
    for i in range(40):
        r: dict = {"value": None if i % 9 == 4 else b"\xff\xfe%d" % i if i % 4 == 0
                   else f"vålue {i}".encode(), "partition": i % 2, "timestamp": T0 + i}
        if i % 3:
            r["key"] = b"key-%d\x80" % i
        if i % 5 == 0:
            r["headers"] = [("h", b"one"), ("h", b"\x80"), ("empty", None)]
        records.append(r)
    rd_produce(bootstrap, source, records)
    dump = kw("tail", source, "--from-beginning", "--format", "json")
    assert dump.exit_code == 0, dump.stderr
    result = kw("produce", copy, "--input-format", "jsonl", input=dump.stdout.encode())
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"40 records written to {copy}"

    def shape(m: ck.Message) -> tuple:
        return (m.partition(), m.offset(), m.timestamp(), m.key(), m.value(),
                m.headers() or [])

    assert [shape(m) for m in by_offset(rd_consume_all(bootstrap, copy, 2, 40))] == \
        [shape(m) for m in by_offset(rd_consume_all(bootstrap, source, 2, 40))]


def test_json_lines_name_their_partition(kw, bootstrap, new_topic) -> None:
    topic = new_topic(3, "cli-produce-p")
    lines = b'{"value": "a", "partition": 2}\n{"value": "b", "partition": 0}\n'
    result = kw("produce", topic, "--input-format", "jsonl", "--partition", "1",
                input=lines + b'{"value": "c"}\n')
    assert result.exit_code == 0, result.stderr
    got = rd_consume_all(bootstrap, topic, 3, 3)
    assert sorted((m.value(), m.partition()) for m in got) == [(b"a", 2), (b"b", 0), (b"c", 1)]
    far = kw("produce", topic, "--input-format", "jsonl", input=b'{"value": "x", "partition": 3}')
    assert far.exit_code == 1
    assert "line 1: partition 3, but the topic has partitions 0-2" in far.stderr


def read_committed(bootstrap: str, topic: str) -> tuple[list[ck.Message], int, int]:
    """What a read_committed librdkafka consumer reads of partition 0 until it reports the
    partition's end, where that end is (the last stable offset) and the high watermark: an
    open transaction would hold the end below the watermark."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                            "isolation.level": "read_committed", "enable.auto.commit": False,
                            "enable.partition.eof": True, "log_level": 0})
    got: list[ck.Message] = []
    try:
        consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == ck.KafkaError._PARTITION_EOF, msg.error()
                end = msg.offset()
                break
            got.append(msg)
        else:
            raise AssertionError("no end of partition reported in 60 s")
    finally:
        consumer.close()
    return got, end, high_watermark(bootstrap, topic)


def high_watermark(bootstrap: str, topic: str) -> int:
    """Partition 0's high watermark (a read_uncommitted consumer's: under read_committed,
    librdkafka's default, it answers the last stable offset)."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                            "isolation.level": "read_uncommitted", "log_level": 0})
    try:
        _, high = consumer.get_watermark_offsets(ck.TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
    return high


def test_a_transaction_commits_all_of_the_input_or_none(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-produce-txn")
    txn = f"cli-{uuid.uuid4().hex[:8]}"
    # the 12,000 lines before the bad one reach the log, in the aborted transaction
    good = b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * 40) for i in range(12_000))
    failed = kw("produce", topic, "--txn-id", txn, "--value-format", "json",
                input=good + b"{broken\n")
    assert failed.exit_code == 1
    assert "line 12001: the value is not json" in failed.stderr
    assert f"transaction {txn!r} aborted: nothing of the input is committed" in failed.stderr
    seen, end, high = read_committed(bootstrap, topic)
    assert seen == [] and end == high, "the failed run's transaction was not aborted"
    assert high > 12_000, "the lines before the bad one never reached the log"

    ok = kw("produce", topic, "--txn-id", txn, input=b"one\ntwo\nthree\n")
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.strip() == f"3 records written to {topic} in transaction {txn!r}, committed"
    seen, end, high = read_committed(bootstrap, topic)
    assert [m.value() for m in seen] == [b"one", b"two", b"three"] and end == high
