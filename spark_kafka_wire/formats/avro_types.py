"""Avro schemas as Spark and Arrow types, and Spark types as Avro schemas, as spark-avro does.

A value column decoded by kafkawire must have the type Spark's own ``from_avro`` gives for the
same reader schema (``SchemaConverters.toSqlType``), so a query moved between the two keeps its
schema; and a struct written by kafkawire must get the Avro schema ``to_avro`` derives
(``SchemaConverters.toAvroType``). The Spark type is given as its JSON form (what pyspark's
``DataType.jsonValue()`` returns), so this layer needs no pyspark; the Arrow type is the one
pyspark uses for that Spark type when it moves Arrow batches (``to_arrow_type``).

The schema is parsed here (names, namespaces, references, logical types) rather than by
fastavro, because Spark's mapping depends on details fastavro normalizes away: which logical
types Avro's Java library accepts (an invalid decimal is plain bytes), the simple names of
union branches, and the full names recursion is counted by.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from spark_kafka_wire.formats.errors import SchemaTooComplexError
from spark_kafka_wire.formats.limits import MAX_NESTING_DEPTH, MAX_SCHEMA_NODES

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "enum", "fixed", "error")
#: Spark's DecimalType.MAX_PRECISION
MAX_DECIMAL_PRECISION = 38
#: Spark's limit for recursiveFieldMaxDepth
MAX_RECURSIVE_DEPTH = 12
#: Spark's default stableIdentifierPrefixForUnionType
STABLE_UNION_PREFIX = "member_"

Node = dict[str, Any]


# ---------------------------------------------------------------------------- parsing


def _full_name(name: str, namespace: str | None) -> str:
    if "." in name or not namespace:
        return name
    return f"{namespace}.{name}"


def _logical(node: Node) -> str | None:
    """The logical type Avro's Java library keeps on ``node`` (it drops invalid ones, which
    then read as their underlying type: ``LogicalTypes.fromSchemaIgnoreInvalid``)."""
    name = node.get("logicalType")
    kind = node["type"]
    if name == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = node.get("precision"), node.get("scale", 0)
        if not isinstance(precision, int) or not isinstance(scale, int) or precision <= 0 \
                or scale < 0 or scale > precision:
            return None
        if kind == "fixed" and precision > _max_precision_for_size(node["size"]):
            return None
        return "decimal"
    allowed = {"date": ("int",), "time-millis": ("int",), "time-micros": ("long",),
               "timestamp-millis": ("long",), "timestamp-micros": ("long",),
               "timestamp-nanos": ("long",), "local-timestamp-millis": ("long",),
               "local-timestamp-micros": ("long",), "local-timestamp-nanos": ("long",),
               "uuid": ("string", "fixed")}
    if isinstance(name, str) and kind in allowed.get(name, ()):
        if name == "uuid" and kind == "fixed" and node.get("size") != 16:
            return None
        return name
    return None


def _max_precision_for_size(size: int) -> int:
    """The most decimal digits a two's complement number of ``size`` bytes holds."""
    return int(math.floor(math.log10(2) * (8 * size - 1)))


