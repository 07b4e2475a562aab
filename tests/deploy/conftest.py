"""The deploy tier runs in ``make test-deploy``, which CI's ``.ci/run`` runs after
``make test``: how users get kafkawire running, each in processes of its own (a pip install
into a fresh venv, Spark finding the data source without ``register()``, Spark Connect in
process and through a Connect server, ``make demo``), four to five minutes of JVM and server
starts on two cores, kept out of ``make test`` so that the suite stays within its 12-minute
budget (as the fault and notebook tiers are). ``-m deploy`` collects it."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if "deploy" not in (config.option.markexpr or ""):
        return True
    return None
