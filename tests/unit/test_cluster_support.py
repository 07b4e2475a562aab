"""The cluster tier's helpers that need no test host (tests/support/netns.py,
tests/support/executor_env.py, tests/support/connect_cluster.py): which leftover namespaces
and links a start-up deletes, which requirements the executors' packed environment gets
from kafkawire's wheel, a stream's micro-batch sizes read from Spark's offset log, and the
Connect server's command line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.support.connect_cluster import checkpoint_batch_sizes, connect_server_argv
from tests.support.executor_env import INSTALLER, add_wheel, runtime_requirements, wheel_digest
from tests.support.netns import leftovers


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_leftovers_are_the_names_of_dead_runs_only() -> None:
    """Names of ours whose pid is gone are deleted; a living run's names, and names that are
    not ours (another tool's namespace, the machine's eth0, a near miss of our prefix), stay."""
    dead, alive = _dead_pid(), os.getpid()
    namespaces = [f"kwc-{dead}-kafka", f"kwc-{dead}-worker1", f"kwc-{alive}-kafka", "kwcx-1-a",
                  "docker-ns", f"kwc-{dead}"]
    links = [f"kwb{dead}", f"kwv{dead}x0", f"kwp{dead}x12", f"kwb{alive}", f"kwv{alive}x3",
             "eth0", "kwbridge", f"kwv{dead}"]
    gone_namespaces, gone_links = leftovers(namespaces, links)
    assert gone_namespaces == [f"kwc-{dead}-kafka", f"kwc-{dead}-worker1"]
    assert gone_links == [f"kwb{dead}", f"kwv{dead}x0", f"kwp{dead}x12", f"kwv{dead}"]


def _wheel(path: Path, metadata: str, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("spark_kafka_wire-0.1.0.dist-info/METADATA", metadata)
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_executor_requirements_leave_out_pyspark_and_extras(tmp_path: Path) -> None:
    """Executors take pyspark from SPARK_HOME's pyspark.zip: the packed environment gets
    every other runtime requirement of the wheel, none of an extra's."""
    wheel = _wheel(tmp_path / "w.whl", "\n".join([
        "Metadata-Version: 2.4", "Name: spark-kafka-wire",
        "Requires-Dist: pyspark>=4.2", "Requires-Dist: pyarrow>=15",
        "Requires-Dist: PySpark[connect]>=4.2; extra == \"connect\"",
        "Requires-Dist: cramjam>=2.6", "Requires-Dist: pytest>=8; extra == \"test\"",
        "Requires-Dist: crc32c >= 2.4", ""]), {})
    assert runtime_requirements(wheel) == ("pyarrow>=15", "cramjam>=2.6", "crc32c >= 2.4")


def test_executor_requirements_with_an_extra(tmp_path: Path) -> None:
    """An extra asked for (``kerberos`` on the cluster tier) adds its requirements without
    their marker; other extras stay out, pyspark's too."""
    wheel = _wheel(tmp_path / "w.whl", "\n".join([
        "Metadata-Version: 2.4", "Name: spark-kafka-wire", "Requires-Dist: pyarrow>=15",
        "Requires-Dist: gssapi>=1.8; extra == \"kerberos\"",
        "Requires-Dist: pyspark[connect]>=4.2; extra == 'kerberos'",
        "Requires-Dist: pytest>=8; extra == \"test\"", ""]), {})
    assert runtime_requirements(wheel, ("kerberos",)) == ("pyarrow>=15", "gssapi>=1.8")


def test_wheel_digest_follows_contents_not_zip_timestamps(tmp_path: Path) -> None:
    """The cache key of a packed environment: two builds of the same code (zip entries with
    other timestamps) share it, a changed file changes it."""
    meta = "Name: spark-kafka-wire\n"
    first = _wheel(tmp_path / "a.whl", meta, {"spark_kafka_wire/x.py": b"A = 1\n"})
    with zipfile.ZipFile(tmp_path / "b.whl", "w") as zf:
        zf.writestr(zipfile.ZipInfo("spark_kafka_wire-0.1.0.dist-info/METADATA",
                                    (2001, 1, 1, 0, 0, 0)), meta)
        zf.writestr(zipfile.ZipInfo("spark_kafka_wire/x.py", (2001, 1, 1, 0, 0, 0)), b"A = 1\n")
    changed = _wheel(tmp_path / "c.whl", meta, {"spark_kafka_wire/x.py": b"A = 2\n"})
    assert wheel_digest(first) == wheel_digest(tmp_path / "b.whl")
    assert wheel_digest(first) != wheel_digest(changed)


def _offsets(directory: Path, batch: int, source: dict) -> None:
    """One entry of Spark's offset log as a streaming query writes it."""
    (directory / str(batch)).write_text("\n".join(["v1", '{"batchWatermarkMs":0}',
                                                   json.dumps(source)]))


