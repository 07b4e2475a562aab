"""Apache Kafka 3.9 in ZooKeeper mode as a test broker (issue 28): the last ZooKeeper-era
release, registering itself the way every ZooKeeper-era cluster did.

kafkawire finds ZooKeeper-era brokers through ``zookeeper.connect`` (client/
zookeeper_registry.py) and commits offsets in the old consumers' ZooKeeper layout
(client/zookeeper/consumer_offsets.py); until this broker, the registrations those tests read were written by
the tests themselves. Here Kafka writes them: ``/brokers/ids/<id>`` (JSON version 5: host and
port of the first PLAINTEXT listener, ``endpoints``, ``listener_security_protocol_map``,
``features``), ``/brokers/topics/<topic>`` and the partition states, under the chroot of its
``zookeeper.connect`` when it has one (Kafka creates the chroot itself).

The jars are those of :func:`tests.support.apache_kafka.kafka_libs` (``kafka_2.13:3.9.1`` from
Maven Central) plus an SLF4J binding: the ``kafka_2.13`` pom brings none (the 3.x
distribution's reload4j binding comes with its tarball, not its pom), so without
``slf4j-reload4j`` the broker would log nothing and a failed start would show nothing. The
binding is resolved by Maven once into its own cache directory, so the KRaft broker's jars
(and tests/support/apache_kafka.py) stay as they are.

No storage format in ZooKeeper mode (Kafka writes meta.properties itself on first start);
started when the log says ``[KafkaServer id=N] started`` and every listener accepts.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from spark_kafka_wire.testing.embedded import free_port
from tests.support.apache_kafka import START_TIMEOUT_S, ApacheKafka, kafka_libs, missing_tools
from tests.support.java_process import (
    SHORT_LIVED_JVM,
    cache_dir,
    java,
    maven_libs,
    pom,
    write_log4j,
    write_properties,
)

#: The last Kafka release with ZooKeeper mode (4.0 removed it).
ZK_MODE_VERSION = "3.9.1"
#: SLF4J 1.7.36 is what kafka_2.13:3.9.1 depends on; reload4j is the log4j 1 fork that the
#: 3.x distribution ships.
LOG_BINDING = ("org.slf4j", "slf4j-reload4j", "1.7.36")
#: Kafka's own ZooKeeper shell (bin/zookeeper-shell.sh runs this class).
ZOOKEEPER_SHELL = "org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka"


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def missing_zk_mode_tools() -> str | None:
    """Why no ZooKeeper-mode broker can start here, or None (see ``missing_tools``; the log
    binding needs Maven too, unless it is cached)."""
    missing = missing_tools(ZK_MODE_VERSION)
    if missing is None and not (_binding_dir() / ".complete").exists() and not shutil.which(
            "mvn"):
        return "resolving the broker's log binding needs Maven (apt-get install maven)"
    return missing


def _binding_dir() -> Path:
    group, artifact, version = LOG_BINDING
    return cache_dir() / "apache-kafka" / f"{artifact}-{version}"


def log_binding_libs() -> Path:
    """The SLF4J binding's jars (with reload4j), resolved once by Maven."""
    group, artifact, version = LOG_BINDING
    return maven_libs(_binding_dir(), pom("logging", [LOG_BINDING]), what="the log binding",
                      name=f"{group}:{artifact}:{version}", stamp=version)


