"""The notebooks tier runs in ``make test-notebooks``, which CI's ``.ci/run`` runs after
``make test``: each notebook in notebooks/ top to bottom in a Jupyter kernel with its own
SparkSession, about two minutes in three processes on two cores, kept out of ``make test`` so that the suite
stays within its 12-minute budget (as the fault tier is). ``-m notebooks`` collects it."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if "notebooks" not in (config.option.markexpr or ""):
        return True
    return None
