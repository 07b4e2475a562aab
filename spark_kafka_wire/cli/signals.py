"""Ctrl-C and SIGTERM as one orderly stop for the commands that run until stopped
(``broker``, ``consume --group``).

Both signals raise KeyboardInterrupt in the main thread, so the command's ``finally`` blocks
run: the broker stops Tansu, a group member commits what it printed and leaves its group. The
handlers are set here rather than inherited: a shell starts a background job (``kafkawire
consume -G g orders &``, and so a CI script run in the background) with SIGINT ignored,
which Python then keeps, so ``kill -INT`` would do nothing; and SIGTERM (``kill``, ``timeout``,
``docker stop``, systemd) would otherwise end the process without its ``finally`` blocks.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

#: The signals that stop a long-running command.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGINT and SIGTERM: the same orderly stop


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise KeyboardInterrupt; the previous handlers
    come back after it. Outside the main thread (where Python allows no handler) nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
