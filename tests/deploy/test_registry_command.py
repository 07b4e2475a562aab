"""``make registry`` as a newcomer runs it (issue 46 item 13): the Makefile's recipe, as
written, starts the tests' Apicurio Registry in the foreground, prints the
``SCHEMA_REGISTRY_URL`` to export (which answers Confluent's API), and Ctrl-C stops it, JVM
included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from spark_kafka_wire.testing.embedded import free_port
from tests.support.schema_registry import missing_tools
from tests.unit.test_architecture import ROOT, _make_recipe


def test_make_registry_prints_a_url_that_answers_and_stops_on_ctrl_c() -> None:
    problem = missing_tools()
    if problem:
        pytest.skip(problem)
    [command] = _make_recipe("registry")
    port = free_port()
    command = command.replace("$(PY)", sys.executable).replace("$(REGISTRY_PORT)", str(port))
    proc = subprocess.Popen(command.split(), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    printed: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            printed.append(line)
            if "export SCHEMA_REGISTRY_URL=" in line:
                break
        url = printed[-1].split("export SCHEMA_REGISTRY_URL=", 1)[1].strip()
        assert url == f"http://127.0.0.1:{port}/apis/ccompat/v7", printed
        with urllib.request.urlopen(url + "/subjects", timeout=10) as answer:
            assert answer.status == 200 and isinstance(json.loads(answer.read()), list)
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(timeout=60) == 0, "".join(printed)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the JVM went with it: nothing answers on the port
        try:
            urllib.request.urlopen(url + "/subjects", timeout=2)
        except OSError:
            return
        time.sleep(0.5)
    pytest.fail(f"the registry still answers on port {port} after Ctrl-C")
