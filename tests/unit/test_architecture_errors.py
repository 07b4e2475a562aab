"""The error registry's rules (issue 47, item 3), checked on the source so they stay true.

One table of conditions (spark_kafka_wire/protocol/conditions.py) holds every message
template: no module keeps a table of its own (a ``MESSAGES`` dict, a ``*_KINDS`` dict of
conditions, a dict of condition -> text). Every condition an error class or a raise site
names is in that table, and every ``SomeError.of(condition, **parameters)`` gives each
parameter the condition's template takes. Tests of every tier match an error of the package
by its condition (tests/support/errors.py), never by ``pytest.raises(..., match=)`` on its
wording; ``match=`` stays for exceptions that are not the package's.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import spark_kafka_wire
import spark_kafka_wire.errors
from spark_kafka_wire.protocol import conditions
from spark_kafka_wire.protocol.errors import KafkaWireError

ROOT = Path(spark_kafka_wire.__file__).resolve().parent.parent
PACKAGE = ROOT / "spark_kafka_wire"
TABLE = PACKAGE / "protocol" / "conditions.py"
CONDITION = re.compile(r"[A-Z][A-Z0-9_]*(\.[A-Z][A-Z0-9_]*)+|KAFKA[A-Z0-9_]*")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str



def _condition_assignments(tree: ast.AST) -> Iterator[tuple[ast.ClassDef, ast.Assign]]:
    """Every ``condition = ...`` in a class body: the class and the assignment."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "condition" for t in item.targets):
                    yield node, item

