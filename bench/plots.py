"""The benchmark charts of the documentation: ``python -m bench.plots [RESULTS] [--out DIR]``.

``python -m bench`` writes its main table's rows/s to ``bench/results/bench.json``; this draws
one horizontal bar chart per kind of row (``client``, ``spark read``, ``spark write``, ``spark
write exactly-once``) into ``docs/img/bench-<kind>.png``, each row's bars being kafkawire,
Spark's JVM ``kafka`` format, the row's second peer and its limit where measured. ``make
bench`` runs it after the suite, so the charts show what the run measured and are never drawn
from figures typed by hand. A missing results file is an error saying how to make one: a chart
of no run would be a chart of nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display on CI machines and bench hosts
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import StrMethodFormatter  # noqa: E402

from bench.broker import BROKERS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "bench.json"
OUT = ROOT / "docs" / "img"
#: The kinds of the main table's rows (bench/__main__.py's row_name), longest prefix first so
#: "spark write exactly-once" is not taken for "spark write".
KINDS = ("spark write exactly-once", "spark write", "spark read", "client")
#: Each implementation's key in the results, its label and its colour.
SERIES = (("kafkawire", "kafkawire", "#1f77b4"), ("jvm", "Spark's JVM kafka format", "#ff7f0e"),
          ("peer", None, "#2ca02c"), ("limit", "limit", "#7f7f7f"))


def kind_of(name: str) -> str | None:
    """The kind a row's name starts with, or None for a name this module does not know."""
    return next((k for k in KINDS if name == k or name.startswith(k + " ")), None)


def slug(kind: str) -> str:
    return kind.replace(" ", "-")


def draw(kind: str, rows: list[dict], out: Path, title_note: str) -> Path:
    """One chart: a group of bars (rows/s) per row of ``kind``; an implementation measured in
    none of them is left out of the legend."""
    series = [(key, label, colour) for key, label, colour in SERIES
              if any(r.get(key) for r in rows)]
    height = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(11, 0.9 + 0.45 * len(rows) * max(len(series), 1) ** 0.5))
    for i, (key, label, colour) in enumerate(series):
        values = [(r.get(key) or 0.0) for r in rows]
        peer_names = sorted({r.get("peer_name") or "peer" for r in rows})
        shown = label or ("second peer: " + ", ".join(peer_names))
        ax.barh([j + i * height for j in range(len(rows))], values, height, label=shown,
                color=colour)
    ax.set_yticks([j + height * (len(series) - 1) / 2 for j in range(len(rows))])
    ax.set_yticklabels([r["name"][len(kind):].strip() or kind for r in rows])
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    ax.set_xlabel("rows/s (higher is better)")
    ax.set_title(f"{kind} ({title_note})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path = out / f"bench-{slug(kind)}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plots",
                                     description="Draw the benchmark charts of docs/img/.")
    parser.add_argument("results", nargs="?", default=RESULTS, type=Path)
    parser.add_argument("--out", default=OUT, type=Path)
    args = parser.parse_args(argv)
    if not args.results.is_file():
        print(f"{args.results}: no benchmark results; `make bench` (python -m bench) writes "
              "them", file=sys.stderr)
        return 1
    data = json.loads(args.results.read_text())
    by_kind: dict[str, list[dict]] = {}
    for row in data["rows"]:
        kind = kind_of(row["name"])
        if kind is not None:
            by_kind.setdefault(kind, []).append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    broker = BROKERS.get(data.get("broker", ""), data.get("broker", "?"))
    note = f"{broker}, {data.get('nproc', '?')} cores"
    for kind in KINDS:
        if by_kind.get(kind):
            print(f"{draw(kind, by_kind[kind], args.out, note)} drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
