"""Start and stop the test servers (Tansu, stunnel, the KDC) by PID, and wait for their ports.

Every server is started in its own session so that stopping it by PID never touches anything
else on the machine; a server that ignores SIGTERM is killed after a bounded wait.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time


def wait_for_port(port: int, process: subprocess.Popen | None, timeout: float, what: str,
                  log_path: str) -> None:
    """Return once 127.0.0.1:``port`` accepts TCP connections; raise saying where the log is."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited at start with code {process.returncode}; "
                               f"see {log_path}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within "
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
