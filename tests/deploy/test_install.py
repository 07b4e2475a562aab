"""Spark finds ``format("kafkawire")`` in the install this project makes, without
``spark.dataSource.register``: Spark scans sys.path for ``pyspark_*`` modules
(pkgutil.iter_modules), in classic sessions and in a Spark Connect server alike.

The venv of ``make test`` and ``make demo`` is an editable install (``pip install -e .``);
setuptools' default editable mode for a flat layout hides top-level modules behind an import
hook, so pyproject.toml names the package root (``package-dir``) to get a plain .pth entry.
A regular wheel install, as pip makes it for users, is the last test here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import confluent_kafka as ck
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


_AUTO_SCRIPT = textwrap.dedent("""
    import pkgutil, sys
    import spark_kafka_wire
    from pyspark.sql import SparkSession

    print("PACKAGE", spark_kafka_wire.__file__, flush=True)
    visible = [m.module_finder.path for m in pkgutil.iter_modules()
               if m.name == "pyspark_kafkawire"]
    print("VISIBLE", visible, flush=True)
    spark = (SparkSession.builder.master("local[1]").appName("kafkawire-autoregister")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        n = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", sys.argv[1])
             .option("subscribe", sys.argv[2]).load().count())
        print("COUNT", n, flush=True)
    except Exception as exc:
        print("ERROR", " ".join(str(exc).split())[:3000], flush=True)
    finally:
        spark.stop()
""")

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.mark.spark
@pytest.mark.broker
def test_format_is_registered_without_register_call(bootstrap, new_topic, tmp_path):
    """A regular wheel install, as users get from pip: Spark finds ``pyspark_kafkawire`` by
    itself (pkgutil.iter_modules over sys.path), no ``spark.dataSource.register`` needed.
    The development install is editable and its import hook hides top-level modules from
    pkgutil, so the wheel is built here and put first on the path of a fresh process."""
    topic = new_topic(2, "auto")
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for partition, value, n in ((0, b"a", 4), (1, b"b", 3)):
        for _ in range(n):
            producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0
    # built from a clean copy: setuptools reuses a source tree's build/ directory, whose stale
    # files would end up in the wheel
    source, dist, site = tmp_path / "source", tmp_path / "dist", tmp_path / "site"
    shutil.copytree(REPOSITORY, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    for args in (["wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(source)],
                 ["install", "--no-deps", "--quiet", "--target", str(site)]):
        if args[0] == "install":
            args.extend(str(w) for w in dist.glob("spark_kafka_wire-*.whl"))
        built = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True,
                               text=True, timeout=300)
        assert built.returncode == 0, built.stderr[-3000:]
    script = tmp_path / "autoregister.py"
    script.write_text(_AUTO_SCRIPT)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": str(site)}
    # cwd outside the repository, as for a user of the installed package.
    proc = subprocess.run([sys.executable, str(script), bootstrap, topic], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"PACKAGE {site}" in out, out  # the wheel's copy, not the development tree
    assert f"VISIBLE ['{site}']" in out, out
    assert "COUNT 7" in out, out + proc.stderr[-3000:]
