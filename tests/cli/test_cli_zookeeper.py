"""``kafkawire`` on clusters found through ZooKeeper: ``--zookeeper`` or ``zookeeper.connect``
in the ``-F`` file instead of a bootstrap server, against a real ZooKeeper and emulated Kafka
0.7 brokers registered there (tests/support/kafka07_cluster.py; partitions numbered by broker
id, then partition: 0 = 1-0, 1 = 1-1, 2 = 2-0, 3 = 2-1)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.cli.conftest import run_cli, tsv
from tests.support.kafka07_broker import encode_message_set
from tests.support.kafka07_cluster import Cluster07, start_cluster

PAYLOADS = {n: [f"p{n}-m{i}".encode() for i in range(3 + n)] for n in range(4)}


@pytest.fixture
def cluster07(zookeeper: str) -> Iterator[Cluster07]:
    c = start_cluster(zookeeper, (1, 2))
    yield c
    c.stop()


@pytest.fixture
def topic07(cluster07: Cluster07) -> str:
    """A topic with 4 partitions (2 on each broker) holding PAYLOADS, in two segments each."""
    topic = cluster07.create_topic(partitions=2)
    for n, payloads in PAYLOADS.items():
        broker, p = cluster07.location(topic, n)
        broker.append(topic, p, encode_message_set(payloads[:2]))
        broker.roll(topic, p)
        broker.append(topic, p, encode_message_set(payloads[2:]))
    return topic


def json_values(stdout: str) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        obj = json.loads(line)
        out.setdefault(obj["partition"], []).append(obj["value"])
    return out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reads_of_a_kafka07_cluster_through_zookeeper(cluster07, topic07, tmp_path) -> None:
    zk = ["--zookeeper", cluster07.connect]
    listed = run_cli(*zk, "topics")
    assert listed.exit_code == 0, listed.stderr
    assert {r["topic"]: r["partitions"] for r in tsv(listed.stdout)} == {topic07: "4"}
    # zookeeper.connect in the -F file, as an old consumer's properties hold it
    props = tmp_path / "consumer.properties"
    props.write_text(f"zookeeper.connect={cluster07.connect}\n")
    every = run_cli("-F", str(props), "tail", topic07, "--from-beginning", "--format", "json")
    assert every.exit_code == 0, every.stderr
    assert json_values(every.stdout) == {n: [v.decode() for v in PAYLOADS[n]] for n in PAYLOADS}
    # the last N records (not the last N byte offsets), across a segment boundary
    last = run_cli(*zk, "tail", topic07, "-n", "3", "--format", "json")
    assert last.exit_code == 0, last.stderr
    assert json_values(last.stdout) == {n: [v.decode() for v in PAYLOADS[n][-3:]]
                                        for n in PAYLOADS}
    one = run_cli(*zk, "tail", topic07, "-p", "3", "-n", "1", "--format", "json")
    assert json_values(one.stdout) == {3: ["p3-m5"]}
    described = run_cli(*zk, "describe", topic07)
    assert described.exit_code == 0, described.stderr
    rows = {int(r["partition"]): r for r in tsv(described.stdout)}
    for n in range(4):
        broker, p = cluster07.location(topic07, n)
        assert rows[n]["leader"] == str(broker.broker_id)
        assert (int(rows[n]["earliest"]), int(rows[n]["latest"])) == (0, broker.end_offset(
            topic07, p))
    latest = run_cli(*zk, "offsets", topic07, "--at", "latest")
    assert {int(r["partition"]): int(r["offset"]) for r in tsv(latest.stdout)} == \
        {n: int(rows[n]["latest"]) for n in range(4)}
    missing = run_cli(*zk, "tail", topic07, "-p", "4")
    assert missing.exit_code == 1 and "partition 4 does not exist" in missing.stderr


def test_produce_to_a_kafka07_cluster(cluster07, topic07) -> None:
    zk = ["--zookeeper", cluster07.connect]
    result = run_cli(*zk, "produce", topic07, "-p", "2", input=b"new-1\r\n\nnew-2\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == f"2 records written to {topic07}"
    broker, p = cluster07.location(topic07, 2)
    assert [v for _, v in broker.payloads(topic07, p)][-2:] == [b"new-1", b"new-2"]
    keyed = run_cli(*zk, "produce", topic07, "-K", ":", "--compression", "gzip",
                    input=b"k:v1\nk:v2\n")
    assert keyed.exit_code == 0, keyed.stderr
    back = run_cli(*zk, "tail", topic07, "-n", "2", "--format", "json")
    found = [v for vs in json_values(back.stdout).values() for v in vs]
    assert "v1" in found and "v2" in found
    refused = run_cli(*zk, "produce", topic07, "--compression", "zstd", input=b"x\n")
    assert refused.exit_code == 2 and "0.7" in refused.stderr


def test_lag_of_a_kafka07_group_in_0_7s_layout(cluster07, topic07) -> None:
    group = "g07"
    zk = KazooClient(hosts=cluster07.connect)  # as a 0.7 consumer writes its offsets
    zk.start(timeout=30)
    try:
        zk.create(f"/consumers/{group}/offsets/{topic07}/1-0", b"9", makepath=True)
        zk.create(f"/consumers/{group}/offsets/{topic07}/2-1", b"0", makepath=True)
    finally:
        zk.stop()
        zk.close()
    result = run_cli("lag", group, "--zookeeper", cluster07.connect)  # no -b: found there
    assert result.exit_code == 0, result.stderr
    ends = {n: cluster07.location(topic07, n)[0].end_offset(topic07, cluster07.location(
        topic07, n)[1]) for n in range(4)}
    assert [(int(r["partition"]), int(r["committed"]), int(r["end"]), int(r["lag"]))
            for r in tsv(result.stdout)] == [(0, 9, ends[0], ends[0] - 9),
                                             (3, 0, ends[3], ends[3])]
    named = run_cli("--zookeeper", cluster07.connect, "lag", group, "--topic", topic07)
    assert [r["committed"] for r in tsv(named.stdout)] == ["9", "-", "-", "0"]


def test_check_on_a_kafka07_cluster_is_refused_with_a_hint(cluster07, topic07) -> None:
    result = run_cli("--zookeeper", cluster07.connect, "check")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "Kafka 0.7" in result.stderr and "topics, describe" in result.stderr


def test_a_kafka07_broker_as_bootstrap_server_hints_at_zookeeper(cluster07) -> None:
    broker = cluster07.brokers[1]
    result = run_cli("-b", f"{broker.host}:{broker.port}", "topics")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.stderr
    assert "zookeeper.connect" in result.stderr and "0.7" in result.stderr


def test_unreachable_zookeeper_is_one_line_within_the_connect_timeout(tmp_path: Path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("socket.connection.setup.timeout.ms=1500\n")
    address = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    result = run_cli("-F", str(props), "lag", "g", "--zookeeper", address)
    took = time.monotonic() - started
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1, result.stderr  # no kazoo log lines
    assert result.stderr.startswith("kafkawire: error: ") and address in result.stderr
    assert took < 6, took
