"""``kafkawire consume --group`` against the real broker: members of one group split the
partitions (kafkawire with kafkawire, kafkawire with librdkafka), what they printed is
committed where ``groups describe`` and librdkafka read it, and a member that leaves hands its
partitions to the others."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import confluent_kafka as ck
import pytest

from tests.cli.conftest import tsv
from tests.cli.test_cli_commands import rd_produce
from tests.cli.test_cli_groups import rd_group_state

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[2]


class Member:
    """``kafkawire -b BOOTSTRAP consume ...`` in its own process, its JSON lines collected;
    ``background``: started as a shell starts ``... &``, with SIGINT ignored."""

    def __init__(self, bootstrap: str, *args: str, background: bool = False) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "spark_kafka_wire", "-b", bootstrap, "consume", *args,
             "--format", "json"], env=env, cwd=ROOT, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if background
            else None)
        self.records: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.records.append(json.loads(line))

    def positions(self) -> set[tuple[int, int]]:
        return {(r["partition"], r["offset"]) for r in self.records}

    def stop(self, signum: int = signal.SIGINT) -> str:
        """Ctrl-C, as a user stops it (or ``signum``); its stderr."""
        self.proc.send_signal(signum)
        _, err = self.proc.communicate(timeout=60)
        self._reader.join(10)
        return err


@pytest.fixture
def members(bootstrap: str) -> Iterator[Callable[..., Member]]:
    started: list[Member] = []

    def start(*args: str, background: bool = False) -> Member:
        started.append(Member(bootstrap, *args, background=background))
        return started[-1]

    yield start
    for m in started:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.communicate()


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} in {timeout:.0f} s"
        time.sleep(0.2)


def described(kw, group: str) -> list[dict[str, str]]:
    """``groups describe`` rows; none for a group not created yet (no member joined)."""
    result = kw("groups", "describe", group)
    if result.exit_code == 1 and "does not exist" in result.stderr:
        return []
    assert result.exit_code == 0, result.stderr
    return tsv(result.stdout) if result.stdout.strip() else []


def owners(kw, group: str) -> dict[int, str]:
    """partition -> member id of a Stable group (empty while it rebalances)."""
    return {int(r["partition"]): r["member"] for r in described(kw, group)
            if r.get("member") not in (None, "", "-")}


def produce(bootstrap: str, topic: str, per_partition: int, start: int = 0) -> None:
    rd_produce(bootstrap, topic, [{"value": b"v%d-%d" % (p, i), "partition": p}
                                  for i in range(start, start + per_partition)
                                  for p in range(4)])


def test_two_members_split_the_partitions_and_commit_what_they_printed(
        kw, bootstrap, new_topic, members) -> None:
    topic = new_topic(4, "cli-group")
    group = f"kw-group-{uuid.uuid4().hex[:8]}"
    a = members(topic, "--group", group)
    b = members(topic, "--group", group)
    wait_for("split", lambda: len(owners(kw, group)) == 4
             and len(set(owners(kw, group).values())) == 2)
    produce(bootstrap, topic, 10)
    wait_for("records", lambda: len(a.records) + len(b.records) >= 40)
    time.sleep(1)  # nothing more comes
    a.stop()
    b.stop()
    assert a.proc.returncode == b.proc.returncode == 130
    mine, theirs = {p for p, _ in a.positions()}, {p for p, _ in b.positions()}
    assert mine and theirs and not mine & theirs
    both = [(r["partition"], r["offset"]) for r in a.records + b.records]
    assert sorted(both) == [(p, o) for p in range(4) for o in range(10)]  # exactly once

    rows = described(kw, group)
    assert {(int(r["partition"]), r["committed"]) for r in rows} == {(p, "10") for p in range(4)}

    # librdkafka continues from the commits: only what is written now, nothing twice
    produce(bootstrap, topic, 3, start=10)
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "auto.offset.reset": "earliest", "log_level": 0})
    consumer.subscribe([topic])
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < 12 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.partition(), m.offset()))
        time.sleep(1)
        while (m := consumer.poll(0.5)) is not None:
            got.append((m.partition(), m.offset()))
    finally:
        consumer.close()
    assert sorted(got) == [(p, o) for p in range(4) for o in range(10, 13)]


def test_a_member_beside_librdkafka_and_taking_over_when_it_leaves(
        kw, bootstrap, new_topic, members) -> None:
    topic = new_topic(4, "cli-group-rd")
    group = f"kw-rd-{uuid.uuid4().hex[:8]}"
    mine = members(topic, "--group", group, "--assignor", "range")
    wait_for("assignment", lambda: len(owners(kw, group)) == 4)
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "partition.assignment.strategy": "range",
                            "auto.offset.reset": "earliest", "log_level": 0})
    consumer.subscribe([topic])
    theirs: list[tuple[int, int]] = []
    try:
        def shared() -> bool:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                theirs.append((m.partition(), m.offset()))
            return len(consumer.assignment()) == 2 and len(set(owners(kw, group).values())) == 2

        wait_for("shared assignment", shared)
        rd_parts = {tp.partition for tp in consumer.assignment()}
        produce(bootstrap, topic, 5)

        def all_read() -> bool:
            m = consumer.poll(0.2)
            if m is not None and m.error() is None:
                theirs.append((m.partition(), m.offset()))
            return len(theirs) + len(mine.records) >= 20

        wait_for("records", all_read)
        assert {p for p, _ in mine.positions()} == set(range(4)) - rd_parts
        assert {p for p, _ in theirs} == rd_parts
        assert sorted(theirs + sorted(mine.positions())) == \
            [(p, o) for p in range(4) for o in range(5)]
    finally:
        consumer.close()  # librdkafka leaves the group
    wait_for("takeover", lambda: len(owners(kw, group)) == 4
             and len(set(owners(kw, group).values())) == 1)
    produce(bootstrap, topic, 2, start=5)
    wait_for("records after the takeover", lambda: len(mine.records) >= 10 + 8)
    time.sleep(1)
    mine.stop()
    later = [(r["partition"], r["offset"]) for r in mine.records[10:]]
    # librdkafka committed what it read (auto commit on close): nothing is read twice
    assert sorted(later) == [(p, o) for p in range(4) for o in range(5, 7)]


def test_cooperative_sticky_members_split_in_two_rebalances(
        kw, bootstrap, new_topic, members) -> None:
    """KIP-429: the first member keeps two of its partitions through the rebalance the
    second one's join starts, gives up two, and the second rebalance hands them over."""
    topic = new_topic(4, "cli-group-coop")
    group = f"kw-coop-{uuid.uuid4().hex[:8]}"
    a = members(topic, "--group", group, "--assignor", "cooperative-sticky")
    wait_for("assignment", lambda: len(owners(kw, group)) == 4)
    [first] = set(owners(kw, group).values())
    produce(bootstrap, topic, 2)
    wait_for("records", lambda: len(a.records) >= 8)
    b = members(topic, "--group", group, "--assignor", "cooperative-sticky")
    wait_for("split", lambda: len(owners(kw, group)) == 4
             and len(set(owners(kw, group).values())) == 2)
    kept = {p for p, m in owners(kw, group).items() if m == first}
    assert len(kept) == 2
    produce(bootstrap, topic, 3, start=2)
    wait_for("records", lambda: len(a.records) + len(b.records) >= 8 + 12)
    time.sleep(1)
    a.stop()
    b.stop()
    assert {p for p, o in a.positions() if o >= 2} == kept
    assert {p for p, _ in b.positions()} == set(range(4)) - kept
    both = sorted((r["partition"], r["offset"]) for r in a.records + b.records)
    assert both == [(p, o) for p in range(4) for o in range(5)]  # exactly once


