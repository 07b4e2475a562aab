"""What an Avro record or schema may cost (issue 45 items 3, 7 and 10): hostile records fail
alone, hostile schemas are refused, and records near the bounds decode as fastavro reads them.

The hostile inputs run in a child process under an address-space limit and a timeout: on
main they took gigabytes, looped for minutes or killed the process (SIGSEGV), which must fail
the test, not the test run.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.formats import avro_types
from spark_kafka_wire.formats.avro_bounds import record_bounds
from spark_kafka_wire.formats.avro_codec import AvroDecoder
from spark_kafka_wire.formats.avro_types import parse_schema, to_spark
from spark_kafka_wire.formats.limits import (
    AVRO_VALUES_PER_BYTE,
    AVRO_VALUES_PER_RECORD,
    MAX_NESTING_DEPTH,
)
from tests.unit.formats.test_avro_codec import EVERY_TYPE, every_record, fastavro_bytes


def zigzag(n: int) -> bytes:
    u, out = (n << 1) ^ (n >> 63), bytearray()
    while u > 0x7F:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def record(name: str, *fields: tuple[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


EMPTY = record("Empty")
LINKED = record("Node", ("v", "int"), ("next", ["null", "Node"]))


def fastavro_read(writer: Any, data: bytes, reader: Any = None) -> Any:
    return fastavro.schemaless_reader(io.BytesIO(data), fastavro.parse_schema(writer),
                                      None if reader is None else fastavro.parse_schema(reader))


def decode(writer: Any, payloads: list[bytes], reader: Any = None) -> Any:
    text = json.dumps(writer)
    return AvroDecoder(json.dumps(reader or writer), recursive_field_max_depth=12) \
        .decode(pa.array(payloads, pa.binary()), text)


# ---------------------------------------------------------------------------- hostile


#: Each case builds its input, decodes it and prints what happened as JSON. The child caps
#: its address space at 1 GiB: a run-away allocation is a MemoryError there, not a swap storm.
_CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
import pyarrow as pa
from spark_kafka_wire.formats.avro_codec import AvroDecoder
from tests.unit.formats.test_avro_limits import CASES

reader, writer, payloads = CASES[sys.argv[1]]()
try:
    decoder = AvroDecoder(reader, recursive_field_max_depth=2)
except ValueError as exc:
    print(json.dumps({"refused": str(exc)}))
    sys.exit(0)
got = decoder.decode(pa.array(payloads, pa.binary()), writer)
print(json.dumps({"failed": got.failed.tolist(), "errors": {str(k): v for k, v in got.errors.items()},
                  "values": repr(got.array.to_pylist())}))
"""


def _array_of(items: Any, count: int) -> tuple[str, str, list[bytes]]:
    """A record of one array claiming ``count`` items, and a good record after it."""
    schema = json.dumps(record("R", ("a", {"type": "array", "items": items})))
    return schema, schema, [zigzag(count) + zigzag(0), zigzag(1) + zigzag(0)]


def _skipped(items: Any, count: int) -> tuple[str, str, list[bytes]]:
    """A writer's array field the reader lacks (fastavro skips it item by item)."""
    writer = json.dumps(record("R", ("x", {"type": "array", "items": items}), ("b", "int")))
    reader = json.dumps(record("R", ("b", "int")))
    return reader, writer, [zigzag(count) + zigzag(0) + zigzag(5), zigzag(0) + zigzag(7)]


def _deep_record() -> tuple[str, str, list[bytes]]:
    """A recursive schema and a record 30,000 nodes deep (60 KB): fastavro recursed on the
    C stack until SIGSEGV."""
    schema = json.dumps(LINKED)
    return schema, schema, [b"\x02\x02" * 30_000 + b"\x02\x00", b"\x02\x00"]


