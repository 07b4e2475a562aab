"""The option reference of the documentation site (``docs/reference/options.md``), rendered
from :data:`spark_kafka_wire.options.OPTIONS` (``options/table.py``).

The page marks each generated part with a pair of comments, ``<!-- options:read -->`` …
``<!-- /options:read -->``; ``make docs`` (``python -m spark_kafka_wire.options.reference``)
writes the page afresh (:func:`reference_page`), and a unit test fails when the committed page
differs from what the table generates, so the documentation cannot drift from the parsers. The
guide's pages (reading, writing, streaming, ...) keep their prose hand-written and link here.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from spark_kafka_wire.options.table import (
    EVERYWHERE,
    NOWHERE,
    OPTIONS,
    SINK,
    SOURCE,
    Kind,
    Option,
    Use,
)

_HEADER = "| option | default | meaning |\n|---|---|---|\n"
_WHERE = {EVERYWHERE: "reads and writes", SOURCE: "reads", SINK: "writes"}
_USE_WORDS = {Use.READ: "batch reads", Use.STREAM_READ: "stream reads",
              Use.WRITE: "batch writes", Use.STREAM_WRITE: "stream writes"}


def _size(n: int) -> str:
    for shift, unit in ((20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return str(n)


def _default_cell(o: Option, default: str | int | bool | None) -> str:
    if o.default_doc is not None:
        return o.default_doc
    if default is None:
        return ""
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, int):
        return _size(default) if o.kind is Kind.BYTES else str(default)
    return f"`{default}`"


def _row(o: Option, *, stream: bool = False) -> str:
    default = o.stream_default if stream and o.stream_default is not None else o.default
    doc = o.stream_doc if stream and o.stream_doc is not None else o.doc
    only = "kafkawire only: " if o.kafkawire_only else ""
    return f"| `{o.name}` | {_default_cell(o, default)} | {only}{doc} |\n"


def _settings() -> list[Option]:
    """The options of the connection, read and write tables (sections have tables of their
    own)."""
    return [o for o in OPTIONS if o.refused is None and o.uses != NOWHERE and not o.section]


def _section(name: str) -> list[Option]:
    return [o for o in OPTIONS if o.section == name and o.refused is None]


def client_table() -> str:
    """Settings every read and write takes."""
    return _HEADER + "".join(_row(o) for o in _settings() if o.uses == EVERYWHERE)


def read_table() -> str:
    return _HEADER + "".join(
        _row(o) for o in _settings() if Use.READ in o.uses and o.uses != EVERYWHERE)


def write_table() -> str:
    return _HEADER + "".join(
        _row(o) for o in _settings() if Use.WRITE in o.uses and o.uses != EVERYWHERE)


def stream_table() -> str:
    """What streams take beyond, or instead of, the batch options."""
    def differs(o: Option) -> bool:
        only_streams = (Use.STREAM_READ in o.uses and Use.READ not in o.uses) or (
            Use.STREAM_WRITE in o.uses and Use.WRITE not in o.uses)
        return only_streams or o.stream_default is not None or o.stream_doc is not None
    return _HEADER + "".join(_row(o, stream=True) for o in _settings() if differs(o))


def formats_table() -> str:
    """value.format / key.format and the Schema Registry's settings."""
    return ("| option | where | default | meaning |\n|---|---|---|---|\n" + "".join(
        f"| `{o.name}` | {_where(o.uses)} | {_default_cell(o, o.default)} | {o.doc} |\n"
        for o in _section("formats")))


def _where(use: Use) -> str:
    return _WHERE.get(use) or ", ".join(w for u, w in _USE_WORDS.items() if u in use)


def other_table() -> str:
    """``kafka.*`` and other keys that are refused, or accepted without effect."""
    rows = [f"| `{o.name}` | {_where(o.uses)} | refused: {o.refused} |\n"
            for o in OPTIONS if o.refused is not None]
    ignored: dict[tuple[str, str], list[str]] = {}
    for o in OPTIONS:
        if o.ignored_in != NOWHERE:
            note = o.doc if o.uses == NOWHERE else ""
            ignored.setdefault((_where(o.ignored_in), note), []).append(f"`{o.name}`")
    for (where, note), names in ignored.items():
        rows.append(f"| {', '.join(names)} | {where} | accepted, no effect"
                    + (f": {note}" if note else "") + " |\n")
    return "| option | where | what kafkawire does |\n|---|---|---|\n" + "".join(rows)


def kafkawire_only() -> str:
    names = ", ".join(f"`{o.name}`" for o in _settings() if o.kafkawire_only)
    names += ", and every option of the value formats' table"
    return f"kafkawire-only options (details in the tables above): {names}.\n"


