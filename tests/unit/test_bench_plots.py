"""bench/plots.py draws the documentation's benchmark charts from the results file that
``python -m bench`` writes: one chart per kind of row, and a clear failure without a run (the
charts must come from a run, never from no data)."""

from __future__ import annotations

import json
from pathlib import Path

from bench import plots


def _row(name: str, kafkawire: float, jvm: float | None = None) -> dict:
    return {"name": name, "rows": 1000, "kafkawire": kafkawire, "jvm": jvm, "peer": 10.0,
            "peer_name": "confluent-kafka", "limit": None}


def test_each_row_kind_is_told_apart_longest_first() -> None:
    assert plots.kind_of("spark write exactly-once none 100B") == "spark write exactly-once"
    assert plots.kind_of("spark write lz4 1024B SSL") == "spark write"
    assert plots.kind_of("spark read none 100B") == "spark read"
    assert plots.kind_of("client zstd 100B SASL_SSL") == "client"
    assert plots.kind_of("memory") is None


def test_one_png_per_kind_measured(tmp_path: Path) -> None:
    results = tmp_path / "bench.json"
    results.write_text(json.dumps({"broker": "kafka", "nproc": 2, "rows": [
        _row("client none 100B", 1e6), _row("client lz4 100B", 9e5),
        _row("spark read none 100B", 5e5, jvm=6e5),
        _row("spark write exactly-once none 100B", 3e5)]}))
    assert plots.main([str(results), "--out", str(tmp_path / "img")]) == 0
    drawn = sorted(p.name for p in (tmp_path / "img").iterdir())
    assert drawn == ["bench-client.png", "bench-spark-read.png",
                     "bench-spark-write-exactly-once.png"]
    assert all((tmp_path / "img" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
               for name in drawn)


def test_no_results_is_an_error(tmp_path: Path, capsys) -> None:
    assert plots.main([str(tmp_path / "missing.json"), "--out", str(tmp_path)]) == 1
    assert "make bench" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_make_bench_draws_the_charts_after_the_suite() -> None:
    from tests.unit.test_architecture import _make_recipe

    recipe = _make_recipe("bench")
    suite = next(i for i, line in enumerate(recipe) if "-m bench " in line + " ")
    assert recipe.index("$(PY) -m bench.plots") > suite, recipe