def parse_schema(schema: str | Any) -> Node:
    """Parse an Avro schema (JSON text or its loaded value) into a tree of dicts: every
    type a dict with ``type``; named types with their full ``name`` and one shared dict per
    name (references point at it, so a recursive schema is a cyclic graph); ``logical``:
    the logical type kept, or None.

    A schema is a registry's answer, so it is data: one nested deeper than
    ``MAX_NESTING_DEPTH`` records, arrays and maps is refused (ValueError) before anything
    recurses through it (Python's recursion limit, or the C stack of fastavro's reader)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError:
            schema = schema.strip()  # a bare primitive name such as int
        except RecursionError:
            raise _too_deep() from None
    names: dict[str, Node] = {}
    node = _parse(schema, None, names, 0)
    _check_height(node)
    return node


def _check_height(root: Node) -> None:
    """Refuses a schema whose types nest deeper than ``MAX_NESTING_DEPTH`` through named
    references (types defined side by side, each holding the one before: the text is flat,
    the values are not), walking it without recursion; a reference back to a type being
    walked (a recursive schema) counts nothing here, its records are bounded one by one."""
    height: dict[int, int] = {}
    on_path = {id(root)}
    stack = [(root, iter(children(root)))]
    while stack:
        node, rest = stack[-1]
        child = next(rest, None)
        if child is None:
            stack.pop()
            on_path.discard(id(node))
            level = max((height.get(id(c), 0) for c in children(node)), default=0) \
                + (node["type"] in _LEVELS)
            if level > MAX_NESTING_DEPTH:
                raise _too_deep()
            height[id(node)] = level
        elif id(child) not in height and id(child) not in on_path:
            on_path.add(id(child))
            stack.append((child, iter(children(child))))


def _too_deep() -> SchemaTooComplexError:
    return SchemaTooComplexError(
        "Avro schema", f"nested deeper than {MAX_NESTING_DEPTH} levels of records, arrays "
        "and maps (the depth Protobuf's parsers stop at); a registry's schema that deep is "
        "refused rather than recursed through")


def _parse(s: Any, namespace: str | None, names: dict[str, Node], depth: int,
           in_union: bool = False) -> Node:
    """``depth``: the records, arrays and maps (and {"type": ...} wrappers) around ``s``."""
    if depth > MAX_NESTING_DEPTH:
        raise _too_deep()
    if isinstance(s, list):
        if in_union:
            # Avro's specification (and Java's parser): unions may not immediately contain
            # other unions; left unchecked, [[[...]]] would recurse without a level counted
            raise ValueError("Avro schema: a union immediately inside a union")
        branches = [_parse(b, namespace, names, depth, in_union=True) for b in s]
        return {"type": "union", "branches": branches, "logical": None}
    if isinstance(s, str):
        if s in PRIMITIVES:
            return {"type": s, "logical": None}
        for candidate in (_full_name(s, namespace), s):
            if candidate in names:
                return names[candidate]
        raise ValueError(f"Avro schema: unknown type name {s!r}")
    if not isinstance(s, dict) or "type" not in s:
        raise ValueError(f"Avro schema: not a type: {s!r}")
    kind = s["type"]
    if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in PRIMITIVES
                                          and kind not in NAMED
                                          and kind not in ("array", "map")):
        return _parse(kind, namespace, names, depth + 1)
    if kind in PRIMITIVES:
        node = {"type": kind, **{k: v for k, v in s.items() if k != "type"}}
        node["logical"] = _logical(node)
        return node
    if kind in ("array", "map", "record", "error") and depth >= MAX_NESTING_DEPTH:
        raise _too_deep()  # its own level would be one too many
    if kind == "array":
        return {"type": "array", "items": _parse(s["items"], namespace, names, depth + 1),
                "logical": None}
    if kind == "map":
        return {"type": "map", "values": _parse(s["values"], namespace, names, depth + 1),
                "logical": None}
    # a named type
    if "name" not in s:
        raise ValueError(f"Avro schema: a {kind} needs a name: {s!r}")
    ns = s.get("namespace", namespace)
    full = _full_name(s["name"], ns)
    if full in names:
        raise ValueError(f"Avro schema: type {full!r} defined twice")
    own_ns = full.rpartition(".")[0] or None
    node = {"type": "record" if kind == "error" else kind, "name": full,
            "aliases": [_full_name(a, own_ns) for a in s.get("aliases", [])]}
    names[full] = node
    if kind == "fixed":
        size = s.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"Avro schema: fixed {full!r} needs a size of 0 or more, not "
                             f"{size!r}")
        node["size"] = size
        node.update({k: v for k, v in s.items() if k in ("logicalType", "precision", "scale")})
        node["logical"] = _logical(node)
    elif kind == "enum":
        node["symbols"] = list(s["symbols"])
        if "default" in s:
            node["default"] = s["default"]
        node["logical"] = None
    else:
        node["logical"] = None
        node["fields"] = []
        for f in s.get("fields", []):
            entry = {"name": f["name"], "type": _parse(f["type"], own_ns, names, depth + 1),
                     "aliases": list(f.get("aliases", []))}
            if "default" in f:
                entry["default"] = f["default"]
            node["fields"].append(entry)
    return node


def simple_name(node: Node) -> str:
    """Avro's ``Schema.getName()``: a named type's name without namespace, else the type."""
    if node["type"] in ("record", "enum", "fixed"):
        return str(node["name"]).rpartition(".")[2]
    return str(node["type"])


def non_null_branches(node: Node) -> list[Node]:
    return [b for b in node["branches"] if b["type"] != "null"]


# ---------------------------------------------------------------------------- Avro -> Spark


@dataclass
class Mapped:
    """One Avro type with its Spark type (JSON form), nullability and Arrow type.

    ``kind`` says how values are converted: a primitive's name, ``decimal``, ``date``,
    ``timestamp-millis``..., ``record`` (``fields``: (name, Mapped)), ``array``/``map``
    (``item``), ``nullable`` (a union with null and one other branch: ``item``),
    ``widened`` ([int, long] or [float, double]), ``members`` (a complex union:
    ``branches``, one (avro node, Mapped) per struct field).
    """

    kind: str
    avro: Node
    spark: Any
    nullable: bool
    arrow: pa.DataType
    fields: list[tuple[str, Mapped]] = field(default_factory=list)
    item: Mapped | None = None
    branches: list[tuple[Node, Mapped]] = field(default_factory=list)


def to_spark(schema: str | Node, *, stable_union_ids: bool = False,
             recursive_field_max_depth: int = -1) -> Mapped:
    """The Spark type ``from_avro`` gives for ``schema`` (spark-avro's ``toSqlType``).

    Recursive records are refused unless ``recursive_field_max_depth`` is 1..12; then fields
    whose record is already that deep on the path are dropped, as Spark does.

    A Spark type copies a named type wherever it is used, so its size can be exponential in
    the schema's (issue 45): each named type is mapped once per recursion context and the
    copies share it, and a type of more than ``MAX_SCHEMA_NODES`` nodes, or nested deeper
    than ``MAX_NESTING_DEPTH``, is refused (ValueError) before it is built.
    """
    node = parse_schema(schema) if isinstance(schema, str) else schema
    expansion = _Expansion(has_cycle(node))
    mapped = _to_spark(node, {}, stable_union_ids, recursive_field_max_depth, expansion, 0)
    if mapped is None:  # a top-level record is never dropped
        raise ValueError("Avro schema: nothing left after dropping recursive fields")
    return mapped


def children(node: Node) -> list[Node]:
    """The types ``node`` is made of (a record's fields', an array's items, a map's values,
    a union's branches)."""
    kind = node["type"]
    if kind == "record":
        return [f["type"] for f in node["fields"]]
    if kind == "array":
        return [node["items"]]
    if kind == "map":
        return [node["values"]]
    if kind == "union":
        return list(node["branches"])
    return []


def has_cycle(root: Node) -> bool:
    """Whether a named type contains itself (a recursive schema), without recursing."""
    state: dict[int, bool] = {}  # id -> True while on the path, False once done
    stack: list[tuple[Node, list[Node]]] = [(root, children(root))]
    state[id(root)] = True
    while stack:
        node, rest = stack[-1]
        if not rest:
            state[id(node)] = False
            stack.pop()
            continue
        child = rest.pop()
        seen = state.get(id(child))
        if seen is True:
            return True
        if seen is None:
            state[id(child)] = True
            stack.append((child, children(child)))
    return False


class _Expansion:
    """What mapping one schema has done so far: each node's Spark type once per recursion
    context (``memo``), each mapped type's expanded node count and depth (``sizes``, by the
    type's id), and how many types were built. Without cycles a node's type does not depend
    on the records above it, so the node alone is the key."""

    def __init__(self, cyclic: bool) -> None:
        self.cyclic = cyclic
        self.memo: dict[tuple[int, frozenset[tuple[str, int]] | None], Mapped | None] = {}
        self.sizes: dict[int, tuple[int, int]] = {}
        self.built = 0

    def key(self, node: Node,
            seen: dict[str, int]) -> tuple[int, frozenset[tuple[str, int]] | None]:
        return id(node), frozenset(seen.items()) if self.cyclic else None

    def measure(self, mapped: Mapped) -> tuple[int, int]:
        """A newly mapped type's expanded node count and depth, from its children's."""
        size, height = 1, 0
        for child in [c for _, c in mapped.fields] + \
                ([mapped.item] if mapped.item is not None else []):
            child_size, child_height = self.sizes[id(child)]
            size += child_size
            height = max(height, child_height)
        height += mapped.kind in _LEVELS
        self.sizes[id(mapped)] = (size, height)
        return size, height


#: the types that are a level of nesting (MAX_NESTING_DEPTH)
_LEVELS = ("record", "array", "map")


def _too_many_nodes() -> SchemaTooComplexError:
    return SchemaTooComplexError(
        "Avro schema", f"its Spark type would have more than {MAX_SCHEMA_NODES:,} nodes (a "
        "Spark type repeats a named type wherever it is used); a registry's schema that large "
        "is refused rather than expanded")


def _to_spark(node: Node, seen: dict[str, int], stable: bool, depth: int,
              expansion: _Expansion, above: int) -> Mapped | None:
    """``node``'s Spark type, memoised; ``above``: the records, arrays and maps above it."""
    key = expansion.key(node, seen)
    if key in expansion.memo:
        mapped = expansion.memo[key]
    else:
        level = above + (node["type"] in _LEVELS)
        if level > MAX_NESTING_DEPTH:
            raise _too_deep()
        expansion.built += 1
        if expansion.built > MAX_SCHEMA_NODES:
            raise _too_many_nodes()
        mapped = _map(node, seen, stable, depth, expansion, level)
        if mapped is not None and id(mapped) not in expansion.sizes:
            size, _ = expansion.measure(mapped)
            if size > MAX_SCHEMA_NODES:
                raise _too_many_nodes()
        expansion.memo[key] = mapped
    if mapped is not None and above + expansion.sizes[id(mapped)][1] > MAX_NESTING_DEPTH:
        raise _too_deep()
    return mapped


def _primitive(kind: str, avro: Node, spark: str, arrow: pa.DataType) -> Mapped:
    return Mapped(kind, avro, spark, False, arrow)


def _map(node: Node, seen: dict[str, int], stable: bool, depth: int, expansion: _Expansion,
         level: int) -> Mapped | None:
    """``node``'s Spark type, its parts through ``_to_spark``; ``level``: the records, arrays
    and maps above its parts."""
    kind, logical = node["type"], node.get("logical")
    if kind == "int":
        if logical == "date":
            return _primitive("date", node, "date", pa.date32())
        if "spark.sql.catalyst.type" in node:
            raise ValueError("Avro schema: spark.sql.catalyst.type (intervals) is not "
                                  "supported")
        return _primitive("int", node, "integer", pa.int32())
    if kind == "long":
        if logical in ("timestamp-millis", "timestamp-micros"):
            return _primitive(logical, node, "timestamp", pa.timestamp("us", tz="UTC"))
        if logical in ("local-timestamp-millis", "local-timestamp-micros"):
            return _primitive(logical, node, "timestamp_ntz", pa.timestamp("us"))
        if "spark.sql.catalyst.type" in node:
            raise ValueError("Avro schema: spark.sql.catalyst.type (intervals) is not "
                                  "supported")
        return _primitive("long", node, "long", pa.int64())
    if kind == "string":
        return _primitive("string", node, "string", pa.string())
    if kind == "boolean":
        return _primitive("boolean", node, "boolean", pa.bool_())
    if kind == "float":
        return _primitive("float", node, "float", pa.float32())
    if kind == "double":
        return _primitive("double", node, "double", pa.float64())
    if kind in ("bytes", "fixed"):
        if logical == "decimal":
            p, s = node["precision"], node.get("scale", 0)
            if p > MAX_DECIMAL_PRECISION:
                raise ValueError(f"Avro schema: decimal precision {p} exceeds Spark's "
                                      f"maximum {MAX_DECIMAL_PRECISION}")
            return _primitive("decimal", node, f"decimal({p},{s})", pa.decimal128(p, s))
        return _primitive(kind, node, "binary", pa.binary())
    if kind == "enum":
        return _primitive("enum", node, "string", pa.string())
    if kind == "null":
        return Mapped("null", node, "void", True, pa.null())
    if kind == "record":
        name = node["name"]
        level = seen.get(name, 0)
        if level > 0 and (depth <= 0 or depth > MAX_RECURSIVE_DEPTH):
            raise ValueError(
                f"Found recursive reference in Avro schema ({name}), which can not be "
                "processed by Spark by default. Try setting the option "
                f"`recursiveFieldMaxDepth` to 1 - {MAX_RECURSIVE_DEPTH}.")
        if level > 0 and level >= depth:
            return None
        inner = {**seen, name: level + 1}
        fields = []
        for f in node["fields"]:
            child = _to_spark(f["type"], inner, stable, depth, expansion, level)
            if child is not None:
                fields.append((f["name"], child))
        spark = {"type": "struct", "fields": [
            {"name": n, "type": m.spark, "nullable": m.nullable, "metadata": {}}
            for n, m in fields]}
        arrow = pa.struct([pa.field(n, m.arrow, m.nullable) for n, m in fields])
        return Mapped("record", node, spark, False, arrow, fields=fields)
    if kind == "array":
        item = _to_spark(node["items"], seen, stable, depth, expansion, level)
        if item is None:
            return None
        return Mapped("array", node, {"type": "array", "elementType": item.spark,
                                      "containsNull": item.nullable}, False,
                      pa.list_(pa.field("element", item.arrow, item.nullable)), item=item)
    if kind == "map":
        item = _to_spark(node["values"], seen, stable, depth, expansion,
                         level)
        if item is None:
            return None
        return Mapped("map", node, {"type": "map", "keyType": "string",
                                    "valueType": item.spark,
                                    "valueContainsNull": item.nullable}, False,
                      pa.map_(pa.field("key", pa.string(), False),
                              pa.field("value", item.arrow, item.nullable)), item=item)
    if kind == "union":
        return _union(node, seen, stable, depth, expansion, level)
    raise ValueError(f"Unsupported type {kind}")


def _union(node: Node, seen: dict[str, int], stable: bool, depth: int, expansion: _Expansion,
           level: int) -> Mapped | None:
    branches = node["branches"]
    rest = non_null_branches(node)
    if len(rest) < len(branches):
        inner = rest[0] if len(rest) == 1 else {"type": "union", "branches": rest,
                                                "logical": None}
        if not rest:
            # Spark reads the empty union left as a struct without fields
            return Mapped("members", node, {"type": "struct", "fields": []}, True,
                          pa.struct([]))
        mapped = _to_spark(inner, seen, stable, depth, expansion, level)
        if mapped is None:
            return None
        return Mapped("nullable", node, mapped.spark, True, mapped.arrow, item=mapped)
    kinds = [b["type"] for b in branches]
    if len(branches) == 1:
        return _to_spark(branches[0], seen, stable, depth, expansion, level)
    if len(branches) == 2 and set(kinds) == {"int", "long"}:
        return Mapped("widened", node, "long", False, pa.int64())
    if len(branches) == 2 and set(kinds) == {"float", "double"}:
        return Mapped("widened", node, "double", False, pa.float64())
    members: list[tuple[Node, Mapped]] = []
    names: list[str] = []
    taken: set[str] = set()
    for i, branch in enumerate(branches):
        mapped = _to_spark(branch, seen, stable, depth, expansion, level)
        if mapped is None:
            continue
        if stable:
            name = STABLE_UNION_PREFIX + simple_name(branch)
            if name.lower() in taken:
                raise ValueError("Cannot generate stable identifier for Avro union type "
                                      f"due to name conflict of type name "
                                      f"{simple_name(branch)}")
            taken.add(name.lower())
        else:
            name = f"member{i}"
        members.append((branch, mapped))
        names.append(name)
    spark = {"type": "struct", "fields": [
        {"name": n, "type": m.spark, "nullable": True, "metadata": {}}
        for n, (_, m) in zip(names, members, strict=True)]}
    named = list(zip(names, members, strict=True))
    arrow = pa.struct([pa.field(n, m.arrow, True) for n, (_, m) in named])
    return Mapped("members", node, spark, False, arrow,
                  fields=[(n, m) for n, (_, m) in named], branches=members)


# ---------------------------------------------------------------------------- Spark -> Avro


def min_bytes_for_precision(precision: int) -> int:
    """Spark's ``Decimal.minBytesForPrecision``: the fewest bytes of two's complement that
    hold every unscaled value of ``precision`` digits."""
    n = 1
    while 2 ** (8 * n - 1) < 10 ** precision:
        n += 1
    return n


def to_avro(spark: Any, nullable: bool = False, record_name: str = "topLevelRecord",
            namespace: str = "") -> Any:
    """The Avro schema (as JSON-ready values) ``to_avro`` derives from a Spark type's JSON
    form (spark-avro's ``toAvroType``): structs as records named after their field under the
    parent's namespace, nullable types as ``[T, "null"]``, decimals as fixed of
    ``minBytesForPrecision`` bytes named ``<namespace>.<record>.fixed``."""
    schema: Any
    if isinstance(spark, str):
        simple = {"boolean": "boolean", "byte": "int", "short": "int", "integer": "int",
                  "long": "long", "float": "float", "double": "double", "string": "string",
                  "binary": "bytes", "void": "null"}
        if spark in simple:
            schema = simple[spark]
        elif spark == "date":
            schema = {"type": "int", "logicalType": "date"}
        elif spark == "timestamp":
            schema = {"type": "long", "logicalType": "timestamp-micros"}
        elif spark == "timestamp_ntz":
            schema = {"type": "long", "logicalType": "local-timestamp-micros"}
        elif spark.startswith("decimal("):
            p, s = (int(x) for x in spark[len("decimal("):-1].split(","))
            full = f"{namespace}.{record_name}.fixed" if namespace else f"{record_name}.fixed"
            ns, _, name = full.rpartition(".")
            schema = {"type": "fixed", "name": name, "namespace": ns,
                      "size": min_bytes_for_precision(p), "logicalType": "decimal",
                      "precision": p, "scale": s}
        elif spark == "decimal":
            return to_avro("decimal(10,0)", nullable, record_name, namespace)
        else:
            raise ValueError(f"Unexpected type {spark}.")
    elif spark.get("type") == "array":
        schema = {"type": "array", "items": to_avro(spark["elementType"],
                                                    spark["containsNull"], record_name,
                                                    namespace)}
    elif spark.get("type") == "map":
        if spark["keyType"] != "string":
            raise ValueError("Avro map keys are strings: cannot write a map with "
                                  f"{spark['keyType']} keys")
        schema = {"type": "map", "values": to_avro(spark["valueType"],
                                                   spark["valueContainsNull"], record_name,
                                                   namespace)}
    elif spark.get("type") == "struct":
        child_ns = f"{namespace}.{record_name}" if namespace else record_name
        schema = {"type": "record", "name": record_name}
        if namespace:
            schema["namespace"] = namespace
        schema["fields"] = [
            {"name": f["name"], "type": to_avro(f["type"], f["nullable"], f["name"], child_ns)}
            for f in spark["fields"]]
    else:
        raise ValueError(f"Unexpected type {spark}.")
    if nullable and spark != "void":
        return [schema, "null"]
    return schema
