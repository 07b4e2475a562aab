"""Servers started once and shared by every process of a test run (issue 44): the session's
Apache Kafka broker, the Apicurio Registry and the PKI their TLS listeners present.

A run's processes are pytest's xdist workers, and with ``.ci/run`` the tiers run one after the
other: each used to start its own broker and registry (three of each in ``make test``, one more
per tier), a JVM start of 10 to 20 s of CPU each on a two-core machine. Now the first process
that asks for a server starts it under a lock and writes down how to reach it in the run's
directory (``KAFKAWIRE_SHARED_SERVERS``); the others read that entry. Topics, groups,
subjects and transactional ids are uuid-named, so the tests of different workers never meet
on a shared server.

Who stops them: the process that made the directory. ``pytest_configure`` of the run's first
pytest process (xdist's controller, or the only process) makes one when the environment names
none, hands it to the workers through the environment, and stops every server in it at
``pytest_unconfigure``, keeping their files when a test failed. When the environment already
names one (``.ci/run`` makes it for all its tiers), the tiers reuse its servers and the maker
stops them at its end (``python -m tests.support.shared_servers stop DIR``).

An entry is a pickle of the fixture's value (its ``process`` handle left out: only the
starter holds it) and the pid of the server's process group. A server found dead is an
error naming its files, never silently restarted: a test that killed a shared server is a bug.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pickle
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

#: The environment variable naming the run's directory of shared servers.
ENV = "KAFKAWIRE_SHARED_SERVERS"
#: Seconds a server gets to stop on SIGTERM before SIGKILL (Kafka's controlled shutdown).
STOP_TIMEOUT_S = 30.0

T = TypeVar("T")


@dataclass
class Entry:
    """One shared server: the fixture's value, the process group to stop, the files to
    remove (kept when a test failed)."""

    value: object
    pid: int | None
    directories: list[str] = field(default_factory=list)
    name: str = ""


def directory() -> Path | None:
    """The run's directory of shared servers, or None outside a run that made one."""
    named = os.environ.get(ENV)
    return Path(named) if named else None


def make_directory() -> Path:
    """A new private directory for a run's shared servers, named in this process' environment
    (the workers and tiers it starts inherit it)."""
    made = Path(tempfile.mkdtemp(prefix="kafkawire-shared-"))
    os.environ[ENV] = str(made)
    return made


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def shared(where: Path, name: str, start: Callable[[], tuple[T, int | None, list[str]]]) -> T:
    """The value of shared server ``name``: read from ``where`` when a process of the run
    started it, else ``start()`` now, which returns the value (picklable), the pid of the
    server's process group (None for files alone) and the directories its files are in."""
    entry_path = where / f"{name}.pickle"
    with _locked(where / f"{name}.lock"):
        if entry_path.exists():
            entry = pickle.loads(entry_path.read_bytes())
            if entry.pid is not None and not alive(entry.pid):
                raise RuntimeError(
                    f"the run's shared {name} (pid {entry.pid}) is no longer running; its "
                    f"files: {', '.join(entry.directories) or '(none)'}. A test stopped a "
                    "server every process shares: give it a server of its own")
            return entry.value  # type: ignore[no-any-return]
        value, pid, directories = start()
        if pid is not None:
            # for .ci/run's check of processes left running, which cannot read a pickle
            (where / f"{name}.pid").write_text(f"{pid}\n")
        partial = entry_path.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(Entry(value, pid, directories, name)))
        partial.rename(entry_path)
        return value


def entries(where: Path) -> list[Entry]:
    return [pickle.loads(p.read_bytes()) for p in sorted(where.glob("*.pickle"))]


def stop_all(where: Path, keep_files: bool = False) -> list[str]:
    """Stop every server in ``where`` (SIGTERM to its process group, SIGKILL after
    STOP_TIMEOUT_S) and remove their files and the directory, unless ``keep_files``: then
    the directories kept are returned, for the run to say where they are."""
    if not where.is_dir():
        return []
    found = entries(where)
    for entry in found:
        if entry.pid is not None:
            _stop_group(entry.pid)
    kept = [d for e in found for d in e.directories]
    if keep_files and kept:
        return kept
    for path in kept:
        shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(where, ignore_errors=True)
    return []


def _stop_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            if not alive(pid):
                return
            time.sleep(0.1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.support.shared_servers")
    sub = parser.add_subparsers(dest="command", required=True)
    stop = sub.add_parser("stop", help="stop a run's shared servers and remove their files")
    stop.add_argument("directory", type=Path)
    stop.add_argument("--keep-files", action="store_true",
                      help="keep the servers' files (logs) and say where they are")
    args = parser.parse_args(argv)
    for path in stop_all(args.directory, keep_files=args.keep_files):
        print(f"a shared server's logs are kept in {path}")


if __name__ == "__main__":
    main()
