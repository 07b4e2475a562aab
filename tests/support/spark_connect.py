"""A Spark Connect server for the tests, started the way a cluster or docker/Dockerfile starts
one: pyspark's own ``sbin/start-connect-server.sh`` (no download), in the foreground, in a
process group of its own, on a free loopback port.

The test session already runs a classic SparkSession in this process, and PySpark refuses to
start an in-process Connect server (``remote("local[2]")``) beside it; a server in its own JVM
is also what users of Connect have. The server's Python workers import kafkawire from this
checkout (PYTHONPATH), as they would from an installed package on a cluster.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from spark_kafka_wire.testing.embedded import free_port
from tests.support.processes import wait_for_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0


class ConnectServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="kafkawire-connect-")
        self.log_path = os.path.join(self.dir, "server.log")
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self) -> ConnectServer:
        import pyspark

        script = Path(pyspark.__file__).parent / "sbin" / "start-connect-server.sh"
        env = {**os.environ, "SPARK_NO_DAEMONIZE": "1", "SPARK_LOG_DIR": self.dir,
               "SPARK_PID_DIR": self.dir, "PYSPARK_PYTHON": sys.executable,
               "PYTHONPATH": os.pathsep.join(
                   [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])}
        env.pop("SPARK_REMOTE", None)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                ["bash", str(script), "--master", "local[2]", "--driver-memory", "1g",
                 "--conf", f"spark.connect.grpc.binding.port={self.port}",
                 "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                 "--conf", "spark.ui.enabled=false",
                 "--conf", "spark.sql.shuffle.partitions=2",
                 "--conf", "spark.sql.session.timeZone=UTC"],
                stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            wait_for_port(self.port, self.process, START_TIMEOUT_S, "Spark Connect server",
                          self.log_path)
        except RuntimeError:
            self.stop()
            raise
        return self

    def session(self):
        """A Connect client session. Built through the Connect builder itself: the generic
        ``SparkSession.builder.remote`` refuses while a classic session runs in the process."""
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        return RemoteSparkSession.builder.remote(self.url).getOrCreate()

    def stop(self) -> None:
        """SIGTERM the server's process group (the script and its JVM), SIGKILL if needed."""
        if self.process is None or self.process.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(timeout=STOP_TIMEOUT_S)
                return
            except subprocess.TimeoutExpired:
                continue
            except ProcessLookupError:
                return
