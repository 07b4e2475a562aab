"""The protocol and client layers and the command line work where pyspark cannot be imported
(the layering rule of tests/unit/test_architecture.py, proved in a process against the test
broker): a child process refuses every pyspark import, walks every module of the three, writes
and reads records through the client and runs ``kafkawire describe``. In the integration tier
because it needs the broker; the static rule stays in the unit tier."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import spark_kafka_wire

ROOT = Path(spark_kafka_wire.__file__).resolve().parent.parent

NO_PYSPARK = """
import importlib
import importlib.abc
import pkgutil
import sys


class NoPyspark(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(f"pyspark is not installed here ({name})")
        return None


sys.meta_path.insert(0, NoPyspark())

import spark_kafka_wire
import spark_kafka_wire.cli
import spark_kafka_wire.client
import spark_kafka_wire.errors
import spark_kafka_wire.protocol

loaded = []
for package in (spark_kafka_wire.protocol, spark_kafka_wire.client, spark_kafka_wire.cli):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
        loaded.append(info.name)
try:
    spark_kafka_wire.KafkaWireDataSource
except ImportError:
    pass
else:
    raise AssertionError("the Spark face imported although pyspark cannot be")

import pyarrow as pa

from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.fetching.offsets import LATEST, resolve_offsets
from spark_kafka_wire.client.producer import Producer, ProduceSettings, assign_partitions

bootstrap, topic = sys.argv[1], sys.argv[2]
keys = pa.array([b"key-%d" % i for i in range(20)])
values = pa.array([b"value-%d" % i for i in range(20)])
with KafkaClient(ClientConfig.from_servers(bootstrap)) as client:
    create_topics(client, [(topic, 2)])
    producer = Producer(client, ProduceSettings())
    producer.append(topic, keys, values, assign_partitions(keys, len(keys), 2), 1_700_000_000_000)
    producer.flush()
    ends = resolve_offsets(client, {(topic, 0): LATEST, (topic, 1): LATEST})
    read = [v for p in (0, 1) for chunk in fetch_range(client, topic, p, 0, ends[(topic, p)])
            for v in chunk.values.to_pylist()]
assert sorted(read) == sorted(values.to_pylist()), read
# the command line too
spark_kafka_wire.cli.cli.main(["--bootstrap-server", bootstrap, "describe", topic],
                              standalone_mode=False)
assert not [m for m in sys.modules if m.split(".")[0] == "pyspark"]
print(f"{len(loaded)} modules, {len(read)} records")
"""


@pytest.mark.broker
def test_protocol_and_client_work_without_pyspark(bootstrap: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    topic = f"no-pyspark-{uuid.uuid4().hex[:12]}"
    done = subprocess.run([sys.executable, "-c", NO_PYSPARK, bootstrap, topic], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("20 records"), done.stdout
    assert "partition\tleader" in done.stdout  # the CLI's describe ran
