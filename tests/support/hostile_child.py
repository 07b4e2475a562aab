"""Hostile inputs run in one child process under an address-space limit (issue 45's fuzz tier).

A decoder fed a hostile record or schema may segfault (numpy or a C extension reading past a
buffer, a C stack exhausted by recursion), allocate without bound or loop for ever. Run in
pytest's own process, any of these takes the whole test run down or hangs it; run here, each
fails the test that asked, naming the case. One child runs a whole batch of cases (a process
per case would spend a second per case on imports): it announces each case on its protocol
pipe before running it, so when it dies or stops answering the parent knows which case did
it, records that case and starts a fresh child at the next one.

What a case may do is given by the caller: ``runner`` (``"module:function"``, imported in the
child) is called with each case's ``args`` and returns the problems it sees in the result (a
list of strings, empty when the result is sound), or raises one of ``allowed`` (exception
classes by ``"module:Name"``: the typed errors a decoder may raise). Anything else is a
failure: another exception (RecursionError, MemoryError, IndexError ...), a problem returned,
a signal (SIGSEGV), an exit, or no answer within ``case_timeout`` seconds. The limit on the
child's address space is what it holds once it has imported the runner and run ``warmup``
(Arrow's thread pools and allocator reserve their space then), plus ``headroom``: a runaway
allocation meets it as MemoryError quickly instead of swapping the machine.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: what the child may allocate beyond its own start-up (imports, warm-up): far above what a
#: decoder needs for the small inputs of a fuzz case, far below the machine's memory
DEFAULT_HEADROOM = 256 * 2**20
#: seconds one case may run: decoding a case takes milliseconds, so this is generous
DEFAULT_CASE_TIMEOUT = 5.0
#: seconds the child may take to import the runner and warm up before its first case
START_TIMEOUT = 120.0
#: failures after which a batch stops (each may have cost a case timeout); a search for every
#: failure class sets ``KAFKAWIRE_FUZZ_MAX_FAILURES`` higher
DEFAULT_MAX_FAILURES = 5
#: bytes of a failing case's input shown (as hex) in the report
SHOWN_BYTES = 64
#: integers a length, count, index or field number is replaced by: the edges of the int32
#: and int64 ranges, the lengths a varint's 10 bytes reach, and small ones around zero
BOUNDARY_INTS = (0, 1, -1, 2, 127, 128, 2**31 - 1, 2**31, -(2**31), 2**32, 2**62, 10**12,
                 2**63 - 1, -(2**63), -(2**63 - 1))


def case_count(default: int) -> int:
    """How many generated cases a fuzz test runs: ``KAFKAWIRE_FUZZ_CASES`` when set (a long
    run looks further), else ``default`` (sized so a fuzz file takes seconds in CI). The
    cases are derandomized: the same count gives the same cases every run."""
    return int(os.environ.get("KAFKAWIRE_FUZZ_CASES", default))

_CHILD = r'''
import importlib, json, os, pickle, resource, sys, time, traceback

def load(spec):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)

job = pickle.load(sys.stdin.buffer)
# the protocol gets its own descriptor; anything the code under test prints goes to stderr
proto = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
runner = load(job["runner"])
allowed = tuple(load(a) for a in job["allowed"])
never = (MemoryError, RecursionError, SystemError)
if job["warmup"]:
    load(job["warmup"])()

def vm_size():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")

limit = vm_size() + job["headroom"]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
proto.write(f"ready {limit}\n")
for index, args in job["cases"]:
    proto.write(f"start {index}\n")
    began = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        problems = list(runner(*args) or ())
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, allowed) and not isinstance(exc, never):
            problems = []
        else:
            where = traceback.extract_tb(exc.__traceback__)[-3:]
            at = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno} {f.name}"
                             for f in reversed(where))
            problems = [f"{type(exc).__name__}: {str(exc)[:300]} (at {at})"]
    spent = time.perf_counter() - began
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) * 1024
    if problems:
        proto.write(f"fail {index} {spent:.6f} {grown} {json.dumps(problems)}\n")
    else:
        proto.write(f"ok {index} {spent:.6f} {grown}\n")
proto.write("done\n")
'''


@dataclass(frozen=True)
class Case:
    """One hostile input: ``seed`` regenerates it (the generator's own seed), ``label`` says
    what it is (format, path, mutation), ``args`` go to the runner, ``shown`` are the hostile
    bytes (a record, or a schema's text) shown when the case fails."""

    seed: int
    label: str
    args: tuple[Any, ...]
    shown: bytes


@dataclass(frozen=True)
class Failure:
    """A case that crashed, hung, raised what it may not, or returned problems."""

    index: int
    case: Case
    what: str

    def describe(self) -> str:
        """The case's index, seed, label, what happened and its input (hex, truncated), so
        it can be regenerated and replayed."""
        data = self.case.shown
        more = f" ... ({len(data)} bytes)" if len(data) > SHOWN_BYTES else ""
        return (f"case {self.index} (seed {self.case.seed}, {self.case.label}): {self.what}; "
                f"input {data[:SHOWN_BYTES].hex()}{more}")


@dataclass
class Outcome:
    """What a batch did: failures, cases run, wall seconds of the cases, and per case its
    seconds and the growth of the child's peak RSS (bytes) for those that answered."""

    failures: list[Failure] = field(default_factory=list)
    ran: int = 0
    seconds: float = 0.0
    timings: dict[int, tuple[float, int]] = field(default_factory=dict)

    def report(self, limit: int = 20) -> str:
        """The failures, at most ``limit`` of them, one a line."""
        lines = [f.describe() for f in self.failures[:limit]]
        if len(self.failures) > limit:
            lines.append(f"... and {len(self.failures) - limit} more")
        return "\n".join(lines)


class _Lines:
    """Lines from a pipe, each waited for until a deadline (select, no thread)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.closed = fd, b"", False

    def next(self, timeout: float) -> str | None:
        """The next line; None at the deadline or when the pipe closed without one."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if self.closed:
                return None
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                self.closed = True
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace")


def _ended(child: subprocess.Popen[bytes], stderr: Any) -> str:
    """How the child ended (killed by which signal, or its exit code) and its last stderr."""
    code = child.wait()
    how = (f"killed by {signal.Signals(-code).name}" if code < 0
           else f"exited with code {code}")
    stderr.seek(0)
    tail = stderr.read().decode("utf-8", "replace").strip()[-800:]
    return f"{how}; stderr: {tail}" if tail else how


def mutate_bytes(rng: random.Random, data: bytes, labels: list[str]) -> bytes:
    """A structure-aware case's bytes, mutated at the byte level as a last step (sometimes):
    truncated, a few bits flipped, or random bytes appended; what was done is appended to
    ``labels``. The Avro and Protobuf generators share it (the same draws from ``rng``)."""
    pick = rng.random()
    if pick < 0.15 and data:
        cut = rng.randrange(len(data))
        data = data[:cut]
        labels.append(f"truncated to {cut}")
    elif pick < 0.3 and data:
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
        data = bytes(flipped)
        labels.append("bits flipped")
    elif pick < 0.35:
        data += rng.randbytes(rng.randint(1, 8))
        labels.append("bytes appended")
    return data


def run_cases(runner: str, cases: Sequence[Case], *, allowed: Sequence[str] = (),
              warmup: str | None = None, headroom: int = DEFAULT_HEADROOM,
              case_timeout: float = DEFAULT_CASE_TIMEOUT, max_failures: int | None = None
              ) -> Outcome:
    """Every case run by ``runner`` in a child under the address-space limit; after a crash or
    a case that does not answer in time a new child goes on from the next case, until every
    case ran or ``max_failures`` failed (default ``KAFKAWIRE_FUZZ_MAX_FAILURES``, else
    DEFAULT_MAX_FAILURES). Raises RuntimeError when a child cannot start."""
    if max_failures is None:
        max_failures = int(os.environ.get("KAFKAWIRE_FUZZ_MAX_FAILURES", DEFAULT_MAX_FAILURES))
    outcome = Outcome()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    at = 0
    started = time.monotonic()
    while at < len(cases) and len(outcome.failures) < max_failures:
        job = {"runner": runner, "allowed": list(allowed), "warmup": warmup,
               "headroom": headroom,
               "cases": [(i, cases[i].args) for i in range(at, len(cases))]}
        with tempfile.TemporaryFile() as stderr:
            child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr, env=env)
            assert child.stdin is not None and child.stdout is not None
            try:
                try:
                    child.stdin.write(pickle.dumps(job))
                    child.stdin.close()
                except BrokenPipeError:
                    pass  # the child died at once: said below
                lines = _Lines(child.stdout.fileno())
                ready = lines.next(START_TIMEOUT)
                if ready is None or not ready.startswith("ready "):
                    child.kill()
                    raise RuntimeError(f"the hostile-case child did not start ({ready!r}): "
                                       f"{_ended(child, stderr)}")
                current: int | None = None
                while True:
                    line = lines.next(case_timeout if current is not None else START_TIMEOUT)
                    if line is None:
                        if current is None:
                            child.kill()
                            raise RuntimeError("the hostile-case child stopped between "
                                               f"cases: {_ended(child, stderr)}")
                        if lines.closed:
                            what = _ended(child, stderr)
                        else:
                            child.kill()
                            what = f"no answer within {case_timeout:g} s (a hang or a " \
                                   "runaway loop); killed"
                            child.wait()
                        outcome.failures.append(Failure(current, cases[current], what))
                        outcome.ran += 1
                        at = current + 1
                        break
                    word, _, rest = line.partition(" ")
                    if word == "done":
                        at = len(cases)
                        break
                    if word == "start":
                        current = int(rest)
                        continue
                    index_text, spent, grown, *problems = rest.split(" ", 3)
                    index = int(index_text)
                    outcome.ran += 1
                    outcome.timings[index] = (float(spent), int(grown))
                    current = None
                    if word == "fail":
                        what = "; ".join(json.loads(problems[0]))
                        outcome.failures.append(Failure(index, cases[index], what))
                        if len(outcome.failures) >= max_failures:
                            at = len(cases)
                            break
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
                child.stdout.close()
    outcome.seconds = time.monotonic() - started
    return outcome
