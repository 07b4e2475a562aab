"""A real ZooKeeper server (Debian's ``zookeeper`` package) on a free loopback port.

Optionally secured as Kafka's ZooKeeper-TLS and ZooKeeper-SASL guides configure one: a
``secureClientPort`` served by Netty (``serverCnxnFactory=NettyServerCnxnFactory``) with a
PKCS12 or JKS keystore (``ssl.keyStore.*``; with ``ssl.trustStore.*`` and ``ssl.clientAuth=need``
client certificates are required), and SASL DIGEST-MD5 users from a JAAS ``Server`` section
(``authProvider.1=...SASLAuthenticationProvider``; ``sessionRequireClientSASLAuth=true``
closes the session of a client that has not logged in). Every file holding a password is
0600 in the server's private data directory.
"""

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
#: The SASL DIGEST-MD5 user of the tests' secured ZooKeeper (tests/conftest.py).
ZK_USER, ZK_PASSWORD = "alice", "zk-alice-Secret-9"
# Debian's netty-all.jar is an empty umbrella (no Class-Path): the Netty server connection
# factory, which the TLS port needs, needs the parts themselves.
NETTY_JARS = ["netty-common", "netty-buffer", "netty-transport", "netty-resolver",
              "netty-codec", "netty-handler", "netty-transport-native-unix-common",
              "netty-transport-native-epoll"]


def missing_jars(secure: bool = False) -> list[str]:
    return [j for j in JARS + (NETTY_JARS if secure else [])
            if not os.path.exists(os.path.join(JAVA_DIR, f"{j}.jar"))]


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


def _write_private(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class ZooKeeperServer:
    """``keystore``: (path, password, type) of the secure port's key and certificate;
    ``truststore``: the same of the CAs whose client certificates the secure port requires
    (None: none required); ``sasl_users``: DIGEST-MD5 users and their passwords;
    ``require_sasl``: refuse every session that has not logged in with SASL."""

    def __init__(self, keystore: tuple[str, str, str] | None = None,
                 truststore: tuple[str, str, str] | None = None,
                 sasl_users: dict[str, str] | None = None, require_sasl: bool = False) -> None:
        self.port = _free_port()
        self.secure_port = _free_port() if keystore else None
        self.keystore, self.truststore = keystore, truststore
        self.sasl_users = dict(sasl_users or {})
        self.require_sasl = require_sasl
        self.data_dir = tempfile.mkdtemp(prefix="zk-")
        os.chmod(self.data_dir, 0o700)
        self.log_path = os.path.join(self.data_dir, "server.log")
        self.process: subprocess.Popen | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def secure_connect(self) -> str:
        """The TLS port, by the name its certificate holds (the tests' PKI: localhost)."""
        assert self.secure_port is not None, "started without a keystore"
        return f"localhost:{self.secure_port}"

    def _security_config(self) -> tuple[str, list[str]]:
        """(zoo.cfg lines, JVM options) of the TLS port and SASL users."""
        lines, jvm = "", []
        if self.keystore:
            path, password, kind = self.keystore
            lines += (f"secureClientPort={self.secure_port}\nsecureClientPortAddress=127.0.0.1\n"
                      "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n"
                      f"ssl.keyStore.location={path}\nssl.keyStore.password={password}\n"
                      f"ssl.keyStore.type={kind}\n")
            if self.truststore:
                path, password, kind = self.truststore
                lines += (f"ssl.trustStore.location={path}\nssl.trustStore.password={password}\n"
                          f"ssl.trustStore.type={kind}\nssl.clientAuth=need\n")
            else:
                lines += "ssl.clientAuth=none\n"
        if self.sasl_users:
            jaas = os.path.join(self.data_dir, "jaas.conf")
            users = " ".join(f"user_{u}={_jaas_quoted(p)}" for u, p in self.sasl_users.items())
            _write_private(jaas, "Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule "
                                 f"required {users};\n}};\n")
            jvm.append(f"-Djava.security.auth.login.config={jaas}")
            lines += "authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider\n"
            if self.require_sasl:
                lines += "sessionRequireClientSASLAuth=true\n"
        return lines, jvm

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        jars = JARS + (NETTY_JARS if self.keystore else [])
        cp = ":".join(os.path.join(JAVA_DIR, f"{j}.jar") for j in jars)
        conf = os.path.join(self.data_dir, "zoo.cfg")
        security, jvm = self._security_config()
        _write_private(conf, f"tickTime=2000\ndataDir={self.data_dir}\nclientPort={self.port}\n"
                             "clientPortAddress=127.0.0.1\n4lw.commands.whitelist=srvr,ruok\n"
                             "admin.enableServer=false\n" + security)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                ["java", "-Xmx256m", *jvm, "-cp", cp,
                 "org.apache.zookeeper.server.ZooKeeperServerMain", conf],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not _ruok(self.port) or (self.secure_port and not _listening(self.secure_port)):
            if self.process.poll() is not None or time.monotonic() > deadline:
                with open(self.log_path, "rb") as f:
                    tail = f.read()[-3000:].decode("utf-8", "replace")
                self.stop()  # removes the data directory, and the log with it
                raise RuntimeError(f"ZooKeeper did not start; its log ended:\n{tail}")
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
