"""What an Avro record may cost before fastavro reads it (issue 45, CVE-2023-39410's class).

fastavro trusts a record's block counts: ten bytes claiming 10**12 items of ``null`` (or of an
empty record) grow a list until memory runs out, and a writer's field the reader lacks is
skipped item by item (2**62 iterations of nothing), as are items of ``boolean``, ``float``,
``double`` or ``fixed``, whose skipping reads past the end without failing. A recursive writer
schema lets a record nest as deep as its bytes allow, and fastavro recurses on the C stack
(30,000 levels: SIGSEGV). None of that can be caught once fastavro runs, so it is bounded
before:

- once per writer schema (``record_bounds``), the schema is refused when no value of a type
  of it ends (a record containing itself through records alone) or a value expands to more
  than ``MAX_SCHEMA_NODES`` values; and it is worked out whether fastavro's own failures at
  the record's end already bound every record of it (no recursion; each array's items fail
  at the end of the bytes; at most ``AVRO_VALUES_PER_BYTE`` values per byte the record must
  have, plus ``AVRO_VALUES_PER_RECORD``). Then nothing is walked: the common schemas cost
  nothing here;
- otherwise each record is walked by the writer schema without building values
  (``RecordBounds.problem``): a length or a block of items that take bytes is bounded by
  the bytes left, items that take none count against the record's value budget, a negative
  block count's byte size must be its items' (fastavro skips by it and reads by the items:
  both then land on the same byte), and records, arrays and maps nest at most
  ``MAX_NESTING_DEPTH`` deep. A record over a bound fails alone, with the bound named.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.formats.avro_types import Node, children, has_cycle
from spark_kafka_wire.formats.limits import (
    AVRO_VALUES_PER_BYTE,
    AVRO_VALUES_PER_RECORD,
    MAX_NESTING_DEPTH,
    MAX_SCHEMA_NODES,
)

#: bytes each fixed-width type takes
_WIDTHS = {"null": 0, "boolean": 1, "float": 4, "double": 8}
#: types whose first read fails at the end of the bytes, whether fastavro reads or skips
#: them (a varint first: a length, an index, a block count)
_FAIL_AT_END = ("int", "long", "string", "bytes", "enum", "union", "array", "map")
#: the types that are a level of nesting (MAX_NESTING_DEPTH)
_LEVELS = ("record", "array", "map")


@dataclass(frozen=True)
class _Inline:
    """A type's value without what its unions, arrays and maps hold: the values it makes
    (``cost``), the fewest bytes it takes (``least``), and whether fastavro fails at the end
    of the bytes reading or skipping it (skipping a boolean, a float, a double or a fixed
    reads nothing there and goes on); ``width``: the bytes it always takes, when it is made
    of fixed-width parts alone (no varint), else None."""

    cost: int
    least: int
    fails_at_end: bool
    width: int | None


class _Schema:
    """``_Inline`` of every type of a writer schema, each once."""

    def __init__(self) -> None:
        self.inline: dict[int, _Inline] = {}
        self._open: set[int] = set()

    def of(self, node: Node) -> _Inline:
        found = self.inline.get(id(node))
        if found is not None:
            return found
        kind = node["type"]
        if kind == "record":
            if id(node) in self._open:
                raise ValueError(
                    f"Avro schema: record {node['name']} contains itself with no union, array "
                    "or map on the way, so no value of it ends")
            self._open.add(id(node))
            parts = [self.of(f["type"]) for f in node["fields"]]
            self._open.discard(id(node))
            widths = [p.width for p in parts]
            result = _Inline(1 + sum(p.cost for p in parts), sum(p.least for p in parts),
                             any(p.fails_at_end for p in parts),
                             None if None in widths else sum(w for w in widths if w is not None))
        elif kind == "union":
            # its branch is a value of its own (a unit, below), paid for by the index byte
            result = _Inline(0, 1, True, None)
        elif kind in _WIDTHS:
            result = _Inline(1, _WIDTHS[kind], False, _WIDTHS[kind])
        elif kind == "fixed":
            result = _Inline(1, node["size"], False, node["size"])
        else:  # int, long, string, bytes, enum, array, map: a varint first
            result = _Inline(1, 1, True, None)
        self.inline[id(node)] = result
        return result


@dataclass(frozen=True)
class RecordBounds:
    """A writer schema whose records are walked before fastavro reads them."""

    schema: Node
    inline: dict[int, _Inline]

    def problem(self, data: bytes) -> str | None:
        """Why the record ``data`` is refused, or None when fastavro may read it."""
        walk = _Walk(data, self.inline)
        try:
            walk.value(self.schema, 0)
        except _Refused as refused:
            return f"Avro record refused before decoding: {refused}"
        return None


def record_bounds(writer: Node, *, always: bool = False) -> RecordBounds | None:
    """The walk each record of ``writer`` needs, or None when fastavro's own failures bound
    its records already (``always``: the walk regardless, for the tests that hold it against
    fastavro). ValueError: a schema no record of which can be read within the bounds (its
    message says why)."""
    schema = _Schema()
    top = schema.of(writer)
    walk = always or has_cycle(writer)
    if top.cost > AVRO_VALUES_PER_BYTE * top.least + AVRO_VALUES_PER_RECORD:
        walk = True
    # every value a union, an array or a map holds, with what it costs against the bytes
    # that pay for it (a union's index, a map's key, its own): a value fastavro makes was
    # read, so its bytes were there (a read fails at the end; a skip makes no values)
    units: list[tuple[Node, int, int]] = [(writer, top.cost, top.least)]
    done: set[int] = set()
    todo = [writer]
    while todo:
        node = todo.pop()
        if id(node) in done:
            continue
        done.add(id(node))
        kind = node["type"]
        if kind == "union":
            for branch in node["branches"]:
                inline = schema.of(branch)
                units.append((branch, inline.cost, 1 + inline.least))
        elif kind == "array":
            inline = schema.of(node["items"])
            units.append((node["items"], inline.cost, inline.least))
            if not inline.fails_at_end:
                walk = True  # fastavro would loop through a claimed count past the end
        elif kind == "map":
            inline = schema.of(node["values"])
            units.append((node["values"], 1 + inline.cost, 1 + inline.least))
        todo.extend(children(node))
    for node, cost, least in units:
        if cost > MAX_SCHEMA_NODES:
            name = node.get("name", node["type"])
            raise ValueError(f"Avro schema: a value of {name} expands to {cost:,} values, more "
                             f"than the {MAX_SCHEMA_NODES:,} a schema may expand to")
        if node is not writer and cost > AVRO_VALUES_PER_BYTE * least:
            walk = True
    return RecordBounds(writer, schema.inline) if walk else None


class _Refused(Exception):
    """A record over a bound (or cut short): the reason."""


class _Walk:
    """One record walked by its writer schema: the position, the values it would make."""

    def __init__(self, data: bytes, inline: dict[int, _Inline]) -> None:
        self.data, self.pos, self.end = data, 0, len(data)
        self.inline = inline
        self.values = 0
        self.budget = AVRO_VALUES_PER_BYTE * len(data) + AVRO_VALUES_PER_RECORD

    def long(self) -> int:
        """A zigzag varint of at most 64 bits (Java's readLong refuses longer ones; fastavro
        would keep some of their bits, so the walk and the read would part ways)."""
        data, pos, end = self.data, self.pos, self.end
        unsigned = shift = 0
        while True:
            if pos >= end:
                raise _Refused("it ends inside a number")
            byte = data[pos]
            pos += 1
            unsigned |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift >= 70:
                raise _Refused("a number is longer than 10 bytes")
        if unsigned >> 64:
            raise _Refused("a number is wider than 64 bits")
        self.pos = pos
        return (unsigned >> 1) ^ -(unsigned & 1)

    def take(self, size: int, what: str) -> None:
        if size < 0 or size > self.end - self.pos:
            raise _Refused(f"{what} of {size:,} bytes, and {self.end - self.pos:,} are left")
        self.pos += size

    def spend(self, values: int) -> None:
        self.values += values
        if self.values > self.budget:
            raise _Refused(
                f"it would decode into more than {self.budget:,} values ({AVRO_VALUES_PER_BYTE}"
                f" a byte for its {self.end:,} bytes, plus {AVRO_VALUES_PER_RECORD}: "
                "formats/limits.py AVRO_VALUES_PER_BYTE)")

    def value(self, node: Node, above: int) -> None:
        kind = node["type"]
        if kind == "union":
            index = self.long()
            if not 0 <= index < len(node["branches"]):
                raise _Refused(f"union index {index} of a union of {len(node['branches'])}")
            self.value(node["branches"][index], above)
            return
        self.spend(1)
        if kind in _LEVELS and above >= MAX_NESTING_DEPTH:
            raise _Refused(f"it nests deeper than {MAX_NESTING_DEPTH} records, arrays and maps "
                           "(formats/limits.py MAX_NESTING_DEPTH)")
        if kind in ("int", "long"):
            self.long()
        elif kind in ("string", "bytes"):
            self.take(self.long(), f"a {kind}")
        elif kind in _WIDTHS:
            self.take(_WIDTHS[kind], f"a {kind}")
        elif kind == "fixed":
            self.take(node["size"], f"a fixed {node['name']}")
        elif kind == "enum":
            index = self.long()
            if not 0 <= index < len(node["symbols"]):
                raise _Refused(f"enum index {index} of {node['name']}, which has "
                               f"{len(node['symbols'])} symbols")
        elif kind == "record":
            for f in node["fields"]:
                self.value(f["type"], above + 1)
        elif kind == "array":
            self.blocks(node["items"], above + 1, keyed=False)
        elif kind == "map":
            self.blocks(node["values"], above + 1, keyed=True)

    def blocks(self, item: Node, above: int, keyed: bool) -> None:
        """An array's or a map's blocks: a count (negative: then the block's byte size),
        that many items, until a count of 0."""
        inline = self.inline.get(id(item))
        least = (inline.least if inline is not None else 1) + keyed
        while True:
            count = self.long()
            if count == 0:
                return
            block_end = None
            if count < 0:
                count = -count
                size = self.long()
                start = self.pos
                self.take(size, "a block")
                self.pos, block_end = start, start + size
            width = inline.width if inline is not None and not keyed else None
            if width is not None:
                # items of one size (none, for null or an empty record): counted, not walked
                if width and count > (self.end - self.pos) // width:
                    raise _Refused(f"a block claims {count:,} items of {width} bytes, and "
                                   f"{self.end - self.pos:,} bytes are left")
                assert inline is not None
                self.spend(count * inline.cost)
                self.pos += count * width
            else:
                if count > (self.end - self.pos) // least:
                    raise _Refused(f"a block claims {count:,} items of at least {least} "
                                   f"bytes, and {self.end - self.pos:,} bytes are left")
                for _ in range(count):
                    if keyed:
                        self.spend(1)
                        self.take(self.long(), "a map key")
                    self.value(item, above)
            if block_end is not None and self.pos != block_end:
                raise _Refused("a block's byte size is not the size of its items")
