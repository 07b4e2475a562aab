"""``kafkawire groups --zookeeper``: the groups of ZooKeeper-era consumers, laid out in a real
ZooKeeper as those consumers write them (``/consumers/<group>/offsets/<topic>/<partition>``
holding the offset's decimal text, live consumers as ephemeral ``ids/<consumer id>`` nodes with
their subscription), listed, described, reset and deleted, each change read back from
ZooKeeper itself (kazoo), not through kafkawire."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from tests.cli.conftest import tsv
from tests.cli.test_cli_commands import rd_produce

pytestmark = pytest.mark.broker


@pytest.fixture
def zk(zookeeper: str) -> Iterator:
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def offset_node(zk, group: str, topic: str, partition: int) -> bytes | None:
    path = f"/consumers/{group}/offsets/{topic}/{partition}"
    return zk.get(path)[0] if zk.exists(path) else None


def test_zookeeper_groups_listed_described_reset_and_deleted(kw, zookeeper, zk, new_topic,
                                                            bootstrap) -> None:
    topic = new_topic(2, "cli-zkg")
    rd_produce(bootstrap, topic, [{"value": b"v", "partition": i % 2} for i in range(8)])
    tag = uuid.uuid4().hex[:8]
    idle, live = f"cli-zkg-idle-{tag}", f"cli-zkg-live-{tag}"
    zk.create(f"/consumers/{idle}/offsets/{topic}/0", b"1", makepath=True)
    zk.create(f"/consumers/{idle}/offsets/{topic}/1", b"3", makepath=True)
    zk.create(f"/consumers/{live}/offsets/{topic}/0", b"2", makepath=True)
    zk.create(f"/consumers/{live}/ids/host1-abc", json.dumps(
        {"version": 1, "subscription": {topic: 1}, "pattern": "static",
         "timestamp": "1"}).encode(), ephemeral=True, makepath=True)
    zk_opt = ("--zookeeper", zookeeper)

    listed = kw("groups", "list", *zk_opt)
    assert listed.exit_code == 0, listed.stderr
    rows = {r["group"]: r for r in tsv(listed.stdout)}
    assert (rows[idle]["state"], rows[idle]["type"]) == ("Empty", "zookeeper")
    assert (rows[live]["state"], rows[live]["type"]) == ("Stable", "zookeeper")
    as_json = kw("--output", "json", "groups", "list", *zk_opt)
    assert {json.loads(line)["group"] for line in as_json.stdout.splitlines()} >= {idle, live}

    described = kw("groups", "describe", idle, *zk_opt)
    assert described.exit_code == 0, described.stderr
    assert [(r["partition"], r["committed"], r["end"], r["lag"], r["member"])
            for r in tsv(described.stdout)] == [("0", "1", "4", "3", "-"),
                                                ("1", "3", "4", "1", "-")]
    # the live consumer's one stream owns both partitions (range assignment); p1 uncommitted
    owned = kw("groups", "describe", live, *zk_opt)
    assert [(r["partition"], r["committed"], r["lag"], r["member"])
            for r in tsv(owned.stdout)] == [("0", "2", "2", "host1-abc-0"),
                                            ("1", "-", "-", "host1-abc-0")]
    members = kw("groups", "describe", live, "--members", *zk_opt)
    assert [(r["member"], r["partitions"]) for r in tsv(members.stdout)] == [
        ("host1-abc", f"{topic}-0, {topic}-1")]

    dry = kw("groups", "reset-offsets", idle, "--all-topics", "--to-earliest", *zk_opt)
    assert dry.exit_code == 0, dry.stderr
    assert [(r["current"], r["new"]) for r in tsv(dry.stdout)] == [("1", "0"), ("3", "0")]
    assert "dry run" in dry.stderr
    assert (offset_node(zk, idle, topic, 0), offset_node(zk, idle, topic, 1)) == (b"1", b"3")
    shifted = kw("groups", "reset-offsets", idle, "--all-topics", "--shift-by", "-1",
                 "--execute", *zk_opt)
    assert shifted.exit_code == 0, shifted.stderr
    assert (offset_node(zk, idle, topic, 0), offset_node(zk, idle, topic, 1)) == (b"0", b"2")
    one = kw("groups", "reset-offsets", idle, "--topic", topic, "--partition", "1",
             "--to-latest", "--execute", *zk_opt)
    assert one.exit_code == 0, one.stderr
    assert (offset_node(zk, idle, topic, 0), offset_node(zk, idle, topic, 1)) == (b"0", b"4")
    lag = kw("lag", idle, *zk_opt)  # what lag tools of that era read, read back
    assert [(r["partition"], r["committed"]) for r in tsv(lag.stdout)] == [("0", "0"),
                                                                          ("1", "4")]

    refused = kw("groups", "reset-offsets", live, "--topic", topic, "--to-earliest",
                 "--execute", *zk_opt)
    assert refused.exit_code != 0
    assert "registered in ZooKeeper" in refused.stderr and refused.stderr.count("\n") == 1
    assert offset_node(zk, live, topic, 0) == b"2"
    kept = kw("groups", "delete", live, *zk_opt)
    assert kept.exit_code != 0 and "host1-abc" in kept.stderr
    assert zk.exists(f"/consumers/{live}") is not None

    deleted = kw("groups", "delete", idle, *zk_opt)
    assert deleted.exit_code == 0, deleted.stderr
    assert deleted.stdout.strip() == f"group {idle} deleted"
    assert zk.exists(f"/consumers/{idle}") is None
    again = kw("groups", "delete", idle, *zk_opt)
    assert again.exit_code != 0 and "does not exist in ZooKeeper" in again.stderr
    gone = kw("groups", "describe", idle, *zk_opt)
    assert gone.exit_code != 0 and "does not exist in ZooKeeper" in gone.stderr
