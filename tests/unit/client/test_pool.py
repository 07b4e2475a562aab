"""The worker heap freeze of client/pool.py: once per process, and what is created later is
still collected."""

from __future__ import annotations

import gc
import os
import subprocess
import sys


def test_the_heap_is_frozen_once_per_process_and_later_cycles_are_collected() -> None:
    script = """
import gc, os, weakref
from spark_kafka_wire.client import pool
before = gc.get_freeze_count()
pool.freeze_worker_heap()
first = gc.get_freeze_count()
class Node: pass
a, b = Node(), Node()
a.other, b.other = b, a
ref = weakref.ref(a)
del a, b
pool.freeze_worker_heap()  # a second task: nothing more is frozen
assert gc.get_freeze_count() == first, (first, gc.get_freeze_count())
gc.collect()  # what pyspark's daemon runs after each task
assert ref() is None, "a cycle created after the freeze must still be collected"
assert before == 0 and first > 1000, (before, first)
pid = os.fork()
if pid == 0:  # a forked worker (pyspark's daemon forks them) freezes its own heap
    alive = [[] for _ in range(500)]
    n = gc.get_freeze_count()
    pool.freeze_worker_heap()
    os._exit(0 if gc.get_freeze_count() >= n + 500 else 1)
assert os.waitpid(pid, 0)[1] == 0
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    assert gc.isenabled()
