"""What the tests' Java servers share: jars resolved from Maven Central once per machine, the
configuration files they are started on, and the way they are stopped.

Apache Kafka 4 (tests/support/apache_kafka.py), Kafka 3.9 in ZooKeeper mode
(apache_kafka_zk.py) and the older releases (old_kafka.py) each used to carry a copy of the
Maven resolution (a pom per artifact set, a file lock so parallel test processes resolve it
once, a ``.complete`` stamp), of the properties and log4j files and of the stop (SIGTERM to
the process group, SIGKILL when it does not end, the directory removed unless its logs are
kept): a fix in one copy did not reach the others.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

#: How long a JVM may take to end after SIGTERM before it gets SIGKILL.
STOP_TIMEOUT_S = 30.0
MAVEN_TIMEOUT_S = 900.0

#: The flags of the tests' Java servers (Kafka of every release, its tools and shell, the Schema
#: Registry), which start, serve a few minutes and end: C1 alone, since C2's compilations cost
#: more CPU than they win back in a JVM this short-lived on two cores, the serial collector (no
#: GC threads competing with the test) and the JDK's class-data archive. The benchmark's broker
#: (bench/broker.py) keeps the full JIT.
SHORT_LIVED_JVM = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")

#: groupId, artifactId, version
Coordinates = tuple[str, str, str]


def cache_dir() -> Path:
    return Path(os.environ.get("KAFKAWIRE_CACHE") or Path.home() / ".cache" / "kafkawire")


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not found:
        raise RuntimeError("Apache Kafka needs Java 17 or newer on PATH or in JAVA_HOME")
    return found


def pom(artifact: str, dependencies: Iterable[Coordinates]) -> str:
    """A pom of packaging ``pom`` whose only content is these dependencies."""
    body = "".join(f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
                   f"<version>{v}</version></dependency>" for g, a, v in dependencies)
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0'
            f"</modelVersion><groupId>kafkawire.tests</groupId><artifactId>{artifact}"
            f"</artifactId><version>1</version><packaging>pom</packaging><dependencies>{body}"
            "</dependencies></project>")


def maven_libs(target: Path, pom_xml: str, *, what: str, name: str, stamp: str = "ok",
               transitive: bool = True, timeout: float = MAVEN_TIMEOUT_S) -> Path:
    """``target``/libs: the runtime jars of ``pom_xml``'s dependencies (``transitive=False``:
    those artifacts alone), copied there by Maven the first time and found there after (a
    ``.complete`` stamp holding ``stamp``). A lock on ``target``/.lock keeps parallel test
    processes from resolving it twice. ``what`` names the jars in the error without Maven,
    ``name`` the artifacts when Maven fails."""
    libs, done = target / "libs", target / ".complete"

    def resolved() -> bool:  # by this stamp: a changed list of artifacts is resolved again
        return done.exists() and done.read_text() == stamp

    if resolved():
        return libs
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if resolved():
            return libs
        mvn = shutil.which("mvn")
        if not mvn:
            raise RuntimeError(f"resolving {what} needs Maven (apt-get install maven)")
        with tempfile.TemporaryDirectory(prefix="kafkawire-pom-") as work:
            Path(work, "pom.xml").write_text(pom_xml)
            shutil.rmtree(libs, ignore_errors=True)
            run = subprocess.run(
                [mvn, "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={libs}",
                 "-DincludeScope=runtime", *([] if transitive else ["-DexcludeTransitive=true"])],
                cwd=work, capture_output=True, text=True, timeout=timeout)
            if run.returncode != 0:
                raise RuntimeError(f"Maven could not resolve {name}:\n"
                                   f"{(run.stdout + run.stderr)[-3000:]}")
        done.write_text(stamp)
    return libs


def write_properties(path: str, properties: Mapping[str, str]) -> str:
    """A Java .properties file of ``key=value`` lines (server.properties); its path."""
    Path(path).write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    return path


def write_log4j(path: str, log_path: str, levels: Mapping[str, str]) -> str:
    """A log4j 1 configuration (Kafka 3.9 and older): INFO and up to the file ``log_path``,
    these loggers at these levels; its path."""
    Path(path).write_text(
        "log4j.rootLogger=INFO, file\n"
        "log4j.appender.file=org.apache.log4j.FileAppender\n"
        f"log4j.appender.file.File={log_path}\n"
        "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        + "".join(f"log4j.logger.{name}={level}\n" for name, level in levels.items()))
    return path


class JavaProcess:
    """A JVM started in a session of its own (``start_new_session=True``: its process group
    is its pid) with its files in ``directory``. The subclasses are dataclasses declaring
    both attributes."""

    process: subprocess.Popen | None
    directory: str
    started_s: float

    def launch(self, command: list[str], output: str, wait: Callable[[], None], *,
               append: bool = False, cwd: str | None = None) -> None:
        """Start ``command`` in a session of its own with stdout and stderr into ``output``,
        then ``wait()`` until it serves; a JVM that does not start is stopped with its logs
        kept for the failure to name. ``started_s``: launch to ready, in seconds."""
        began = time.monotonic()
        with open(output, "ab" if append else "wb") as out:
            self.process = subprocess.Popen(command, cwd=cwd, stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        try:
            wait()
        except BaseException:
            self.stop(keep_logs=True)
            raise
        self.started_s = time.monotonic() - began

    def kill(self) -> None:
        """kill -9: the JVM dies at once, as in a crash of the process (what it wrote to its
        log files is in the page cache and survives; nothing is flushed or closed cleanly)."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait(timeout=STOP_TIMEOUT_S)

    def stop(self, keep_logs: bool = False) -> None:
        """SIGTERM the process group (a clean shutdown), SIGKILL after STOP_TIMEOUT_S; the
        directory goes unless ``keep_logs``."""
        if self.process is not None and self.process.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.process.pid, sig)
                    self.process.wait(timeout=STOP_TIMEOUT_S)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
        if not keep_logs and self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)
