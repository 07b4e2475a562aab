"""The console entry as users run it: ``python -m spark_kafka_wire`` in its own process, which
never imports pyspark (the CLI answers without Spark's start-up), and the ``kafkawire`` script
declared in pyproject.toml."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import spark_kafka_wire
from spark_kafka_wire.cli import main

ROOT = Path(__file__).resolve().parents[2]

# Runs the module as ``python -m`` does, then reports which pyspark modules got imported.
RUN_AND_REPORT = """
import runpy, sys
sys.argv = ["kafkawire", *sys.argv[1:]]
try:
    runpy.run_module("spark_kafka_wire", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "pyspark")
print("PYSPARK-MODULES:" + ",".join(loaded), file=sys.stderr)
sys.exit(code)
"""


def run(*args: str, script: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    command = [sys.executable, "-c", script, *args] if script else \
        [sys.executable, "-m", "spark_kafka_wire", *args]
    return subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_python_m_version() -> None:
    done = run("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"kafkawire (spark-kafka-wire) {spark_kafka_wire.__version__}"


def test_version_and_help_import_no_pyspark() -> None:
    for args in (["--version"], ["--help"], ["tail", "--help"]):
        done = run(*args, script=RUN_AND_REPORT)
        assert done.returncode == 0, done.stderr
        assert "PYSPARK-MODULES:\n" in done.stderr, done.stderr


@pytest.mark.broker
def test_a_command_in_its_own_process_imports_no_pyspark(bootstrap, new_topic) -> None:
    topic = new_topic(2, "cli-process")
    done = run("-b", bootstrap, "describe", topic, script=RUN_AND_REPORT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "partition\tleader\treplicas\tisr\tearliest\tlatest"
    assert len(done.stdout.splitlines()) == 3
    assert "PYSPARK-MODULES:\n" in done.stderr, done.stderr
    plain = run("-b", bootstrap, "topics")  # and exactly as a user types it
    assert plain.returncode == 0 and topic in plain.stdout


#: what a command that asks only for metadata or offsets must not import (issue 33: it starts
#: in about half the time of one that reads records): record decoding, TLS and SASL libraries
#: the connection does not use, rich for output to a pipe, ZooKeeper's client
NOT_FOR_METADATA = ("numpy", "pyarrow", "cryptography", "scramp", "rich", "kazoo", "crc32c",
                    "cramjam", "zstandard", "lz4", "pyspark")

RUN_AND_REPORT_ALL = RUN_AND_REPORT.replace(
    'loaded = sorted(m for m in sys.modules if m.split(".")[0] == "pyspark")',
    'loaded = sorted(m for m in sys.modules if "." not in m)').replace(
    "PYSPARK-MODULES:", "TOP-MODULES:")


@pytest.mark.broker
@pytest.mark.parametrize("command", [["topics"], ["describe", "{topic}"],
                                     ["offsets", "{topic}"], ["lag", "g", "-t", "{topic}"]])
def test_metadata_commands_import_no_record_decoding(bootstrap, new_topic, command) -> None:
    """``topics``, ``describe``, ``offsets`` and ``lag`` over a plaintext connection, printing
    to a pipe, import none of NOT_FOR_METADATA (a time is not asserted: docs/cli.md reports
    measured times)."""
    topic = new_topic(1, "cli-light")
    done = run("-b", bootstrap, *(a.format(topic=topic) for a in command),
               script=RUN_AND_REPORT_ALL)
    assert done.returncode == 0, done.stderr
    loaded = done.stderr.rsplit("TOP-MODULES:", 1)[1].strip().split(",")
    assert "spark_kafka_wire" in loaded
    assert [m for m in loaded if m in NOT_FOR_METADATA] == []


@pytest.mark.broker
def test_a_pipe_gets_tsv_even_with_force_color(bootstrap, new_topic, monkeypatch) -> None:
    """FORCE_COLOR (set by Jupyter kernels and CI services) asks for colours; it must not turn
    a pipe into a terminal that gets a rich table cut to its width instead of TSV."""
    topic = new_topic(2, "cli-force-color")
    for name in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE"):
        monkeypatch.setenv(name, "1")
    done = run("-b", bootstrap, "describe", topic)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "partition\tleader\treplicas\tisr\tearliest\tlatest"
    assert "\x1b[" not in done.stdout


def test_errors_in_a_real_process_are_one_line_and_exit_non_zero() -> None:
    done = run("topics")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("kafkawire: error: ")


def test_console_script_points_at_main() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, attr = scripts["kafkawire"].partition(":")
    assert (module, attr) == ("spark_kafka_wire.cli", "main")
    assert callable(main)


@pytest.mark.broker
def test_lines_typed_at_a_terminal_are_sent_as_typed(bootstrap, new_topic) -> None:
    """With a terminal on stdin each line is written when it is entered, not at the end."""
    import pty

    from tests.support.librdkafka import consume

    topic = new_topic(1, "cli-typed")
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.Popen([sys.executable, "-m", "spark_kafka_wire", "-b", bootstrap,
                             "produce", topic, "-K", ":"], stdin=terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    os.close(terminal)
    try:
        os.write(controller, b"k:typed value\n")
        assert consume({"bootstrap.servers": bootstrap}, topic, 1) == [(b"k", b"typed value")]
        assert proc.poll() is None  # still waiting for more lines
        os.write(controller, b"\x04")  # Ctrl-D: end of input
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        os.close(controller)
    assert proc.returncode == 0, err
    assert out.decode().strip() == f"1 record written to {topic}"


@pytest.mark.parametrize(("words", "expected"), [
    ("kafkawire gro", {"groups"}),
    ("kafkawire groups re", {"reset-offsets"}),
    ("kafkawire transactions a", {"abort"}),
    ("kafkawire consume --value-f", {"--value-format"}),
    ("kafkawire --out", {"--output"}),
])
def test_shell_completion_of_commands_and_options(words: str, expected: set[str]) -> None:
    """click's completion, as docs/cli.md's ``eval "$(_KAFKAWIRE_COMPLETE=bash_source
    kafkawire)"`` installs it: the shell asks the program with these variables."""
    env = {**os.environ, "_KAFKAWIRE_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(len(words.split()) - 1),
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [
               os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "spark_kafka_wire"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    offered = {line.split(",", 1)[1] for line in done.stdout.splitlines()}
    assert offered == expected, done.stdout
    script = subprocess.run([sys.executable, "-m", "spark_kafka_wire"], cwd=ROOT,
                            env={**env, "_KAFKAWIRE_COMPLETE": "bash_source"},
                            capture_output=True, text=True, timeout=60)
    assert "_kafkawire_completion" in script.stdout
