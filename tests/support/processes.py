"""Start and stop the test servers (Tansu, stunnel, the KDC) by PID, and wait for their ports;
kill the process tree of a test's Spark job (``kill_tree``), as a lost machine would.

Every server is started in its own session so that stopping it by PID never touches anything
else on the machine; a server that ignores SIGTERM is killed after a bounded wait. Trees are
walked in /proc and each process is pinned by a pidfd before it is signalled, so only
processes the test started are killed.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Callable


def wait_for_port(port: int, process: subprocess.Popen | None, timeout: float, what: str,
                  log_path: str, host: str = "127.0.0.1") -> None:
    """Return once ``host``:``port`` accepts TCP connections; raise saying where the log is."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited at start with code {process.returncode}; "
                               f"see {log_path}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on {host}:{port} within "
                                   f"{timeout}s; see {log_path}") from None
            time.sleep(0.05)


def stop_process(process: subprocess.Popen | None, timeout: float = 5.0) -> None:
    """SIGTERM the process by its PID, SIGKILL it if it is still there after ``timeout``."""
    if process is None or process.poll() is not None:
        return
    try:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=timeout)
    except ProcessLookupError:
        pass


def stop_keeping_crash_log(process: subprocess.Popen | None, log_path: str,
                           expected_exit: bool = False) -> None:
    """Stop a server (``stop_process``) and remove its log, unless it had exited on its own
    before (a crash to look at; ``expected_exit``: it was killed on purpose, not a crash)."""
    crashed = process is not None and process.poll() is not None and not expected_exit
    stop_process(process)
    if process is not None and not crashed:
        try:
            os.remove(log_path)
        except FileNotFoundError:
            pass


def parent_of(pid: int) -> int | None:
    """The parent pid from /proc/PID/stat (its 4th field; the command in field 2 is in
    parentheses and may hold spaces, so split after its closing one)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None  # gone meanwhile


def command_line(pid: int) -> list[str]:
    """A process' argv from /proc ([] if it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return [a.decode(errors="replace") for a in cmdline.read().split(b"\0") if a]
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    """Every living process below ``pid`` (children, theirs, ...), from /proc (Linux).

    Needed because a process group is not a process tree: Spark's ``pyspark.daemon``
    processes put themselves in process groups of their own (``os.setpgid(0, 0)``), so a
    SIGKILL to a job's group leaves them and their forked workers running."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            parent = parent_of(int(name))
            if parent is not None:
                children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_processes(pids: list[int], timeout: float = 30.0,
                   before: Callable[[], None] | None = None) -> list[int]:
    """SIGKILL these processes and wait until each has exited; the pids that were alive.

    Each is pinned with a pidfd first, so the signal reaches that process and no other even
    if its pid is reused meanwhile. ``before`` runs after pinning, before the signals (to kill
    the parent first, whose death re-parents its children away)."""
    pinned: list[tuple[int, int]] = []
    try:
        for pid in pids:
            try:
                pinned.append((pid, os.pidfd_open(pid)))
            except ProcessLookupError:
                pass
        if before is not None:
            before()
        for _, fd in pinned:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        for pid, fd in pinned:  # a pidfd polls readable once its process has exited
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise RuntimeError(f"process {pid} outlived SIGKILL")
    finally:
        for _, fd in pinned:
            os.close(fd)
    return [pid for pid, _ in pinned]


def kill_tree(process: subprocess.Popen, timeout: float = 30.0) -> list[int]:
    """SIGKILL ``process``, its process group and every descendant together, as when the
    machine under them is lost, and reap ``process``; the descendants' pids."""

    def kill_group() -> None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    killed = kill_processes(descendants(process.pid), timeout, before=kill_group)
    process.wait(timeout)
    return killed
