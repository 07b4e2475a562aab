"""Every command against the test broker, compared with librdkafka (confluent-kafka): what
``produce`` writes librdkafka reads exactly, ``tail`` prints what librdkafka wrote and reads,
``describe``/``offsets`` give librdkafka's watermarks, ``offsets --at`` the first record at or
after the time (librdkafka's offsets_for_times where the broker answers right), ``lag`` the
offsets a librdkafka consumer committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient

from spark_kafka_wire.cli.records import from_text
from tests.cli.conftest import tsv

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]
B = 1_600_000_000_000  # CreateTime base, long before the broker's clock


def rd_consume_all(bootstrap: str, topic: str, partitions: int, expected: int,
                   timeout_s: float = 60) -> list[ck.Message]:
    """Every record of the topic as librdkafka reads it, from the beginning."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex}",
                            "enable.auto.commit": False, "log_level": 0})
    got: list[ck.Message] = []
    try:
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING)
                         for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        while len(got) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg)
    finally:
        consumer.close()
    return got


def rd_produce(bootstrap: str, topic: str, records: list[dict], **conf) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 0,
                            **conf})
    for r in records:
        producer.produce(topic, **r)
    assert producer.flush(30) == 0


def rd_watermarks(bootstrap: str, topic: str, partitions: int, records: int
                  ) -> dict[int, tuple[int, int]]:
    """(earliest, latest) per partition from the records librdkafka reads: its own
    get_watermark_offsets asks ListOffsets(latest), which Tansu answers with the start of the
    last batch + 1 (docs/compatibility.md)."""
    got = rd_consume_all(bootstrap, topic, partitions, records)
    offsets = {p: [m.offset() for m in got if m.partition() == p] for p in range(partitions)}
    return {p: (min(o, default=0), max(o, default=-1) + 1) for p, o in offsets.items()}


# --------------------------------------------------------------------------- topics, describe


def test_topics_lists_each_topic_with_its_partition_count(kw, new_topic) -> None:
    three, one = new_topic(3, "cli-topics"), new_topic(1, "cli-topics")
    result = kw("topics")
    assert result.exit_code == 0, result.stderr
    counts = {r["topic"]: int(r["partitions"]) for r in tsv(result.stdout)}
    assert counts[three] == 3 and counts[one] == 1


def test_describe_matches_librdkafka_metadata_and_watermarks(kw, bootstrap, new_topic) -> None:
    topic = new_topic(3, "cli-describe")
    rd_produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": i % 3} for i in range(10)])
    result = kw("describe", topic)
    assert result.exit_code == 0, result.stderr
    rows = {int(r["partition"]): r for r in tsv(result.stdout)}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(topic, timeout=20).topics[topic].partitions
    marks = rd_watermarks(bootstrap, topic, 3, 10)
    assert sorted(rows) == [0, 1, 2]
    for p, row in rows.items():
        assert int(row["leader"]) == meta[p].leader
        assert row["replicas"] == ",".join(map(str, meta[p].replicas))
        assert (int(row["earliest"]), int(row["latest"])) == marks[p]
    assert [int(rows[p]["latest"]) for p in range(3)] == [4, 3, 3]


def test_unknown_topic_is_one_line_and_exit_1(kw) -> None:
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    for command in (["describe", missing], ["offsets", missing], ["tail", missing],
                    ["produce", missing]):
        result = kw(*command, input=b"x\n")
        assert result.exit_code == 1, (command, result.output)
        assert result.stderr.count("\n") == 1 and missing in result.stderr, result.stderr
        assert "UNKNOWN_TOPIC_OR_PARTITION" in result.stderr


def test_partition_out_of_range_is_refused(kw, new_topic) -> None:
    topic = new_topic(2, "cli-part")
    result = kw("tail", topic, "--partition", "5")
    assert result.exit_code == 1 and "partitions 0-1" in result.stderr
    # the topic is there: the message must not send the user looking for it
    assert f"topic '{topic}' exists" in result.stderr
    assert "partition 5 does not exist" in result.stderr
    assert "it may not exist yet" not in result.stderr and "topic name" not in result.stderr


# --------------------------------------------------------------------------- offsets


