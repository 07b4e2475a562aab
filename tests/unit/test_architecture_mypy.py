"""mypy checks every module of the project, with the options the rest is checked with.

``make lint`` runs mypy on the files pyproject.toml's ``[tool.mypy]`` names; a module outside
them (a new folder, or a layer nobody added, as the Spark layer was until issue 47) is never
type-checked while ``make lint`` stays green, so the ``Cluster`` protocol and the typed protocol
bodies it uses go unchecked above the client. This rule asks mypy itself, as ``make lint`` runs
it (its config parser and its source finder, from the repository's root), which modules it
checks and with which options: a narrowed ``files`` list, an ``exclude`` or a per-module
override that loosens the checks fails here, naming the module. No module is exempt: the one
generated module, ``protocol/bodies.py`` (written by ``protocol/gen_bodies.py``), is checked
like the others.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest
from mypy.config_parser import parse_config_file
from mypy.find_sources import create_source_list
from mypy.options import Options

from tests.unit.test_architecture import ROOT, package_modules

#: The options every module is checked with: the bodies of unannotated functions too, an
#: ignore or cast that is no longer needed reported, names imported by a module not public
#: from it unless it says so, and nothing skipped or silenced.
STRICT = {
    "check_untyped_defs": True,
    "warn_unused_ignores": True,
    "warn_redundant_casts": True,
    "implicit_reexport": False,
    "ignore_errors": False,
    "follow_imports": "normal",
}


def mypy_options(root: Path) -> Options:
    """mypy's options as ``root/pyproject.toml`` sets them (a config error fails)."""
    options, errors = Options(), io.StringIO()
    parse_config_file(options, lambda: None, str(root / "pyproject.toml"), io.StringIO(), errors)
    assert not errors.getvalue(), errors.getvalue()
    return options


def mypy_gaps(root: Path) -> list[str]:
    """The project's modules under ``root`` that mypy, run from ``root`` (the working
    directory: mypy reads ``files`` and ``exclude`` relative to it), does not check or checks
    with an option other than ``STRICT``'s."""
    options = mypy_options(root)
    checked = {(root / source.path).resolve()
               for source in create_source_list(options.files or [], options)
               if source.path is not None}
    gaps: list[str] = []
    for name, path in sorted(package_modules(root).items()):
        if path.resolve() not in checked:
            gaps.append(f"{name}: not in mypy's files")
            continue
        module_options = options.clone_for_module(name)
        gaps.extend(f"{name}: {flag} = {getattr(module_options, flag)!r}"
                    for flag, strict in STRICT.items()
                    if getattr(module_options, flag) != strict)
    return gaps


def test_mypy_checks_every_module_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert mypy_gaps(ROOT) == []


def _write_project(root: Path, config: str) -> None:
    for module in ("spark_kafka_wire/__init__.py", "spark_kafka_wire/__main__.py",
                   "spark_kafka_wire/protocol/__init__.py", "spark_kafka_wire/protocol/a.py",
                   "spark_kafka_wire/spark/__init__.py", "spark_kafka_wire/spark/b.py",
                   "pyspark_kafkawire/__init__.py"):
        (root / module).parent.mkdir(parents=True, exist_ok=True)
        (root / module).write_text("")
    (root / "pyproject.toml").write_text(textwrap.dedent(config))


def test_the_mypy_rule_catches_what_it_forbids(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    # the lower layers listed one by one, a folder added later left out, one module silenced
    _write_project(tmp_path, """
        [tool.mypy]
        files = ["spark_kafka_wire/protocol", "spark_kafka_wire/__main__.py"]
        warn_unused_ignores = true
        warn_redundant_casts = true
        check_untyped_defs = true
        no_implicit_reexport = true

        [[tool.mypy.overrides]]
        module = ["spark_kafka_wire.protocol.a"]
        ignore_errors = true
        """)
    assert mypy_gaps(tmp_path) == [
        "pyspark_kafkawire: not in mypy's files",
        "spark_kafka_wire: not in mypy's files",
        "spark_kafka_wire.protocol.a: ignore_errors = True",
        "spark_kafka_wire.spark: not in mypy's files",
        "spark_kafka_wire.spark.b: not in mypy's files",
    ]
    # the whole packages, one folder excluded, one check left off for every module
    _write_project(tmp_path, """
        [tool.mypy]
        files = ["spark_kafka_wire", "pyspark_kafkawire"]
        exclude = ["spark_kafka_wire/spark/"]
        warn_unused_ignores = true
        warn_redundant_casts = true
        no_implicit_reexport = true
        """)
    assert mypy_gaps(tmp_path) == [
        "pyspark_kafkawire: check_untyped_defs = False",
        "spark_kafka_wire: check_untyped_defs = False",
        "spark_kafka_wire.__main__: check_untyped_defs = False",
        "spark_kafka_wire.protocol: check_untyped_defs = False",
        "spark_kafka_wire.protocol.a: check_untyped_defs = False",
        "spark_kafka_wire.spark: not in mypy's files",
        "spark_kafka_wire.spark.b: not in mypy's files",
    ]
