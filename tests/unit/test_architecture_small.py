"""Small rules of the package's design, each checked on its source so it stays true.

A range read's state is one value (``client/fetching/fetch_plan.py``'s ``RangeState``), not flags
whose combinations no read can be in; every ZooKeeper session is opened, timed out, secured
and ended by one helper (``client/zookeeper/consumer_offsets.py``'s ``ZooKeeperSession``); and the package's
comments and docstrings say why the code is as it is, leaving its history to the commits.
Each rule has a case showing it catches what it forbids, so none passes vacuously.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from enum import Enum
from pathlib import Path

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_plan import RangeFetch
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from tests.unit.test_architecture import _write_package, package_modules

# ------------------------------------------------------------------ a range read's state

#: Names of flags a range read's state could be spread over: none may be an attribute of it.
RANGE_FLAGS = ("past_end", "done", "stopped", "lost")


def state_flags(read: object) -> list[str]:
    """What keeps ``read``'s state from being one value: attributes named as RANGE_FLAGS, and
    a note unless exactly one attribute, ``state``, holds an Enum member."""
    attributes = vars(read)
    found = [f"{name} is a flag" for name in attributes if name in RANGE_FLAGS]
    states = [name for name, value in attributes.items() if isinstance(value, Enum)]
    if states != ["state"]:
        found.append(f"state attributes: {states}")
    return found


def test_a_range_read_has_one_state() -> None:
    """``RangeFetch`` holds where it stands in one ``RangeState`` attribute and no flags,
    whose combinations could say what no read can be (done and past the end, stopped and
    not done)."""
    config = ClientConfig.from_servers("stub:9092")
    for start, end, level in ((0, 8, 0), (0, 8, 1), (5, 5, 0), (5, 5, 1)):
        read = RangeFetch("t", 0, start, end, FetchSettings(isolation_level=level), True, config)
        assert state_flags(read) == [], (start, end, level)


def test_the_range_state_rule_catches_what_it_forbids() -> None:
    Phase = Enum("Phase", ["READING", "ENDED"])

    class Flagged:
        def __init__(self) -> None:
            self.offset, self.done, self.past_end = 0, False, False

    class TwoStates:
        def __init__(self) -> None:
            self.state, self.phase = Phase.READING, Phase.ENDED

    assert state_flags(Flagged()) == ["done is a flag", "past_end is a flag",
                                      "state attributes: []"]
    assert state_flags(TwoStates()) == ["state attributes: ['state', 'phase']"]


# --------------------------------------------------------------------- ZooKeeper sessions

#: Who may call what opens or ends a kazoo session, by the module-level function or class the
#: call is written in: kazoo's client only in start_zookeeper (TLS, SASL, the start's timeout
#: and its errors), start_zookeeper only in ZooKeeperSession, which the offset store and the
#: broker registry are; stop_zookeeper there too, and in start_zookeeper for a failed start.
SESSION_CALLS = {
    "KazooClient": {"start_zookeeper"},
    "start_zookeeper": {"ZooKeeperSession"},
    "stop_zookeeper": {"ZooKeeperSession", "start_zookeeper"},
}


def session_calls(modules: dict[str, Path]) -> list[str]:
    """Calls of SESSION_CALLS' names outside their owners, in the package's modules."""
    found = []
    for name, path in sorted(modules.items()):
        for top in ast.parse(path.read_text(), str(path)).body:
            owner = getattr(top, "name", "<module>")
            for node in ast.walk(top):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                callee = func.id if isinstance(func, ast.Name) else \
                    func.attr if isinstance(func, ast.Attribute) else None
                if callee in SESSION_CALLS and owner not in SESSION_CALLS[callee]:
                    found.append(f"{name}:{node.lineno}: {owner} calls {callee}")
    return found


def test_zookeeper_sessions_open_in_one_place() -> None:
    """The offset store and the broker registry are ZooKeeperSessions: neither starts,
    keeps or ends a kazoo session of its own, nor does anything else in the package."""
    assert session_calls(package_modules()) == []


def test_the_zookeeper_session_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    modules = _write_package(tmp_path, {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/zookeeper/consumer_offsets.py": (
            "from kazoo.client import KazooClient\n"
            "def start_zookeeper(c):\n    try:\n        return KazooClient(c)\n"
            "    except Exception:\n        stop_zookeeper(None)\n"
            "def stop_zookeeper(zk): ...\n"
            "class ZooKeeperSession:\n    def session(self):\n        return start_zookeeper(1)\n"
            "    def close(self):\n        stop_zookeeper(self.zk)\n"),
        "spark_kafka_wire/client/registry.py": (
            "from kazoo import client\n"
            "from spark_kafka_wire.client.zookeeper.consumer_offsets import start_zookeeper\n"
            "class Registry:\n    def _client(self):\n        return start_zookeeper(1)\n"
            "ZK = client.KazooClient('zk:2181')\n"),
        "spark_kafka_wire/cli/__init__.py": "",
        "spark_kafka_wire/cli/z.py": (
            "from spark_kafka_wire.client import zookeeper\n"
            "def done(zk):\n    zookeeper.stop_zookeeper(zk)\n"),
    })
    assert session_calls(modules) == [
        "spark_kafka_wire.cli.z:3: done calls stop_zookeeper",
        "spark_kafka_wire.client.registry:5: Registry calls start_zookeeper",
        "spark_kafka_wire.client.registry:6: <module> calls KazooClient",
    ]


# --------------------------------------------------------------------------- history notes

#: Phrases that narrate the code's history (what it was, did or was called) instead of saying
#: why it is as it is; that story belongs to the commits. Chosen to be unambiguous in this
#: package's prose: "no longer" alone, "was" and "old" also describe a broker's or a log's
#: state at run time ("the partition no longer exists", "Kafka's old consumers"), so only
#: their forms that speak of the code are listed. A comment citing a public source (KIP,
#: Kafka JIRA) says why, and matches none of these.
HISTORY_PHRASES = {
    "before issue N": r"\b(?:before|until|since|after|prior to) issue \d+",
    "on main": r"\bon main\b",
    "previously": r"\bpreviously\b",
    "formerly": r"\bformerly\b",
    "used to": r"\b(?:it|this|that|we|they|which|kafkawire|the code) used to\b",
    "no longer (of the code)": r"\bno longer (?:reads|needs|uses|does|sends|asks|takes|calls"
                               r"|imports|copies|keeps|works|checks)\b",
    "now ... instead of": r"\bnow\b[^.;:]{0,60}\binstead of\b",
    "renamed": r"\brenamed\b",
    "old code": r"\b(?:the )?old (?:code|rule|loop|implementation|behaviou?r|names?|way)\b",
    "(it was ...)": r"\(it was\b",
    "a past cost of issue N": r"\b(?:took|made|let)\b[^.()]{0,120}\(issue \d+\)",
}
_HISTORY = {label: re.compile(pattern.replace(" ", r"\s+"), re.IGNORECASE)
            for label, pattern in HISTORY_PHRASES.items()}


def prose(path: Path) -> list[tuple[int, str]]:
    """The comments (consecutive comment lines as one text) and docstrings of a module, each
    with the line it starts on; line breaks kept, so a phrase may span lines."""
    source = path.read_text()
    texts: list[tuple[int, str]] = []
    last = -2
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type != tokenize.COMMENT:
            continue
        text = token.string.lstrip("#:").strip()
        if token.start[0] == last + 1 and texts:
            texts[-1] = (texts[-1][0], f"{texts[-1][1]}\n{text}")
        else:
            texts.append((token.start[0], text))
        last = token.start[0]
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                texts.append((node.body[0].lineno, doc))
    return sorted(texts)


def history_notes(modules: dict[str, Path]) -> list[str]:
    """Each comment or docstring phrase of HISTORY_PHRASES in the package's modules."""
    found = []
    for name, path in sorted(modules.items()):
        for line, text in prose(path):
            for label, pattern in _HISTORY.items():
                for match in pattern.finditer(text):
                    at = line + text.count("\n", 0, match.start())
                    found.append(f"{name}:{at}: {label}: {' '.join(match[0].split())!r}")
    return found