def _sources(root: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(root.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's string constants (``NAME = "..."``, ``NAME = f"{OTHER}.KIND"``), for
    resolving a condition a call names by a constant; imported names resolve through
    ``known`` (the constants of every module of the package)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = _string(node.value, found)
            if value is not None:
                found[node.targets[0].id] = value
    return found


def _string(node: ast.expr, names: dict[str, str]) -> str | None:
    """The text of a string literal, an f-string of known names, or a known name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and value.format_spec is None:
                part = _string(value.value, names)
                if part is None:
                    return None
                parts.append(part)
            else:
                return None
        return "".join(parts)
    if isinstance(node, ast.Attribute) and node.attr == "condition":
        return names.get(f"{ast.unparse(node.value)}.condition")
    return None


def _all_constants(root: Path) -> dict[str, str]:
    """Every module-level string constant of the package by name, and every class's
    ``condition`` as ``Class.condition`` (names are unique enough for conditions)."""
    found: dict[str, str] = {}
    for _, tree in _sources(root):
        found.update(_constants(tree))
    for _, tree in _sources(root):
        for cls, item in _condition_assignments(tree):
            value = _string(item.value, found)
            if value is not None:
                found[f"{cls.name}.condition"] = value
    return found


def other_tables(root: Path, table: Path) -> list[Finding]:
    """Module-level dicts outside ``table`` that hold message templates or kinds: named
    ``MESSAGES`` or ``*_KINDS``, or whose keys are (mostly) conditions and values text."""
    out = []
    for path, tree in _sources(root):
        if path == table:
            continue
        for node in tree.body:
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            if not isinstance(target, ast.Name) or not isinstance(value, ast.Dict):
                continue
            keys = [k.value for k in value.keys
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            texts = [v for v in value.values
                     if isinstance(v, (ast.Constant, ast.JoinedStr))]
            all_text = len(texts) == len(value.values)
            conditional = sum(1 for k in keys if CONDITION.fullmatch(k) and "." in k)
            kinds = all(re.fullmatch(r"[A-Z][A-Z0-9_]*", k) for k in keys)
            if target.id == "MESSAGES" or (target.id.endswith("_KINDS") and kinds and all_text
                                           and keys) or (conditional >= 2 and all_text):
                out.append(Finding(str(path.relative_to(root.parent)), node.lineno, target.id))
    return out


def _named_conditions(root: Path, constants: dict[str, str]
                      ) -> Iterator[tuple[Finding, str, ast.Call | None]]:
    """Each condition a class declares (``condition = ...``), a ``.of(condition, ...)`` call
    or a ``condition=`` keyword names, with the ``.of`` call it comes from."""
    for path, tree in _sources(root):
        where = str(path.relative_to(root.parent))
        local = {**constants, **_constants(tree)}
        for cls, item in _condition_assignments(tree):
            value = _string(item.value, local)
            if value is not None:
                yield Finding(where, item.lineno, cls.name), value, None
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Attribute) and node.func.attr == "of" \
                        and node.args and not _is_spec_of(node):
                    value = _string(node.args[0], local)
                    if value is not None:
                        yield Finding(where, node.lineno, ast.unparse(node.func)), value, node
                for keyword in node.keywords:
                    if keyword.arg == "condition":
                        value = _string(keyword.value, local)
                        if value is not None:
                            yield Finding(where, node.lineno, "condition="), value, None


def _is_spec_of(call: ast.Call) -> bool:
    """``ErrorSpec.of(ErrorCode.X, ...)``: a broker code's entry, not an error."""
    return isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) \
        and call.func.value.id == "ErrorSpec"


def unknown_conditions(root: Path) -> list[Finding]:
    """Conditions named in the source that the table does not hold."""
    constants = _all_constants(root)
    return [Finding(f.path, f.line, f"{f.what}: {condition}")
            for f, condition, _ in _named_conditions(root, constants)
            if CONDITION.fullmatch(condition) and not conditions.is_known(condition)]


def missing_parameters(root: Path) -> list[Finding]:
    """``.of(condition, **parameters)`` calls that leave out a parameter of the template
    (a call passing ``**mapping`` is not judged: its keys are not in the source)."""
    constants = _all_constants(root)
    out = []
    for f, condition, call in _named_conditions(root, constants):
        if call is None or not conditions.is_known(condition):
            continue
        if any(k.arg is None for k in call.keywords):
            continue
        if len(call.args) > 1:  # a named wording: its own template, judged by
            continue            # tests/unit/test_architecture_configuration_errors.py
        given = {k.arg for k in call.keywords}
        missing = conditions.parameters_of(condition) - given
        if missing:
            out.append(Finding(f.path, f.line, f"{condition} without {sorted(missing)}"))
    return out


def _package_error_names() -> set[str]:
    exported = (getattr(spark_kafka_wire.errors, n) for n in spark_kafka_wire.errors.__all__)
    return {c.__name__ for c in exported
            if isinstance(c, type) and issubclass(c, KafkaWireError)}


def wording_matches(root: Path, errors: set[str], skip: tuple[str, ...] = ()) -> list[Finding]:
    """``pytest.raises(E, match=...)`` where ``E`` is one of ``errors`` (the package's), in
    the files under ``root`` but not under its folders named in ``skip``."""
    out = []
    for path, tree in _sources(root):
        if path.relative_to(root).parts[0] in skip:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "raises" and node.args \
                    and any(k.arg == "match" for k in node.keywords):
                first = node.args[0]
                names = [e for e in (first.elts if isinstance(first, ast.Tuple) else [first])]
                named = {n.id if isinstance(n, ast.Name) else getattr(n, "attr", "")
                         for n in names}
                if named & errors:
                    out.append(Finding(str(path.relative_to(root)), node.lineno,
                                       ", ".join(sorted(named & errors))))
    return out


# ------------------------------------------------------------------------------ the rules


def test_the_conditions_table_is_the_only_template_table() -> None:
    assert TABLE.exists()
    assert other_tables(PACKAGE, TABLE) == []


def test_every_condition_named_is_in_the_table() -> None:
    assert unknown_conditions(PACKAGE) == []
    # and every class's, as Python sees it (a condition built at run time too)
    def subclasses(cls: type[KafkaWireError]) -> Iterator[type[KafkaWireError]]:
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)
    for cls in subclasses(KafkaWireError):
        if cls.__module__.startswith("spark_kafka_wire."):
            assert conditions.is_known(cls.condition), (cls, cls.condition)


