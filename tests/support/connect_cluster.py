"""A Spark Connect server against the test cluster (issue 31 item 3): pyspark's own
``sbin/start-connect-server.sh`` on the Spark master's host, in the foreground
(``SPARK_NO_DAEMONIZE``) and in a session of its own, its driver talking to the standalone
master, its gRPC port bound to the master host's address so that clients on other hosts reach
it as ``sc://<master>:15002``.

kafkawire reaches the server as a packed environment, the same archive in three places,
because Spark starts a Connect server's Python workers in three different working directories
and ``PYSPARK_PYTHON=./environment/bin/python`` is resolved in each:

- ``SparkConnectServer`` forces ``spark.sql.artifact.isolation.enabled=true``, so a session's
  batch queries run with its job artifact UUID, and Spark starts their Python workers (the
  driver's data source planner and the executors' workers) in ``<SparkFiles root>/<session
  uuid>``: the client adds the archive to its session (``spark.addArtifacts(
  "env.tar.gz#environment", archive=True)``, Spark's own recipe for Connect), which Spark
  unpacks there on the driver and on every executor. Without it the first write fails
  planning: ``Cannot run program "./environment/bin/python" (in directory
  "/tmp/spark-.../userFiles-.../<session uuid>"): error=2``.
- A streaming query's micro-batch thread carries no artifact UUID (Spark 4.3): its source is
  planned on the driver (PythonStreamingSourceRunner) in the JVM's working directory, where
  the archive is unpacked as ``./environment`` (as for spark-submit's client mode), and its
  tasks run in the executors' own directories, where the server's ``--archives
  env.tar.gz#environment`` is unpacked. Without those, the stream fails in
  PythonStreamingSourceRunner.init, then in its tasks, with ``Cannot run program``.

The server's environment has no PYTHONPATH, and the checkout's packages are hidden from it
(an empty tmpfs over each), so a kafkawire import anywhere on the server side can only come
from the archive.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.netns import Host
from tests.support.spark_standalone import (
    StandaloneCluster,
    clean_env,
    driver_settings,
    reachable,
    spark_home,
    stop_group,
)

#: The Python of the server's workers: the archive unpacked as ``environment`` in whichever
#: directory Spark starts them (see the module's docstring).
PYSPARK_PYTHON = "./environment/bin/python"
#: Spark Connect's default port, which docs/spark-connect-and-clusters.md's ``sc://connect-server:15002`` names.
CONNECT_PORT = 15002
#: The server's driver waits for every executor before it serves (minRegisteredResources-
#: Ratio), which on this shared 2-core machine takes a while.
START_TIMEOUT_S = 300.0


def connect_server_argv(script: Path, master_url: str, address: str, port: int,
                        settings: Mapping[str, str], archives: Sequence[str]) -> list[str]:
    """The command line of ``start-connect-server.sh`` for a server whose driver runs against
    ``master_url`` and whose gRPC endpoint is ``address:port``: ``settings`` as ``--conf``s
    (the binding address and port last, so that nothing in ``settings`` overrides them) and
    ``archives`` as one ``--archives``."""
    argv = ["bash", str(script), "--master", master_url]
    conf = {**settings, "spark.connect.grpc.binding.address": address,
            "spark.connect.grpc.binding.port": str(port)}
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    if archives:
        argv += ["--archives", ",".join(archives)]
    return argv


@dataclass
class ClusterConnectServer:
    """The Connect server on ``host`` (the master's) against ``cluster``; ``archive`` is the
    packed environment shipped to its executors by ``--archives`` and ``unpacked`` the same
    archive unpacked, linked as ``./environment`` in ``directory`` (the server's working and
    log directory); ``hide``: directories the server must not see."""

    host: Host
    cluster: StandaloneCluster
    directory: Path
    archive: Path
    unpacked: Path
    hide: Sequence[str] = ()
    port: int = CONNECT_PORT
    process: subprocess.Popen[bytes] | None = None
    started_s: float = 0.0
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"sc://{self.host.address}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "connect-server.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start(self) -> ClusterConnectServer:
        began = time.monotonic()
        self.directory.mkdir(parents=True, exist_ok=True)
        link = self.directory / "environment"
        if not link.exists():
            link.symlink_to(self.unpacked)
        script = spark_home() / "sbin" / "start-connect-server.sh"
        argv = connect_server_argv(script, self.cluster.url, self.host.address, self.port,
                                   {**driver_settings(self.host, self.cluster), **self.settings},
                                   [f"{self.archive}#environment"])
        env = clean_env(SPARK_NO_DAEMONIZE="1", SPARK_LOG_DIR=str(self.directory),
                        SPARK_PID_DIR=str(self.directory),
                        PYSPARK_PYTHON=PYSPARK_PYTHON,
                        SPARK_LOCAL_IP=self.host.address)
        with open(self.log_path, "ab") as log:
            self.process = self.host.popen(argv, hide=self.hide, env=env,
                                           cwd=str(self.directory), stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            self._wait()
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - began
        return self

    def _wait(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not reachable(self.host.address, self.port):
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"the Spark Connect server on {self.host.address} exited "
                                   f"with {self.process.returncode}; log {self.log_path}:\n"
                                   f"{self.log()[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Spark Connect server did not listen on {self.url} "
                                   f"within {START_TIMEOUT_S:.0f} s; log {self.log_path}:\n"
                                   f"{self.log()[-4000:]}")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM the server's process group (the scripts and the JVM), SIGKILL after a
        bounded wait."""
        stop_group(self.process)


def checkpoint_batch_sizes(checkpoint: Path) -> list[int]:
    """The records each micro-batch of a kafkawire stream took, from Spark's own offset log
    in ``checkpoint`` (``offsets/<batch>``: a version line, the batch's metadata, then one
    JSON line per source, kafkawire's being ``{topic: {partition: end offset}}`` beside
    ``@``-keys, its first batch's ``@start`` giving where the query began): an oracle of the
    micro-batches beside what the Connect client's ``query.recentProgress`` reports (whose
    ``progress["numInputRows"]`` was None on a Connect client, Spark 4.3)."""
    ends: list[tuple[int, int]] = []
    start: int | None = None
    for path in (checkpoint / "offsets").iterdir():
        if not path.name.isdigit():
            continue  # Spark's temporary files (.<n>.<uuid>.tmp) and checksums
        lines = path.read_text().splitlines()
        if len(lines) != 3:
            raise ValueError(f"{path}: expected one source's offsets, got {lines[2:]}")
        offsets = json.loads(lines[2])
        if "@start" in offsets and int(path.name) == 0:
            start = _records(offsets["@start"])
        ends.append((int(path.name), _records(offsets)))
    ends.sort()
    if not ends:
        return []
    if ends[0][0] != 0 or start is None:
        raise ValueError(f"{checkpoint}: the offset log does not begin at batch 0 with @start")
    if [n for n, _ in ends] != list(range(len(ends))):
        raise ValueError(f"{checkpoint}: batches missing from the offset log: {ends}")
    sizes, before = [], start
    for _, end in ends:
        sizes.append(end - before)
        before = end
    return sizes


def _records(offsets: Mapping[str, object]) -> int:
    """The sum of every partition's offset of an offsets object (``@`` keys left out)."""
    total = 0
    for topic, partitions in offsets.items():
        if topic.startswith("@"):
            continue
        assert isinstance(partitions, Mapping), offsets
        total += sum(int(v) for v in partitions.values())
    return total
