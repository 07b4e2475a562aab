"""What a Spark worker imports for a plain query (ARCHITECTURE.md's rule on worker imports).

Spark starts a Python worker for the data source's lookup, one to plan a write, one per
executor core and one to commit it, and each imports what the pickled reader or writer needs
(docs/benchmarks.md, "A write's first seconds"). Optional features (the 0.7 generation, record
formats and their registry, SASL logins, ZooKeeper lookups) are imported by the code that runs
for a query that uses them, so these modules must not load them at import.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

#: What the data source and the modules a task unpickles are, in a worker.
WORKER_MODULES = (
    "spark_kafka_wire.datasource",
    "spark_kafka_wire.source.batch_reader",
    "spark_kafka_wire.source.stream_reader",
    "spark_kafka_wire.sink.batch_writer",
    "spark_kafka_wire.sink.stream_writer",
)

#: Imported only by a query that uses them (module names and package prefixes).
OPTIONAL = (
    "spark_kafka_wire.client.kafka07",
    "spark_kafka_wire.protocol.kafka07",
    "spark_kafka_wire.client.registry",
    "spark_kafka_wire.options.registry_decoders",
    "spark_kafka_wire.sink.formats",
    "spark_kafka_wire.client.security.sasl.authenticate",
    "spark_kafka_wire.client.security.sasl.mechanisms",
    "spark_kafka_wire.client.security.sasl.oauthbearer",
    "spark_kafka_wire.client.security.sasl.oidc",
    "spark_kafka_wire.client.security.sasl.tokens",
    "spark_kafka_wire.client.zookeeper.registry",
    "fastavro",
    "google.protobuf",
    "kazoo",
)
#: The formats layer's modules a plain query may import: the typed errors every layer above
#: re-exports, and the size limits the options check.
FORMATS_ALLOWED = ("spark_kafka_wire.formats", "spark_kafka_wire.formats.errors",
                   "spark_kafka_wire.formats.limits")


def imported_by(*modules: str) -> list[str]:
    """The modules a fresh interpreter holds after importing ``modules``."""
    code = (f"import json, sys\nfor m in {list(modules)!r}:\n    __import__(m)\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def optional_in(modules: list[str]) -> list[str]:
    return sorted(
        m for m in modules
        if any(m == o or m.startswith(o + ".") for o in OPTIONAL)
        or (m.startswith("spark_kafka_wire.formats") and m not in FORMATS_ALLOWED))


def test_a_plain_query_worker_imports_no_optional_feature() -> None:
    assert optional_in(imported_by(*WORKER_MODULES)) == []


def test_the_rule_sees_an_optional_feature_imported() -> None:
    """The same check, on modules that do import what a formatted or 0.7 query needs."""
    found = optional_in(imported_by("spark_kafka_wire.sink.formats",
                                    "spark_kafka_wire.client.kafka07.cluster"))
    assert "spark_kafka_wire.sink.formats" in found
    assert "spark_kafka_wire.client.kafka07.cluster" in found
    assert "fastavro" in found
