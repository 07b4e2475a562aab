"""``kafkawire --help`` and ``--version`` start in a blink (issue 33): the command group lists
its commands from ``cli/commands.py`` and imports a command's module only when it runs, so
these import click and this package's lightest modules only. Checked on the modules a fresh
process holds afterwards, not on a time (docs/cli.md reports measured times)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click
import pytest

from spark_kafka_wire.cli import cli
from spark_kafka_wire.cli.commands import COMMANDS

pytestmark = pytest.mark.unit

#: what a start-up that only prints must not import: the client and protocol layers (and with
#: them numpy, pyarrow, TLS and SASL libraries), rich, and pyspark
HEAVY = ("spark_kafka_wire.client", "spark_kafka_wire.protocol", "spark_kafka_wire.options",
         "spark_kafka_wire.formats", "numpy", "pyarrow", "cryptography", "scramp", "kazoo",
         "rich", "pyspark", "crc32c", "cramjam", "zstandard", "lz4")


def modules_after(*argv: str) -> tuple[int, str, list[str]]:
    """Exit status, stdout and the modules imported by ``kafkawire argv`` in a fresh process."""
    code = ("import json, sys\nfrom spark_kafka_wire.cli import main\n"
            f"sys.argv = ['kafkawire', *{list(argv)!r}]\n"
            "try:\n    main()\nexcept SystemExit as e:\n    status = e.code or 0\n"
            "print('\\nMODULES ' + json.dumps(sorted(sys.modules)))\nsys.exit(status)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    out, _, modules = done.stdout.rpartition("\nMODULES ")
    return done.returncode, out, json.loads(modules)


def heavy_in(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["-h"]])
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    status, out, modules = modules_after(*argv)
    assert status == 0, out
    assert heavy_in(modules) == []
    assert not [m for m in modules if m.startswith("spark_kafka_wire.cli.")
                and m not in ("spark_kafka_wire.cli.app", "spark_kafka_wire.cli.commands")]


def test_the_help_lists_every_command_with_its_summary() -> None:
    status, out, _ = modules_after("--help")
    assert status == 0
    listed = out.split("Commands:\n", 1)[1]
    for name, entry in COMMANDS.items():
        assert f"  {name}" in listed and entry.summary in " ".join(listed.split())


def test_a_command_imports_its_module_only_when_it_runs() -> None:
    status, _, modules = modules_after("tail", "--help")
    assert status == 0
    assert "spark_kafka_wire.cli.tail" in modules
    assert "spark_kafka_wire.cli.produce" not in modules and "pyspark" not in modules


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_table_entry_is_the_command_it_names(name: str) -> None:
    entry = COMMANDS[name]
    command = getattr(importlib.import_module(entry.module), entry.attribute)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.short_help == entry.summary  # the listing and the command agree
    assert cli.get_command(click.Context(cli), name) is command