@pytest.fixture(scope="module")
def timed_topic(bootstrap: str) -> tuple[str, dict[int, list[int]]]:
    """Two partitions whose records librdkafka wrote with known CreateTimes (out of order in
    partition 0's last batch)."""
    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    topic = f"cli-ts-{uuid.uuid4().hex[:12]}"
    with KafkaClient(ClientConfig.from_servers(bootstrap)) as c:
        create_topics(c, [(topic, 2)])
    stamps = {0: [100, 200, 300, 300, 500, 600, 800, 700, 900], 1: [150, 250, 400]}
    for p, ts in stamps.items():
        rd_produce(bootstrap, topic, [{"value": b"p%d-%d" % (p, i), "partition": p,
                                       "timestamp": B + t} for i, t in enumerate(ts)])
    return topic, stamps


def first_at_or_after(stamps: list[int], target: int) -> int | None:
    return next((o for o, ts in enumerate(stamps) if B + ts >= target), None)


def test_offsets_earliest_and_latest_are_librdkafkas_watermarks(kw, bootstrap, timed_topic):
    topic, stamps = timed_topic
    marks = rd_watermarks(bootstrap, topic, 2, sum(map(len, stamps.values())))
    for at, index in (("earliest", 0), ("latest", 1)):
        result = kw("offsets", topic, "--at", at)
        assert result.exit_code == 0, result.stderr
        assert {int(r["partition"]): int(r["offset"]) for r in tsv(result.stdout)} == \
            {p: marks[p][index] for p in (0, 1)}
    assert marks[0][1] == len(stamps[0])


@pytest.mark.parametrize("rel", [0, 100, 101, 300, 301, 650, 750, 900, 901])
def test_offsets_at_a_time_is_the_first_record_at_or_after_it(kw, bootstrap, timed_topic, rel):
    topic, stamps = timed_topic
    target = B + rel
    expected = {p: first_at_or_after(stamps[p], target) for p in (0, 1)}
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(target // 1000)) + \
        f".{target % 1000:03d}Z"
    for at in (str(target), iso):
        result = kw("offsets", topic, "--at", at)
        assert result.exit_code == 0, result.stderr
        got = {int(r["partition"]): None if r["offset"] == "-" else int(r["offset"])
               for r in tsv(result.stdout)}
        assert got == expected, at
    # librdkafka asks the broker; where the broker's answer agrees with the records, so do we
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "times", "log_level": 0})
    try:
        answers = consumer.offsets_for_times(
            [ck.TopicPartition(topic, p, target) for p in (0, 1)], timeout=20)
    finally:
        consumer.close()
    for tp in answers:
        rd = None if tp.offset < 0 else tp.offset
        if rd is None or stamps[tp.partition][rd] + B >= target and all(
                B + ts < target for ts in stamps[tp.partition][:rd]):
            assert rd == expected[tp.partition]


def test_offsets_at_a_time_warns_in_one_line_and_never_for_empty_partitions(
        kw, bootstrap, new_topic) -> None:
    topic = new_topic(4, "cli-ts-warn")
    for p in (0, 1):  # CreateTimes long before Tansu's append times: it answers wrongly
        rd_produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": p,
                                       "timestamp": B + 100 * i} for i in range(4)])
    result = kw("offsets", topic, "--at", str(B + 150))
    assert result.exit_code == 0, result.stderr
    assert {int(r["partition"]): r["offset"] for r in tsv(result.stdout)} == \
        {0: "2", 1: "2", 2: "-", 3: "-"}
    warnings = result.stderr.splitlines()
    assert len(warnings) <= 1, result.stderr  # one summary line at most, whatever the broker
    if warnings:
        assert warnings[0].startswith("kafkawire: warning: ") and "(0, 1)" in warnings[0]
    empty = kw("offsets", topic, "--at", str(B + 150), "--partition", "3")
    assert empty.exit_code == 0 and empty.stderr == "", empty.stderr


# --------------------------------------------------------------------------- produce

LINES = ["k1\tv1", "k2\tvalue with spaces", "no separator here", "k1\tsecond for k1",
         "ünï\tcødé", "\tempty key", "k3\t", "k4\tv\twith\ttabs"]


