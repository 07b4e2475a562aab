"""The broker of a ``python -m bench`` run, one for the whole run: Apache Kafka 4 (the default,
tests/support/apache_kafka.py: KRaft, jars from Maven Central) or the embedded Tansu of ``make
demo`` (``--broker tansu``). Every scenario, every implementation and every peer reads and
writes the same broker.

Apache Kafka runs with the JVM flags of the test bed except two: the test bed stops the JIT at
C1 (``-XX:TieredStopAtLevel=1``) and gives the broker 512 MiB of heap, which suit short tests;
here C2 compiles the broker's hot paths and the heap is 1 GiB. Its secured rows use the
broker's own listeners (SSL; SASL_SSL with SCRAM-SHA-512), so TLS is the broker's Java TLS.
Tansu's secured rows put Debian's stunnel4 (and the SASL test front for SASL_SSL) in front of
Tansu (bench/security.py).

Spark's JVM ``kafka`` format takes the same connection as Java client properties:
``jvm_options`` turns the ``kafka.*`` options kafkawire and librdkafka share into them (the
CA's PEM file as a PEM truststore, the SCRAM user as a JAAS line).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.security import SASL_MECHANISM, secured_endpoints

#: --broker's choices and their names in output and charts (bench/plots.py).
BROKERS = {"kafka": "Apache Kafka", "tansu": "Tansu"}
HEAP_MB = 1024


@dataclass
class BenchBroker:
    """What the run needs of its broker: a description for the header, the PLAINTEXT
    ``kafka.*`` options, and those of each secured protocol asked for."""

    description: str
    kafka: dict[str, str]
    secured: dict[str, dict[str, str]] = field(default_factory=dict)


def _apache_kafka(pki: object | None):
    from tests.support.apache_kafka import ApacheKafka

    class BenchKafka(ApacheKafka):
        """ApacheKafka with the full JIT (see the module docstring)."""

        def _jvm(self, libs: Path) -> list[str]:
            return [a for a in super()._jvm(libs) if a != "-XX:TieredStopAtLevel=1"]

    return BenchKafka(pki=pki, authorizer=False, heap_mb=HEAP_MB)


@contextmanager
def bench_broker(kind: str, protocols: list[str]) -> Iterator[BenchBroker]:
    """The run's broker, started, and stopped on exit."""
    secured = [p for p in protocols if p != "PLAINTEXT"]
    with ExitStack() as stack:
        if kind == "tansu":
            from spark_kafka_wire.testing.embedded import EmbeddedBroker

            tansu = EmbeddedBroker().start()
            stack.callback(tansu.stop)
            endpoints = stack.enter_context(secured_endpoints(secured))
            yield BenchBroker("embedded Tansu (memory storage) on loopback",
                              {"kafka.bootstrap.servers": tansu.bootstrap_servers}, endpoints)
            return
        from tests.support.apache_kafka import missing_tools

        why_not = missing_tools()
        if why_not:
            raise SystemExit(f"no Apache Kafka broker: {why_not} (or run with --broker tansu)")
        pki = None
        if secured:
            from tests.support.certs import make_pki, remove_pki

            pki = make_pki()
            stack.callback(remove_pki, pki)
        broker = _apache_kafka(pki).start()
        stack.callback(broker.stop)
        out: dict[str, dict[str, str]] = {}
        if pki is not None:
            from tests.support.security_env import SASL_USERS

            tls = {"kafka.ssl.ca.location": pki.ca_pem}
            user = sorted(SASL_USERS)[0]
            if "SSL" in secured:
                out["SSL"] = {"kafka.bootstrap.servers": broker.bootstrap("SSL"),
                              "kafka.security.protocol": "SSL", **tls}
            if "SASL_SSL" in secured:
                out["SASL_SSL"] = {"kafka.bootstrap.servers": broker.bootstrap("SASL_SSL"),
                                   "kafka.security.protocol": "SASL_SSL", **tls,
                                   "kafka.sasl.mechanism": SASL_MECHANISM,
                                   "kafka.sasl.username": user,
                                   "kafka.sasl.password": SASL_USERS[user]}
        yield BenchBroker(f"Apache Kafka {broker.version} (KRaft, one node, log on local disk, "
                          f"heap {HEAP_MB} MiB) on loopback",
                          {"kafka.bootstrap.servers": broker.bootstrap_servers}, out)


def jvm_options(kafka: dict[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options of Spark's JVM ``kafka`` format for the connection ``kafka``
    describes (Java client names: a PEM truststore, a SCRAM JAAS line)."""
    out = {k: v for k, v in kafka.items()
           if k in ("kafka.bootstrap.servers", "kafka.security.protocol",
                    "kafka.sasl.mechanism")}
    if "kafka.ssl.ca.location" in kafka:
        out["kafka.ssl.truststore.type"] = "PEM"
        out["kafka.ssl.truststore.location"] = kafka["kafka.ssl.ca.location"]
    if "kafka.sasl.username" in kafka:
        user, password = kafka["kafka.sasl.username"], kafka["kafka.sasl.password"]
        out["kafka.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";')
    return out
