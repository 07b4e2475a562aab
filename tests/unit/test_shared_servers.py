"""tests/support/shared_servers.py: processes of one run racing for a server start it once and
share it; a server found dead is an error; the run's end stops every server and removes its
files, or keeps them when a test failed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import shared_servers

ROOT = Path(__file__).resolve().parents[2]

#: A process of the run asking for the "sleeper" server: it starts ``sleep`` in a session of
#: its own (as the brokers are started) and counts its starts in started.txt.
_ASKER = r"""
import os, subprocess, sys, time
from pathlib import Path
from tests.support import shared_servers

where = Path(sys.argv[1])

def start():
    with open(where / "started.txt", "a") as f:
        f.write("1\n")
    time.sleep(0.5)  # the others arrive while it starts
    files = where / "sleeper-files"
    files.mkdir()
    process = subprocess.Popen(["sleep", "60"], start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return {"port": 1234}, process.pid, [str(files)]

value = shared_servers.shared(where, "sleeper", start)
print(value["port"], (where / "sleeper.pid").read_text().strip())
"""


def _ask(where: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", _ASKER, str(where)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_processes_racing_for_a_server_start_it_once_and_the_end_stops_it(
        tmp_path: Path) -> None:
    askers = [_ask(tmp_path) for _ in range(3)]
    answers = {a.communicate(timeout=60)[0].strip() for a in askers}
    assert [a.returncode for a in askers] == [0, 0, 0]
    assert len(answers) == 1, answers
    port, pid = answers.pop().split()
    assert port == "1234"
    assert (tmp_path / "started.txt").read_text() == "1\n"
    assert shared_servers.alive(int(pid))
    assert shared_servers.stop_all(tmp_path) == []
    assert not shared_servers.alive(int(pid))
    assert not tmp_path.exists()


def test_a_failed_run_keeps_the_servers_files(tmp_path: Path) -> None:
    asker = _ask(tmp_path)
    _, pid = asker.communicate(timeout=60)[0].split()
    kept = shared_servers.stop_all(tmp_path, keep_files=True)
    assert kept == [str(tmp_path / "sleeper-files")]
    assert (tmp_path / "sleeper-files").is_dir()
    assert not shared_servers.alive(int(pid))


def test_a_shared_server_found_dead_is_an_error_naming_its_files(tmp_path: Path) -> None:
    asker = _ask(tmp_path)
    _, pid = asker.communicate(timeout=60)[0].split()
    os.killpg(int(pid), 9)
    deadline = time.monotonic() + 10
    while shared_servers.alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(RuntimeError, match="sleeper.*no longer running.*sleeper-files"):
        shared_servers.shared(tmp_path, "sleeper", lambda: pytest.fail("started again"))
