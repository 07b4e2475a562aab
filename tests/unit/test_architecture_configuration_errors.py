"""The rule that configuration errors are built from a condition and parameters (issue 47).

A ``ConfigurationError`` (or a subclass that takes its text as ``ConfigurationError`` does) is
made only by ``ConfigurationError.of(condition, wording, **parameters)``: its sentence is one
wording of protocol/configuration_wordings.py (or the kind's own template, protocol/conditions.py),
so no raise site writes English of its own, the same problem is said the same way wherever
it is raised, and a caller reads the condition and ``error.parameters`` instead of the text.
Only the class itself (client/errors.py, where ``of`` lives) calls its constructor.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from spark_kafka_wire.client import errors
from spark_kafka_wire.protocol.conditions import CONDITIONS, family, template_parameters
from spark_kafka_wire.protocol.configuration_wordings import WORDINGS
from tests.unit.test_architecture import PACKAGES, package_modules

#: the module and class whose body may call the constructor (``of`` and its retellings)
BUILDER = ("spark_kafka_wire.client.errors", "ConfigurationError")


def _classes(modules: dict[str, Path]) -> dict[str, tuple[list[str], bool]]:
    """Every class of the packages by name: its bases' names and whether it defines
    ``__init__`` (a subclass with its own takes facts, not text)."""
    found: dict[str, tuple[list[str], bool]] = {}
    for path in modules.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else b.attr
                         for b in node.bases if isinstance(b, (ast.Name, ast.Attribute))]
                own_init = any(isinstance(item, ast.FunctionDef) and item.name == "__init__"
                               for item in node.body)
                found[node.name] = (bases, own_init)
    return found


def text_taking(modules: dict[str, Path]) -> set[str]:
    """ConfigurationError and its subclasses (by name, across the packages) that inherit its
    ``(text, condition=...)`` constructor."""
    classes = _classes(modules)
    taking = {"ConfigurationError"}
    changed = True
    while changed:
        changed = False
        for name, (bases, own_init) in classes.items():
            if name not in taking and not own_init and taking.intersection(bases):
                taking.add(name)
                changed = True
    return taking


def free_text_constructions(modules: dict[str, Path]) -> list[str]:
    """Each call of a text-taking configuration error's constructor outside its builder, as
    ``module:line: Name(...)``."""
    taking = text_taking(modules)
    found: list[str] = []
    for module, path in sorted(modules.items()):
        tree = ast.parse(path.read_text())
        allowed: set[int] = set()
        if module == BUILDER[0]:
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name == BUILDER[1]:
                    allowed |= {id(inner) for inner in ast.walk(node)}
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
        for node in sorted(calls, key=lambda call: call.lineno):
            if id(node) in allowed:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else None
            if name in taking:
                found.append(f"{module}:{node.lineno}: {name}(...)")
    return found


def test_configuration_errors_are_built_only_from_a_condition_and_parameters() -> None:
    assert free_text_constructions(package_modules()) == []


def wording_calls(modules: dict[str, Path]) -> list[tuple[str, str, frozenset[str]]]:
    """Each ``ConfigurationError.of(CONDITION, "WORDING", **parameters)`` of the packages:
    where, the wording's key and the parameter names given (a conditional expression of two
    wordings counts as both)."""
    found = []
    for module, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "of" and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "ConfigurationError" and len(node.args) == 2):
                continue
            first, second = node.args
            condition = getattr(errors, first.id) if isinstance(first, ast.Name) else \
                ast.literal_eval(first)
            names = [second.body, second.orelse] if isinstance(second, ast.IfExp) else [second]
            given = frozenset(k.arg for k in node.keywords if k.arg is not None)
            for name in names:
                found.append((f"{module}:{node.lineno}",
                              f"{condition}:{ast.literal_eval(name)}", given))
    return found


def test_every_wording_is_of_a_configuration_condition_and_given_its_parameters() -> None:
    calls = wording_calls(package_modules())
    wrong = [f"{where}: {key} takes {sorted(template_parameters(WORDINGS[key]))}, "
             f"given {sorted(given)}" if key in WORDINGS else f"{where}: no wording {key}"
             for where, key, given in calls
             if key not in WORDINGS or template_parameters(WORDINGS[key]) != given]
    assert wrong == []
    for key in WORDINGS:
        condition = key.split(":")[0]
        assert condition in CONDITIONS and family(condition) == errors.CONFIGURATION \
            or condition == errors.CONFIGURATION, key
    assert set(WORDINGS) == {key for _, key, _ in calls}, "a wording no raise site uses"


def test_the_configuration_error_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    files = {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/errors.py": """\
            class ConfigurationError(ValueError):
                @classmethod
                def of(cls, condition, wording=None, **parameters):
                    return ConfigurationError(condition)
            class StartAfterEndError(ConfigurationError):
                def __init__(self, start, end):
                    super().__init__(f"{start} > {end}")
            class Narrowed(ConfigurationError):
                pass
            def outside():
                return ConfigurationError("free text in the errors module")
            """,
        "spark_kafka_wire/options/__init__.py": "",
        "spark_kafka_wire/options/o.py": """\
            from spark_kafka_wire.client import errors
            from spark_kafka_wire.client.errors import ConfigurationError, StartAfterEndError
            def f(x):
                if x:
                    raise ConfigurationError.of("KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                                                option="o", expected="e", got="g")
                if x > 1:
                    raise StartAfterEndError(2, 1)
                if x > 2:
                    raise errors.ConfigurationError(f"o must be e, got {x}")
                raise errors.Narrowed("free text through a subclass")
            """,
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    assert free_text_constructions(package_modules(tmp_path)) == [
        "spark_kafka_wire.client.errors:11: ConfigurationError(...)",
        "spark_kafka_wire.options.o:10: ConfigurationError(...)",
        "spark_kafka_wire.options.o:11: Narrowed(...)",
    ]
