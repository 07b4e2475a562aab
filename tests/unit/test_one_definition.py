"""One definition of each shared layout, type and error code (ARCHITECTURE.md's rule).

A second copy of a layout or a code table drifts from the first without a test noticing (each
copy's own tests pass), so the names the layers share are defined in one module and imported
everywhere else: the record batch header's layout in ``protocol/records/batch.py``, Kafka's
error codes in ``protocol/errors.py`` (``ErrorCode``), ``TopicPartition`` in
``client/metadata/cluster.py``, a 0.7 checkpoint's ``Layout`` in ``client/metadata/cluster_api.py``, Java's
``INT32_MAX``/``INT64_MAX`` in ``protocol/primitives.py``, Confluent's ``MAGIC_BYTE`` and
``FRAME_HEADER_SIZE`` in ``formats/confluent.py`` (written ``2**31 - 1``,
``0x7FFFFFFF`` or ``2147483647`` anywhere else, they fail too). Checked on the source: any
module-level assignment or class of these names elsewhere, or the header's struct format
written out again, fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_architecture import package_modules

#: name -> the one module that defines it
OWNERS = {
    "BATCH_HEADER": "spark_kafka_wire.protocol.records.batch",
    "HEADER_SIZE": "spark_kafka_wire.protocol.records.batch",
    "ErrorCode": "spark_kafka_wire.protocol.errors",
    "TopicPartition": "spark_kafka_wire.client.metadata.cluster",
    "Layout": "spark_kafka_wire.client.metadata.cluster_api",
    "INT32_MAX": "spark_kafka_wire.protocol.primitives",
    "INT64_MAX": "spark_kafka_wire.protocol.primitives",
    "MAGIC_BYTE": "spark_kafka_wire.formats.confluent",
    "FRAME_HEADER_SIZE": "spark_kafka_wire.formats.confluent",
}
#: Java's Integer.MAX_VALUE and Long.MAX_VALUE: written out only where INT32_MAX/INT64_MAX are
JAVA_MAXIMA = {2**31 - 1, 2**63 - 1}
#: the record batch header (v2) as struct writes it: baseOffset .. recordCount
BATCH_HEADER_FORMAT = ">qiibIhiqqqhii"


def definitions(modules: dict[str, Path]) -> dict[str, list[str]]:
    """name -> the modules defining it at module level (assignment, annotated assignment,
    class or function), for the names of OWNERS."""
    found: dict[str, list[str]] = {name: [] for name in OWNERS}
    for module, path in modules.items():
        for node in ast.parse(path.read_text(), str(path)).body:
            names: list[str] = []
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            elif isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names = [node.name]
            for name in names:
                if name in found:
                    found[name].append(module)
    return found


def test_shared_names_are_defined_once_where_they_belong() -> None:
    assert definitions(package_modules()) == {name: [owner] for name, owner in OWNERS.items()}


def test_the_batch_header_layout_is_written_once() -> None:
    writers = sorted(module for module, path in package_modules().items()
                     if BATCH_HEADER_FORMAT in path.read_text())
    assert writers == [OWNERS["BATCH_HEADER"]]


def java_maxima(tree: ast.AST) -> list[int]:
    """The lines where Integer.MAX_VALUE or Long.MAX_VALUE is written out: as a literal
    (``0x7FFFFFFF``, ``2147483647``) or as ``2**31 - 1`` / ``2**63 - 1``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is int \
                and node.value in JAVA_MAXIMA:
            lines.append(node.lineno)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) \
                and isinstance(node.right, ast.Constant) and node.right.value == 1 \
                and isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Pow) \
                and isinstance(node.left.left, ast.Constant) and node.left.left.value == 2 \
                and isinstance(node.left.right, ast.Constant) \
                and node.left.right.value in (31, 63):
            lines.append(node.lineno)
    return sorted(lines)


def test_javas_maxima_are_written_once() -> None:
    writers = {module: java_maxima(ast.parse(path.read_text(), str(path)))
               for module, path in package_modules().items()}
    assert {m: lines for m, lines in writers.items() if lines} == {
        OWNERS["INT32_MAX"]: java_maxima(ast.parse(
            package_modules()[OWNERS["INT32_MAX"]].read_text()))}
    assert len(writers[OWNERS["INT32_MAX"]]) == 2


def test_the_maxima_check_catches_each_spelling() -> None:
    code = "A = 2**31 - 1\nB = 0x7FFFFFFF\nC = x & 2147483647\nD = 2 ** 63 - 1\nE = 2**31\n"
    assert java_maxima(ast.parse(code)) == [1, 2, 3, 4]


def test_the_check_catches_a_second_definition(tmp_path: Path) -> None:
    """A copy of ``TopicPartition`` in another module is found (the test is not vacuous)."""
    copy = tmp_path / "copy.py"
    copy.write_text("TopicPartition = tuple[str, int]\nclass ErrorCode:\n    pass\n")
    found = definitions({"spark_kafka_wire.client.kafka07.cluster": copy})
    assert found["TopicPartition"] == ["spark_kafka_wire.client.kafka07.cluster"]
    assert found["ErrorCode"] == ["spark_kafka_wire.client.kafka07.cluster"]
