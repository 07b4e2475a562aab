"""Apache Kafka itself as a test broker, from Maven Central's artifacts (issue 28).

The broker's jars are the ``kafka_<scala>`` artifact and its runtime dependencies, resolved by
Maven (``dependency:copy-dependencies``) into a cache outside the work tree
(``$KAFKAWIRE_CACHE``, else ``~/.cache/kafkawire``), once per version: no archive is
downloaded from anywhere else. A broker is one JVM on free loopback ports (or on a test
host's address, ``host``, launched there through ``command_prefix``: tests/cluster): Kafka 4 in KRaft
mode as a combined broker and controller, its storage formatted with the storage tool of the
same jars (SCRAM users added at format time), stopped by PID; its log directory is kept for a
failed test to read (``log_path``).

Listeners, by name (``bootstrap(name)``): PLAINTEXT; SSL (the tests' CA-signed localhost
certificate); MTLS (SSL requiring a client certificate of that CA); SASL_PLAINTEXT and SASL_SSL
with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (Kafka's unsecured validator). Opt-in
listeners, for the security tests' own broker (they need a token endpoint or a KDC running
before the broker starts, and would slow down the shared one): OIDC and OIDC_SSL (``oidc``:
OAUTHBEARER with Kafka's JWKS validator, KIP-768, besides PLAIN and SCRAM); GSSAPI and GSSAPI_SSL (``kerberos``, with
the other mechanisms too); REAUTH (``reauth_ms``: SASL_PLAINTEXT whose sessions last that long,
KIP-368). ``observe`` logs every SASL login with its principal (tests/support/kafka_observer.py).
With
``authorizer``, StandardAuthorizer with ``admin`` (and the inter-broker principal) as super
users; everyone is allowed where no ACL names the resource, so one broker serves ACL tests
(which add ACLs to their own resources) and every other test.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from spark_kafka_wire.testing.embedded import free_port
from tests.support.java_process import (
    SHORT_LIVED_JVM,
    JavaProcess,
    cache_dir,
    java,
    maven_libs,
    pom,
    write_properties,
)
from tests.support.security_env import SASL_USERS  # the tests' users are the broker's

#: The Kafka release of the test bed (KAFKAWIRE_TEST_KAFKA_VERSION overrides it): the newest
#: release Maven Central serves that passes the suite.
DEFAULT_VERSION = "4.4.0"
#: The release the test bed ran on before DEFAULT_VERSION: ``make test-compat`` runs the
#: integration, CLI and Spark tiers on it, so the release left behind stays proven.
PREVIOUS_VERSION = "4.1.1"
SCALA = "2.13"
START_TIMEOUT_S = 120.0
#: Users every SASL mechanism knows (PLAIN from the JAAS config, SCRAM from the storage format).
ADMIN = ("admin", "admin-secret")
LOG4J2_LINE = "[%d] %p %m (%c)%n"
#: With ``observe``: the thread too, whose name says the listener of a network event.
OBSERVED_LINE = "[%d] %p [%t] %m (%c)%n"
#: With ``observe``: the principal builder's lines, and the network layer's authentication,
#: re-authentication and expired-session events (DEBUG in Kafka's Selector and Processor).
OBSERVED_LOGGERS = (
    "logger.observer.name = kafkawire.observer\nlogger.observer.level = INFO\n"
    "logger.selector.name = org.apache.kafka.common.network.Selector\n"
    "logger.selector.level = DEBUG\n"
    "logger.processor.name = kafka.network.Processor\nlogger.processor.level = DEBUG\n")
#: Errors only, on stderr: the tools' log (run_tool).
QUIET_LOG4J2 = Path(__file__).parents[2] / "spark_kafka_wire" / "testing" / "log4j2-quiet.properties"


def _log_bridge(version: str) -> list[tuple[str, str, str]]:
    """Kafka 4 logs through SLF4J 1.7 to log4j2 and ships no binding in its pom; 3.x and older
    bring reload4j (or log4j 1) with it."""
    major = int(version.split(".")[0])
    return [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")] if major >= 4 else []


def kafka_libs(version: str = DEFAULT_VERSION, scala: str = SCALA) -> Path:
    """The directory of the broker's jars, resolved once per version (a lock keeps parallel
    test processes from resolving it twice)."""
    return maven_libs(
        cache_dir() / "apache-kafka" / f"kafka_{scala}-{version}",
        pom("broker", [("org.apache.kafka", f"kafka_{scala}", version), *_log_bridge(version)]),
        what="Apache Kafka's jars", name=f"kafka_{scala}:{version}", stamp=version)


def kafka_tools_libs(version: str = DEFAULT_VERSION) -> Path:
    """The directory of Kafka's command-line tools' jars (``org.apache.kafka:kafka-tools``:
    TopicCommand, ConsumerGroupCommand, TransactionsCommand, ConsoleConsumer, GetOffsetShell),
    resolved once per version into a cache directory of their own, so that the broker's
    (kafka_libs) is not resolved again. Put after the broker's jars on a classpath
    (ApacheKafka.run_tool with ``tools=True``)."""
    return maven_libs(
        cache_dir() / "apache-kafka" / f"kafka-tools-{version}",
        pom("tools", [("org.apache.kafka", "kafka-tools", version), *_log_bridge(version)]),
        what="Apache Kafka's command-line tools", name=f"kafka-tools:{version}", stamp=version)


def missing_tools(version: str = DEFAULT_VERSION, scala: str = SCALA) -> str | None:
    """Why no Apache Kafka broker can start here (tests skip with it), or None: Java is
    needed, and Maven unless the version's jars are already in the cache."""
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return "Apache Kafka needs Java 17 or newer (apt-get install openjdk-17-jre-headless)"
    done = cache_dir() / "apache-kafka" / f"kafka_{scala}-{version}" / ".complete"
    if not done.exists() and not shutil.which("mvn"):
        return "resolving Apache Kafka's jars needs Maven (apt-get install maven)"
    return None


