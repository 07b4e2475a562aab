"""``kafkawire consume`` / ``tail`` start offsets, topics and output against librdkafka: what
each ``-o`` prints is the records librdkafka reads from the same place; format strings, key
and value formats, several topics and ``--pattern``, and read_committed isolation."""

from __future__ import annotations

import base64
import json
import uuid

import confluent_kafka as ck
import pytest

from tests.cli.conftest import tsv
from tests.cli.test_cli_commands import rd_consume_all, rd_produce

pytestmark = pytest.mark.broker

T0 = 1_700_000_000_000
PARTITIONS = 3
RECORDS = 30


@pytest.fixture(scope="module")
def written(bootstrap: str) -> tuple[str, list[ck.Message]]:
    """RECORDS records over PARTITIONS partitions written by librdkafka, CreateTime T0 + i
    (rising within each partition), keys on most, headers on a few, JSON values but for two
    binary ones in partition 0."""
    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    topic = f"cli-consume-{uuid.uuid4().hex[:12]}"
    with KafkaClient(ClientConfig.from_servers(bootstrap)) as c:
        create_topics(c, [(topic, PARTITIONS)])
    records = []
    for i in range(RECORDS):
        r: dict = {"value": b"\xfe%d" % i if i % 21 == 0 else json.dumps({"i": i}).encode(),
                   "partition": i % PARTITIONS, "timestamp": T0 + 1000 * i}
        if i % 4:
            r["key"] = b"k%d" % i
        if i % 6 == 0:
            r["headers"] = [("h", b"%d" % i), ("none", None)]
        records.append(r)
    rd_produce(bootstrap, topic, records)
    return topic, sorted(rd_consume_all(bootstrap, topic, PARTITIONS, RECORDS),
                         key=lambda m: (m.partition(), m.offset()))


def printed(stdout: str) -> list[tuple[int, int]]:
    """(partition, offset) of each JSON line, in the order printed."""
    return [(o["partition"], o["offset"]) for o in map(json.loads, stdout.splitlines())]


def where(messages: list[ck.Message]) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for m in messages]


