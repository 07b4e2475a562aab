"""The older-releases matrix (issue 28 part 5): real Kafka 2.8 back to 0.8.2 in ZooKeeper mode.

Run by ``make test-compat`` (``pytest -m compat tests/compat``). ``make test`` must neither run
nor even import these modules (each release is a JVM and Maven resolution on first use), so
this directory is not collected unless the marker expression names ``compat``.

One broker runs at a time: ``old_kafka`` is session-scoped and parametrized over the
releases, and pytest groups the tests by its parameter, stopping one release before starting
the next. Start-up times are reported at the end of the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.kept_logs import logs_kept_on_failure
from tests.support.old_kafka import RELEASES, OldKafka, Release, missing_tools

#: release -> seconds to start, or the error it failed with (the terminal summary shows them)
STARTS: dict[str, str] = {}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if "compat" not in (config.option.markexpr or ""):
        return True
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if STARTS:
        terminalreporter.section("old Kafka releases (ZooKeeper mode, this JVM)")
        for version, outcome in STARTS.items():
            terminalreporter.write_line(f"{version:>9}: {outcome}")


#: KAFKAWIRE_COMPAT_RELEASES=0.8.2.2,2.8.2 runs a part of the matrix.
SELECTED = [v.strip() for v in os.environ.get("KAFKAWIRE_COMPAT_RELEASES", "").split(",")
            if v.strip()] or list(RELEASES)
_unknown = sorted(set(SELECTED) - set(RELEASES))
if _unknown:
    raise pytest.UsageError(f"KAFKAWIRE_COMPAT_RELEASES names unknown releases {_unknown}; "
                            f"known: {', '.join(RELEASES)}")


@pytest.fixture(scope="session", params=SELECTED, ids=SELECTED)
def release(request: pytest.FixtureRequest) -> Release:
    return RELEASES[request.param]


@pytest.fixture(scope="session")
def old_kafka(release: Release, zookeeper: str, request: pytest.FixtureRequest):
    """The release's broker (one JVM, ZooKeeper-mode, on Debian's ZooKeeper under a chroot of
    its own); its logs are kept when a test failed."""
    missing = missing_tools(release)
    if missing:
        pytest.skip(missing)
    broker = OldKafka(release, zookeeper)
    try:
        broker.start()
    except RuntimeError:
        STARTS[release.version] = f"did not start: {broker.first_error()[:400]}"
        raise
    STARTS[release.version] = f"started in {broker.started_s:.1f} s"
    with logs_kept_on_failure(request, broker.stop, f"Kafka {release.version}",
                              lambda: broker.directory):
        yield broker