@dataclass
class ZooKeeperKafka(ApacheKafka):
    """One Kafka 3.9 broker in ZooKeeper mode, registered on ``zookeeper``
    (``host:port[/chroot]``, as in server.properties). ``listeners``: listener name ->
    security protocol (default PLAINTEXT, and SSL with ``pki``); listeners speaking SSL use
    the tests' localhost certificate (tests.support.certs). ``inter_broker``: the listener
    brokers use among themselves (default: the first PLAINTEXT one). No SASL listeners and
    no authorizer: the tests of this broker are about what it writes to ZooKeeper."""

    version: str = ZK_MODE_VERSION
    authorizer: bool = False
    heap_mb: int = 384
    zookeeper: str = ""
    broker_id: int = 1
    listeners: dict[str, str] = field(default_factory=dict)
    inter_broker: str = ""
    #: The address every listener binds and advertises (``::1``: registered as ``[::1]``).
    host: str = "127.0.0.1"
    #: More JVM options (``-Djava.security.auth.login.config=...`` for a SASL login to
    #: ZooKeeper: Kafka reads its JAAS file's ``Client`` section).
    jvm_options: list[str] = field(default_factory=list)

    @property
    def _host_port(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    def _listeners(self) -> dict[str, str]:
        if self.listeners:
            return {n.upper(): p.upper() for n, p in self.listeners.items()}
        return {"PLAINTEXT": "PLAINTEXT", **({"SSL": "SSL"} if self.pki is not None else {})}

    def _properties(self, data_dir: str) -> dict[str, str]:
        if not self.zookeeper:
            raise ValueError("ZooKeeperKafka needs zookeeper= (host:port[/chroot])")
        if self.authorizer:  # KRaft's StandardAuthorizer does not run here (AclAuthorizer would)
            raise ValueError("ZooKeeperKafka runs without an authorizer")
        listeners = self._listeners()
        self.ports = {name: free_port() for name in listeners}
        inter = self.inter_broker.upper() or next(
            (n for n, p in listeners.items() if p == "PLAINTEXT"), next(iter(listeners)))
        props = {
            "broker.id": str(self.broker_id),
            "zookeeper.connect": self.zookeeper,
            "zookeeper.connection.timeout.ms": "30000",
            "listeners": ",".join(f"{n}://{self._host_port}:{p}"
                                  for n, p in self.ports.items()),
            "advertised.listeners": ",".join(f"{n}://{self._host_port}:{p}"
                                             for n, p in self.ports.items()),
            "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in listeners.items()),
            "inter.broker.listener.name": inter,
            "log.dirs": data_dir,
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            "log.retention.ms": "-1",  # see ApacheKafka: the tests write old timestamps
            "log.message.timestamp.after.max.ms": str(2**63 - 1),
            "log.message.timestamp.before.max.ms": str(2**63 - 1),
        }
        for name, protocol in listeners.items():
            if protocol in ("SSL", "SASL_SSL"):
                pki = self.pki
                if pki is None:
                    raise ValueError(f"listener {name} speaks {protocol}: give pki=")
                prefix = f"listener.name.{name.lower()}"
                props[f"{prefix}.ssl.keystore.location"] = pki.server.p12  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.keystore.type"] = "PKCS12"
                props[f"{prefix}.ssl.keystore.password"] = pki.store_password  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.key.password"] = pki.store_password  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.truststore.location"] = pki.ca_p12  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.truststore.type"] = "PKCS12"
                props[f"{prefix}.ssl.truststore.password"] = pki.store_password  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.client.auth"] = "none"
        props.update(self.extra)
        return props

    def start(self) -> ZooKeeperKafka:
        libs, binding = kafka_libs(self.version), log_binding_libs()
        self.directory = tempfile.mkdtemp(prefix=f"kafkawire-kafka-zk-{self.version}-")
        config = write_properties(os.path.join(self.directory, "server.properties"),
                                  self._properties(os.path.join(self.directory, "data")))
        log4j = write_log4j(os.path.join(self.directory, "log4j.properties"), self.log_path,
                            {"state.change.logger": "WARN", "org.apache.zookeeper": "WARN"})
        jvm = [java(), f"-Xmx{self.heap_mb}m", f"-Xms{min(self.heap_mb, 256)}m",
               *SHORT_LIVED_JVM, f"-Dlog4j.configuration=file:{log4j}", *self.jvm_options,
               "-cp", f"{libs}/*:{binding}/*"]
        began = time.monotonic()
        with open(os.path.join(self.directory, "stdout.log"), "wb") as out:
            self.process = subprocess.Popen([*jvm, "kafka.Kafka", config], stdout=out,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_started()
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - began
        return self

    def _wait_started(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        marker = f"[KafkaServer id={self.broker_id}] started"
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Kafka {self.version} exited ({self.process.returncode}); "
                                   f"log: {self.log_tail()}")
            if os.path.exists(self.log_path) and marker in Path(self.log_path).read_text(
                    errors="replace"):
                if all(_accepts(self.host, p) for p in self.ports.values()):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"Kafka {self.version} did not start within {START_TIMEOUT_S:.0f} s; "
                           f"log: {self.log_tail()}")

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        return f"{self._host_port}:{self.ports[listener]}"

    def rss_mb(self) -> float:
        """The broker JVM's resident memory (for the figure in docs/tests.md)."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def zookeeper_shell(self, *command: str, connect: str | None = None) -> str:
        """Run one command of Kafka's own ZooKeeper shell (bin/zookeeper-shell.sh) against
        ``connect`` (default: the broker's zookeeper.connect, chroot included); its output."""
        return self.run_tool(ZOOKEEPER_SHELL, "-server", connect or self.zookeeper, *command)

    def zookeeper_shell_script(self, lines: list[str], connect: str | None = None,
                               tls_config: str | None = None,
                               jvm_options: tuple[str, ...] = ()) -> str:
        """Run several shell commands in one session (one JVM), given on stdin as a user
        types them; the shell's output. The shell answers failures on its output, not with
        its exit status, so callers check the output. ``tls_config``: the shell's
        ``-zk-tls-config-file`` (zookeeper.ssl.* properties); ``jvm_options``: e.g. the JAAS
        file of a SASL login."""
        libs = kafka_libs(self.version)
        tls = ["-zk-tls-config-file", tls_config] if tls_config else []
        done = subprocess.run(
            [java(), "-Xmx128m", *SHORT_LIVED_JVM, *jvm_options,
             "-cp", f"{libs}/*", ZOOKEEPER_SHELL, "-server", connect or self.zookeeper, *tls],
            input="".join(f"{line}\n" for line in [*lines, "quit"]), capture_output=True,
            text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"the ZooKeeper shell failed ({done.returncode}):\n"
                               f"{(done.stdout + done.stderr)[-3000:]}")
        return done.stdout
