"""Rules of the package's layout beside the layering of test_architecture.py (issue 47): the
client owns its defaults and imports nothing of options/; client/ is laid out by concern (the
wire, metadata, fetching, producing, groups, the Schema Registry, ZooKeeper, security, Kafka
0.7), each folder saying what it holds, with only what every concern shares at its top; the CLI parses produce options as
queries do, in options/, without importing the Spark write side; option modules stay short
enough to read whole; no function is too long to follow.

Each rule is a function over a tree of modules, so a small package that breaks it shows it
fails (``test_the_layout_rules_catch_what_they_forbid``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_architecture import imports_of, package_modules

#: The most lines a module of options/ may have: the table's rows are split by area
#: (options/rows/), the security parsers by concern, so each module is read whole.
MAX_OPTIONS_MODULE_LINES = 500
#: The most lines a function may span (``def`` to its last line, nested functions included):
#: a longer one is split into named steps.
MAX_FUNCTION_LINES = 100
#: The modules client/ keeps at its top: what every concern of the client shares (its
#: settings and their defaults, its errors, the operator's settings, the per-process pool).
#: Everything else sits in the folder of its concern, whose ``__init__`` says what it holds.
CLIENT_SHARED_MODULES = {"config", "defaults", "errors", "operator", "pool"}
#: The client's folders, one per concern (ARCHITECTURE.md draws each).
CLIENT_CONCERNS = {"wire", "metadata", "fetching", "producer", "groups", "registry",
                   "zookeeper", "security", "kafka07"}


def _layer_imports(modules: dict[str, Path], importer: str, target: str) -> list[str]:
    """Every import (lazy and ``TYPE_CHECKING`` ones included) of a module under ``target``
    written in a module under ``importer``."""
    names = set(modules)
    found = []
    for name, path in sorted(modules.items()):
        if name != importer and not name.startswith(importer + "."):
            continue
        for imp in imports_of(name, path, names):
            if imp.target == target or imp.target.startswith(target + "."):
                found.append(f"{name}:{imp.line}: imports {imp.target}")
    return found


def client_imports_of_options(modules: dict[str, Path]) -> list[str]:
    return _layer_imports(modules, "spark_kafka_wire.client", "spark_kafka_wire.options")


def cli_imports_of_sink(modules: dict[str, Path]) -> list[str]:
    return (_layer_imports(modules, "spark_kafka_wire.cli", "spark_kafka_wire.sink")
            + _layer_imports(modules, "spark_kafka_wire.__main__", "spark_kafka_wire.sink"))


def client_layout(modules: dict[str, Path]) -> list[str]:
    """What breaks client/'s layout by concern: a module at its top that no concern shares, a
    folder that is no concern, a folder whose ``__init__`` has no docstring saying what it
    holds."""
    found = []
    prefix = "spark_kafka_wire.client."
    for name, path in sorted(modules.items()):
        if not name.startswith(prefix):
            continue
        parts = name.removeprefix(prefix).split(".")
        is_package = path.name == "__init__.py"
        if len(parts) == 1 and not is_package and parts[0] not in CLIENT_SHARED_MODULES:
            found.append(f"{name}: a module at client/'s top; move it to its concern's folder")
        elif len(parts) == 1 and is_package:
            if parts[0] not in CLIENT_CONCERNS:
                found.append(f"{name}: a folder that is no concern of CLIENT_CONCERNS")
            if not ast.get_docstring(ast.parse(path.read_text())):
                found.append(f"{name}: its __init__ has no docstring saying what it holds")
    return found


def long_options_modules(modules: dict[str, Path]) -> list[str]:
    found = []
    for name, path in sorted(modules.items()):
        if name.startswith("spark_kafka_wire.options."):
            lines = len(path.read_text().splitlines())
            if lines > MAX_OPTIONS_MODULE_LINES:
                found.append(f"{name}: {lines} lines")
    return found


def long_functions(modules: dict[str, Path]) -> list[str]:
    found = []
    for name, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno}: {node.name} has {lines} lines")
    return found


def test_the_client_imports_nothing_from_options() -> None:
    """The client's settings own their defaults (client/defaults.py), which the option table
    reads: no client module imports options/ (the Spark face's option table included), even
    lazily or for type checking."""
    assert client_imports_of_options(package_modules()) == []


def test_the_cli_imports_nothing_from_sink() -> None:
    """The CLI's produce parses its settings with options/produce.py, as a query's write does;
    it never imports the Spark write side (sink/)."""
    assert cli_imports_of_sink(package_modules()) == []


def test_no_options_module_is_over_500_lines() -> None:
    assert long_options_modules(package_modules()) == []


def test_no_function_is_over_100_lines() -> None:
    """Over spark_kafka_wire and pyspark_kafkawire."""
    modules = package_modules()
    assert "pyspark_kafkawire" in modules
    assert long_functions(modules) == []


def test_the_client_is_laid_out_by_concern() -> None:
    assert client_layout(package_modules()) == []


def test_the_layout_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    files = {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/__main__.py": "from spark_kafka_wire.sink import w\n",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/defaults.py": "X = 1\n",
        "spark_kafka_wire/client/stray.py": "",
        "spark_kafka_wire/client/wire/__init__.py": '"""One connection."""\n',
        "spark_kafka_wire/client/wire/session.py": "",
        "spark_kafka_wire/client/fetching/__init__.py": "",
        "spark_kafka_wire/client/misc/__init__.py": '"""Odds and ends."""\n',
        "spark_kafka_wire/client/c.py": (
            "from typing import TYPE_CHECKING\nfrom spark_kafka_wire.client import defaults\n"
            "if TYPE_CHECKING:\n    from spark_kafka_wire.options.table import Option\n"
            "def f():\n    import spark_kafka_wire.options\n"),
        "spark_kafka_wire/options/__init__.py": "",
        "spark_kafka_wire/options/table.py": "from spark_kafka_wire.client import defaults\n",
        "spark_kafka_wire/options/long.py": "x = 1\n" * (MAX_OPTIONS_MODULE_LINES + 1),
        "spark_kafka_wire/options/short.py": "x = 1\n" * MAX_OPTIONS_MODULE_LINES,
        "spark_kafka_wire/sink/__init__.py": "",
        "spark_kafka_wire/sink/w.py": "",
        "spark_kafka_wire/sink/kafka07_writer.py": "",
        "spark_kafka_wire/cli/__init__.py": "",
        "spark_kafka_wire/cli/p.py": (
            "from spark_kafka_wire.sink.w import parse\n"
            "from spark_kafka_wire.sink.kafka07_writer import topic_writer\n"
            "from spark_kafka_wire.options import produce\n"),
        "pyspark_kafkawire/__init__.py": (
            "def long():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
            + "def fits():\n" + "    x = 1\n" * (MAX_FUNCTION_LINES - 1)),
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    modules = package_modules(tmp_path)
    assert client_imports_of_options(modules) == [
        "spark_kafka_wire.client.c:4: imports spark_kafka_wire.options.table",
        "spark_kafka_wire.client.c:6: imports spark_kafka_wire.options",
    ]
    assert cli_imports_of_sink(modules) == [
        "spark_kafka_wire.cli.p:1: imports spark_kafka_wire.sink.w",
        "spark_kafka_wire.cli.p:2: imports spark_kafka_wire.sink.kafka07_writer",
        "spark_kafka_wire.__main__:1: imports spark_kafka_wire.sink.w",
    ]
    assert client_layout(modules) == [
        "spark_kafka_wire.client.c: a module at client/'s top; move it to its concern's folder",
        "spark_kafka_wire.client.fetching: its __init__ has no docstring saying what it holds",
        "spark_kafka_wire.client.misc: a folder that is no concern of CLIENT_CONCERNS",
        "spark_kafka_wire.client.stray: a module at client/'s top; move it to its concern's "
        "folder",
    ]
    assert long_options_modules(modules) == [
        f"spark_kafka_wire.options.long: {MAX_OPTIONS_MODULE_LINES + 1} lines"]
    assert long_functions(modules) == [
        f"pyspark_kafkawire:1: long has {MAX_FUNCTION_LINES + 1} lines"]
