"""``make demo`` (spark_kafka_wire.testing.demo) as a newcomer runs it: in the demo's own
install (the Makefile's DEMO_STAMP recipe: the package and the [broker] extra, not the
development extras, issue 46 item 10) in a fresh venv, it writes and reads back every row, and
what it prints is the demo's own report, without Spark's progress bars or log lines (the quiet
profile of spark_kafka_wire/testing/session.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_architecture import ROOT, _make_recipe

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def _demo_install(tmp_path: Path) -> Path:
    """A fresh venv with what ``make demo`` installs, by the Makefile's own pip line, in a
    clean copy of the checkout (the editable install points there); pip's cache, filled by
    ``make venv``, serves the wheels."""
    [install] = [line for line in _make_recipe("$(DEMO_STAMP)") if "pip install" in line]
    source, venv = tmp_path / "source", tmp_path / "demo-venv"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "site"))
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    done = subprocess.run(install.replace("$(PY)", str(python)), shell=True, cwd=source,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return python


def test_demo_reports_without_spark_noise(bootstrap, tmp_path) -> None:
    python = _demo_install(tmp_path)
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap}
    for name in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(name, None)  # nothing of the test venv: the demo's install alone
    done = subprocess.run([str(python), "-m", "spark_kafka_wire.testing.demo", "--rows",
                           "20000"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "every written row was read back" in done.stdout
    assert "written          20,000 rows" in done.stdout
    printed = done.stdout + done.stderr
    noise = [line for line in printed.splitlines()
             if re.search(r"\b(WARN|INFO)\b|\[Stage \d+|Setting default log level", line)]
    assert not noise, noise
