"""Spark's own ``kafka`` format beside kafkawire: the parity oracle of tests/parity and the
first peer of ``make bench``.

The connector is ``org.apache.spark:spark-sql-kafka-0-10_2.13`` at exactly the pyspark version
that runs it (its classes are compiled against that Spark's internals; a jar of another
release may load and then fail, or worse, behave differently), resolved by Maven from Maven
Central with its runtime dependencies into the cache the Kafka brokers' jars use
(java_process.cache_dir) and handed to the session as ``spark.jars``: no Ivy download at
session start. The jars pyspark already ships (scala-library, hadoop-client, snappy, lz4,
slf4j...) are left out, so the JVM sees one copy of each class.

Maven Central publishes the connector some time after PyPI publishes pyspark (on 2026-11-26
pyspark 4.3.0 was on PyPI and the connector's newest release was 4.2.0). ``parity_python``
answers which Python runs the parity tier and the Spark benchmarks: this one when the
connector exists at its pyspark's version, else a venv of its own (``.venv-parity``) holding
the newest pyspark whose connector Maven Central serves, over this venv's packages
(``_make_overlay_venv``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.support.java_process import cache_dir, maven_libs, pom

GROUP = "org.apache.spark"
CONNECTOR = "spark-sql-kafka-0-10_2.13"
#: Spark's own Avro functions (from_avro / to_avro), the oracle of kafkawire's Avro columns
#: (issue 32), resolved with the connector at the same Spark version.
AVRO = "spark-avro_2.13"
#: Spark's own Protobuf functions (from_protobuf), the oracle of kafkawire's Protobuf columns,
#: resolved apart from the connector: a Maven mirror without it must not cost the kafka tier
PROTOBUF = "spark-protobuf_2.13"
REPO = Path(__file__).resolve().parents[2]
PARITY_VENV = REPO / ".venv-parity"
#: A release Maven Central did not serve is asked for again after a day: it publishes
#: releases late, not never.
NOT_SERVED_TTL_S = 86_400.0


class ConnectorNotServed(RuntimeError):
    """Maven Central has no spark-sql-kafka-0-10 at this Spark version."""


def installed_spark() -> str:
    import pyspark

    return pyspark.__version__


def _pyspark_jars() -> set[str]:
    """Artifact names (without version) of the jars pyspark ships."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return {_artifact(p.name) for p in jars.glob("*.jar")}