def _packed_venv(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_kafkawire_archive_is_the_dependencies_archive_with_the_wheel_in_site_packages(
        tmp_path: Path) -> None:
    """The dependencies' archive is packed once per dependency set; kafkawire's is made from
    it by unpacking the wheel into its site-packages, everything else kept byte for byte."""
    site = "lib/python3.11/site-packages"
    deps = _packed_venv(tmp_path / "deps.tar.gz", {
        "bin/python": b"link", f"{site}/pyarrow/__init__.py": b"arrow = 1\n",
        "bin/activate": b"# venv-pack's\n"})
    wheel = _wheel(tmp_path / "spark_kafka_wire-0.1.0-py3-none-any.whl",
                   "Name: spark-kafka-wire\n", {
                       "spark_kafka_wire/__init__.py": b"version = 1\n",
                       "spark_kafka_wire-0.1.0.dist-info/RECORD": b""})
    add_wheel(deps, wheel, tmp_path / "env.tar.gz")
    with tarfile.open(tmp_path / "env.tar.gz") as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]
    assert got == {
        "bin/python": b"link", f"{site}/pyarrow/__init__.py": b"arrow = 1\n",
        "bin/activate": b"# venv-pack's\n", f"{site}/spark_kafka_wire/__init__.py": b"version = 1\n",
        f"{site}/spark_kafka_wire-0.1.0.dist-info/METADATA": b"Name: spark-kafka-wire\n",
        f"{site}/spark_kafka_wire-0.1.0.dist-info/RECORD": b"",
        f"{site}/spark_kafka_wire-0.1.0.dist-info/INSTALLER": INSTALLER}


def test_a_wheel_with_data_or_an_archive_already_holding_kafkawire_is_refused(
        tmp_path: Path) -> None:
    site = "lib/python3.11/site-packages"
    deps = _packed_venv(tmp_path / "deps.tar.gz", {f"{site}/pyarrow/__init__.py": b""})
    with_data = _wheel(tmp_path / "a.whl", "", {"x-0.1.0.data/scripts/run": b"#!/bin/sh\n"})
    with pytest.raises(RuntimeError, match="not a pure-Python wheel"):
        add_wheel(deps, with_data, tmp_path / "out.tar.gz")
    holding = _packed_venv(tmp_path / "holding.tar.gz", {
        f"{site}/spark_kafka_wire/__init__.py": b""})
    plain = _wheel(tmp_path / "b.whl", "", {"spark_kafka_wire/__init__.py": b""})
    with pytest.raises(RuntimeError, match="already holds kafkawire"):
        add_wheel(holding, plain, tmp_path / "out2.tar.gz")


def test_checkpoint_batch_sizes_from_the_offset_log(tmp_path: Path) -> None:
    """Each micro-batch's size is its end offsets' sum less the previous batch's (the first
    batch's less ``@start``); Spark's temporary files and kafkawire's ``@`` keys are no
    batches and no partitions; an empty log is no batch."""
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    assert checkpoint_batch_sizes(tmp_path) == []
    topic = "t"
    _offsets(offsets, 0, {topic: {"0": 80, "1": 75}, "@start": {topic: {"0": 5, "1": 0}},
                          "@tasks": 2})
    _offsets(offsets, 1, {topic: {"0": 150, "1": 155}, "@tasks": 2})
    _offsets(offsets, 2, {topic: {"0": 175, "1": 160}, "other": {"0": 10}})
    (offsets / ".3.8c1e.tmp").write_text("v1\n{}\n{}")
    assert checkpoint_batch_sizes(tmp_path) == [150, 150, 40]


def test_checkpoint_batch_sizes_refuse_a_log_with_a_gap(tmp_path: Path) -> None:
    """A missing batch (or a log without batch 0's ``@start``) would give a wrong size:
    refused, not guessed."""
    offsets = tmp_path / "offsets"
    offsets.mkdir()
    _offsets(offsets, 0, {"t": {"0": 10}, "@start": {"t": {"0": 0}}})
    _offsets(offsets, 2, {"t": {"0": 30}})
    with pytest.raises(ValueError, match="missing"):
        checkpoint_batch_sizes(tmp_path)
    (offsets / "0").unlink()
    with pytest.raises(ValueError, match="@start"):
        checkpoint_batch_sizes(tmp_path)


def test_connect_server_argv_binds_last_and_ships_the_archives() -> None:
    """The binding address and port come after the driver's settings, so that a setting of
    the same name cannot move the server off the host's address; every archive is in one
    ``--archives``."""
    argv = connect_server_argv(Path("/s/start-connect-server.sh"), "spark://10.0.0.2:7077",
                               "10.0.0.2", 15002,
                               {"spark.cores.max": "4",
                                "spark.connect.grpc.binding.port": "1"},
                               ["/a/env.tar.gz#environment", "/b/x.zip#x"])
    assert argv[:4] == ["bash", "/s/start-connect-server.sh", "--master",
                        "spark://10.0.0.2:7077"]
    confs = [argv[i + 1] for i, a in enumerate(argv) if a == "--conf"]
    assert confs == ["spark.cores.max=4", "spark.connect.grpc.binding.port=15002",
                     "spark.connect.grpc.binding.address=10.0.0.2"]
    assert argv[-2:] == ["--archives", "/a/env.tar.gz#environment,/b/x.zip#x"]
    assert "--archives" not in connect_server_argv(Path("s"), "m", "a", 1, {}, [])
