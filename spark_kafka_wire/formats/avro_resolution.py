"""Avro schema resolution checked once per writer schema, before any record is read.

A registry can hand a task a writer schema that no record can be read with under the query's
reader schema (a reader field without default the writer lacks, a type changed to one it does
not promote to). fastavro finds that out again on every record; checking the pair once lets
every record of that schema fail with one reason, found once. Problems that depend on the
data (an enum symbol the reader lacks and has no default for, a union branch the reader
cannot take while others it can) are left to the per-record read, as Avro's Java resolver
does.
"""

from __future__ import annotations

from spark_kafka_wire.formats.avro_types import Node

#: Avro's promotions: writer type -> the reader types it may be read as
PROMOTIONS = {
    "int": {"int", "long", "float", "double"},
    "long": {"long", "float", "double"},
    "float": {"float", "double"},
    "string": {"string", "bytes"},
    "bytes": {"bytes", "string"},
}


def _describe(node: Node) -> str:
    if node["type"] in ("record", "enum", "fixed"):
        return f"{node['type']} {node['name']}"
    if node["type"] == "union":
        return "union [" + ", ".join(_describe(b) for b in node["branches"]) + "]"
    return str(node["type"])


def _names_match(writer: Node, reader: Node) -> bool:
    w_full, r_full = writer["name"], reader["name"]
    w_simple, r_simple = w_full.rpartition(".")[2], r_full.rpartition(".")[2]
    return w_simple == r_simple or w_full in reader.get("aliases", []) \
        or w_simple in [a.rpartition(".")[2] for a in reader.get("aliases", [])]


def resolution_problem(writer: Node, reader: Node, path: str = "",
                       _seen: set[tuple[int, int]] | None = None) -> str | None:
    """Why no record written with ``writer`` can be read as ``reader`` (Avro's resolution
    rules), or None when some can. ``path``: where in the reader schema, for the message."""
    seen = _seen if _seen is not None else set()
    key = (id(writer), id(reader))
    if key in seen:  # a recursive pair already being checked further up
        return None
    seen.add(key)
    where = f"field {path}" if path else "the top level"
    w_kind, r_kind = writer["type"], reader["type"]
    if w_kind == "union":
        problems = [resolution_problem(b, reader, path, seen) for b in writer["branches"]]
        if all(p is not None for p in problems):
            return problems[0] if problems else f"{where}: the writer's union is empty"
        return None
    if r_kind == "union":
        for branch in reader["branches"]:
            if resolution_problem(writer, branch, path, set(seen)) is None:
                return None
        return (f"{where}: the writer's {_describe(writer)} matches no branch of the reader's "
                f"{_describe(reader)}")
    if w_kind in PROMOTIONS or w_kind in ("null", "boolean", "double"):
        if r_kind == w_kind or r_kind in PROMOTIONS.get(w_kind, ()):
            return None
        return f"{where}: the writer's {_describe(writer)} cannot be read as {_describe(reader)}"
    if w_kind != r_kind:
        return f"{where}: the writer's {_describe(writer)} cannot be read as {_describe(reader)}"
    if w_kind in ("record", "enum", "fixed") and not _names_match(writer, reader):
        return (f"{where}: the writer's {_describe(writer)} has another name than the "
                f"reader's {_describe(reader)}")
    if w_kind == "fixed" and writer["size"] != reader["size"]:
        return (f"{where}: the writer's fixed {writer['name']} has {writer['size']} bytes, the "
                f"reader's {reader['size']}")
    if w_kind == "array":
        return resolution_problem(writer["items"], reader["items"], f"{path}[]", seen)
    if w_kind == "map":
        return resolution_problem(writer["values"], reader["values"], f"{path}{{}}", seen)
    if w_kind == "record":
        by_name = {f["name"]: f for f in writer["fields"]}
        for f in reader["fields"]:
            names = [f["name"], *f.get("aliases", [])]
            written = next((by_name[n] for n in names if n in by_name), None)
            field_path = f"{path}.{f['name']}" if path else f["name"]
            if written is None:
                if "default" not in f:
                    return (f"field {field_path}: the reader's field has no default and the "
                            f"writer's {reader['name']} has no such field")
                continue
            problem = resolution_problem(written["type"], f["type"], field_path, seen)
            if problem is not None:
                return problem
    return None
