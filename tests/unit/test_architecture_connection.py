"""The connection's seams (issue 47 item 5), checked on the source so they stay true.

* Answers are paired to requests in one place: only the sans-I/O core
  (client/wire/session.py) splits a response header (``framing.split_response``), and no
  other client module reads bytes with ``struct`` (the Kerberos keytab reader, a file format,
  excepted): BrokerConnection moves bytes and parses none.
* Every close of a connection says why: ``BrokerConnection.close`` takes a ``reason`` without
  default (mypy holds the callers in the client and the CLI to it), and every ``self.close``
  in client/wire/connection.py passes one.
* Tests observe connections through their hooks (client/wire/hooks.py), never by
  monkeypatching BrokerConnection's private methods (``_read_frame``, ``_send_bytes``, ...);
  a test that injects a fault may still wrap its public ``send``/``receive``/``request``.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from spark_kafka_wire.client.wire.connection import BrokerConnection
from tests.unit.test_architecture import ROOT, package_modules

CORE = "spark_kafka_wire.client.wire.session"
CONNECTION = "spark_kafka_wire.client.wire.connection"
# client modules that read bytes that are no Kafka frame (a keytab file)
NOT_FRAMES = {"spark_kafka_wire.client.security.sasl.kerberos"}


def _names(tree: ast.AST) -> set[str]:
    """Every name a module spells: names, attributes, imported names."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update(a.name.split(".")[-1] for a in node.names)
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module.split(".")[-1])
    return found


def pairing_outside_the_core(modules: dict[str, Path]) -> list[str]:
    found = []
    for name, path in sorted(modules.items()):
        if name == CORE or not name.startswith("spark_kafka_wire.client"):
            continue
        spelt = _names(ast.parse(path.read_text(), str(path)))
        if "split_response" in spelt:
            found.append(f"{name}: splits response headers (split_response)")
        if "struct" in spelt and name not in NOT_FRAMES:
            found.append(f"{name}: reads bytes with struct")
    return found


def closes_without_a_reason(modules: dict[str, Path]) -> list[str]:
    path = modules.get(CONNECTION)
    if path is None:
        return []
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef) and node.name == "close":
            args = node.args.args[1:]
            defaults = len(node.args.defaults)
            if not args or args[0].arg != "reason" or defaults >= len(args):
                found.append(f"{CONNECTION}:{node.lineno}: close() takes no required reason")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "close" and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "self" and not (node.args or node.keywords):
            found.append(f"{CONNECTION}:{node.lineno}: self.close() without a reason")
    return found


def _private_methods() -> set[str]:
    return {name for cls in BrokerConnection.__mro__[:-1] for name in vars(cls)
            if name.startswith("_") and not name.startswith("__")}


def private_monkeypatches(tests: Path, private: set[str]) -> list[str]:
    """``monkeypatch.setattr(x, "_name", ...)`` (or the dotted-string form) of a name in
    ``private`` in any test module under ``tests``."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "setattr" and node.args):
                continue
            strings = [a.value for a in node.args[:2]
                       if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            patched = {s.rsplit(".", 1)[-1] for s in strings}
            hit = sorted(patched & private)
            if hit:
                found.append(f"{path.relative_to(tests)}:{node.lineno}: patches {hit[0]}")
    return found


def test_answers_are_paired_to_requests_in_one_place() -> None:
    assert pairing_outside_the_core(package_modules()) == []


def test_every_close_of_a_connection_says_why() -> None:
    assert closes_without_a_reason(package_modules()) == []


def test_no_test_monkeypatches_a_connection_s_private_methods() -> None:
    assert private_monkeypatches(ROOT / "tests", _private_methods()) == []


def test_the_connection_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    files = {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/wire/session.py": (
            "import struct\nfrom spark_kafka_wire.protocol import framing\n"
            "def f(s, v, b):\n    return framing.split_response(s, v, b)\n"),
        "spark_kafka_wire/client/wire/connection.py": (
            "import struct\nfrom spark_kafka_wire.protocol.framing import split_response\n"
            "class BrokerConnection:\n"
            "    def close(self, reason=None):\n        pass\n"
            "    def fail(self):\n        self.close()\n        self.close(1)\n"),
        "spark_kafka_wire/client/security/sasl/kerberos.py": "import struct\n",
        "tests/t.py": (
            "def test(monkeypatch, conn):\n"
            "    monkeypatch.setattr(conn, '_read_frame', None)\n"
            "    monkeypatch.setattr('a.b.BrokerConnection._send_bytes', None)\n"
            "    monkeypatch.setattr(conn, 'send', None)\n"),
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    modules = package_modules(tmp_path)
    assert pairing_outside_the_core(modules) == [
        f"{CONNECTION}: splits response headers (split_response)",
        f"{CONNECTION}: reads bytes with struct",
    ]
    assert closes_without_a_reason(modules) == [
        f"{CONNECTION}:4: close() takes no required reason",
        f"{CONNECTION}:7: self.close() without a reason",
    ]
    assert private_monkeypatches(tmp_path / "tests", {"_read_frame", "_send_bytes"}) == [
        "t.py:2: patches _read_frame", "t.py:3: patches _send_bytes"]