def manual() -> str:
    """Every option by group as plain text, for ``help(KafkaWireDataSource)``: the same table
    the option reference page is generated from, so the user manual in the docstring cannot drift either."""
    groups = (
        ("Every read and write (connection and client settings)",
         [(o, False) for o in _settings() if o.uses == EVERYWHERE]),
        ("Reading (spark.read; streams take these too unless said otherwise)",
         [(o, False) for o in _settings() if Use.READ in o.uses and o.uses != EVERYWHERE]),
        ("Streaming reads (beyond or instead of the above)",
         [(o, True) for o in _settings() if Use.STREAM_READ in o.uses and (
             Use.READ not in o.uses or o.stream_doc is not None)]),
        ("Writing (df.write and df.writeStream)",
         [(o, False) for o in _settings() if Use.WRITE in o.uses and o.uses != EVERYWHERE]),
        ("Value formats and the Schema Registry (key and value columns as Avro, ...)",
         [(o, False) for o in _section("formats")]),
    )
    out = []
    for title, entries in groups:
        out.append(f"{title}:\n")
        for o, stream in entries:
            default = o.stream_default if stream and o.stream_default is not None else o.default
            doc = o.stream_doc if stream and o.stream_doc is not None else o.doc
            shown = _default_cell(o, default).replace("`", "")
            only = "kafkawire only: " if o.kafkawire_only else ""
            if shown:
                shown = f" ({shown})" if shown == "required" else f" (default {shown})"
            out.append(f"  {o.name}{shown}\n")
            out.append(textwrap.fill(f"{only}{doc.replace('`', '')}", 96,
                                     initial_indent=" " * 6, subsequent_indent=" " * 6) + "\n")
        out.append("\n")
    refused = ", ".join(o.name for o in OPTIONS if o.refused is not None)
    out.append(textwrap.fill(f"Refused, each with its reason when given: {refused}.", 96) + "\n")
    return "".join(out)


SECTIONS: dict[str, Callable[[], str]] = {
    "client": client_table,
    "read": read_table,
    "write": write_table,
    "stream": stream_table,
    "formats": formats_table,
    "other": other_table,
    "kafkawire-only": kafkawire_only,
}

_MARKED = re.compile(r"<!-- options:([a-z-]+) -->\n.*?<!-- /options:\1 -->", re.DOTALL)


def update(text: str) -> str:
    """``text`` with every marked section rendered afresh; ValueError when a section is
    missing, repeated or unknown, so a deleted marker cannot silently stop the checks."""
    found = [m.group(1) for m in _MARKED.finditer(text)]
    expected = list(SECTIONS)
    if sorted(found) != sorted(expected):
        raise ValueError(f"option table markers: found {found}, expected each of {expected} "
                         "once, as <!-- options:NAME --> ... <!-- /options:NAME -->")

    def render(m: re.Match[str]) -> str:
        name = m.group(1)
        return f"<!-- options:{name} -->\n\n{SECTIONS[name]()}\n<!-- /options:{name} -->"
    return _MARKED.sub(render, text)


#: The reference page's parts in order: its section heading, what the section covers (the
#: prose the hand-written pages link to lives there), and the marked section of :data:`SECTIONS`.
REFERENCE_PARTS: tuple[tuple[str, str, str], ...] = (
    ("Every read and write", "The client settings, taken by `spark.read`, `readStream`, "
     "`write` and `writeStream` alike.", "client"),
    ("Reading", "`spark.read.format(\"kafkawire\")` ([Reading](../reading.md)); streams take "
     "these too unless the streaming table says otherwise.", "read"),
    ("Writing", "`df.write.format(\"kafkawire\")...mode(\"append\").save()` and "
     "`writeStream` ([Writing](../writing.md)).", "write"),
    ("Streaming", "What `readStream` and `writeStream` take beyond, or instead of, the batch "
     "options ([Streaming](../streaming.md)).", "stream"),
    ("Value formats and the Schema Registry", "`value.format`, `key.format` and the registry's "
     "settings ([Avro and the Schema Registry](../schema-registry.md)).", "formats"),
    ("Refused, or accepted without effect", "Kafka Java client settings kafkawire refuses, each "
     "with its reason, and those it accepts without effect where they are given "
     "([Reading](../reading.md#where-kafkawire-differs-from-sparks-kafka-format)).", "other"),
    ("kafkawire only", "Options Spark's `kafka` format does not have "
     "([Parity](../parity.md)).", "kafkawire-only"),
)


def reference_page() -> str:
    """The whole option reference page (``docs/reference/options.md``): a title, then each part
    of :data:`REFERENCE_PARTS` with its marked table rendered from :data:`OPTIONS`."""
    out = ["# Option reference\n\n",
           "Generated by `make docs` from the one table of options in "
           "`spark_kafka_wire/options/table.py` (`python -m spark_kafka_wire.options.reference`); "
           "a unit test fails when this page differs from what the table generates, so it says "
           "what the parsers do. Names and meanings follow Spark's built-in `kafka` source and "
           "sink; keys are case-insensitive.\n"]
    for heading, about, name in REFERENCE_PARTS:
        out.append(f"\n## {heading}\n\n{about}\n\n<!-- options:{name} -->\n"
                   f"<!-- /options:{name} -->\n")
    return update("".join(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m spark_kafka_wire.options.reference",
        description="Write the option reference page from spark_kafka_wire.options.")
    parser.add_argument("page", nargs="?", default="docs/reference/options.md", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if the tables are not what OPTIONS generates")
    args = parser.parse_args(argv)
    return sync_page(args.page, reference_page(), args.check,
                     "option tables differ from spark_kafka_wire.options", "option reference")


def sync_page(page: Path, fresh: str, check: bool, differs: str, what: str) -> int:
    """Write a generated documentation page (``make docs``), or with ``check`` only say
    whether it is current: 0 when it is (or was written), 1 when ``check`` found it stale.
    Both generated references (options, CLI) keep their pages this way."""
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    if fresh == text:
        return 0
    if check:
        print(f"{page}: {differs}; run `make docs`", file=sys.stderr)
        return 1
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(fresh, encoding="utf-8")
    print(f"{page}: {what} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