def test_exit_at_end_commits_and_a_second_run_starts_there(kw, bootstrap, new_topic) -> None:
    topic = new_topic(4, "cli-group-e")
    group = f"kw-e-{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, 3)
    # no commit yet: -o beginning reads from the start (kafka-console-consumer's
    # --from-beginning); without it a new group starts at the end
    first = kw("consume", topic, "--group", group, "-e", "--format", "json", "-o",
               "beginning")
    assert first.exit_code == 0, first.stderr
    got = sorted((json.loads(line)["partition"], json.loads(line)["offset"])
                 for line in first.stdout.splitlines())
    assert got == [(p, o) for p in range(4) for o in range(3)]
    assert {(int(r["partition"]), r["committed"]) for r in described(kw, group)} == \
        {(p, "3") for p in range(4)}
    produce(bootstrap, topic, 1, start=3)
    second = kw("consume", topic, "--group", group, "-e", "--format", "json", "-o",
                "beginning")
    assert second.exit_code == 0, second.stderr
    assert sorted((json.loads(line)["partition"], json.loads(line)["offset"])
                  for line in second.stdout.splitlines()) == [(p, 3) for p in range(4)]
    fresh = kw("consume", topic, "--group", f"{group}-new", "-e", "--format", "json")
    assert fresh.exit_code == 0 and fresh.stdout == ""  # latest: nothing before now


