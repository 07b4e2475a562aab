"""What an Apache Kafka test broker saw of its clients' logins (issue 28, security).

The SASL front of tests/support/sasl_front.py counts every login it serves (``FrontStats``);
the security tests assert on those counts and principals. Against Apache Kafka they read the
same facts from the broker's log, written by the broker itself with ``ApacheKafka(observe=
True)``:

* a principal builder of ours (tests/support/java/KafkawireAuthObserver.java, a KIP-189
  ``KafkaPrincipalBuilder`` that builds Kafka's default principals) logs one line per SASL
  exchange: listener, mechanism, SASL authorization id, Kafka principal and the SASL
  extensions (KIP-342) named in OBSERVED_EXTENSIONS. It is compiled once per Kafka version
  with the JDK's ``javac`` into the jar cache;
* Kafka's own network layer, at DEBUG, logs each successful authentication and
  re-authentication (KIP-368), each failed one with its message, and each connection closed
  because its session expired; the thread name of these lines names the listener.

``KafkaListener`` is one listener of such a broker with the attributes the security tests use
of a front broker (``bootstrap_servers``, ``port``, ``pki``, ``mutual``, ``stats``).
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.apache_kafka import ApacheKafka, cache_dir, kafka_libs

OBSERVER_CLASS = "kafkawire.tests.KafkawireAuthObserver"
SOURCE = Path(__file__).parent / "java" / "KafkawireAuthObserver.java"
JAVAC_TIMEOUT_S = 300.0
#: Class files for the oldest Java Kafka 4's broker runs on, whatever JDK compiles them (a newer
#: javac's default would not load in an older broker JVM).
JAVA_RELEASE = "17"
_LINE = re.compile(r"^\[(?P<at>[^\]]*)\] (?P<level>\w+) \[(?P<thread>[^\]]*)\] (?P<msg>.*)$")
#: Kafka's network threads: data-plane-kafka-network-thread-<node>-<listener>-<protocol>-<n>
_THREAD_LISTENER = re.compile(r"^data-plane-kafka-network-thread-\d+-(?P<name>.+?)-"
                              r"(?:SASL_PLAINTEXT|SASL_SSL|PLAINTEXT|SSL)-\d+$")
_AUTH = re.compile(r"kafkawire-auth listener=(?P<listener>\S+) mechanism=(?P<mechanism>\S+) "
                   r"authzid=(?P<authzid>\S+) principal=(?P<principal>\S+)(?P<ext>.*?)"
                   r" \(kafkawire\.observer\)$")
_FAILED = re.compile(r"Failed (?:re-)?authentication with \S+ \(channelId=[^)]*\) \((?P<why>.*)\)"
                     r" \(org\.apache\.kafka\.common\.network\.Selector\)$")


def missing_javac() -> str | None:
    """Why the observer cannot be compiled here (tests skip with it), or None."""
    if shutil.which("javac"):
        return None
    return ("observing Apache Kafka's logins needs a JDK's javac "
            "(apt-get install default-jdk-headless)")


def observer_classes(version: str) -> str:
    """The directory of the compiled observer for Kafka ``version``, compiled once per version
    and source text (a lock keeps parallel test processes from compiling it twice)."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + version.encode()).hexdigest()[:16]
    target = cache_dir() / "apache-kafka" / f"observer-{version}-{digest}"
    done = target / ".complete"
    if done.exists():
        return str(target)
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return str(target)
        javac = shutil.which("javac")
        if not javac:
            raise RuntimeError(missing_javac())
        compiled = subprocess.run(
            [javac, "-nowarn", "--release", JAVA_RELEASE, "-d", str(target), "-cp",
             f"{kafka_libs(version)}/*", str(SOURCE)], capture_output=True, text=True, timeout=JAVAC_TIMEOUT_S)
        if compiled.returncode != 0:
            raise RuntimeError(f"javac could not compile {SOURCE.name} against Kafka "
                               f"{version}:\n{(compiled.stdout + compiled.stderr)[-3000:]}")
        done.write_text(version)
    return str(target)


