"""Where the tests find the documentation: the short landing ``README.md`` and the MkDocs site's
pages under ``docs/`` (mkdocs.yml), each holding what one README section held before. Tests
name the page a fact lives on, so a page moved or renamed fails them instead of passing empty."""

from __future__ import annotations

import re
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


#: What a marked example names its broker with; a test puts its own broker's address there
#: (the only substitution made).
PLACEHOLDER = "localhost:9092"
_BLOCK = re.compile(r"<!-- example:(?P<name>[\w-]+) -->\n```(?P<lang>\w+)\n(?P<code>.*?)\n```",
                    re.S)


def examples() -> dict[str, tuple[str, str]]:
    """{name: (language, code)} of every block marked ``<!-- example:NAME -->`` on the line
    before its fence, in the README or any page; a name used twice fails, as one of the two
    would silently never run."""
    found: dict[str, tuple[str, str]] = {}
    for path in all_pages():
        for m in _BLOCK.finditer(path.read_text()):
            assert m["name"] not in found, f"example {m['name']} is marked twice ({path.name})"
            found[m["name"]] = (m["lang"], m["code"])
    return found