def _deep_writer_schema() -> tuple[str, str, list[bytes]]:
    """A writer schema nested 3,000 deep: RecursionError escaped and failed the batch."""
    # as text: json.dumps itself would recurse too deep
    deep = '{"type": "array", "items": ' * 3_000 + '"int"' + "}" * 3_000
    writer = ('{"type": "record", "name": "R", "fields": [{"name": "b", "type": "int"}, '
              f'{{"name": "x", "type": {deep}}}]}}')
    return json.dumps(record("R", ("b", "int"))), writer, [zigzag(1) + zigzag(0)]


def _doubling(leaf: Any, levels: int = 20) -> dict[str, Any]:
    """Record T0 of two fields of T1, T1 of two of T2 ... (2 KB; 2**levels nodes expanded)."""
    schema: Any = record(f"T{levels}", ("x", leaf))
    for i in range(levels - 1, -1, -1):
        schema = record(f"T{i}", ("a", schema), ("b", f"T{i + 1}"))
    return schema


def _exponential_reader() -> tuple[str, str, list[bytes]]:
    schema = json.dumps(_doubling("int"))
    return schema, schema, []


def _exponential_writer() -> tuple[str, str, list[bytes]]:
    """A writer schema whose every record, of no bytes, is 2**20 nulls."""
    return json.dumps(record("T0")), json.dumps(_doubling("null")), [b"", b""]


CASES = {
    "array of empty records": lambda: _array_of(EMPTY, 3 * 10**7),
    "array of nulls": lambda: _array_of("null", 10**12),
    "skipped nulls": lambda: _skipped("null", 2**62),
    "skipped booleans": lambda: _skipped("boolean", 2**40),
    "skipped fixed": lambda: _skipped({"type": "fixed", "name": "F", "size": 3}, 2**40),
    "deep record": _deep_record,
    "deep writer schema": _deep_writer_schema,
    "exponential reader schema": _exponential_reader,
    "exponential writer schema": _exponential_writer,
}


def _run(case: str) -> dict[str, Any]:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, *sys.path])}
    run = subprocess.run([sys.executable, "-c", _CHILD, case], capture_output=True, text=True,
                         timeout=60, env=env, check=False, cwd=root)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("case", ["array of empty records", "array of nulls", "skipped nulls",
                                  "skipped booleans", "skipped fixed"])
def test_a_block_count_beyond_the_record_fails_that_record_alone(case: str) -> None:
    """On main: 2.2 GiB and 18 s (3*10**7 empty records), MemoryError (10**12 nulls), and
    skipping 2**62 nulls (or 2**40 booleans or fixeds, which fastavro skips past the end)
    had not finished in 30 s."""
    got = _run(case)
    assert got["failed"] == [True, False], got
    assert list(got["errors"]) == ["0"]
    assert got["errors"]["0"].startswith("Avro record refused before decoding: ")
    assert "MemoryError" not in got["errors"]["0"]


def test_a_record_nested_deeper_than_the_limit_fails_alone() -> None:
    """On main: SIGSEGV (fastavro's reader recursing 30,000 levels on the C stack)."""
    got = _run("deep record")
    assert got["failed"] == [True, False], got
    assert f"nests deeper than {MAX_NESTING_DEPTH}" in got["errors"]["0"]
    assert got["values"] == repr([None, {"v": 1, "next": None}])


def test_a_writer_schema_nested_too_deep_fails_its_records_with_the_reason() -> None:
    """On main: RecursionError out of decode (the whole batch failed, even under
    PERMISSIVE, and the CLI printed a traceback)."""
    got = _run("deep writer schema")
    assert got["failed"] == [True], got
    assert "invalid writer schema" in got["errors"]["0"]
    assert f"nested deeper than {MAX_NESTING_DEPTH} levels" in got["errors"]["0"]


def test_a_reader_schema_of_exponential_expansion_is_refused_at_once() -> None:
    """On main: 13 s and 370 MiB to plan a 2 KB schema (2**20 nodes expanded)."""
    got = _run("exponential reader schema")
    assert "more than 100,000 nodes" in got["refused"], got


