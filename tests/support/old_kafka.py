"""Old Apache Kafka releases (2.8 back to 0.8.2) as real test brokers, in ZooKeeper mode.

Why: the emulated 0.8.2-0.10.0 brokers of tests/support/legacy_broker.py follow the broker
source as read by us; a matrix against the real releases checks that reading. The jars are the
release's ``kafka_<scala>`` artifact and its runtime dependencies from Maven Central, resolved
by Maven through tests/support/apache_kafka.kafka_libs (no archive from anywhere else).

One broker is one JVM started directly (``java -cp libs/* kafka.Kafka server.properties``, not
the release's shell scripts, so their JVM flags for old Javas do not matter) on Java 17,
against a ZooKeeper (Debian's, the ``zookeeper`` fixture) under a chroot of its own, so one
ZooKeeper serves every release of a run. No ``--add-opens`` is needed (these releases unmap
their index files through JDK internals on Windows only); what Java 17 lacks is added jar by
jar (``Release.add``, ``Release.replace``), and a release that cannot start is recorded with
the first error of its log (``first_error``). ``JAVA_HOME`` picks another Java, as for
tests/support/apache_kafka.py (every release here also starts on Temurin 25).

The broker's own tools (``kafka.tools.ConsoleConsumer`` and others, same jars) are run with
``run_tool`` and serve as oracles of what was stored.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from spark_kafka_wire.testing.embedded import free_port
from tests.support.apache_kafka import kafka_libs
from tests.support.java_process import (
    SHORT_LIVED_JVM,
    JavaProcess,
    cache_dir,
    java,
    maven_libs,
    pom,
    write_log4j,
    write_properties,
)

START_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Release:
    """One old release of the matrix: its version, the Scala build taken from Maven Central,
    and the kafkawire options that reach it (0.9 and older answer no ApiVersions)."""

    version: str
    scala: str
    #: kafka.broker.version.fallback for releases without ApiVersions (None: negotiate).
    fallback: str | None = None
    #: artifacts added to the release's own jars for Java 17 (see JAXB_API, ZK_CLIENT_3_4)
    add: tuple[tuple[str, str, str], ...] = ()
    #: artifact names whose jars ``add`` replaces
    replace: tuple[str, ...] = ()

    @property
    def magic(self) -> int:
        """The message format the release writes by default: 0 up to 0.9, 1 on 0.10.x,
        record batches (2) from 0.11."""
        parts = tuple(int(p) for p in self.version.split(".")[:3])
        return 0 if parts < (0, 10) else 1 if parts < (0, 11) else 2

    @property
    def numeric(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.version.split("."))

    def client_options(self) -> dict[str, str]:
        """The kafkawire options (Spark spelling) this release needs."""
        if self.fallback is None:
            return {}
        return {"kafka.api.version.request": "false",
                "kafka.broker.version.fallback": self.fallback}


#: Kafka 2.8's pom names no SLF4J binding (its distribution adds one): without a binding the
#: broker logs nothing, and the start-up line is what ``start`` waits for.
LOG_BINDING = (("org.slf4j", "slf4j-log4j12", "1.7.30"), ("log4j", "log4j", "1.2.17"))
#: Java 11 removed javax.xml.bind; 0.10.1 to 0.11 encode their cluster id with its
#: DatatypeConverter (NoClassDefFoundError at start without it). jaxb-api 2.3 carries it.
JAXB_API = (("javax.xml.bind", "jaxb-api", "2.3.1"),)
#: ZooKeeper's 3.4.13 client cannot connect on Java 14+ (UnresolvedAddressException: since
#: ZOOKEEPER-2184 it connects to unresolved addresses, and Java 14 changed their text; 3.4.14
#: fails the same way in SaslServerPrincipal: "Unable to canonicalize address
#: 127.0.0.1/<unresolved>"). The 3.4.10 client of the same protocol, which Kafka 1.1 ships and
#: which connects on Java 17, replaces it (``Release.replace``).
ZK_CLIENT_3_4 = (("org.apache.zookeeper", "zookeeper", "3.4.10"),)

_STARTED = re.compile(r"\[Kafka ?Server (id=)?0\],? started")

#: The matrix of issue 28 part 5; Scala builds as published on Maven Central (2.12 where one
#: exists, none for 0.10.0 and older; 0.8.2.2 has 2.10 and 2.11 builds: 2.11, like 0.9 and 0.10.0).
RELEASES: dict[str, Release] = {r.version: r for r in [
    Release("2.8.2", "2.12"),
    Release("2.0.1", "2.12", add=ZK_CLIENT_3_4, replace=("zookeeper",)),
    Release("1.1.1", "2.12"),
    Release("0.11.0.3", "2.12", add=JAXB_API),
    Release("0.10.2.2", "2.12", add=JAXB_API),
    Release("0.10.0.1", "2.11"),
    Release("0.9.0.1", "2.11", fallback="0.9.0"),
    Release("0.8.2.2", "2.11", fallback="0.8.2"),
]}


def extra_libs(coords: tuple[tuple[str, str, str], ...]) -> Path:
    """These artifacts (without their dependencies) from Maven Central, resolved once into
    the cache like the broker's jars."""
    name = "+".join(f"{a}-{v}" for _, a, v in coords)
    return maven_libs(cache_dir() / "apache-kafka" / "extra" / name, pom("extra", coords),
                      what="jars", name=name, transitive=False, timeout=600)


