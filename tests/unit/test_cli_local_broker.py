"""``kafkawire broker``'s files and secrets (issue 45, item 12), with a stand-in for Tansu (a
script that writes down how it was started, then exits): the log is never opened through a
link another user planted, and a storage URL with a password may come from the environment,
never reaching a command line."""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from spark_kafka_wire.cli import local_broker
from spark_kafka_wire.cli.app import cli
from spark_kafka_wire.cli.local_broker import LocalBroker

pytestmark = pytest.mark.unit

PASSWORD = "st0rage-pw"


@pytest.fixture
def fake_tansu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Tansu replaced by a script writing its arguments and STORAGE_ENGINE, then exiting;
    the temporary directory is the test's own."""
    seen = tmp_path / "seen"
    seen.mkdir()
    script = tmp_path / "tansu"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}/argv\n'
                      f'printf "%s" "$STORAGE_ENGINE" > {seen}/storage\n')
    script.chmod(0o755)
    monkeypatch.setattr(local_broker, "tansu_binary", lambda: str(script))
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    return seen


def test_a_link_planted_at_the_log_path_is_not_followed(fake_tansu: Path) -> None:
    """Before, the log was /tmp/tansu-PORT.log, opened with O_TRUNC through whatever stood
    there: a link another local user planted had its target truncated and rewritten with
    this user's rights. Now the log is in a new private directory, opened without following
    a link."""
    shared = Path(tempfile.gettempdir())
    victim = fake_tansu.parent / "victim"
    victim.write_text("precious\n")
    port = 19092
    (shared / f"tansu-{port}.log").symlink_to(victim)  # the old, predictable path
    broker = LocalBroker(port)
    with pytest.raises(RuntimeError, match="exited at start"):
        broker.start(timeout=5)
    assert victim.read_text() == "precious\n"
    log = Path(broker.log_path)
    assert log.parent.parent == shared and log.parent.name.startswith("kafkawire-broker-")
    assert stat.S_IMODE(log.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and not log.is_symlink()
    # a link in its place (were the directory not private) is refused, not followed
    log.unlink()
    log.symlink_to(victim)
    with pytest.raises(OSError):
        broker.start(timeout=5)
    assert victim.read_text() == "precious\n"


def test_a_stopped_broker_takes_its_log_directory_with_it(fake_tansu: Path) -> None:
    """A broker that failed keeps its log (the messages name it); one stopped goes with it,
    and a restart gets a new private directory."""
    broker = LocalBroker(19093)
    first = Path(broker.log_path).parent
    broker.stop()  # never started: the directory stays
    assert first.is_dir()
    broker.process = subprocess.Popen(["sleep", "30"])  # as if Tansu ran
    broker.stop()
    assert not first.exists() and broker.process is None
    with pytest.raises(RuntimeError, match="exited at start"):
        broker.start(timeout=5)
    second = Path(broker.log_path).parent
    assert second != first and stat.S_IMODE(second.stat().st_mode) == 0o700


def test_the_storage_url_comes_from_the_environment_and_reaches_no_command_line(
        fake_tansu: Path) -> None:
    """KAFKAWIRE_STORAGE_ENGINE: a storage URL with a password, which `ps` would show every
    local user in kafkawire's argv. It reaches Tansu by its environment, as before."""
    url = f"postgres://kw:{PASSWORD}@127.0.0.1:1/db"
    done = CliRunner().invoke(cli, ["broker", "--port", "19094"],
                              env={"KAFKAWIRE_STORAGE_ENGINE": url})
    assert done.exit_code == 2, done.output
    assert (fake_tansu / "storage").read_text() == url
    assert PASSWORD not in (fake_tansu / "argv").read_text()
    assert PASSWORD not in done.output
    # the command line still wins over the environment
    CliRunner().invoke(cli, ["broker", "--port", "19094", "--storage-engine", "memory://x/"],
                       env={"KAFKAWIRE_STORAGE_ENGINE": url})
    assert (fake_tansu / "storage").read_text() == "memory://x/"
    assert os.environ.get("KAFKAWIRE_STORAGE_ENGINE") is None
