"""``make demo`` (spark_kafka_wire.testing.demo) as a newcomer runs it: it writes and reads back
every row, and what it prints is the demo's own report, without Spark's progress bars or log
lines (the quiet profile of spark_kafka_wire/testing/session.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.broker]


def test_demo_reports_without_spark_noise(bootstrap, tmp_path) -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap}
    done = subprocess.run([sys.executable, "-m", "spark_kafka_wire.testing.demo", "--rows",
                           "20000"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "every written row was read back" in done.stdout
    assert "written          20,000 rows" in done.stdout
    printed = done.stdout + done.stderr
    noise = [line for line in printed.splitlines()
             if re.search(r"\b(WARN|INFO)\b|\[Stage \d+|Setting default log level", line)]
    assert not noise, noise
