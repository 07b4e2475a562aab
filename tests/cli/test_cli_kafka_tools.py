"""``kafkawire`` next to Apache Kafka's own command-line tools (the ``kafka-tools`` artifact of
the same release as the test broker: kafka-topics, kafka-consumer-groups, kafka-transactions,
kafka-console-consumer, kafka-get-offsets), both run against the same state of the session's
Apache Kafka 4 broker: the facts each prints (partitions, leaders, replicas, ISR, topic
configs; groups, their offsets, lag and members; reset-offsets' new offsets; transactions;
records and offsets) are the same. Kafka's output is parsed, values compared, never
formatting. Each JVM tool run costs seconds: a run answers several assertions. Part of the
parity tier (``make test-parity``), as Spark's own format is the oracle of queries there."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone

import confluent_kafka as ck
import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from tests.cli.conftest import tsv
from tests.cli.test_cli_commands import rd_produce
from tests.cli.test_cli_groups import T0, live_group, rd_group_state  # noqa: F401

# live_group is a fixture of test_cli_groups, found by pytest here; the tests ask for it by
# getfixturevalue (a parameter of that name would shadow the import)

# the parity tier (make test-parity; tests/cli/conftest.py keeps it out of make test)
pytestmark = [pytest.mark.broker, pytest.mark.parity]

TOOLS = "org.apache.kafka.tools"
TOPIC_COMMAND = f"{TOOLS}.TopicCommand"
GROUP_COMMAND = f"{TOOLS}.consumer.group.ConsumerGroupCommand"
TRANSACTIONS_COMMAND = f"{TOOLS}.TransactionsCommand"
CONSOLE_CONSUMER = f"{TOOLS}.consumer.ConsoleConsumer"
GET_OFFSET_SHELL = f"{TOOLS}.GetOffsetShell"

Tool = Callable[..., str]


@pytest.fixture
def kafka_tool(request, broker_kind: str, bootstrap: str) -> Tool:
    """``tool(main_class, *args)``: the stdout of one of Kafka's tools run with
    ``--bootstrap-server`` of the test broker (Apache Kafka only: the tools and the facts
    compared are Kafka's)."""
    if broker_kind != "kafka":
        pytest.skip(f"compares kafkawire with Apache Kafka's own tools on an Apache Kafka "
                    f"broker; the test broker is {broker_kind!r} (KAFKAWIRE_TEST_BROKER)")
    broker = request.getfixturevalue("apache_kafka")

    def run(main_class: str, *args: str) -> str:
        return broker.run_tool(main_class, "--bootstrap-server", bootstrap, *args, tools=True)

    return run


def columns(text: str) -> list[dict[str, str]]:
    """Rows of a table Kafka's tools print with space-padded columns (kafka-consumer-groups),
    from its header line on; no value holds a space."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    start = next(i for i, cells in enumerate(lines) if cells and cells[0] == "GROUP")
    header = lines[start]
    return [dict(zip(header, cells, strict=True)) for cells in lines[start + 1:]]


def tab_columns(text: str) -> list[dict[str, str]]:
    """Rows of a table of tab-separated, space-padded cells (kafka-transactions)."""
    lines = [[c.strip() for c in line.rstrip("\t").split("\t")]
             for line in text.splitlines() if line.strip()]
    return [dict(zip(lines[0], cells, strict=True)) for cells in lines[1:]]


def configs_of(listed: str) -> dict[str, str]:
    """kafka-topics' ``Configs: a=1,b=x,y``: values may hold commas (cleanup.policy), so a
    piece without "=" belongs to the value before it."""
    out: dict[str, str] = {}
    last = ""
    for piece in listed.split(",") if listed else []:
        if "=" in piece:
            last, _, value = piece.partition("=")
            out[last] = value
        else:
            out[last] += "," + piece
    return out


def topic_command_describe(text: str) -> dict[str, dict]:
    """kafka-topics --describe: per topic, its header's fields (Configs parsed) and
    ``partitions``: partition -> fields (Leader, Replicas, Isr, ...)."""
    topics: dict[str, dict] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = dict(cell.split(": ", 1) if ": " in cell else (cell.rstrip(":"), "")
                      for cell in line.strip().split("\t"))
        if line.startswith("\t"):
            topics[fields["Topic"]]["partitions"][int(fields["Partition"])] = fields
        else:
            topics[fields["Topic"]] = {**fields, "configs": configs_of(fields["Configs"]),
                                       "partitions": {}}
    return topics


# --------------------------------------------------------------------------- kafka-topics


def test_topics_describe_agrees_with_kafka_topics(kafka_tool, kw, client) -> None:
    prefix = f"cli-ktools-{uuid.uuid4().hex[:8]}"
    configured, plain = f"{prefix}-configured", f"{prefix}-plain"
    created = kw("topics", "create", configured, "--partitions", "3",
                 "--config", "retention.ms=604800000", "--config", "cleanup.policy=compact,delete",
                 "--config", "max.message.bytes=200000")
    assert created.exit_code == 0, created.stderr
    create_topics(client, [(plain, 1)])

    theirs = topic_command_describe(kafka_tool(TOPIC_COMMAND, "--describe", "--topic",
                                               f"{prefix}-.*"))
    assert set(theirs) == {configured, plain}
    listed = {r["topic"]: int(r["partitions"]) for r in tsv(kw("topics", f"{prefix}-.*").stdout)}
    assert listed == {t: int(theirs[t]["PartitionCount"]) for t in theirs} == {
        configured: 3, plain: 1}
    for topic, their in theirs.items():
        result = kw("describe", topic)
        assert result.exit_code == 0, result.stderr
        rows = {int(r["partition"]): r for r in tsv(result.stdout)}
        assert sorted(rows) == sorted(their["partitions"])
        for p, row in rows.items():
            kafka = their["partitions"][p]
            assert (row["leader"], row["replicas"], row["isr"]) == (
                kafka["Leader"], kafka["Replicas"], kafka["Isr"]), (topic, p)
        # the configs kafka-topics shows are those not at their default: kafkawire's too
        mine = {r["config"]: r["value"] for r in tsv(kw("describe", topic, "--configs").stdout)}
        assert mine == their["configs"], topic
    # --list names internal topics unless --exclude-internal, kafkawire with --internal
    # (__consumer_offsets exists once a group has committed: not yet on a fresh broker)
    pattern = f"(__consumer_offsets|{prefix}-.*)"
    their_names = set(kafka_tool(TOPIC_COMMAND, "--list", "--topic", pattern).split())
    mine_names = {r["topic"] for r in tsv(kw("topics", "--internal", pattern).stdout)}
    assert mine_names == their_names, (mine_names, their_names)
    assert their_names >= {configured, plain}
    assert {k: theirs[configured]["configs"][k] for k in (
        "retention.ms", "cleanup.policy", "max.message.bytes")} == {
        "retention.ms": "604800000", "cleanup.policy": "compact,delete",
        "max.message.bytes": "200000"}


# --------------------------------------------------------------------------- kafka-consumer-groups


def test_groups_list_and_describe_agree_with_kafka_consumer_groups(kafka_tool, kw,
                                                                   request) -> None:
    topic, group, consumer = request.getfixturevalue("live_group")
    their_list = {r["GROUP"]: r["STATE"] for r in columns(
        kafka_tool(GROUP_COMMAND, "--list", "--state"))}
    mine_list = {r["group"]: r["state"] for r in tsv(kw("groups").stdout)}
    assert set(mine_list) == set(their_list)
    assert mine_list[group] == their_list[group] == "Stable"

    theirs = {int(r["PARTITION"]): r for r in columns(
        kafka_tool(GROUP_COMMAND, "--describe", "--group", group))}
    result = kw("groups", "describe", group)
    assert result.exit_code == 0, result.stderr
    mine = {int(r["partition"]): r for r in tsv(result.stdout)}
    assert sorted(mine) == sorted(theirs) == [0, 1, 2]
    for p, row in mine.items():
        kafka = theirs[p]
        assert kafka["GROUP"] == group and kafka["TOPIC"] == topic == row["topic"]
        assert (row["committed"], row["end"], row["lag"]) == (
            kafka["CURRENT-OFFSET"], kafka["LOG-END-OFFSET"], kafka["LAG"]) == ("4", "10", "6")
        assert (row["member"], row["host"], row["client"]) == (
            kafka["CONSUMER-ID"], kafka["HOST"], kafka["CLIENT-ID"])
    assert {r["member"] for r in mine.values()} == {consumer.memberid()}

    [their_member] = columns(kafka_tool(GROUP_COMMAND, "--describe", "--group", group,
                                        "--members", "--verbose"))
    [my_member] = tsv(kw("groups", "describe", group, "--members").stdout)
    assert (my_member["member"], my_member["host"], my_member["client"]) == (
        their_member["CONSUMER-ID"], their_member["HOST"], their_member["CLIENT-ID"])
    # kafka-consumer-groups: "topic:0,1,2"; kafkawire: "topic-0, topic-1, topic-2"
    their_topic, _, their_partitions = their_member["CURRENT-ASSIGNMENT"].rpartition(":")
    assigned = [f"{their_topic}-{p}" for p in their_partitions.split(",")]
    assert sorted(my_member["partitions"].split(", ")) == sorted(assigned)
    assert int(their_member["#PARTITIONS"]) == len(assigned) == 3


def test_reset_offsets_dry_runs_agree_with_kafka_consumer_groups(kafka_tool, kw, bootstrap,
                                                                 request) -> None:
    """Record i of the group's topic is at partition i % 3, offset i // 3, CreateTime
    T0 + 1000 i; the group committed 4 on each partition (10 records each)."""
    topic, group, consumer = request.getfixturevalue("live_group")
    consumer.close()  # kafka-consumer-groups resets (even dry) only the offsets of an idle group
    deadline = time.monotonic() + 30
    while rd_group_state(bootstrap, group) != "EMPTY":
        assert time.monotonic() < deadline
        time.sleep(0.2)

    def iso(ms: int) -> str:  # kafka-consumer-groups' form, with its zone: Z
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

    ways = {
        "--to-earliest": {0: 0, 1: 0, 2: 0},
        "--to-latest": {0: 10, 1: 10, 2: 10},
        "--shift-by -2": {0: 2, 1: 2, 2: 2},
        "--shift-by -100": {0: 0, 1: 0, 2: 0},  # before the start: clamped to it
        "--to-offset 1000": {0: 10, 1: 10, 2: 10},  # past the end: clamped to it
        f"--to-datetime {iso(T0 + 13_500)}": {0: 5, 1: 5, 2: 4},
        f"--to-datetime {iso(T0 + 3_600_000)}": {0: 10, 1: 10, 2: 10},  # after every record
    }
    for how, expected in ways.items():
        theirs = {int(r["PARTITION"]): int(r["NEW-OFFSET"]) for r in columns(kafka_tool(
            GROUP_COMMAND, "--reset-offsets", "--group", group, "--topic", topic,
            *how.split(), "--dry-run"))}
        result = kw("groups", "reset-offsets", group, "--topic", topic, *how.split())
        assert result.exit_code == 0, (how, result.stderr)
        mine = {int(r["partition"]): int(r["new"]) for r in tsv(result.stdout)}
        assert mine == theirs == expected, how


# --------------------------------------------------------------------------- kafka-transactions


def test_transactions_agree_with_kafka_transactions(kafka_tool, kw, bootstrap,
                                                    new_topic) -> None:
    topic = new_topic(1, "cli-ktools-txn")
    tid = f"cli-ktools-txn-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                            "log_level": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"open %d" % i, partition=0)
    assert producer.flush(30) == 0
    try:
        their_list = {r["TransactionalId"]: r for r in tab_columns(
            kafka_tool(TRANSACTIONS_COMMAND, "list"))}
        mine_list = {r["transactional id"]: r for r in tsv(kw("transactions").stdout)}
        assert tid in their_list
        assert {t: (r["state"], r["producer id"], r["coordinator"])
                for t, r in mine_list.items() if t in their_list} == {
            t: (r["TransactionState"], r["ProducerId"], r["Coordinator"])
            for t, r in their_list.items()}

        [theirs] = tab_columns(kafka_tool(TRANSACTIONS_COMMAND, "describe",
                                          "--transactional-id", tid))
        [mine] = tsv(kw("transactions", "describe", tid).stdout)
        assert (mine["state"], mine["producer id"], mine["epoch"], mine["timeout ms"],
                mine["partitions"]) == (
            theirs["TransactionState"], theirs["ProducerId"], theirs["ProducerEpoch"],
            theirs["TransactionTimeoutMs"], theirs["TopicPartitions"])
        assert mine["state"] == "Ongoing" and mine["partitions"] == f"{topic}-0"
        since = datetime.fromisoformat(mine["open since"].replace("Z", "+00:00"))
        assert int(since.timestamp() * 1000) == int(theirs["CurrentTransactionStartTimeMs"])
    finally:
        assert kw("transactions", "abort", tid).exit_code == 0


# --------------------------------------------------------------------------- console consumer, get-offsets


@pytest.fixture
def timed_records(bootstrap: str, new_topic) -> str:
    """A 3-partition topic of 30 records: record i at partition i % 3, offset i // 3, key
    k<i>, value v<i>, CreateTime T0 + 1000 i."""
    topic = new_topic(3, "cli-ktools-consume")
    rd_produce(bootstrap, topic, [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 3,
                                   "timestamp": T0 + 1000 * i} for i in range(30)])
    return topic


def get_offsets(text: str) -> dict[int, int]:
    """kafka-get-offsets' ``topic:partition:offset`` lines (a partition without an offset
    at that time is left out)."""
    out = {}
    for line in text.splitlines():
        if line.strip():
            _, partition, offset = line.rsplit(":", 2)
            out[int(partition)] = int(offset)
    return out


def formatter_property(version: str) -> str:
    """ConsoleConsumer's option for its formatter's settings: ``--formatter-property`` from
    Kafka 4.2 on (KIP-1147; 4.4 prints a deprecation line on stdout for the old one, which
    4.1 alone knows), ``--property`` before."""
    numeric = tuple(int(x) for x in version.split(".")[:2])
    return "--formatter-property" if numeric >= (4, 2) else "--property"


def test_consume_agrees_with_kafka_console_consumer(kafka_tool, kw, timed_records,
                                                    apache_kafka) -> None:
    topic = timed_records
    theirs = []
    option = formatter_property(apache_kafka.version)
    for line in kafka_tool(CONSOLE_CONSUMER, "--topic", topic, "--partition", "1",
                           "--offset", "3", "--max-messages", "4", "--timeout-ms", "30000",
                           option, "print.timestamp=true",
                           option, "print.partition=true",
                           option, "print.offset=true",
                           option, "print.key=true").splitlines():
        if line.strip():
            stamp, partition, offset, key, value = line.split("\t")
            theirs.append((int(partition.split(":")[1]), int(offset.split(":")[1]),
                           int(stamp.split(":")[1]), key, value))
    result = kw("consume", topic, "-p", "1", "-o", "3", "-c", "4", "-e", "--format", "json")
    assert result.exit_code == 0, result.stderr
    mine = [(o["partition"], o["offset"], o["timestamp"], o["key"], o["value"])
            for o in map(json.loads, result.stdout.splitlines())]
    assert mine == theirs == [(1, k, T0 + 1000 * (1 + 3 * k), f"k{1 + 3 * k}",
                               f"v{1 + 3 * k}") for k in (3, 4, 5, 6)]


def test_offsets_and_consume_from_agree_with_kafka_get_offsets(kafka_tool, kw,
                                                               timed_records) -> None:
    topic = timed_records
    at = T0 + 13_500  # the first record at or after: 15 (0, 5), 16 (1, 5), 14 (2, 4)
    late = T0 + 3_600_000  # after every record
    their = {when: get_offsets(kafka_tool(GET_OFFSET_SHELL, "--topic", topic, "--time", when))
             for when in ("-2", "-1", str(at), str(late))}
    assert their["-2"] == {0: 0, 1: 0, 2: 0} and their["-1"] == {0: 10, 1: 10, 2: 10}
    assert their[str(at)] == {0: 5, 1: 5, 2: 4}
    assert their[str(late)] == {}  # no offset where no record is at or after the time

    def offsets(at: str) -> dict[int, str]:
        return {int(r["partition"]): r["offset"] for r in tsv(kw("offsets", topic, "--at",
                                                                 at).stdout)}

    assert offsets("earliest") == {p: str(o) for p, o in their["-2"].items()}
    assert offsets("latest") == {p: str(o) for p, o in their["-1"].items()}
    assert offsets(str(at)) == {p: str(o) for p, o in their[str(at)].items()}
    assert offsets(str(late)) == {0: "-", 1: "-", 2: "-"}
    described = tsv(kw("describe", topic).stdout)
    assert {int(r["partition"]): (int(r["earliest"]), int(r["latest"])) for r in described} == {
        p: (their["-2"][p], their["-1"][p]) for p in range(3)}

    def first_offsets(*how: str) -> dict[int, list[int]]:
        result = kw("consume", topic, *how, "-e", "--format", "json")
        assert result.exit_code == 0, result.stderr
        got: dict[int, list[int]] = {}
        for o in map(json.loads, result.stdout.splitlines()):
            got.setdefault(o["partition"], []).append(o["offset"])
        return got

    # -o @TIME starts each partition where kafka-get-offsets --time says; -o -2 two before
    # its latest offset
    assert {p: o[0] for p, o in first_offsets("-o", f"@{at}").items()} == their[str(at)]
    assert first_offsets("-o", "-2") == {p: [end - 2, end - 1] for p, end in their["-1"].items()}
    assert first_offsets("-p", "2", "-o", "@" + str(at)) == {
        2: list(range(their[str(at)][2], their["-1"][2]))}


def test_a_consumer_protocol_group_agrees_with_kafka_consumer_groups(kafka_tool, kw, bootstrap,
                                                                     new_topic) -> None:
    """A group of KIP-848's consumer protocol (librdkafka's group.protocol=consumer): Kafka's
    tool describes its members with ConsumerGroupDescribe; DescribeGroups answers "not a
    classic group" for it, which had left kafkawire's describe without members (and
    reset-offsets --execute unguarded)."""
    topic = new_topic(3, "cli-ktools-848")
    rd_produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": i % 3} for i in range(30)])
    group = f"cli-ktools-848-{uuid.uuid4().hex[:8]}"
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "group.protocol": "consumer", "client.id": "rd-848",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "log_level": 0})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < 3:
            assert time.monotonic() < deadline, "librdkafka's consumer got no assignment"
            consumer.poll(0.2)
        consumer.commit(offsets=[ck.TopicPartition(topic, p, 3) for p in range(3)],
                        asynchronous=False)

        theirs = {int(r["PARTITION"]): r for r in columns(
            kafka_tool(GROUP_COMMAND, "--describe", "--group", group))}
        result = kw("groups", "describe", group)
        assert result.exit_code == 0, result.stderr
        mine = {int(r["partition"]): r for r in tsv(result.stdout)}
        assert sorted(mine) == sorted(theirs) == [0, 1, 2]
        for p, row in mine.items():
            kafka = theirs[p]
            assert (row["committed"], row["end"], row["lag"], row["member"], row["host"],
                    row["client"]) == (
                kafka["CURRENT-OFFSET"], kafka["LOG-END-OFFSET"], kafka["LAG"],
                kafka["CONSUMER-ID"], kafka["HOST"], kafka["CLIENT-ID"])
            assert (row["committed"], row["lag"], row["client"]) == ("3", "7", "rd-848")

        [their_member] = columns(kafka_tool(GROUP_COMMAND, "--describe", "--group", group,
                                            "--members", "--verbose"))
        [my_member] = tsv(kw("groups", "describe", group, "--members").stdout)
        assert (my_member["member"], my_member["host"], my_member["client"]) == (
            their_member["CONSUMER-ID"], their_member["HOST"], their_member["CLIENT-ID"])
        their_topic, _, their_partitions = their_member["CURRENT-ASSIGNMENT"].rpartition(":")
        assert sorted(my_member["partitions"].split(", ")) == sorted(
            f"{their_topic}-{p}" for p in their_partitions.split(","))
        listed = {r["group"]: r for r in tsv(kw("groups").stdout)}
        assert (listed[group]["state"], listed[group]["type"]) == ("Stable", "consumer")

        refused = kw("groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                     "--execute")
        assert refused.exit_code == 2, refused.output
        assert f"group {group!r} is Stable with 1 member(s)" in refused.stderr
    finally:
        consumer.close()
