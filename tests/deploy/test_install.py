"""Spark finds ``format("kafkawire")`` in the install this project makes, without
``spark.dataSource.register``: Spark scans sys.path for ``pyspark_*`` modules
(pkgutil.iter_modules), in classic sessions and in a Spark Connect server alike.

The venv of ``make test`` and ``make demo`` is an editable install (``pip install -e .``);
setuptools' default editable mode for a flat layout hides top-level modules behind an import
hook, so pyproject.toml names the package root (``package-dir``) to get a plain .pth entry.
A regular wheel install is tested in test_batch_read_write.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from tests.support.write_support import consume

# A fresh interpreter outside the repository, as a user's script or notebook starts:
# nothing of this checkout on sys.path but what the installation put there.
_VISIBLE = ("import pkgutil; print([m.name for m in pkgutil.iter_modules() "
            "if m.name.startswith('pyspark_')])")

_CONNECT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession

    servers, topic = sys.argv[1:]
    spark = (SparkSession.builder.remote("local[2]").appName("kafkawire-connect-lookup")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        rows = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(50)], "key string, value string")
        (rows.write.format("kafkawire").option("kafka.bootstrap.servers", servers)
         .option("topic", topic).option("createTopic", "true")
         .option("createTopicPartitions", "2").mode("append").save())
        n = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", servers)
             .option("subscribe", topic).load().count())
        print("COUNT", n, flush=True)
    finally:
        spark.stop()
""")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    for name in ("PYTHONPATH", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        env.pop(name, None)
    return env


def test_this_install_shows_pyspark_kafkawire_to_sparks_lookup(tmp_path) -> None:
    done = subprocess.run([sys.executable, "-c", _VISIBLE], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "pyspark_kafkawire" in done.stdout, (
        "pkgutil.iter_modules does not see pyspark_kafkawire: Spark will not find "
        f"format('kafkawire') without register() ({done.stdout.strip()})")


@pytest.mark.spark
@pytest.mark.broker
def test_spark_connect_finds_kafkawire_without_register(bootstrap, tmp_path) -> None:
    """``SparkSession.builder.remote("local[2]")`` in a fresh process: Connect's server looks
    data sources up itself; the client never calls register()."""
    pytest.importorskip("pyspark.sql.connect.session")
    topic = f"connect-lookup-{uuid.uuid4().hex[:8]}"
    script = tmp_path / "connect_lookup.py"
    script.write_text(_CONNECT)
    done = subprocess.run([sys.executable, str(script), bootstrap, topic], cwd=tmp_path,
                          env=_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "COUNT 50" in done.stdout, done.stdout + done.stderr[-3000:]
    assert len(consume(bootstrap, topic, 2, 50)) == 50