def test_a_writer_schema_of_exponential_expansion_fails_its_records() -> None:
    """On main: each record of no bytes was 2**21 values fastavro skipped, a second a
    record (a batch of such records ran for hours)."""
    got = _run("exponential writer schema")
    assert got["failed"] == [True, True], got
    assert "expands to" in got["errors"]["0"]


# ---------------------------------------------------------------------------- schemas


def _nested_arrays(levels: int) -> str:
    deep: Any = "int"
    for _ in range(levels - 1):
        deep = {"type": "array", "items": deep}
    return json.dumps(record("R", ("x", deep)))


def test_a_schema_at_the_depth_limit_parses_and_one_deeper_is_refused() -> None:
    to_spark(_nested_arrays(MAX_NESTING_DEPTH))  # the record and 99 arrays
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_NESTING_DEPTH} levels"):
        parse_schema(_nested_arrays(MAX_NESTING_DEPTH + 1))


def test_types_nested_through_references_count_as_deep() -> None:
    """Records defined side by side, each holding the one before: flat text, deep values."""
    defs = [record("T0", ("x", "int"))] + [record(f"T{i}", ("x", f"T{i - 1}"))
                                           for i in range(1, 120)]
    with pytest.raises(ValueError, match="nested deeper"):
        parse_schema(json.dumps(record("Top", ("u", ["null", *defs]))))
    parse_schema(json.dumps(record("Top", ("u", ["null", *defs[:MAX_NESTING_DEPTH - 1]]))))


def test_a_union_inside_a_union_is_refused() -> None:
    with pytest.raises(ValueError, match="union immediately inside a union"):
        parse_schema(json.dumps(record("R", ("u", ["null", ["int", "string"]]))))


def test_a_record_containing_itself_through_records_alone_fails_its_records() -> None:
    """No value of it ends: fastavro would recurse reading no bytes."""
    loop = record("Loop", ("again", "Loop"))
    got = decode(loop, [b""], reader=record("Loop"))
    assert got.failed.tolist() == [True]
    assert "contains itself" in got.errors[0]