def _artifact(jar_name: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients``: the name before the version."""
    match = re.match(r"(.+?)-\d+(?:\.\d+)+(?:[-.][A-Za-z][\w.]*)?\.jar$", jar_name)
    return match.group(1) if match else jar_name


def stamp(version: str) -> str:
    """What the cache's ``.complete`` holds once the artifacts of ``version`` are resolved
    (a cache resolved for another list of artifacts is resolved again)."""
    return f"{version} with {AVRO}"


def _resolve(version: str) -> Path:
    target = cache_dir() / f"spark-sql-kafka-{version}"
    failed = target / ".not-served"
    if failed.exists() and time.time() - failed.stat().st_mtime < NOT_SERVED_TTL_S:
        raise ConnectorNotServed(failed.read_text())
    try:
        return maven_libs(target, pom("spark-kafka", [(GROUP, CONNECTOR, version),
                                                      (GROUP, AVRO, version)]),
                          what="Spark's kafka connector and Avro functions",
                          name=f"{CONNECTOR}:{version}", stamp=stamp(version))
    except RuntimeError as exc:
        if "Could not find artifact" in str(exc) or "Could not resolve" in str(exc):
            target.mkdir(parents=True, exist_ok=True)
            message = f"Maven Central serves no {GROUP}:{CONNECTOR}:{version}"
            failed.write_text(message)
            raise ConnectorNotServed(message) from exc
        raise


def connector_jars(version: str | None = None) -> list[Path]:
    """The jars to add to a SparkSession (``spark.jars``) for Spark's ``kafka`` format at
    ``version`` (default: the installed pyspark's), minus those pyspark already ships.
    ConnectorNotServed when Maven Central lacks that release."""
    version = version or installed_spark()
    libs = _resolve(version)
    shipped = _pyspark_jars()
    jars = sorted(p for p in libs.glob("*.jar") if _artifact(p.name) not in shipped)
    for artifact in (CONNECTOR, AVRO):
        if not any(p.name.startswith(f"{artifact}-{version}") for p in jars):
            raise RuntimeError(f"{libs} holds no {artifact}-{version}.jar")
    return jars


def protobuf_jars(version: str | None = None) -> list[Path]:
    """spark-protobuf's jars at ``version`` (default: the installed pyspark's) minus those
    pyspark ships; ConnectorNotServed when the Maven repository lacks it (remembered a day,
    as the connector's absence)."""
    version = version or installed_spark()
    target = cache_dir() / f"spark-protobuf-{version}"
    failed = target / ".not-served"
    if failed.exists() and time.time() - failed.stat().st_mtime < NOT_SERVED_TTL_S:
        raise ConnectorNotServed(failed.read_text())
    try:
        libs = maven_libs(target, pom("spark-protobuf", [(GROUP, PROTOBUF, version)]),
                          what="Spark's Protobuf functions", name=f"{PROTOBUF}:{version}")
    except RuntimeError as exc:
        if "Could not find artifact" in str(exc) or "Could not resolve" in str(exc):
            target.mkdir(parents=True, exist_ok=True)
            message = f"the Maven repository serves no {GROUP}:{PROTOBUF}:{version}"
            failed.write_text(message)
            raise ConnectorNotServed(message) from exc
        raise
    shipped = _pyspark_jars()
    return sorted(p for p in libs.glob("*.jar") if _artifact(p.name) not in shipped)


def session_conf(version: str | None = None) -> dict[str, str]:
    """SparkSession settings making ``format("kafka")`` (and Spark's ``from_avro`` /
    ``to_avro``, and ``from_protobuf`` where spark-protobuf is served) available beside
    kafkawire."""
    jars = connector_jars(version)
    try:
        jars += protobuf_jars(version)
    except ConnectorNotServed:
        pass  # test_protobuf_parity.py skips, saying why
    return {"spark.jars": ",".join(str(p) for p in jars)}


def served(version: str) -> bool:
    try:
        _resolve(version)
        return True
    except ConnectorNotServed:
        return False


def _pypi_versions(python: str) -> list[str]:
    """pyspark releases on PyPI, newest first (``pip index versions``)."""
    run = subprocess.run([python, "-m", "pip", "index", "versions", "pyspark"],
                         capture_output=True, text=True, timeout=300, check=True)
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("Available versions:"))
    return [v.strip() for v in line.split(":", 1)[1].split(",")]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def newest_served(upto: str) -> str:
    """The newest pyspark release no newer than ``upto``, of the same major version, whose
    connector Maven Central serves."""
    for version in _pypi_versions(sys.executable):
        if (re.fullmatch(r"\d+\.\d+\.\d+", version) and _key(version) <= _key(upto)
                and _key(version)[0] == _key(upto)[0] and served(version)):
            return version
    raise ConnectorNotServed(f"Maven Central serves {CONNECTOR} at no Spark {upto[0]}.x release")


def _venv_spark(python: Path) -> str | None:
    if not python.exists():
        return None
    run = subprocess.run([str(python), "-c", "import pyspark; print(pyspark.__version__)"],
                         capture_output=True, text=True)
    return run.stdout.strip() if run.returncode == 0 else None


def parity_python() -> str:
    """The Python that runs Spark's ``kafka`` format beside kafkawire (see the module
    docstring); creates or updates ``.venv-parity`` when this one cannot."""
    here = installed_spark()
    if served(here):
        return sys.executable
    version = newest_served(here)
    python = PARITY_VENV / "bin" / "python"
    stamp = PARITY_VENV / ".installed"
    want = json.dumps({"pyspark": version,
                       "pyproject": (REPO / "pyproject.toml").stat().st_mtime_ns})
    if _venv_spark(python) != version or not stamp.exists() or stamp.read_text() != want:
        print(f"Maven Central has no {CONNECTOR}:{here}; running Spark's kafka format with "
              f"pyspark {version} in {PARITY_VENV.name}", file=sys.stderr)
        _make_overlay_venv(version)
        stamp.write_text(want)
    return str(python)


#: The file in .venv-parity's site-packages that puts this venv's site-packages behind its
#: own (``site.addsitedir``: its .pth files too, the checkout's editable install among them)
OVERLAY_PTH = "_kafkawire_overlay.pth"


def _make_overlay_venv(version: str) -> None:
    """``.venv-parity`` as an overlay of this venv: its own site-packages holds only pyspark
    ``version`` (and what that release pins differently, py4j), and a .pth file appends this
    venv's site-packages behind it, so every other package (kafkawire's editable install, the
    test dependencies) is this venv's. pip, run in the overlay, sees those as installed and
    leaves them (``outside environment``), which makes the overlay a download-free install
    of one package (about 20 s) where a second full install took about 1.5 minutes (issue 44).
    Python's site puts a venv's own site-packages first, so the overlay's pyspark is the one
    imported."""
    import shutil
    import sysconfig

    shutil.rmtree(PARITY_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(PARITY_VENV)], check=True,
                   stdout=sys.stderr)
    python = PARITY_VENV / "bin" / "python"
    own = subprocess.run([str(python), "-c",
                          "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    (Path(own) / OVERLAY_PTH).write_text(f"import site; site.addsitedir({ours!r})\n")
    # stdout is the answer (the Makefile reads it): what pip says goes to stderr
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    f"pyspark[connect]=={version}"], check=True, cwd=REPO, stdout=sys.stderr)
    return str(python)


if __name__ == "__main__":
    # `python -m tests.support.spark_kafka_connector`: the Python of the parity tier (Makefile)
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    print(parity_python())
