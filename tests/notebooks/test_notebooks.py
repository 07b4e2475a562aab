"""notebooks/: committed without outputs, and each runs top to bottom in a fresh Jupyter
kernel (nbclient) as a user would run it: with KAFKA_BOOTSTRAP_SERVERS unset it starts its own
broker, with it set (the suite against a real cluster) it uses that cluster. A cell that raises,
including the notebooks' own asserts on what they read, fails the test."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 600


def test_the_expected_notebooks_exist() -> None:
    assert {p.stem for p in NOTEBOOKS} == {"quickstart", "streaming_offsets_lag",
                                           "avro_schema_evolution"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a cell has outputs; clear them"
            assert cell.execution_count is None, f"{path.name}: execution counts left"
    assert "widgets" not in nb.metadata


@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs_top_to_bottom(path: Path, tmp_path: Path, request: pytest.FixtureRequest,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    if path.stem == "avro_schema_evolution":
        # the notebook reads SCHEMA_REGISTRY_URL, as a user's registry: the tests' Apicurio
        monkeypatch.setenv("SCHEMA_REGISTRY_URL", request.getfixturevalue("schema_registry"))
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    nb = nbformat.read(copy, as_version=4)
    # The kernel inherits this environment: a Spark Connect URL left over would redirect it.
    os.environ.pop("KAFKAWIRE_SPARK_CONNECT", None)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Spark 4" in printed
    # each notebook draws its figure inline: an image in the executed output
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure was shown"
    # no Spark log lines or progress bars among what the reader sees
    noise = [line for line in printed.splitlines()
             if re.search(r"\b(WARN|INFO)\b|\[Stage \d+|Setting default log level", line)]
    assert not noise, noise
