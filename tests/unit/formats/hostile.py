"""Hostile inputs run in a child process under an address-space limit (issue 45).

A record or a registry answer that makes a decoder allocate gigabytes, recurse past the C
stack or loop for minutes must fail the test that feeds it, not the test run: the child gets
``RLIMIT_AS`` (a MemoryError, or a crash, ends it) and a timeout (a hang ends it), and its
last line of output is the JSON the test checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

#: what a child may map: numpy, pyarrow and protobuf loaded take about 400 MiB of it
ADDRESS_SPACE = 1 << 30


def run_hostile(code: str, *, timeout: float = 60, address_space: int = ADDRESS_SPACE) -> Any:
    """The JSON value ``code`` prints last, run by a child Python limited to
    ``address_space`` bytes of address space and ``timeout`` seconds; a failure of the child
    (MemoryError, RecursionError, a signal) fails the caller with its stderr's end."""
    limit = (f"import resource\nresource.setrlimit(resource.RLIMIT_AS, "
             f"({address_space}, {address_space}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", limit + code], capture_output=True, text=True,
                         timeout=timeout, env=env, check=False)
    assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
    return json.loads(run.stdout.strip().splitlines()[-1])
