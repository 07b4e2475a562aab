"""Where and how the CLI prints: tables for people, tab-separated lines for pipes, errors as
one line on stderr.

A table goes to a terminal as a rich table and to a pipe or file as tab-separated lines with a
header line (like ``ls`` and ``git``, which also print differently for a pipe): rich shortens
cells to fit a terminal's width, which a script reading the output must never see, and
``cut``/``awk`` read TSV as it is. ``kafkawire --output json`` prints every table as JSON
lines instead, one object per row keyed by the column names (numbers as numbers, a missing
value as null), wherever stdout goes: what ``jq`` and programs read without parsing text. The streams are looked up at each call, not at import, so
click's test runner (which swaps them) sees everything.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

# rich (about 0.1 s to import) loads only when something is drawn for a terminal: output to
# a pipe, and the CLI's start, never need it.
if TYPE_CHECKING:
    from rich.console import Console

Cell = str | int | None


def output_format() -> str:
    """The ``--output`` of the running command (``table`` outside one, as in a test)."""
    ctx = click.get_current_context(silent=True)
    return (ctx.find_root().params.get("output") if ctx else None) or "table"


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def stdout_is_terminal() -> bool:
    """Whether standard output is a terminal (tables, and the extra tables a command shows
    people) rather than a pipe or file (TSV, one table per run); never with ``--output json``,
    whose reader is a program."""
    return _isatty(sys.stdout) and output_format() != "json"


def stdout_console() -> Console:
    # A terminal is what isatty() says, which decides tables (and progress bars) against TSV.
    # Left to rich, FORCE_COLOR (set by CI services and Jupyter kernels to ask for colours)
    # would make a pipe a terminal, and a script reading it would get a table cut to width.
    from rich.console import Console  # noqa: PLC0415

    return Console(file=sys.stdout, highlight=False, soft_wrap=False,
                   force_terminal=_isatty(sys.stdout))


def stderr_console() -> Console:
    from rich.console import Console  # noqa: PLC0415

    return Console(file=sys.stderr, highlight=False, soft_wrap=False,
                   force_terminal=_isatty(sys.stderr))


def cell_text(value: Cell) -> str:
    return "-" if value is None else str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], title: str | None = None,
                console: Console | None = None, show_header: bool = True) -> None:
    """``rows`` as a rich table on a terminal, else as TSV (``title`` only on a terminal);
    JSON lines with ``--output json``."""
    if output_format() == "json":
        for row in rows:
            click.echo(json.dumps(dict(zip(headers, row, strict=True)), ensure_ascii=False))
        return
    if console is None and stdout_is_terminal():
        console = stdout_console()
    if console is not None and console.is_terminal:
        from rich.table import Table  # noqa: PLC0415
        from rich.text import Text  # noqa: PLC0415

        # Cells are Text, never markup: a record value "[red]x" or ":smile:" prints as is.
        table = Table(title=Text(title) if title else None, show_header=show_header,
                      header_style="bold", title_justify="left")
        for i, h in enumerate(headers):
            numeric = bool(rows) and all(isinstance(r[i], int) for r in rows)
            table.add_column(h, justify="right" if numeric else "left", overflow="fold")
        for row in rows:
            table.add_row(*(Text(cell_text(c)) for c in row))
        console.print(table)
        return
    lines = ["\t".join(headers)] if show_header else []
    lines += ["\t".join(tsv_field(cell_text(c)) for c in row) for row in rows]
    if lines:
        click.echo("\n".join(lines))


def tsv_field(text: str) -> str:
    """A field that cannot break the TSV layout: tabs, newlines and backslashes escaped as
    ``\\t``, ``\\n``, ``\\r`` and ``\\\\`` (the escapes of PostgreSQL's and MySQL's text
    format)."""
    if not any(c in text for c in "\t\n\r\\"):
        return text
    return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def one_line(message: str) -> str:
    """A message on one line: error texts may span lines (a broker's message, a wrapped
    reason), and the CLI promises one line on stderr."""
    return " ".join(message.split())


def notice(message: str) -> None:
    """What the command is doing, on stderr as ``kafkawire: MESSAGE``, where a wait would
    otherwise be silence (joining a group); stdout stays the records' alone."""
    click.echo(f"kafkawire: {one_line(message)}", err=True)


def error_line(exc: BaseException) -> str:
    return "kafkawire: error: " + one_line(str(exc) or type(exc).__name__)


class EchoHandler(logging.Handler):
    """Log records of the package as ``kafkawire: warning: ...`` lines on stderr (through
    click, so a test runner capturing stderr sees them)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = record.levelname.lower()
            click.echo(f"kafkawire: {level}: {one_line(record.getMessage())}", err=True)
        except Exception:  # a broken stderr must not turn a warning into a crash
            self.handleError(record)