def cluster_id() -> str:
    """A random cluster id in Kafka's form (URL-safe base64 of 16 bytes), never starting with
    "-": the storage tool would take it for an option (one id in 64 did; Kafka's own
    Uuid.randomUuid() avoids such ids for the same reason)."""
    while True:
        made = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not made.startswith("-"):
            return made


def _jaas_plain(users: dict[str, str]) -> str:
    own = " ".join([f'username="{ADMIN[0]}"', f'password="{ADMIN[1]}"',
                    *(f'user_{u}="{p}"' for u, p in {ADMIN[0]: ADMIN[1], **users}.items())])
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {own};"


def _jaas_scram() -> str:
    return ("org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{ADMIN[0]}" password="{ADMIN[1]}";')


@dataclass(frozen=True)
class Oidc:
    """Kafka's OIDC validator (KIP-768) on the OIDC listeners: keys from ``jwks_url``, tokens
    of ``issuer`` for ``audience``. ``allowed_urls`` also lists the URLs Kafka 4 may contact at
    all (the system property ALLOWED_URLS_PROPERTY, CVE-2025-27817): the JWKS URL at least."""

    jwks_url: str
    issuer: str
    audience: str
    allowed_urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class Kerberos:
    """The broker's Kerberos identity for GSSAPI: ``principal`` (service/host@REALM) with its
    key in ``keytab``, the realm's ``krb5_conf``. The host part is the one clients derive from
    the address they connect to (127.0.0.1), since Java's acceptor takes that name only."""

    krb5_conf: str
    keytab: str
    principal: str
    realm: str
    service: str = "kafka"


#: Kafka 4's allow-list of the URLs its OAuth code may read (a JVM system property; see the
#: "OAUTHBEARER" section of Kafka's security documentation).
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
OIDC_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
#: SASL extensions (KIP-342) the observer reports, by name.
OBSERVED_EXTENSIONS = ("traceId",)


def _sasl_mechanisms(kerberos: bool) -> list[str]:
    return [*(["GSSAPI"] if kerberos else []), "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
            "OAUTHBEARER"]


@dataclass
class ApacheKafka(JavaProcess):
    """One Apache Kafka 4 broker (KRaft, combined roles). ``pki``: tests.support.certs.TestPki
    for the SSL, MTLS and SASL_SSL listeners (without it, only the plaintext ones)."""

    version: str = field(default_factory=lambda: os.environ.get(
        "KAFKAWIRE_TEST_KAFKA_VERSION", DEFAULT_VERSION))
    pki: object | None = None
    authorizer: bool = True
    extra: dict[str, str] = field(default_factory=dict)
    heap_mb: int = 512
    oidc: Oidc | None = None
    kerberos: Kerberos | None = None
    #: connections.max.reauth.ms of the REAUTH listener (None: no such listener)
    reauth_ms: int | None = None
    #: The address every listener binds and advertises (issue 31: a test host's address, so
    #: that clients on other hosts are sent to it); the readiness check connects to it.
    host: str = "127.0.0.1"
    #: Put before the broker's command, to launch it elsewhere: a test host's
    #: ``ip netns exec NAME`` (tests/support/netns.py). The storage tool runs without it.
    command_prefix: list[str] = field(default_factory=list)
    #: log SASL logins (principal builder of tests/support/kafka_observer.py) and the network
    #: layer's authentication events at DEBUG, each line naming its thread (hence listener)
    observe: bool = False
    #: log every completed request (``kafka.request.logger`` at DEBUG, with its bodies: see
    #: _request_loggers) to ``requests.log``,
    #: one line each stamped with epoch milliseconds (``request_log_path``,
    #: ``read_request_log``): who sent what, counted at the broker, for clients whose own
    #: counters are out of reach (the Python workers a Spark driver starts)
    request_log: bool = False
    ports: dict[str, int] = field(default_factory=dict)
    #: The KRaft cluster id its storage is formatted with (a new one when empty); the nodes
    #: of one cluster share it (tests/support/kafka_cluster.py).
    cluster: str = ""
    directory: str = ""
    process: subprocess.Popen | None = None
    started_s: float = 0.0

    # ------------------------------------------------------------------ layout

    def _listeners(self) -> dict[str, str]:
        """listener name -> security protocol."""
        names = {"PLAINTEXT": "PLAINTEXT", "SASL_PLAINTEXT": "SASL_PLAINTEXT"}
        if self.pki is not None:
            names.update({"SSL": "SSL", "MTLS": "SSL", "SASL_SSL": "SASL_SSL"})
        if self.oidc is not None:
            names["OIDC"] = "SASL_PLAINTEXT"
            if self.pki is not None:
                names["OIDC_SSL"] = "SASL_SSL"
        if self.kerberos is not None:
            names["GSSAPI"] = "SASL_PLAINTEXT"
            if self.pki is not None:
                names["GSSAPI_SSL"] = "SASL_SSL"
        if self.reauth_ms is not None:
            names["REAUTH"] = "SASL_PLAINTEXT"
        return names

    def listener_mechanisms(self, name: str) -> list[str]:
        """The SASL mechanisms listener ``name`` enables."""
        return _sasl_mechanisms(self.kerberos is not None
                                and name in ("GSSAPI", "GSSAPI_SSL", "REAUTH"))

    def _sasl_listener(self, props: dict[str, str], name: str) -> None:
        """Mechanisms and their JAAS/validator settings of one SASL listener. OAUTHBEARER:
        OIDC and OIDC_SSL take signed tokens only, REAUTH too when there is a JWKS, the others
        unsecured tokens (a Kafka listener validates tokens one way). PLAIN and SCRAM
        everywhere, so that other clients share a listener with the one under test."""
        prefix = f"listener.name.{name.lower()}"
        oidc = self.oidc is not None and name in ("OIDC", "OIDC_SSL", "REAUTH")
        mechanisms = self.listener_mechanisms(name)
        props[f"{prefix}.sasl.enabled.mechanisms"] = ",".join(mechanisms)
        if "PLAIN" in mechanisms:
            props[f"{prefix}.plain.sasl.jaas.config"] = _jaas_plain(SASL_USERS)
            props[f"{prefix}.scram-sha-256.sasl.jaas.config"] = _jaas_scram()
            props[f"{prefix}.scram-sha-512.sasl.jaas.config"] = _jaas_scram()
        if oidc:
            assert self.oidc is not None
            props[f"{prefix}.oauthbearer.sasl.jaas.config"] = f"{OAUTH_MODULE} required ;"
            props[f"{prefix}.oauthbearer.sasl.server.callback.handler.class"] = OIDC_VALIDATOR
            props[f"{prefix}.oauthbearer.sasl.oauthbearer.jwks.endpoint.url"] = (
                self.oidc.jwks_url)
            props[f"{prefix}.oauthbearer.sasl.oauthbearer.expected.issuer"] = self.oidc.issuer
            props[f"{prefix}.oauthbearer.sasl.oauthbearer.expected.audience"] = (
                self.oidc.audience)
        else:
            props[f"{prefix}.oauthbearer.sasl.jaas.config"] = (
                f'{OAUTH_MODULE} required unsecuredLoginStringClaim_sub="admin";')
        if "GSSAPI" in mechanisms:
            krb = self.kerberos
            assert krb is not None
            props[f"{prefix}.gssapi.sasl.jaas.config"] = (
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                f'storeKey=true keyTab="{krb.keytab}" principal="{krb.principal}";')
            # Kafka's Kerberos login reads the service name from the listener's configs (not
            # the mechanism's), so it is set for the listener
            props[f"{prefix}.sasl.kerberos.service.name"] = krb.service
        if name == "REAUTH":
            for mechanism in mechanisms:
                props[f"{prefix}.{mechanism.lower()}.connections.max.reauth.ms"] = str(
                    self.reauth_ms)

    def _jvm_properties(self) -> dict[str, str]:
        props: dict[str, str] = {}
        if self.oidc is not None:
            props[ALLOWED_URLS_PROPERTY] = ",".join(
                dict.fromkeys([self.oidc.jwks_url, *self.oidc.allowed_urls]))
        if self.kerberos is not None:
            props["java.security.krb5.conf"] = self.kerberos.krb5_conf
        if self.observe:
            props["kafkawire.observer.extensions"] = ",".join(OBSERVED_EXTENSIONS)
            if self.kerberos is not None:
                props["kafkawire.observer.realm"] = self.kerberos.realm
        return props

    def _properties(self, data_dir: str) -> dict[str, str]:
        listeners = self._listeners()
        self.ports = _distinct_ports([*listeners, "CONTROLLER"])
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{self.host}:{self.ports['CONTROLLER']}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listeners": ",".join(f"{n}://{self.host}:{p}" for n, p in self.ports.items()),
            "advertised.listeners": ",".join(
                f"{n}://{self.host}:{self.ports[n]}" for n in listeners),
            "listener.security.protocol.map": ",".join(
                [*(f"{n}:{p}" for n, p in listeners.items()), "CONTROLLER:PLAINTEXT"]),
            "log.dirs": data_dir,
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            # the coordinator looks for transactions past their transaction.timeout.ms every
            # 10 s by default; the timeout tests (tests/integration/test_transactions.py) give
            # their transactions 1 s and expect the abort within a few: harmless elsewhere
            "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
            # the tests write records stamped years ago: Kafka's 7-day time retention would
            # delete them as soon as their segment rolls (Tansu applies none); retention tests
            # set their topics' own retention.ms
            "log.retention.ms": "-1",
            "log.message.timestamp.after.max.ms": str(2**63 - 1),
            "log.message.timestamp.before.max.ms": str(2**63 - 1),
            "sasl.enabled.mechanisms": ",".join(_sasl_mechanisms(self.kerberos is not None)),
        }
        if self.observe:
            from tests.support.kafka_observer import OBSERVER_CLASS

            props["principal.builder.class"] = OBSERVER_CLASS
        for name, protocol in listeners.items():
            if protocol.startswith("SASL"):
                self._sasl_listener(props, name)
            if protocol in ("SSL", "SASL_SSL"):
                pki = self.pki
                prefix = f"listener.name.{name.lower()}"
                props[f"{prefix}.ssl.keystore.location"] = pki.server.p12  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.keystore.type"] = "PKCS12"
                props[f"{prefix}.ssl.keystore.password"] = pki.store_password  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.key.password"] = pki.store_password  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.truststore.location"] = pki.ca_p12  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.truststore.type"] = "PKCS12"
                props[f"{prefix}.ssl.truststore.password"] = pki.store_password  # type: ignore[attr-defined]
                props[f"{prefix}.ssl.client.auth"] = "required" if name == "MTLS" else "none"
        if self.authorizer:
            props["authorizer.class.name"] = (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
            props["super.users"] = f"User:{ADMIN[0]};User:ANONYMOUS"
            props["allow.everyone.if.no.acl.found"] = "true"
        props.update(self.extra)
        return props

    # ---------------------------------------------------------------- process

    def start(self) -> ApacheKafka:
        libs = kafka_libs(self.version)
        self.directory = tempfile.mkdtemp(prefix=f"kafkawire-kafka-{self.version}-")
        data = os.path.join(self.directory, "data")
        config = os.path.join(self.directory, "server.properties")
        write_properties(config, self._properties(data))
        log4j = os.path.join(self.directory, "log4j2.properties")
        Path(log4j).write_text(
            "rootLogger.level = INFO\nrootLogger.appenderRef.file.ref = file\n"
            "appender.file.type = File\nappender.file.name = file\n"
            f"appender.file.fileName = {self.log_path}\n"
            "appender.file.layout.type = PatternLayout\n"
            f"appender.file.layout.pattern = {OBSERVED_LINE if self.observe else LOG4J2_LINE}\n"
            "logger.kafka.name = kafka\nlogger.kafka.level = INFO\n"
            "logger.state.name = state.change.logger\nlogger.state.level = WARN\n"
            + (OBSERVED_LOGGERS if self.observe else "")
            + (_request_loggers(self.request_log_path) if self.request_log else ""))
        jvm = self._jvm(libs)
        scram = [f"--add-scram=SCRAM-SHA-{bits}=[name={u},password={p}]"
                 for bits in (256, 512) for u, p in {ADMIN[0]: ADMIN[1], **SASL_USERS}.items()]
        self.cluster = self.cluster or cluster_id()
        fmt = subprocess.run([*jvm, "kafka.tools.StorageTool", "format", "-t", self.cluster,
                              "-c", config, *scram], capture_output=True, text=True, timeout=120)
        if fmt.returncode != 0:
            raise RuntimeError(f"formatting Kafka {self.version}'s storage failed:\n"
                               f"{(fmt.stdout + fmt.stderr)[-3000:]}")
        return self._launch(first=True)

    def _jvm(self, libs: Path) -> list[str]:
        log4j = os.path.join(self.directory, "log4j2.properties")
        classpath = f"{libs}/*"
        if self.observe:
            from tests.support.kafka_observer import observer_classes

            classpath += os.pathsep + observer_classes(self.version)
        return [java(), f"-Xmx{self.heap_mb}m", f"-Xms{min(self.heap_mb, 256)}m",
                *SHORT_LIVED_JVM, f"-Dlog4j2.configurationFile=file:{log4j}",
                *(f"-D{k}={v}" for k, v in self._jvm_properties().items()), "-cp", classpath]

    def _launch(self, first: bool = False) -> ApacheKafka:
        """Start the JVM on the configuration and storage in ``directory`` and wait until it
        says it started (a restart looks only at what the log says after this point)."""
        config = os.path.join(self.directory, "server.properties")
        since = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        began = time.monotonic()
        with open(os.path.join(self.directory, "stdout.log"), "ab") as out:
            self.process = subprocess.Popen(
                [*self.command_prefix, *self._jvm(kafka_libs(self.version)), "kafka.Kafka",
                 config], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            self._wait_started(since)
        except BaseException:
            self.stop(keep_logs=not first)  # a restart's log dir holds the data under test
            raise
        self.started_s = time.monotonic() - began
        return self

    def shutdown(self) -> None:
        """A clean stop (SIGTERM: a broker's controlled shutdown moves its leaderships away
        first) that keeps the directory for ``restart``."""
        self.stop(keep_logs=True)

    def restart(self) -> ApacheKafka:
        """Start again after ``kill`` or ``shutdown``: same configuration, ports, node id and
        log directory (not formatted again), so the log it held is read back."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError("Kafka is still running: kill() or shutdown() it first")
        return self._launch()

    def run_tool(self, main_class: str, *args: str, timeout: float = 120.0,
                 tools: bool = False) -> str:
        """Run one of Kafka's command-line tools (``org.apache.kafka.tools.ConfigCommand``, ...)
        from the broker's jars (``tools``: and the kafka-tools artifact's, kafka_tools_libs,
        where Kafka 4's TopicCommand, ConsumerGroupCommand, ... are); its output, or
        RuntimeError with it when it fails."""
        classpath = [f"{kafka_libs(self.version)}/*"]
        if tools:
            classpath.append(f"{kafka_tools_libs(self.version)}/*")
        done = subprocess.run(
            [java(), "-Xmx256m", *SHORT_LIVED_JVM,
             f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J2}",
             "-cp", os.pathsep.join(classpath), main_class, *args],
            capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{main_class} {' '.join(args)} failed ({done.returncode}):\n"
                               f"{(done.stdout + done.stderr)[-3000:]}")
        return done.stdout

    def config_command(self, *args: str) -> str:
        """Kafka's ConfigCommand (``kafka-configs``) with ``args``, from wherever this release
        keeps it: the broker's own jar up to 4.1 (``kafka.admin.ConfigCommand``), the
        kafka-tools artifact from 4.2 on (``org.apache.kafka.tools.ConfigCommand``; 4.4.0's
        core jar has no such class)."""
        import zipfile

        core = kafka_libs(self.version) / f"kafka_{SCALA}-{self.version}.jar"
        with zipfile.ZipFile(core) as jar:
            in_core = "kafka/admin/ConfigCommand.class" in jar.namelist()
        if in_core:
            return self.run_tool("kafka.admin.ConfigCommand", *args)
        return self.run_tool("org.apache.kafka.tools.ConfigCommand", *args, tools=True)

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "server.log")

    @property
    def request_log_path(self) -> str:
        """With ``request_log``: the completed requests, one line each (REQUEST_LINE)."""
        return os.path.join(self.directory, "requests.log")

    def read_request_log(self) -> list[LoggedRequest]:
        """The completed requests logged so far (``request_log``), in order."""
        if not os.path.exists(self.request_log_path):
            return []
        with open(self.request_log_path, errors="replace") as f:
            return [r for r in map(parse_request_line, f) if r is not None]

    @property
    def node_id(self) -> int:
        return int(self.extra.get("node.id", "1"))

    def _wait_started(self, since: int = 0) -> None:
        """Until the log, from byte ``since`` on, says the server started and every port
        answers."""
        deadline = time.monotonic() + START_TIMEOUT_S
        marker = f"[KafkaRaftServer nodeId={self.node_id}] Kafka Server started"
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Kafka {self.version} exited ({self.process.returncode}); "
                                   f"log: {self.log_tail()}")
            if os.path.exists(self.log_path) and marker in _read_from(self.log_path, since):
                if all(_port_open(p, self.host) for p in self.ports.values()):
                    return
            time.sleep(0.2)
        raise RuntimeError(f"Kafka {self.version} did not start within {START_TIMEOUT_S:.0f} s; "
                           f"log: {self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        for name in ("server.log", "stdout.log"):
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                text = Path(path).read_text(errors="replace")
                if text.strip():
                    return text[-chars:]
        return "(no log)"

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        return f"{self.host}:{self.ports[listener]}"

    @property
    def bootstrap_servers(self) -> str:
        return self.bootstrap()


#: With ``request_log``: epoch milliseconds, then Kafka's "Completed request:{json}".
REQUEST_LINE = "%d{UNIX_MILLIS} %m%n"
REQUEST_MARKER = "Completed request:"


def _request_loggers(path: str) -> str:
    """log4j2 lines sending ``kafka.request.logger`` at DEBUG to a file of its own, not to
    server.log (additivity off): one line per completed request with its header, the
    connection, and (Kafka 4.1 at DEBUG) the request and response bodies as JSON, records'
    bytes left out. That JSON is the broker's work: a Metadata answer for 10,000 partitions
    is a line of megabytes, so a broker logging requests answers big requests a little later
    than one that does not."""
    return ("appender.requests.type = File\nappender.requests.name = requests\n"
            f"appender.requests.fileName = {path}\n"
            "appender.requests.layout.type = PatternLayout\n"
            f"appender.requests.layout.pattern = {REQUEST_LINE}\n"
            "logger.requests.name = kafka.request.logger\nlogger.requests.level = DEBUG\n"
            "logger.requests.additivity = false\n"
            "logger.requests.appenderRef.requests.ref = requests\n")


@dataclass(frozen=True)
class LoggedRequest:
    """One completed request of the broker's request log: when it completed (epoch ms), its
    API key and version, the client's id and the address it came from."""

    completed_ms: int
    api_key: int
    api_version: int
    client_id: str
    client_address: str

    @property
    def api_name(self) -> str:
        return api_name(self.api_key)


def api_name(key: int) -> str:
    """Kafka's name of an API key (kafkawire's message table; ``api<N>`` for one it lacks)."""
    from spark_kafka_wire.protocol import messages
    from spark_kafka_wire.protocol.engine import ApiSpec

    names = {spec.key: spec.name for spec in vars(messages).values()
             if isinstance(spec, ApiSpec)}
    return names.get(key, f"api{key}")


def parse_request_line(line: str) -> LoggedRequest | None:
    """One line of ``requests.log`` (REQUEST_LINE), or None for anything else (a continued
    line, a line cut short by a broker still writing). The client's address is the remote
    end of Kafka's connection id, ``<local ip>:<port>-<remote ip>:<port>-<index>``."""
    import json

    stamp, _, rest = line.strip().partition(" ")
    if not stamp.isdigit() or not rest.startswith(REQUEST_MARKER):
        return None
    try:
        desc = json.loads(rest[len(REQUEST_MARKER):])
        header = desc["requestHeader"]
        remote = desc["connection"].split("-")[1]
    except (ValueError, KeyError, IndexError, AttributeError):
        return None
    return LoggedRequest(int(stamp), int(header["requestApiKey"]),
                         int(header["requestApiVersion"]), str(header.get("clientId", "")),
                         remote.rpartition(":")[0])


def _read_from(path: str, offset: int) -> str:
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


def _distinct_ports(names: list[str]) -> dict[str, int]:
    """A free loopback port per name, no two alike: free_port() releases the port it found, so
    the next call can find the same one (Kafka then refuses to start: two listeners on one
    port), the likelier the more listeners a broker has."""
    ports: dict[str, int] = {}
    for name in names:
        port = free_port()
        while port in ports.values():
            port = free_port()
        ports[name] = port
    return ports


def _port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def topic_on(client: object, partitions: int = 1, prefix: str = "log",
             configs: dict[str, str] | None = None) -> str:
    """A new, uniquely named topic (with topic-level ``configs``) on the broker of ``client``,
    ready for writes when this returns (``create_topics`` waits for the leaders)."""
    from spark_kafka_wire.client.metadata.admin import create_topics

    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    create_topics(client, [(name, partitions)], configs=configs)  # type: ignore[arg-type]
    return name