def expected_records() -> list[tuple[bytes | None, bytes]]:
    out = []
    for line in LINES:
        key, sep, value = line.partition("\t")
        out.append((key.encode(), value.encode()) if sep else (None, line.encode()))
    return out


def test_produce_is_read_by_librdkafka_exactly(kw, bootstrap, new_topic) -> None:
    topic = new_topic(4, "cli-produce")
    result = kw("produce", topic, "--key-separator", "\\t",
                input=("\n".join(LINES) + "\n").encode())
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"{len(LINES)} records written to {topic}"
    got = rd_consume_all(bootstrap, topic, 4, len(LINES))
    def order(kv: tuple[bytes | None, bytes]) -> tuple[bytes, bytes]:
        return (b"" if kv[0] is None else b"k" + kv[0], kv[1])

    assert sorted(((m.key(), m.value()) for m in got), key=order) == \
        sorted(expected_records(), key=order)
    # keyed records go where Java clients (and librdkafka's murmur2_random) put them
    twin = new_topic(4, "cli-produce-twin")
    keyed = [(k, v) for k, v in expected_records() if k is not None]
    rd_produce(bootstrap, twin, [{"key": k, "value": v} for k, v in keyed],
               partitioner="murmur2_random")
    theirs = {m.key(): m.partition() for m in rd_consume_all(bootstrap, twin, 4, len(keyed))}
    ours = {m.key(): m.partition() for m in got if m.key() is not None}
    assert ours == theirs
    # in line order within a partition
    k1 = [m.value() for m in sorted(got, key=lambda m: m.offset()) if m.key() == b"k1"]
    assert k1 == [b"v1", b"second for k1"]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_produce_to_one_partition_with_compression(kw, bootstrap, new_topic, tmp_path, codec):
    topic = new_topic(3, "cli-produce-z")
    source = tmp_path / "lines.txt"
    values = [f"record {i} " * (i % 7) for i in range(500)]
    source.write_bytes(("\n".join(values) + "\n").encode())
    result = kw("produce", topic, str(source), "--partition", "2", "--compression", codec,
                "--keep-empty")  # every 7th value is empty
    assert result.exit_code == 0, result.stderr
    got = rd_consume_all(bootstrap, topic, 3, len(values))
    assert {m.partition() for m in got} == {2}
    assert [m.value().decode() for m in sorted(got, key=lambda m: m.offset())] == values
    assert all(m.key() is None for m in got)


