"""The parity table (docs/parity.md) names, per row, the tests of tests/parity that prove it (Spark's
``kafka`` format and kafkawire run side by side): each named test must exist, so a renamed or
deleted test cannot leave a row claiming a proof it no longer has."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.docs_pages import page

ROOT = Path(__file__).resolve().parents[2]
PARITY = ROOT / "tests" / "parity"


def _rows() -> list[list[str]]:
    text = page("parity.md").read_text(encoding="utf-8")
    section = text.split("# Parity with Spark's `kafka` format", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    header, rows = lines[0], lines[1:]
    assert header.rstrip(" |").endswith("proven by tests/parity"), header
    return [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in rows]


def _named_tests(cell: str) -> list[tuple[str, str]]:
    """(file, test) for ``file.py::test``, ``::test`` (the file before) in a cell."""
    named, current = [], None
    for file, test in re.findall(r"`(?:(test_\w+\.py))?::(test_\w+)`", cell):
        current = file or current
        assert current, f"'::{test}' names no file before it: {cell}"
        named.append((current, test))
    return named


def test_every_row_names_its_proof_or_why_there_is_none() -> None:
    rows = _rows()
    assert len(rows) >= 25
    for row in rows:
        assert len(row) == 4, row
        proof = row[3]
        assert (_named_tests(proof) or proof == "every test"
                or re.match(r"not compared \(.+\)$", proof)), row


def test_every_named_test_exists() -> None:
    missing = []
    for row in _rows():
        for file, test in _named_tests(row[3]):
            path = PARITY / file
            if not path.exists() or not re.search(rf"^def {test}\(", path.read_text(),
                                                  re.MULTILINE):
                missing.append(f"{file}::{test} ({row[0]})")
    assert not missing, missing
