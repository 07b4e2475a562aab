"""``kafkawire groups`` against a consumer group run by librdkafka (confluent-kafka): the list
and each description agree with librdkafka's AdminClient, offsets reset (dry run, then
executed) are what the consumer reads as committed, and deleting refuses a live group."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient

from tests.cli.conftest import tsv
from tests.cli.test_cli_commands import rd_produce

pytestmark = pytest.mark.broker

T0 = 1_700_000_000_000


@pytest.fixture
def live_group(bootstrap: str, new_topic) -> Iterator[tuple[str, str, ck.Consumer]]:
    """(topic, group, consumer): a librdkafka consumer of a 3-partition topic of 30 records
    (CreateTime T0 + 1000 i), a member of the group with every partition assigned, having
    committed offset 4 on each."""
    topic = new_topic(3, "cli-groups")
    rd_produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": i % 3,
                                   "timestamp": T0 + 1000 * i} for i in range(30)])
    group = f"cli-group-{uuid.uuid4().hex[:8]}"
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "client.id": "rd-member", "enable.auto.commit": False,
                            "auto.offset.reset": "earliest", "log_level": 0})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 60
    while len(consumer.assignment()) < 3:
        assert time.monotonic() < deadline, "librdkafka's consumer got no assignment in 60 s"
        consumer.poll(0.2)
    consumer.commit(offsets=[ck.TopicPartition(topic, p, 4) for p in range(3)],
                    asynchronous=False)
    try:
        yield topic, group, consumer
    finally:
        consumer.close()


def rd_committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        got = consumer.committed([ck.TopicPartition(topic, p) for p in range(3)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in got}


def rd_group_state(bootstrap: str, group: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    return admin.describe_consumer_groups([group])[group].result(30).state.name


def test_list_and_describe_agree_with_librdkafka(kw, bootstrap, live_group) -> None:
    topic, group, consumer = live_group
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    theirs = admin.list_consumer_groups().result(30).valid
    listed = {r["group"]: r for r in tsv(kw("groups").stdout)}
    assert {g.group_id for g in theirs} <= set(listed)
    mine = next(g for g in theirs if g.group_id == group)
    assert listed[group]["state"].lower() == mine.state.name.lower() == "stable"
    assert listed[group]["protocol"] == "consumer"

    desc = admin.describe_consumer_groups([group])[group].result(30)
    [member] = desc.members
    result = kw("groups", "describe", group)
    assert result.exit_code == 0, result.stderr
    rows = tsv(result.stdout)
    assert [(r["topic"], int(r["partition"])) for r in rows] == [(topic, p) for p in range(3)]
    assert all(r["committed"] == "4" and r["end"] == "10" and r["lag"] == "6" for r in rows)
    assert {r["member"] for r in rows} == {member.member_id} == {consumer.memberid()}
    assert {r["client"] for r in rows} == {"rd-member"}
    assert {r["host"] for r in rows} == {member.host}

    as_json = [json.loads(line) for line in
               kw("--output", "json", "groups", "describe", group).stdout.splitlines()]
    assert [(o["topic"], o["partition"], o["committed"], o["lag"], o["member"])
            for o in as_json] == [(topic, p, 4, 6, member.member_id) for p in range(3)]

    members = tsv(kw("groups", "describe", group, "--members").stdout)
    assert [(m["member"], m["client"]) for m in members] == [(member.member_id, "rd-member")]
    assert members[0]["partitions"] == ", ".join(f"{topic}-{p}" for p in range(3))


def test_reset_and_delete_need_a_group_without_members(kw, bootstrap, live_group) -> None:
    topic, group, consumer = live_group
    refused = kw("groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                 "--execute")
    assert refused.exit_code == 2
    assert f"group {group!r} is Stable with 1 member(s)" in refused.stderr
    busy = kw("groups", "delete", group)
    assert busy.exit_code == 1 and "NON_EMPTY_GROUP" in busy.stderr
    assert len(busy.stderr.strip().splitlines()) == 1
    # a dry run is allowed while members run, and commits nothing
    dry = kw("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "2")
    assert dry.exit_code == 0 and "dry run" in dry.stderr
    assert [r["new"] for r in tsv(dry.stdout)] == ["2", "2", "2"]
    assert rd_committed(bootstrap, group, topic) == {0: 4, 1: 4, 2: 4}


def test_reset_offsets_each_way(kw, bootstrap, live_group) -> None:
    topic, group, consumer = live_group
    consumer.close()  # the group is Empty now
    deadline = time.monotonic() + 30
    while rd_group_state(bootstrap, group) != "EMPTY":
        assert time.monotonic() < deadline
        time.sleep(0.2)

    def reset(*how: str) -> dict[int, int]:
        result = kw("groups", "reset-offsets", group, "--topic", topic, *how, "--execute")
        assert result.exit_code == 0, result.stderr
        return rd_committed(bootstrap, group, topic)

    assert reset("--to-offset", "0") == {0: 0, 1: 0, 2: 0}  # 0 is an offset, not absent
    assert reset("--to-offset", "2") == {0: 2, 1: 2, 2: 2}
    assert reset("--shift-by", "0") == {0: 2, 1: 2, 2: 2}
    assert reset("--shift-by", "3") == {0: 5, 1: 5, 2: 5}
    assert reset("--shift-by", "-100") == {0: 0, 1: 0, 2: 0}  # clamped to the start
    assert reset("--to-latest") == {0: 10, 1: 10, 2: 10}
    # record i is at partition i % 3, offset i // 3, CreateTime T0 + 1000 i: the first at or
    # after T0 + 13,500 is record 14 (partition 2, offset 4), 15 (0, 5), 16 (1, 5)
    assert reset("--to-datetime", str(T0 + 13_500)) == {0: 5, 1: 5, 2: 4}
    assert reset("--to-earliest", "-p", "1") == {0: 5, 1: 0, 2: 4}
    assert reset("--to-offset", "1000") == {0: 10, 1: 10, 2: 10}  # clamped to the end

    deleted = kw("groups", "delete", group)
    assert deleted.exit_code == 0 and deleted.stdout.strip() == f"group {group} deleted"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(30).valid}
    gone = kw("groups", "describe", group)
    assert gone.exit_code == 1 and "does not exist" in gone.stderr