def test_every_template_gets_its_parameters_where_built() -> None:
    assert missing_parameters(PACKAGE) == []


def test_every_template_renders_from_its_parameters() -> None:
    """Each condition's message is its template filled with exactly the parameters named
    (none missing: a KeyError here is a template naming a field nothing gives)."""
    for name, entry in conditions.CONDITIONS.items():
        if entry.template is None and "." not in name:
            # a family whose errors always narrow it: each kind has a template
            assert all(conditions.CONDITIONS[f"{name}.{kind}"].template
                       for kind in conditions.kinds(name)), name
            continue
        wanted = conditions.parameters_of(name)
        text = conditions.message(name, **{p: f"<{p}>" for p in wanted})
        for p in wanted:
            assert f"<{p}>" in text, (name, p)


def test_tests_match_package_errors_by_condition_not_wording() -> None:
    """Every tier (unit, integration, cli, spark, faults, ...); tests/support is the helpers
    that match conditions (tests/support/errors.py), not tests."""
    assert wording_matches(ROOT / "tests", _package_error_names(), skip=("support",)) == []


# ------------------------------------------------------------------ the rules catch it


def test_the_error_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "table.py").write_text("CONDITIONS = {}\n")
    (package / "errors.py").write_text(textwrap.dedent('''
        MESSAGES = {"A": "text"}
        SOME_KINDS: dict[str, str] = {"X": "when"}
        TEXTS = {"KAFKAWIRE_X.ONE": "one", "KAFKAWIRE_X.TWO": f"two"}
        NOT_A_TABLE = {"a": 1}
        KIND = "KAFKAWIRE_CONFIGURATION.NO_SUCH_KIND"

        class OddError(Exception):
            condition = "KAFKAWIRE_NO_SUCH_FAMILY"

        def fail():
            raise ConfigurationError.of(KIND, option="o")
            raise ConfigurationError.of("KAFKAWIRE_CONFIGURATION.INVALID_VALUE", option="o")
            raise ConfigurationError.of("KAFKAWIRE_CONFIGURATION.INVALID_VALUE", **facts)
            raise ConfigurationError("text", condition=f"{KIND}")
            raise ErrorSpec.of(ErrorCode.NONE)
    '''))
    assert [f.what for f in other_tables(package, package / "table.py")] == \
        ["MESSAGES", "SOME_KINDS", "TEXTS"]
    assert sorted(f.what for f in unknown_conditions(package)) == [
        "ConfigurationError.of: KAFKAWIRE_CONFIGURATION.NO_SUCH_KIND",
        "OddError: KAFKAWIRE_NO_SUCH_FAMILY",
        "condition=: KAFKAWIRE_CONFIGURATION.NO_SUCH_KIND"]
    assert [f.what for f in missing_parameters(package)] == [
        "KAFKAWIRE_CONFIGURATION.INVALID_VALUE without ['expected', 'got']"]
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text(textwrap.dedent('''
        def test_x():
            with pytest.raises(ConfigurationError, match="words"):
                pass
            with pytest.raises((ValueError, errors.ProtocolError), match="words"):
                pass
            with pytest.raises(ValueError, match="a bare ValueError's words"):
                pass
            with pytest.raises(ConfigurationError):
                pass
    '''))
    assert [(f.line, f.what) for f in wording_matches(tests, {"ConfigurationError",
                                                              "ProtocolError"})] == \
        [(3, "ConfigurationError"), (5, "ProtocolError")]
    # every tier is read, however deep; only the folders skipped are not
    for tier in ("integration", "faults/deeper", "support"):
        (tests / tier).mkdir(parents=True)
        (tests / tier / "test_y.py").write_text(
            "with pytest.raises(ZooKeeperError, match='words'):\n    pass\n")
    assert sorted(f.path for f in wording_matches(tests, {"ZooKeeperError"},
                                                  skip=("support",))) == \
        ["faults/deeper/test_y.py", "integration/test_y.py"]
    assert len(wording_matches(tests, {"ZooKeeperError"})) == 3