def test_produce_binary_lines_byte_for_byte(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-produce-bin")
    # a \r inside a line is data; the \r of a CRLF line end is not (Kafka's console producer)
    data = b"\xff\x00key|\x80\x81val\rue\r\n\x00|\n"
    result = kw("produce", topic, "-K", "|", input=data)
    assert result.exit_code == 0, result.stderr
    got = rd_consume_all(bootstrap, topic, 1, 2)
    assert [(m.key(), m.value()) for m in got] == [(b"\xff\x00key", b"\x80\x81val\rue"),
                                                   (b"\x00", b"")]


def test_produce_skips_empty_lines_unless_kept(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-produce-blank")
    data = b"a\r\n\r\n\nb\r\n\n"
    result = kw("produce", topic, input=data)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"2 records written to {topic}"
    kept = kw("produce", topic, "--keep-empty", input=data)
    assert kept.stdout.strip() == f"5 records written to {topic}"
    got = sorted(rd_consume_all(bootstrap, topic, 1, 7), key=lambda m: m.offset())
    assert [m.value() for m in got] == [b"a", b"b", b"a", b"", b"", b"b", b""]
    only_blank = kw("produce", topic, input=b"\n\n")
    assert only_blank.exit_code == 0 and only_blank.stdout.strip() == \
        f"0 records written to {topic}"


# --------------------------------------------------------------------------- tail


@pytest.fixture(scope="module")
def rd_topic(bootstrap: str) -> tuple[str, list[ck.Message]]:
    """Two partitions written by librdkafka: keys, null keys, binary values, headers."""
    from spark_kafka_wire.client.config import ClientConfig
    from spark_kafka_wire.client.metadata.admin import create_topics
    from spark_kafka_wire.client.metadata.cluster import KafkaClient

    topic = f"cli-tail-{uuid.uuid4().hex[:12]}"
    with KafkaClient(ClientConfig.from_servers(bootstrap)) as c:
        create_topics(c, [(topic, 2)])
    records = []
    for i in range(14):
        r: dict = {"value": b"\xff\xfe%d" % i if i % 4 == 0 else f"vålue {i}".encode(),
                   "partition": i % 2, "timestamp": B + i}
        if i % 3:
            r["key"] = b"key-%d" % i
        if i % 5 == 0:
            r["headers"] = [("h", b"one"), ("h", b"\x80"), ("empty", None)]
        records.append(r)
    rd_produce(bootstrap, topic, records)
    return topic, rd_consume_all(bootstrap, topic, 2, len(records))


def as_json_records(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def record_of(obj: dict) -> tuple:
    headers = tuple((h["key"], from_text(h["value"], h["value_encoding"]))
                    for h in obj["headers"])
    return (obj["partition"], obj["offset"], obj["timestamp"],
            from_text(obj["key"], obj["key_encoding"]),
            from_text(obj["value"], obj["value_encoding"]), headers)


def message_of(m: ck.Message) -> tuple:
    return (m.partition(), m.offset(), m.timestamp()[1], m.key(), m.value(),
            tuple(m.headers() or ()))


def test_tail_json_from_beginning_is_what_librdkafka_wrote(kw, rd_topic) -> None:
    topic, messages = rd_topic
    result = kw("tail", topic, "--from-beginning", "--format", "json")
    assert result.exit_code == 0, result.stderr
    objects = as_json_records(result.stdout)
    assert {o["topic"] for o in objects} == {topic}
    assert [record_of(o) for o in objects] == sorted(message_of(m) for m in messages)
    assert any(o["value_encoding"] == "base64" for o in objects)
    assert any(o["key"] is None and o["key_encoding"] is None for o in objects)


def test_tail_last_n_of_each_partition(kw, rd_topic) -> None:
    topic, messages = rd_topic
    result = kw("tail", topic, "-n", "2", "--format", "json")
    assert result.exit_code == 0, result.stderr
    by_partition = {p: sorted(message_of(m) for m in messages if m.partition() == p)
                    for p in (0, 1)}
    assert [record_of(o) for o in as_json_records(result.stdout)] == \
        by_partition[0][-2:] + by_partition[1][-2:]
    one = kw("tail", topic, "-n", "3", "--partition", "1", "--format", "json")
    assert [record_of(o) for o in as_json_records(one.stdout)] == by_partition[1][-3:]


def test_tail_csv_and_table(kw, rd_topic) -> None:
    import csv
    import io

    topic, messages = rd_topic
    result = kw("tail", topic, "--from-beginning", "--format", "csv", "--count", "5")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    first = sorted(message_of(m) for m in messages)[:5]
    assert [(int(r["partition"]), int(r["offset"]), from_text(r["value"], r["value_encoding"]))
            for r in rows] == [(m[0], m[1], m[4]) for m in first]
    table = kw("tail", topic, "-n", "1")
    cells = tsv(table.stdout)
    assert [(int(r["partition"]), int(r["offset"])) for r in cells] == [(0, 6), (1, 6)]
    assert cells[0]["timestamp"] == "2020-09-13T12:26:40.012Z"


def test_tail_follow_prints_records_as_they_arrive(bootstrap, new_topic) -> None:
    topic = new_topic(2, "cli-follow")
    rd_produce(bootstrap, topic, [{"value": b"before-%d" % i, "partition": i} for i in (0, 1)])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "spark_kafka_wire", "-b", bootstrap, "tail", topic,
         "--from-beginning", "--follow", "--format", "json", "--count", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        first = proc.stdout.readline()  # the existing records are printed first
        assert json.loads(first)["value"].startswith("before-")
        rd_produce(bootstrap, topic, [{"value": b"after-%d" % i, "partition": i % 2}
                                      for i in range(3)])
        # Read the rest through the same buffered reader as `first`: communicate() would read
        # the pipe underneath it and lose lines readline() had already buffered.
        proc.wait(timeout=120)  # five short lines never fill a pipe
        out, err = proc.stdout.read(), proc.stderr.read()
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    values = [json.loads(line)["value"] for line in [first, *out.splitlines()]]
    assert sorted(values) == ["after-0", "after-1", "after-2", "before-0", "before-1"]


# --------------------------------------------------------------------------- lag


def test_lag_is_what_a_librdkafka_consumer_committed(kw, bootstrap, new_topic) -> None:
    topic = new_topic(3, "cli-lag")
    rd_produce(bootstrap, topic, [{"value": b"v", "partition": i % 3} for i in range(12)])
    group = f"cli-lag-{uuid.uuid4().hex[:8]}"
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.commit(offsets=[ck.TopicPartition(topic, 0, 1), ck.TopicPartition(topic, 1, 4)],
                        asynchronous=False)
        committed = {tp.partition: tp.offset for tp in consumer.committed(
            [ck.TopicPartition(topic, p) for p in range(3)], timeout=20)}
    finally:
        consumer.close()
    assert committed[0] == 1 and committed[1] == 4 and committed[2] < 0
    ends = {p: hi for p, (_, hi) in rd_watermarks(bootstrap, topic, 3, 12).items()}

    with_topic = kw("lag", group, "--topic", topic)
    assert with_topic.exit_code == 0, with_topic.stderr
    assert [(int(r["partition"]), r["committed"], int(r["end"]), r["lag"])
            for r in tsv(with_topic.stdout)] == [
        (0, "1", ends[0], str(ends[0] - 1)), (1, "4", ends[1], str(ends[1] - 4)),
        (2, "-", ends[2], "-")]
    every = kw("lag", group)  # without --topic: the partitions the group committed
    assert [(r["topic"], int(r["partition"]), int(r["committed"]))
            for r in tsv(every.stdout)] == [(topic, 0, 1), (topic, 1, 4)]


def test_lag_of_a_group_without_commits(kw) -> None:
    result = kw("lag", f"cli-nobody-{uuid.uuid4().hex[:8]}")
    assert result.exit_code == 1
    assert "has no committed offsets in Kafka" in result.stderr
    assert result.stderr.count("\n") == 1


def test_lag_from_zookeeper_layout(kw, zookeeper, new_topic, bootstrap) -> None:
    from kazoo.client import KazooClient

    topic = new_topic(2, "cli-lag-zk")
    rd_produce(bootstrap, topic, [{"value": b"v", "partition": i % 2} for i in range(7)])
    group = f"cli-zk-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper)  # written as ZooKeeper-era consumers write it
    zk.start(timeout=30)
    try:
        zk.create(f"/consumers/{group}/offsets/{topic}/1", b"2", makepath=True)
    finally:
        zk.stop()
        zk.close()
    result = kw("lag", group, "--zookeeper", zookeeper)
    assert result.exit_code == 0, result.stderr
    assert [(r["topic"], int(r["partition"]), int(r["committed"]), int(r["end"]), int(r["lag"]))
            for r in tsv(result.stdout)] == [(topic, 1, 2, 3, 1)]
    named = kw("lag", group, "--zookeeper", zookeeper, "--topic", topic)
    assert [r["committed"] for r in tsv(named.stdout)] == ["-", "2"]


def test_lag_names_the_owner_of_each_partition_by_the_range_assignment(
        kw, zookeeper, new_topic, bootstrap) -> None:
    from kazoo.client import KazooClient

    a, b = new_topic(5, "cli-own-a"), new_topic(2, "cli-own-b")
    group = f"cli-own-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zookeeper)
    zk.start(timeout=30)
    try:
        for t, parts in ((a, 5), (b, 2)):
            for p in range(parts):
                zk.create(f"/consumers/{group}/offsets/{t}/{p}", b"0", makepath=True)
        # registered as ZooKeeper-era consumers register (ephemeral): an 0.8 consumer with two
        # streams of topic a and one of b, and an 0.7 consumer (bare map) with one stream of a
        zk.create(f"/consumers/{group}/ids/host1-uuid1", json.dumps(
            {"version": 1, "subscription": {a: 2, b: 1}, "pattern": "static",
             "timestamp": "1"}).encode(), ephemeral=True, makepath=True)
        zk.create(f"/consumers/{group}/ids/host2-uuid2", json.dumps({a: 1}).encode(),
                  ephemeral=True)
        result = kw("lag", group, "--zookeeper", zookeeper)
    finally:
        zk.stop()
        zk.close()
    assert result.exit_code == 0, result.stderr
    owners = {(r["topic"], int(r["partition"])): r["owner"] for r in tsv(result.stdout)}
    # topic a: threads host1-uuid1-0, host1-uuid1-1, host2-uuid2-0 share 5 partitions 2-2-1;
    # topic b: host1-uuid1-0 alone
    assert owners == {(a, 0): "host1-uuid1-0", (a, 1): "host1-uuid1-0",
                      (a, 2): "host1-uuid1-1", (a, 3): "host1-uuid1-1", (a, 4): "host2-uuid2-0",
                      (b, 0): "host1-uuid1-0", (b, 1): "host1-uuid1-0"}


# --------------------------------------------------------------------------- check


def test_check_plaintext(kw, bootstrap, broker_kind) -> None:
    result = kw("check")
    assert result.exit_code == 0, result.stderr
    admin = AdminClient({"bootstrap.servers": bootstrap})
    brokers = admin.list_topics(timeout=20).brokers
    for node in brokers:
        assert f"broker {node} at " in result.stdout
    assert "(PLAINTEXT): connected" in result.stdout
    assert "Fetch\t1\t" in result.stdout
    # the versions of the transaction protocol v2 (KIP-890) only in its transactions
    if broker_kind == "kafka":  # 4.1.1 finalizes transaction.version 2
        assert "Produce\t0\t0-13\t0-12\tv8 (v12 in transactions: transaction.version 2)" \
            in result.stdout
        assert "EndTxn\t26\t0-5\t0-5\tv4 (v5 in transactions: transaction.version 2)" \
            in result.stdout
    elif broker_kind == "tansu":
        assert "Produce\t0\t0-11\t0-12\tv8\n" in result.stdout
        assert "EndTxn\t26\t0-4\t0-5\tv4\n" in result.stdout
    assert result.stdout.rstrip().endswith("usable: kafkawire can read and write through this "
                                           "cluster")


def test_check_as_one_json_document(kw, bootstrap) -> None:
    """``--output json``: one JSON object, no text lines around the API tables."""
    result = kw("--output", "json", "check")
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 1
    doc = json.loads(result.stdout)
    brokers = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=20).brokers
    assert sorted(b["node_id"] for b in doc["brokers"]) == sorted(brokers)
    assert (doc["usable"], doc["problems"], doc["security"]) == (True, [], "PLAINTEXT")
    assert doc["bootstrap"] == bootstrap
    fetch = next(row for row in doc["brokers"][0]["apis"] if row["api"] == "Fetch")
    assert (fetch["key"], doc["brokers"][0]["error"]) == (1, None)
    assert set(fetch) == {"api", "key", "broker", "kafkawire", "uses"}

def test_produce_shows_progress_on_a_terminal_only(bootstrap, new_topic) -> None:
    """A progress bar when stderr is a terminal (a pty here); none in a pipe, even with
    FORCE_COLOR, which asks for colours, not for a terminal's output."""
    import pty
    import threading

    from tests.cli.conftest import run_cli

    topic = new_topic(1, "cli-progress")
    lines = b"".join(b"line %d\n" % i for i in range(25_000))
    controller, terminal = pty.openpty()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen([sys.executable, "-m", "spark_kafka_wire", "-b", bootstrap,
                             "produce", topic], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=terminal, env=env, cwd=root)
    os.close(terminal)
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the pty closed with the process
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out, _ = proc.communicate(lines, timeout=120)
    reader.join(timeout=10)
    os.close(controller)
    assert proc.returncode == 0, bytes(seen)[-2000:]
    assert b"records" in bytes(seen)
    assert out.decode().strip() == f"25000 records written to {topic}"
    piped = run_cli("-b", bootstrap, "produce", topic, input=b"one more\n",
                    env={"FORCE_COLOR": "1"})
    assert piped.exit_code == 0 and piped.stderr == ""