def classpath(release: Release) -> str:
    """The release's jars (less those ``release.replace`` names) and its ``release.add``."""
    libs = kafka_libs(release.version, release.scala)
    jars = sorted(p for p in libs.iterdir() if p.suffix == ".jar"
                  and not any(p.name.startswith(f"{r}-") for r in release.replace))
    added = list(release.add)
    if not any(p.name.startswith(("slf4j-log4j12", "slf4j-reload4j")) for p in jars):
        added += LOG_BINDING
    if added:
        jars += sorted(extra_libs(tuple(added)).glob("*.jar"))
    return ":".join(str(j) for j in jars)


def missing_tools(release: Release) -> str | None:
    """Why this release cannot be started here (the tests skip with it), or None."""
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "old Kafka releases need Java (apt-get install openjdk-17-jre-headless)"
    done = [cache_dir() / "apache-kafka" / f"kafka_{release.scala}-{release.version}"
            / ".complete"]
    if release.add:
        name = "+".join(f"{a}-{v}" for _, a, v in release.add)
        done.append(cache_dir() / "apache-kafka" / "extra" / name / ".complete")
    if not all(d.exists() for d in done) and not shutil.which("mvn"):
        return "resolving Kafka's jars needs Maven (apt-get install maven)"
    return None


@dataclass
class OldKafka(JavaProcess):
    """One broker (id 0) of an old release, on a free loopback port, registered in
    ``zookeeper`` (host:port) under the chroot ``/kafkawire-<version>-<random>``."""

    release: Release
    zookeeper: str
    heap_mb: int = 384
    extra: dict[str, str] = field(default_factory=dict)
    port: int = 0
    chroot: str = ""
    directory: str = ""
    process: subprocess.Popen | None = None
    started_s: float = 0.0

    @property
    def zookeeper_connect(self) -> str:
        """The connect string the broker uses, chroot included (what ZooKeeper-reading
        clients of this broker must be given)."""
        return f"{self.zookeeper}{self.chroot}"

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "server.log")

    def _properties(self, data_dir: str) -> dict[str, str]:
        version = self.release.numeric
        props = {
            "broker.id": "0",
            "log.dirs": data_dir,
            "zookeeper.connect": self.zookeeper_connect,
            "zookeeper.connection.timeout.ms": "30000",
            "num.partitions": "1",
            "auto.create.topics.enable": "true",
            "delete.topic.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            # the tests' records may carry old timestamps (0.10.1+ retains by them)
            "log.retention.hours": "1000000",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            "controlled.shutdown.enable": "false",
            "num.io.threads": "2",
            "num.network.threads": "2",
        }
        if version < (0, 9):
            # 0.8.2 knows no listeners: host.name/port, advertised.host.name
            props.update({"host.name": "127.0.0.1", "port": str(self.port),
                          "advertised.host.name": "127.0.0.1",
                          "advertised.port": str(self.port)})
        else:
            props.update({"listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
                          "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}"})
        props.update(self.extra)
        return props

    def start(self) -> OldKafka:
        cp = classpath(self.release)
        self.port = free_port()
        self.chroot = f"/kafkawire-{self.release.version}-{uuid.uuid4().hex[:8]}"
        self.directory = tempfile.mkdtemp(prefix=f"kafkawire-kafka-{self.release.version}-")
        config = write_properties(os.path.join(self.directory, "server.properties"),
                                  self._properties(os.path.join(self.directory, "data")))
        log4j = write_log4j(os.path.join(self.directory, "log4j.properties"), self.log_path,
                            {"state.change.logger": "WARN", "kafka.request.logger": "WARN"})
        self._ensure_chroot()
        self.launch([*self._jvm(self.heap_mb), f"-Dlog4j.configuration=file:{log4j}", "-cp", cp,
                     "kafka.Kafka", config],
                    os.path.join(self.directory, "stdout.log"), self._wait_started)
        return self

    def _ensure_chroot(self) -> None:
        """0.8.2 fails at start when its chroot does not exist (later releases create it);
        created here for every release alike, with kazoo (a product dependency)."""
        from kazoo.client import KazooClient

        zk = KazooClient(hosts=self.zookeeper, timeout=10)
        zk.start(timeout=15)
        try:
            zk.ensure_path(self.chroot)
        finally:
            zk.stop()
            zk.close()

    @staticmethod
    def _jvm(heap_mb: int) -> list[str]:
        return [java(), f"-Xmx{heap_mb}m", f"-Xms{min(heap_mb, 128)}m", *SHORT_LIVED_JVM,
                "-Djava.net.preferIPv4Stack=true"]

    def _wait_started(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Kafka {self.release.version} exited "
                                   f"({self.process.returncode}); log: {self.log_tail()}")
            if os.path.exists(self.log_path) and _STARTED.search(
                    Path(self.log_path).read_text(errors="replace")) and _port_open(self.port):
                return
            time.sleep(0.2)
        raise RuntimeError(f"Kafka {self.release.version} did not start within "
                           f"{START_TIMEOUT_S:.0f} s; log: {self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        texts = []
        for name in ("stdout.log", "server.log"):
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                text = Path(path).read_text(errors="replace").strip()
                if text:
                    texts.append(f"--- {name}:\n{text[-chars:]}")
        return "\n".join(texts) or "(no log)"

    def first_error(self) -> str:
        """The first ERROR / exception lines of the logs: what a release that cannot start
        reports first (the matrix records it)."""
        for name in ("stdout.log", "server.log"):
            path = os.path.join(self.directory, name)
            if not os.path.exists(path):
                continue
            lines = Path(path).read_text(errors="replace").splitlines()
            for i, line in enumerate(lines):
                if "ERROR" in line or "Exception" in line or "Error:" in line:
                    return "\n".join(lines[i:i + 6])
        return self.log_tail(600)

    def tools_log4j(self) -> str:
        """A log4j 1 configuration for the release's tools: errors only, on stderr."""
        log4j = os.path.join(self.directory, "tools-log4j.properties")
        if not os.path.exists(log4j):
            Path(log4j).write_text(
                "log4j.rootLogger=ERROR, stderr\n"
                "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.stderr.Target=System.err\n"
                "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        return log4j

    def run_tool(self, main_class: str, *args: str, timeout: float = 120.0,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
        """One of the release's own tools (``kafka.tools.ConsoleConsumer``, ...) from its jars,
        logging errors only to stderr."""
        log4j = self.tools_log4j()
        done = subprocess.run(
            [*self._jvm(256), f"-Dlog4j.configuration=file:{log4j}", "-cp",
             classpath(self.release), main_class, *args],
            capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError(f"{main_class} {' '.join(args)} failed ({done.returncode}):\n"
                               f"{(done.stdout + done.stderr)[-3000:]}")
        return done


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# ------------------------------------------------------------------ the brokers' own tools


@dataclass(frozen=True)
class StoredMessage:
    """One record as the release's DumpLogSegments prints it (deep iteration)."""

    offset: int
    key: str | None
    value: str | None
    #: False where the tool printed a key size but not the key (0.10 with a null value)
    key_printed: bool = True

    def matches(self, offset: int, key: str | None, value: str | None) -> bool:
        return (self.offset, self.value) == (offset, value) and (
            not self.key_printed or self.key == key)


@dataclass(frozen=True)
class StoredLog:
    """A partition's log as the release's own DumpLogSegments reads it from the segment file:
    the magic and codec of every top-level entry (message or batch) and the records."""

    magics: set[int]
    codecs: set[str]
    records: list[StoredMessage]


_CODEC_NAMES = {"nocompressioncodec": "none", "none": "none", "gzipcompressioncodec": "gzip",
                "gzip": "gzip", "snappycompressioncodec": "snappy", "snappy": "snappy",
                "lz4compressioncodec": "lz4", "lz4": "lz4", "zstd": "zstd",
                "zstdcompressioncodec": "zstd"}
_FIELD = re.compile(r"(\w+): ")


def _fields(line: str) -> dict[str, str]:
    """``name: value`` pairs of one DumpLogSegments line; ``key`` and ``payload`` run to the
    next field name (a value holds no ``word: ``), ``payload`` to the end of the line."""
    text = line.lstrip("| ").rstrip()
    marks = list(_FIELD.finditer(text))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        if m.group(1) == "payload":
            out["payload"] = text[m.end():]
            break
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out[m.group(1)] = text[m.end():end].rstrip()
    return out


def dump_logs(broker: OldKafka, topic: str, partitions: list[int]) -> dict[int, StoredLog]:
    """DumpLogSegments of the release over the partitions' first segments, twice (one JVM
    each, every file at once): shallow for the entries' magic and codec (a compressed
    wrapper's own), deep with the data for the records. A key or value prints as text, so
    tests write ASCII; a null one prints as ``null`` (or, a value on 2.x, not at all)."""
    files = {os.path.join(broker.directory, "data", f"{topic}-{p}",
                          "00000000000000000000.log"): p for p in partitions}
    tool = "kafka.tools.DumpLogSegments"
    listed = ",".join(files)
    logs = {p: StoredLog(set(), set(), []) for p in partitions}

    def per_file(text: str) -> list[tuple[StoredLog, dict[str, str]]]:
        out, current = [], None
        for line in text.splitlines():
            if line.startswith("Dumping "):
                current = logs[files[line[len("Dumping "):].strip()]]
            elif current is not None:
                out.append((current, _fields(line)))
        return out

    for log, f in per_file(broker.run_tool(tool, "--files", listed).stdout):
        if "magic" in f:
            log.magics.add(int(f["magic"]))
            log.codecs.add(_CODEC_NAMES[f["compresscodec"].lower()])
    deep = broker.run_tool(tool, "--files", listed, "--deep-iteration", "--print-data-log")
    for log, f in per_file(deep.stdout):
        # a record line; for a null value 0.11 to 2.x print no payload field (valuesize or
        # valueSize -1), and 0.10 neither payload nor key (payloadsize -1): its key is unknown
        names = {name.lower() for name in f}
        if "offset" in f and names & {"payload", "valuesize", "payloadsize"}:
            key, value = f.get("key"), f.get("payload")
            log.records.append(StoredMessage(
                int(f["offset"]), None if key in (None, "null") else key,
                None if value in (None, "null") else value,
                key_printed="key" in f or "keysize" not in f))
    return logs


def create_topic(broker: OldKafka, topic: str, partitions: int) -> None:
    """Create a topic as the brokers' own admin tools of the ZooKeeper era do: its partition
    assignment (all on broker 0) in ``/brokers/topics/<topic>`` and an empty config in
    ``/config/topics/<topic>``, which the controller picks up. Done through ZooKeeper because
    0.8.2 to 0.10.0 answer no CreateTopics; waiting for leaders is the caller's."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=broker.zookeeper_connect, timeout=10)
    zk.start(timeout=15)
    try:
        zk.ensure_path("/config/topics")
        zk.create(f"/config/topics/{topic}", b'{"version":1,"config":{}}')
        assignment = ",".join(f'"{p}":[0]' for p in range(partitions))
        zk.ensure_path("/brokers/topics")
        zk.create(f"/brokers/topics/{topic}",
                  f'{{"version":1,"partitions":{{{assignment}}}}}'.encode())
    finally:
        zk.stop()
        zk.close()


def console_produce(broker: OldKafka, topic: str, lines: list[tuple[str, str]],
                    codec: str) -> None:
    """``key:value`` lines through the release's own kafka.tools.ConsoleProducer (the old
    Scala producer on 0.8.2, the Java producer later), compressed with ``codec``."""
    target = (["--broker-list", broker.bootstrap_servers] if broker.release.numeric < (2, 5)
              else ["--bootstrap-server", broker.bootstrap_servers])
    text = "".join(f"{k}:{v}\n" for k, v in lines)
    log4j = broker.tools_log4j()
    done = subprocess.run(
        [*broker._jvm(256), f"-Dlog4j.configuration=file:{log4j}", "-cp",
         classpath(broker.release), "kafka.tools.ConsoleProducer", *target, "--topic", topic,
         "--compression-codec", codec, "--request-required-acks", "-1",
         "--property", "parse.key=true", "--property", "key.separator=:"],
        input=text, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"ConsoleProducer failed ({done.returncode}):\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")


def console_consume(broker: OldKafka, topic: str, count: int) -> list[tuple[str, str]]:
    """(key, value) text of ``count`` messages from the beginning of ``topic``, read by the
    release's own kafka.tools.ConsoleConsumer: the old ZooKeeper consumer (``--zookeeper``),
    which 0.8.2 to 0.10 ship and which reads the legacy message formats as those releases'
    own clients did. A null key or value prints as ``null``."""
    done = broker.run_tool(
        "kafka.tools.ConsoleConsumer", "--zookeeper", broker.zookeeper_connect,
        "--topic", topic, "--from-beginning", "--max-messages", str(count),
        "--property", "print.key=true", "--property", "key.separator=\t", timeout=120)
    rows = []
    for line in done.stdout.splitlines():
        if "\t" in line:
            key, value = line.split("\t", 1)
            rows.append((key, value))
    return rows
