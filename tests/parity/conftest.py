"""The parity tier (issue 30): the same query through Spark's own ``kafka`` format and through
``kafkawire`` on the same topics of Apache Kafka 4, results compared row for row.

Run by ``make test-parity`` (``pytest -m parity tests/parity`` in the Python that
tests/support/spark_kafka_connector.py picks: Spark's connector must be the installed pyspark's
release). ``make test`` neither runs nor imports these modules (the session needs the
connector's jars), so this directory is collected only when the marker expression names
``parity``.

The broker is always Apache Kafka (the oracle is Spark's connector talking to the real broker),
also under KAFKAWIRE_TEST_BROKER=tansu; KAFKA_BOOTSTRAP_SERVERS still points the tier at any
cluster.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if "parity" not in (config.option.markexpr or ""):
        return True
    return None


@pytest.fixture(scope="session")
def bootstrap(request) -> str:
    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if external:
        return external
    return request.getfixturevalue("apache_kafka").bootstrap_servers


@pytest.fixture(scope="session")
def spark(bootstrap):
    """One local[2] SparkSession where ``format("kafka")`` (Spark's connector, from
    ``spark.jars``) and ``format("kafkawire")`` both work. It depends on ``bootstrap`` so that
    it stops before the broker does (Spark's cached Java producers would otherwise spend the
    end of the run logging that the broker is gone)."""
    from spark_kafka_wire.testing.session import local_session
    from tests.support.spark_kafka_connector import ConnectorNotServed, session_conf

    try:
        conf = session_conf()
    except ConnectorNotServed as exc:
        pytest.fail(f"{exc}: run the parity tier through `make test-parity`, which picks a "
                    "pyspark whose connector Maven Central serves")
    session = local_session("spark-kafka-wire-parity", conf=conf)
    yield session
    session.stop()
