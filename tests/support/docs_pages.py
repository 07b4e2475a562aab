"""Where the tests find the documentation: the short landing ``README.md`` and the MkDocs site's
pages under ``docs/`` (mkdocs.yml), each holding what one README section held before. Tests
name the page a fact lives on, so a page moved or renamed fails them instead of passing empty."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def page(name: str) -> Path:
    """``docs/NAME`` (``reference/options.md`` for the generated ones), which must exist."""
    path = DOCS / name
    assert path.is_file(), f"no documentation page {path}"
    return path


def all_pages() -> list[Path]:
    """The README and every page of the site, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def all_text() -> str:
    """Everything a reader of the README and the site can read, one string."""
    return "\n".join(p.read_text(encoding="utf-8") for p in all_pages())
