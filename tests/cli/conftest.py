"""Helpers for the CLI tests: run ``kafkawire`` in-process with click's runner and read its
tab-separated output (what it prints to a pipe)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from spark_kafka_wire.cli import cli

#: Run by ``make test-parity`` beside Spark's own kafka format: kafkawire's output against
#: Kafka's own tools (a JVM per tool run, about a minute), kept out of ``make test``'s budget.
PARITY_FILES = ("test_cli_kafka_tools.py",)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.name in PARITY_FILES and "parity" not in (config.option.markexpr or ""):
        return True
    return None


def run_cli(*args: str, input: bytes | str | None = None, env: dict | None = None) -> Result:
    """``kafkawire ARGS`` in this process; KAFKA_BOOTSTRAP_SERVERS unset unless ``env`` sets
    it, so a test says which broker it means."""
    environment = {"KAFKA_BOOTSTRAP_SERVERS": None, **(env or {})}
    return CliRunner().invoke(cli, list(args), input=input, env=environment,
                              catch_exceptions=False)


def tsv(text: str) -> list[dict[str, str]]:
    """Rows of a TSV table (header line first) as dicts."""
    lines = [line for line in text.splitlines() if line]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


@pytest.fixture
def kw(bootstrap: str) -> Callable[..., Result]:
    """``kafkawire -b <test broker> ARGS``."""

    def run(*args: str, input: bytes | str | None = None) -> Result:
        return run_cli("--bootstrap-server", bootstrap, *args, input=input)

    return run
