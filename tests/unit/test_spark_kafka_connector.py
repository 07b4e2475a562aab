"""The parity bed's jar list (tests/support/spark_kafka_connector.py), without Maven: a cache
laid out as Maven leaves it."""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

from tests.support import spark_kafka_connector as connector


@pytest.mark.parametrize(("jar", "artifact"), [
    ("kafka-clients-3.9.2.jar", "kafka-clients"),
    ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "spark-sql-kafka-0-10_2.13"),
    ("scala-library-2.13.15.jar", "scala-library"),
    ("commons-pool2-2.13.1.jar", "commons-pool2"),
    ("hadoop-client-runtime-3.5.0.jar", "hadoop-client-runtime"),
    ("jsr305-3.0.0.jar", "jsr305"),
])
def test_artifact_is_the_name_before_the_version(jar: str, artifact: str) -> None:
    assert connector._artifact(jar) == artifact


def _cache(tmp_path: Path, version: str, jars: list[str]) -> None:
    libs = tmp_path / f"spark-sql-kafka-{version}" / "libs"
    libs.mkdir(parents=True)
    for jar in jars:
        (libs / jar).write_bytes(b"")
    (tmp_path / f"spark-sql-kafka-{version}" / ".complete").write_text(connector.stamp(version))


def test_jars_pyspark_ships_are_left_out(tmp_path, monkeypatch) -> None:
    """One copy of each class in the JVM: the connector's dependencies that pyspark already
    bundles (scala-library, hadoop-client-*, snappy, lz4, slf4j) are not added again."""
    monkeypatch.setenv("KAFKAWIRE_CACHE", str(tmp_path))
    version = pyspark.__version__
    shipped = sorted(p.name for p in (Path(pyspark.__file__).parent / "jars").glob("scala-library-*.jar"))
    assert shipped, "pyspark ships scala-library"
    _cache(tmp_path, version, [f"spark-sql-kafka-0-10_2.13-{version}.jar",
                               f"spark-avro_2.13-{version}.jar",
                               f"spark-token-provider-kafka-0-10_2.13-{version}.jar",
                               "kafka-clients-3.9.2.jar", "commons-pool2-2.13.1.jar",
                               "scala-library-2.13.0.jar"])
    names = [p.name for p in connector.connector_jars()]
    assert names == sorted(["commons-pool2-2.13.1.jar", "kafka-clients-3.9.2.jar",
                            f"spark-avro_2.13-{version}.jar",
                            f"spark-sql-kafka-0-10_2.13-{version}.jar",
                            f"spark-token-provider-kafka-0-10_2.13-{version}.jar"])
    conf = connector.session_conf()
    assert conf["spark.jars"].split(",") == [str(tmp_path / f"spark-sql-kafka-{version}" / "libs" / n)
                                             for n in names]


def test_a_release_maven_central_did_not_serve_is_asked_for_again_after_a_day(
        tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KAFKAWIRE_CACHE", str(tmp_path))
    marker = tmp_path / "spark-sql-kafka-9.9.9" / ".not-served"
    marker.parent.mkdir()
    marker.write_text("Maven Central serves no org.apache.spark:spark-sql-kafka-0-10_2.13:9.9.9")
    assert not connector.served("9.9.9")
    _cache(tmp_path, "9.9.8", ["spark-sql-kafka-0-10_2.13-9.9.8.jar", "spark-avro_2.13-9.9.8.jar"])
    assert connector.served("9.9.8")
    with pytest.raises(connector.ConnectorNotServed, match="9.9.9"):
        connector.connector_jars("9.9.9")


def test_a_cache_resolved_for_other_artifacts_is_resolved_again(tmp_path, monkeypatch) -> None:
    """The stamp names what was resolved: a cache of the connector alone (before spark-avro
    joined it) is not taken for one that holds spark-avro."""
    from tests.support.java_process import maven_libs

    monkeypatch.setenv("KAFKAWIRE_CACHE", str(tmp_path))
    target = tmp_path / "x"
    (target / "libs").mkdir(parents=True)
    (target / ".complete").write_text("old")
    assert maven_libs(target, "<project/>", what="w", name="n", stamp="old") == target / "libs"
    monkeypatch.setattr("shutil.which", lambda name: None)  # resolving again needs Maven
    with pytest.raises(RuntimeError, match="needs Maven"):
        maven_libs(target, "<project/>", what="w", name="n", stamp="new")
