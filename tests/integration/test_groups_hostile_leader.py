"""A group's leader is another client, whichever joined first, and its assignment is data
(issue 45 item 8): a leader that assigns ``kafkawire consume orders --group G`` the partition of
a topic it did not subscribe to (``secret``) gets none of it read or committed.

The hostile leader is the test's own actor: a member through kafkawire's client whose
assignor hands every other member ``secret``'s partition beside ``orders``'."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import confluent_kafka as ck

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.groups.group_member import GroupMember, MemberSettings
from spark_kafka_wire.client.groups.group_offsets import fetch_committed
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.protocol.consumer_protocol import encode_assignment

ROOT = Path(__file__).resolve().parents[2]


class HostileLeader(GroupMember):
    """A member that, as leader, assigns each other member ``extra`` beside ``orders``-0."""

    extra: list[tuple[str, int]] = []
    orders = ""

    def _assign(self, protocol: str, members: list[Any]) -> list[Any]:
        return [{"member_id": m["member_id"], "assignment": encode_assignment(
            [] if m["member_id"] == self.member_id else [(self.orders, 0), *self.extra], 0)}
            for m in members]


def produce(bootstrap: str, topic: str, n: int) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 0})
    for i in range(n):
        producer.produce(topic, value=b"%s-%d" % (topic.encode(), i), partition=0)
    assert producer.flush(30) == 0


def test_a_leader_assigning_an_unsubscribed_topic_gets_it_neither_read_nor_committed(
        bootstrap: str, client: KafkaClient, new_topic) -> None:
    """Before the fix: the member printed ``secret``'s 4 records and committed offset 4 for
    it."""
    orders, secret = new_topic(1, "orders"), new_topic(1, "secret")
    produce(bootstrap, orders, 3)
    produce(bootstrap, secret, 4)
    group = f"hostile-{uuid.uuid4().hex[:8]}"
    leader = HostileLeader(KafkaClient(ClientConfig.from_servers(bootstrap)),
                           MemberSettings(group, (orders,), heartbeat_interval_ms=100))
    leader.orders, leader.extra = orders, [(secret, 0)]
    leader.join()  # alone in the group: its leader
    assert leader.leader
    stop = threading.Event()

    def lead() -> None:  # rejoin whenever the group rebalances, staying its leader
        while not stop.is_set():
            if leader.needs_rejoin:
                leader.join()
            time.sleep(0.05)

    thread = threading.Thread(target=lead, daemon=True)
    thread.start()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "spark_kafka_wire", "-b", bootstrap, "consume", orders,
             "--group", group, "-o", "beginning", "-e", "--format", "json"],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        thread.join(30)
        leader.leave()
    assert run.returncode == 0, run.stderr
    printed = [json.loads(line) for line in run.stdout.splitlines()]
    assert [(r["topic"], r["offset"]) for r in printed] == [(orders, o) for o in range(3)]
    assert secret in run.stderr and "did not subscribe to" in run.stderr  # the warning
    assert fetch_committed(client, group, [(orders, 0), (secret, 0)]) == {
        (orders, 0): 3, (secret, 0): -1}