def test_comments_say_why_not_what_the_code_was() -> None:
    assert history_notes(package_modules()) == []


def test_the_history_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    modules = _write_package(tmp_path, {
        "spark_kafka_wire/__init__.py": '"""The package (on main since the start)."""\n',
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/r.py": (
            '"""Reads. Kafka\'s old consumers commit to ZooKeeper (KIP-98 says why)."""\n'
            "def f():\n"
            '    """The partition no longer exists: None. It used to raise."""\n'
            "    # a rule before\n"
            "    # issue 26 counted answers\n"
            "    return None  # previously 0; the old code was slower (it was a loop)\n"
            "class C:\n"
            "    '''Renamed from D; now a dict instead of a list.'''\n"
            "    #: a lookup by number took 4 GiB (issue 45)\n"
            "    X = 1\n"),
    })
    assert history_notes(modules) == [
        "spark_kafka_wire:1: on main: 'on main'",
        "spark_kafka_wire.client.r:3: used to: 'It used to'",
        "spark_kafka_wire.client.r:4: before issue N: 'before issue 26'",
        "spark_kafka_wire.client.r:6: previously: 'previously'",
        "spark_kafka_wire.client.r:6: old code: 'the old code'",
        "spark_kafka_wire.client.r:6: (it was ...): '(it was'",
        "spark_kafka_wire.client.r:8: now ... instead of: 'now a dict instead of'",
        "spark_kafka_wire.client.r:8: renamed: 'Renamed'",
        "spark_kafka_wire.client.r:9: a past cost of issue N: 'took 4 GiB (issue 45)'",
    ]