def test_count_commits_only_what_was_printed(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-group-c")
    group = f"kw-c-{uuid.uuid4().hex[:8]}"
    rd_produce(bootstrap, topic, [{"value": b"v%d" % i, "partition": 0} for i in range(10)])
    first = kw("consume", topic, "-G", group, "-o", "beginning", "-c", "4", "--format", "json")
    assert first.exit_code == 0, first.stderr
    assert [json.loads(line)["offset"] for line in first.stdout.splitlines()] == [0, 1, 2, 3]
    assert [r["committed"] for r in described(kw, group)] == ["4"]
    # tail --group: the commit, the rest of the partition
    rest = kw("tail", topic, "--group", group, "--format", "json")
    assert rest.exit_code == 0, rest.stderr
    assert [json.loads(line)["offset"] for line in rest.stdout.splitlines()] == \
        list(range(4, 10))


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT to a background job"])
def test_sigterm_and_a_background_jobs_sigint_commit_and_leave(kw, bootstrap, new_topic,
                                                               members, how) -> None:
    """``kill`` (SIGTERM: timeout, docker stop, systemd) and ``kill -INT`` of a job a shell
    started in the background (SIGINT ignored, which Python keeps) stop a member as Ctrl-C
    does: it commits what it printed and leaves the group at once."""
    topic = new_topic(2, "cli-group-sig")
    group = f"kw-sig-{uuid.uuid4().hex[:8]}"
    background = how != "SIGTERM"
    m = members(topic, "--group", group, "-o", "beginning", background=background)
    wait_for("assignment", lambda: len(owners(kw, group)) == 2)
    written = [{"value": b"v%d" % i, "partition": i % 2} for i in range(6)]
    rd_produce(bootstrap, topic, written)
    wait_for("records", lambda: len(m.records) >= 6)
    m.stop(signal.SIGINT if background else signal.SIGTERM)
    assert m.proc.returncode == 130
    assert {(int(r["partition"]), r["committed"]) for r in described(kw, group)} == \
        {(0, "3"), (1, "3")}
    assert rd_group_state(bootstrap, group) == "EMPTY"  # left, not waiting for its session


def test_joining_is_said_at_once_and_what_it_gave_after(kw, new_topic) -> None:
    """A coordinator holds a JoinGroup while it waits for other members (issue 46 item 9: 24 s
    of silence on Tansu): the member says on stderr that it is joining before it asks, and
    what it was given once it is in; stdout stays the records'."""
    topic = new_topic(2, "cli-group-say")
    group = f"kw-say-{uuid.uuid4().hex[:8]}"
    result = kw("consume", topic, "-G", group, "-e", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""  # a new group starts at the end
    said = result.stderr.splitlines()
    assert len(said) == 2, result.stderr
    assert said[0] == (f"kafkawire: joining group '{group}' (the coordinator waits for the "
                       "group's other members before it hands out partitions)...")
    assert re.fullmatch(rf"kafkawire: joined group '{group}' in \d+\.\d s, generation \d+ "
                        rf"\(leader\): {topic} \[0, 1\]", said[1]), said


def test_group_usage_errors(kw, new_topic) -> None:
    topic = new_topic(1, "cli-group-u")
    result = kw("consume", topic, "--group", "g", "--partition", "0")
    assert result.exit_code == 2 and "--partition and --group" in result.stderr
    result = kw("consume", topic, "--group", "g", "--assignor", "sticky")
    assert result.exit_code == 2 and "sticky" in result.stderr
