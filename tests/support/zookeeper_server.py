"""A real ZooKeeper server (Debian's ``zookeeper`` package) on a free loopback port."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

JARS = ["zookeeper", "zookeeper-jute", "netty-all", "slf4j-api", "slf4j-nop", "metrics-core",
        "commons-io", "commons-cli"]
JAVA_DIR = "/usr/share/java"


def missing_jars() -> list[str]:
    return [j for j in JARS if not os.path.exists(os.path.join(JAVA_DIR, f"{j}.jar"))]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ruok(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"srvr")
            return b"Zookeeper version" in s.recv(4096)
    except OSError:
        return False


class ZooKeeperServer:
    def __init__(self) -> None:
        self.port = _free_port()
        self.data_dir = tempfile.mkdtemp(prefix="zk-")
        self.log_path = os.path.join(self.data_dir, "server.log")
        self.process: subprocess.Popen | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        cp = ":".join(os.path.join(JAVA_DIR, f"{j}.jar") for j in JARS)
        conf = os.path.join(self.data_dir, "zoo.cfg")
        with open(conf, "w") as f:
            f.write(f"tickTime=2000\ndataDir={self.data_dir}\nclientPort={self.port}\n"
                    "clientPortAddress=127.0.0.1\n4lw.commands.whitelist=srvr,ruok\n"
                    "admin.enableServer=false\n")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                ["java", "-Xmx256m", "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", conf],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not _ruok(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ZooKeeper did not start; see {self.log_path}")
            time.sleep(0.2)
        return self

    def stop(self) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
        shutil.rmtree(self.data_dir, ignore_errors=True)