@dataclass(frozen=True)
class KafkaAuthEvent:
    """One SASL login Kafka accepted. ``principal`` is the SASL authorization id (a Kerberos
    login's is user@REALM), as the front reports it; ``kafka_principal`` what ACLs see
    (User:alice). Kafka's principal builder cannot tell a login from a re-login, nor the
    SaslHandshake/SaslAuthenticate versions, so those are None (front-only assertions)."""

    mechanism: str
    principal: str
    kafka_principal: str
    listener: str
    extensions: dict[str, str] = field(default_factory=dict)
    reauthentication: bool | None = None
    handshake_version: int | None = None
    authenticate_version: int | None = None


@dataclass
class KafkaStats:
    """The broker log's account of one listener, read when asked for (``KafkaListener.stats``):
    the same attributes as the front's FrontStats."""

    authentications: list[KafkaAuthEvent] = field(default_factory=list)
    #: first logins of connections ("Successfully authenticated"): one per new connection
    logins: int = 0
    #: "Successfully re-authenticated" lines of the network layer
    reauthentications: list[str] = field(default_factory=list)
    #: why each refused login was refused, as the broker logged it
    failures: list[str] = field(default_factory=list)
    #: connections Kafka closed because their session had expired (KIP-368)
    expired_closes: int = 0
    #: ERROR lines of the listener's network threads
    errors: list[str] = field(default_factory=list)

    def principals(self) -> list[str]:
        return [e.principal for e in self.authentications]


def read_stats(log_path: str, listener: str) -> KafkaStats:
    stats = KafkaStats()
    try:
        text = Path(log_path).read_text(errors="replace")
    except FileNotFoundError:
        return stats
    for raw in text.splitlines():
        line = _LINE.match(raw)
        if line is None:
            continue
        msg = line["msg"]
        auth = _AUTH.search(msg)
        if auth is not None:
            if auth["listener"] == listener:
                ext = dict(re.findall(r" ext\.(\w+)=(\S*)", auth["ext"]))
                stats.authentications.append(KafkaAuthEvent(
                    mechanism=auth["mechanism"], principal=auth["authzid"],
                    kafka_principal=auth["principal"], listener=listener, extensions=ext))
            continue
        on = _THREAD_LISTENER.search(line["thread"])
        if on is None or on["name"] != listener:
            continue
        if "Successfully re-authenticated with" in msg:
            stats.reauthentications.append(msg)
        elif "Successfully authenticated with" in msg:
            stats.logins += 1
        elif "Disconnecting expired channel" in msg:
            stats.expired_closes += 1
        elif (failed := _FAILED.search(msg)) is not None:
            stats.failures.append(failed["why"])
        elif line["level"] == "ERROR":
            stats.errors.append(msg)
    return stats


@dataclass
class KafkaListener:
    """One listener of an observed Apache Kafka broker, as the security tests use a front
    broker: ``bootstrap_servers``, ``port``, ``pki``, ``mutual`` and ``stats``."""

    kafka: ApacheKafka
    name: str
    pki: object | None = None
    #: what the tests read of a broker kind: "kafka" here, "front" for the Tansu fronts
    kind: str = "kafka"

    @property
    def kerberos_host(self) -> str:
        """The host part of the broker's Kerberos service principal: Java's acceptor takes
        tickets for that name only."""
        krb = self.kafka.kerberos
        return krb.principal.split("/", 1)[1].split("@", 1)[0] if krb else ""

    @property
    def port(self) -> int:
        return self.kafka.ports[self.name]

    @property
    def bootstrap_servers(self) -> str:
        return self.kafka.bootstrap(self.name)

    @property
    def mutual(self) -> bool:
        return self.name == "MTLS"

    @property
    def stats(self) -> KafkaStats:
        return read_stats(self.kafka.log_path, self.name)

    @property
    def signed_tokens(self) -> KafkaListener:
        """The listener for OAUTHBEARER tokens signed by the test token endpoint: Kafka's JWKS
        validator (OIDC, OIDC_SSL) is a listener of its own, since a Kafka listener validates
        OAUTHBEARER tokens one way only, and the plain SASL listeners take unsecured ones."""
        name = "OIDC_SSL" if self.kafka._listeners().get(self.name) == "SASL_SSL" else "OIDC"
        if name not in self.kafka.ports:
            raise RuntimeError(f"this Kafka broker has no {name} listener (ApacheKafka(oidc=...))")
        return KafkaListener(self.kafka, name, self.pki)