def test_the_node_limit_counts_the_expansion_and_shared_types_are_built_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The Spark type of a schema is its expansion (2**k copies of the innermost record);
    it is built once per named type, so the limit is checked before the copies exist."""
    monkeypatch.setattr(avro_types, "MAX_SCHEMA_NODES", 2_000)
    small = to_spark(json.dumps(_doubling("int", levels=8)))  # 3 * 2**8 - 1 nodes
    assert small.fields[0][1] is small.fields[1][1]  # T1, built once
    with pytest.raises(ValueError, match="more than 2,000 nodes"):
        to_spark(json.dumps(_doubling("int", levels=10)))  # 3 * 2**10 - 1


def test_recursive_schemas_expand_as_before() -> None:
    mapped = to_spark(json.dumps(LINKED), recursive_field_max_depth=3)
    depth = 0
    node: Any = mapped
    while node is not None:
        depth += 1
        nexts = [c for n, c in node.fields if n == "next"]
        node = nexts[0].item if nexts else None
    assert depth == 3


# ---------------------------------------------------------------------------- records


def test_empty_items_up_to_the_budget_decode_as_fastavro_reads_them() -> None:
    schema = record("R", ("a", {"type": "array", "items": EMPTY}))
    for count in (1, 100, 1_000):
        payload = zigzag(count) + zigzag(0)
        budget = AVRO_VALUES_PER_BYTE * len(payload) + AVRO_VALUES_PER_RECORD
        got = decode(schema, [payload])
        # the record and the array are values too
        if count + 2 <= budget:
            assert not got.failed.any(), got.errors
            assert got.array.to_pylist() == [fastavro_read(schema, payload)]
        else:
            assert got.failed.tolist() == [True]
            assert "AVRO_VALUES_PER_BYTE" in got.errors[0]


def test_a_list_at_the_depth_limit_decodes_and_one_node_more_fails() -> None:
    def linked(nodes: int) -> bytes:
        return b"\x02\x02" * (nodes - 1) + b"\x02\x00"

    at_limit, over = linked(MAX_NESTING_DEPTH), linked(MAX_NESTING_DEPTH + 1)
    got = decode(LINKED, [at_limit, over])
    assert got.failed.tolist() == [False, True]
    row, expected = got.array.to_pylist()[0], fastavro_read(LINKED, at_limit)
    for _ in range(11):  # the Spark type keeps recursive_field_max_depth=12 levels
        assert row["v"] == expected["v"] == 1
        row, expected = row["next"], expected["next"]


def _blocks(items: list[bytes], sizes: bool, lie: int = 0) -> bytes:
    """An array written as one block of each item, with byte sizes (negative counts)."""
    out = b""
    for item in items:
        out += (zigzag(-1) + zigzag(len(item) + lie) if sizes else zigzag(1)) + item
    return out + zigzag(0)


def test_blocks_with_byte_sizes_decode_and_a_wrong_size_fails() -> None:
    points = record("P", ("x", "int"), ("s", "string"))
    writer = record("R", ("a", {"type": "array", "items": points}),
                    ("m", {"type": "map", "values": "double"}), ("z", "int"))
    reader = record("R", ("z", "int"))  # the array and the map skipped: fastavro uses sizes
    items = [zigzag(3) + zigzag(2) + b"ab", zigzag(-4) + zigzag(0)]
    entry = zigzag(1) + b"k" + b"\x00" * 7 + b"\x01"
    good = _blocks(items, True) + _blocks([entry], True) + zigzag(9)
    wrong = _blocks(items, True, lie=1) + _blocks([entry], True) + zigzag(9)
    bounds = record_bounds(parse_schema(json.dumps(writer)), always=True)
    assert bounds is not None
    assert bounds.problem(good) is None
    assert "byte size" in (bounds.problem(wrong) or "")
    assert fastavro_read(writer, good)["a"] == [{"x": 3, "s": "ab"}, {"x": -4, "s": ""}]
    for walked in (writer, reader):
        got = decode(writer, [good], reader=walked)
        assert not got.failed.any(), got.errors
        row = got.array.to_pylist()[0]
        if "m" in row:
            row["m"] = dict(row["m"])  # Arrow's map is a list of pairs
        assert row == fastavro_read(writer, good, walked)


def test_arrays_of_fixed_width_items_are_bounded_by_the_bytes_left() -> None:
    writer = record("R", ("v", {"type": "array", "items": "double"}), ("b", "int"))
    reader = record("R", ("b", "int"))
    fine = zigzag(3) + b"\x00" * 24 + zigzag(0) + zigzag(4)
    short = zigzag(4) + b"\x00" * 24 + zigzag(0) + zigzag(4)
    got = decode(writer, [fine, short], reader=reader)
    assert got.failed.tolist() == [False, True]
    assert got.array.to_pylist()[0] == {"b": 4} == fastavro_read(writer, fine, reader)
    assert "items of 8 bytes" in got.errors[1]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(every_record, min_size=1, max_size=4))
def test_the_walk_accepts_every_record_fastavro_writes(records: list[Any]) -> None:
    """Held against fastavro's writer on every type (the walk is forced: this schema does
    not need it)."""
    bounds = record_bounds(parse_schema(json.dumps(EVERY_TYPE)), always=True)
    assert bounds is not None
    for r in records:
        payload = fastavro_bytes(EVERY_TYPE, r)
        assert bounds.problem(payload) is None
        assert bounds.problem(payload[:-1]) is not None


def test_common_schemas_are_not_walked() -> None:
    """The walk costs Python per record: schemas fastavro's own failures already bound
    (the test suite's every type, flat records, arrays of strings) skip it."""
    assert record_bounds(parse_schema(json.dumps(EVERY_TYPE))) is None
    flat = record("F", *[(f"f{i}", "double") for i in range(300)])
    assert record_bounds(parse_schema(json.dumps(flat))) is None
    tags = record("T", ("tags", {"type": "array", "items": "string"}))
    assert record_bounds(parse_schema(json.dumps(tags))) is None
    assert record_bounds(parse_schema(json.dumps(LINKED))) is not None