def test_consume_exit_at_end_prints_every_record(kw, written) -> None:
    topic, messages = written
    result = kw("consume", topic, "-e", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert sorted(printed(result.stdout)) == where(messages)


def test_offsets_per_partition(kw, written) -> None:
    topic, messages = written
    result = kw("consume", topic, "-e", "--format", "json", "-o", "0:3", "-o", "1:end",
                "-o", "-2")
    assert result.exit_code == 0, result.stderr
    last_two_of_2 = [m for m in messages if m.partition() == 2][-2:]
    expected = [m for m in messages if m.partition() == 0 and m.offset() >= 3] + last_two_of_2
    assert sorted(printed(result.stdout)) == where(expected)
    # past the end: nothing; before the start: from the start
    assert kw("consume", topic, "-e", "--format", "json", "-o", "1000").stdout == ""
    tail = kw("tail", topic, "-o", "-1000", "--format", "json", "-p", "1")
    assert sorted(printed(tail.stdout)) == where([m for m in messages if m.partition() == 1])


def test_offset_at_a_time_is_the_first_record_at_or_after_it(kw, written) -> None:
    topic, messages = written
    at = T0 + 1000 * 17 + 1  # after record 17: record 18 (partition 0) onwards
    for spec in (f"@{at}", "@2023-11-14T22:13:37.001Z", f"s@{at}"):
        result = kw("consume", topic, "-e", "--format", "json", "-o", spec)
        assert result.exit_code == 0, result.stderr
        assert sorted(printed(result.stdout)) == \
            where([m for m in messages if m.timestamp()[1] >= at]), spec


def test_format_string_matches_librdkafka(kw, written) -> None:
    topic, messages = written
    result = kw("consume", topic, "-e", "-p", "0", "--format", "%t|%p|%o|%K|%S|%T|%h|%s\\n")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout_bytes.split(b"\n")
    assert lines[-1] == b""
    expected = []
    for m in messages:
        if m.partition() != 0:
            continue
        headers = b",".join(k.encode() + b"=" + (v or b"") for k, v in m.headers() or [])
        expected.append(b"|".join([
            topic.encode(), b"0", b"%d" % m.offset(),
            b"%d" % (len(m.key()) if m.key() is not None else -1), b"%d" % len(m.value()),
            b"%d" % m.timestamp()[1], headers, m.value()]))
    assert lines[:-1] == expected


def test_key_and_value_formats(kw, written) -> None:
    topic, messages = written
    result = kw("consume", topic, "-e", "--format", "json", "--key-format", "hex",
                "--value-format", "base64")
    shown = {(o["partition"], o["offset"]): o for o in map(json.loads, result.stdout.splitlines())}
    for m in messages:
        o = shown[(m.partition(), m.offset())]
        assert o["key"] == (None if m.key() is None else m.key().hex())
        assert base64.b64decode(o["value"]) == m.value() and o["value_encoding"] == "base64"
    # JSON values parsed; a value that is not JSON names its record
    bad = kw("consume", topic, "-e", "--format", "json", "--value-format", "json", "-p", "0")
    assert bad.exit_code == 1
    first_binary = next(m for m in messages if m.partition() == 0 and m.value()[:1] == b"\xfe")
    assert f"the value of the record at offset {first_binary.offset()} of {topic}-0 is not " \
        "JSON" in bad.stderr
    ok = kw("consume", topic, "-e", "--format", "json", "--value-format", "json", "-p", "1")
    values = [json.loads(line)["value"] for line in ok.stdout.splitlines()]
    assert values == [json.loads(m.value()) for m in messages if m.partition() == 1]


def test_several_topics_and_a_pattern(kw, bootstrap, new_topic) -> None:
    prefix = f"cli-pat-{uuid.uuid4().hex[:6]}"
    a, b = new_topic(1, f"{prefix}-a"), new_topic(2, f"{prefix}-b")
    rd_produce(bootstrap, a, [{"value": b"in a"}])
    rd_produce(bootstrap, b, [{"value": b"in b", "partition": 1}])
    both = kw("consume", "--pattern", f"{prefix}-.*", "-e")  # a table, through a pipe: TSV
    assert both.exit_code == 0, both.stderr
    rows = tsv(both.stdout)
    assert sorted((r["topic"], r["partition"], r["value"]) for r in rows) == \
        [(a, "0", "in a"), (b, "1", "in b")]
    named = kw("consume", a, b, "-e", "--format", "%t:%s\\n")
    assert sorted(named.stdout.splitlines()) == [f"{a}:in a", f"{b}:in b"]
    none = kw("consume", "--pattern", f"{prefix}-nothing.*", "-e")
    assert none.exit_code == 2 and "matches no topic" in none.stderr
    assert kw("consume", "-e").exit_code == 2  # neither a topic nor a pattern


def test_read_committed_skips_aborted_transactions(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-consume-txn")
    txn = f"cli-{uuid.uuid4().hex[:8]}"
    # a whole chunk (10,000 lines, 500 KB: sent) before the bad line aborts the transaction
    failed = kw("produce", topic, "--txn-id", txn, "--value-format", "hex",
                input=b"00" * 50 + b"\n" * 1 + (b"00" * 50 + b"\n") * 11_999 + b"zz\n")
    assert failed.exit_code == 1 and "line 12001" in failed.stderr
    assert kw("produce", topic, "--txn-id", txn, input=b"kept\n").exit_code == 0
    assert kw("produce", topic, input=b"plain 0\nplain 1\n").exit_code == 0  # no transaction
    committed = kw("consume", topic, "-e", "--isolation", "read_committed", "--format", "%s\\n")
    assert committed.exit_code == 0, committed.stderr
    assert committed.stdout.splitlines() == ["kept", "plain 0", "plain 1"]
    everything = kw("consume", topic, "-e", "--format", "%S\\n")
    sizes = everything.stdout.splitlines()
    assert sizes.count("50") >= 10_000 and sizes[-3:] == ["4", "7", "7"], \
        "read_uncommitted shows the aborted records too"
