"""A broker fixture's ending: stop the broker, keeping its logs when a test failed while it
ran (and saying where they are), removing them otherwise.

The session's Apache Kafka, the security broker, each older release of tests/compat, the
killable broker and the two-broker cluster of tests/faults all end this way; the one place
keeps their behaviour the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def logs_kept_on_failure(request: pytest.FixtureRequest, stop: Callable[[bool], None],
                         name: str, where: Callable[[], object]) -> Iterator[None]:
    """Around a fixture's ``yield``: afterwards ``stop(keep_logs)``, keep_logs being whether
    a test failed in between; when it is, prints "<name>'s logs are kept in <where()>"."""
    failed_before = request.session.testsfailed
    try:
        yield
    finally:
        keep = request.session.testsfailed > failed_before
        stop(keep)
        if keep:
            print(f"\n{name}'s logs are kept in {where()}")
