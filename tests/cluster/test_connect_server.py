"""kafkawire through a Spark Connect server on the test cluster (issue 31 item 3): pyspark's
own ``start-connect-server.sh`` runs on the master's host against the standalone cluster
(the ``connect_server`` fixture of tests/cluster/conftest.py), and a Connect client on the
driver's host, another network namespace, connects with ``sc://<master>:15002``, registers
kafkawire and runs a batch write, a batch read and an availableNow stream
(tests/cluster/jobs/connect_client.py).

The server has no PYTHONPATH and cannot see the checkout's packages: kafkawire reaches its
planning and its executors only from the packed environment, given to the server by
``--archives`` (and unpacked in its working directory) and added to the client's session by
``addArtifacts``; tests/support/connect_cluster.py says why a Connect server needs it in all
three places.
librdkafka, from pytest, is the oracle of what reached Kafka; the client's UDF tells where
each task ran and where ``spark_kafka_wire`` came from there.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.cluster.checks import assert_ran_on_the_workers, oracle_rows
from tests.cluster.conftest import JOB_SECONDS
from tests.support.connect_cluster import checkpoint_batch_sizes
from tests.support.librdkafka import create_topic, produce_numbered
from tests.support.spark_standalone import RunningJob, clean_env

ROOT = Path(__file__).resolve().parents[2]
CLIENT = Path(__file__).resolve().parent / "jobs" / "connect_client.py"
ROWS = 2000
CLIENT_TIMEOUT_S = 600.0


def _run_client(name: str, spec: dict, test_hosts, connect_server, spark_cluster,
                cluster_dir: Path) -> dict:
    """The client script on the driver's host with this venv's Python and the checkout on
    its PYTHONPATH (and nothing of the server's: no SPARK_REMOTE, no PYSPARK_*); its JSON
    results, or the test fails with its, the server's and the executors' logs."""
    directory = cluster_dir / "jobs" / name
    directory.mkdir(parents=True)
    stderr_path = directory / "client.log"
    began = time.monotonic()
    with open(stderr_path, "wb") as err:
        process = test_hosts["driver"].popen(
            [sys.executable, str(CLIENT), json.dumps(spec)], env=clean_env(PYTHONPATH=str(ROOT)),
            cwd=str(directory), stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
    done = RunningJob(process, stderr_path, began).wait(CLIENT_TIMEOUT_S)
    JOB_SECONDS[name] = done.seconds
    if done.returncode != 0:
        pytest.fail(f"the Connect client exited {done.returncode} after {done.seconds:.0f} s; "
                    f"its log {stderr_path}:\n{stderr_path.read_text(errors='replace')[-6000:]}"
                    f"\nserver log {connect_server.log_path}:\n{connect_server.log()[-6000:]}"
                    f"\nexecutors:\n{spark_cluster.executor_logs()[-6000:]}")
    return done.result()


def test_connect_client_on_another_host_writes_reads_and_streams(
        connect_server, cluster_kafka, executor_env, test_hosts, spark_cluster, cluster_dir):
    """A client on the driver's host, through the Connect server on the master's host:
    kafkawire's sink writes 2000 rows from four tasks over both Workers (librdkafka reads
    each once), a batch read returns exactly the records librdkafka reads at their partitions
    and offsets, and an availableNow stream with maxOffsetsPerTrigger=300 over 4 partitions
    of 250 records runs the micro-batches 300, 300, 300, 100 into a parquet sink in a shared
    directory, every record once; every task on the two Workers with kafkawire from the
    archive."""
    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    topic = f"connect-{uuid.uuid4().hex[:10]}"
    stream_topic = f"connect-stream-{uuid.uuid4().hex[:10]}"
    create_topic(conf, topic, 4)
    create_topic(conf, stream_topic, 4)
    produce_numbered(conf, stream_topic, 4, 250)
    shared = cluster_dir / "shared" / stream_topic
    shared.mkdir(parents=True)
    assert connect_server.url == f"sc://{test_hosts['master'].address}:15002"

    result = _run_client("connect-client", {
        "url": connect_server.url, "bootstrap": cluster_kafka.bootstrap(),
        "broker_host": test_hosts["kafka"].address, "topic": topic, "rows": ROWS,
        "stream_topic": stream_topic, "archive": str(executor_env.archive), "shared": str(shared),
        "read_options": {"maxOffsetsPerTrigger": "300", "startingOffsets": "earliest"}},
        test_hosts, connect_server, spark_cluster, cluster_dir)

    assert result["session"] == "pyspark.sql.connect.session.SparkSession", result["session"]
    oracle, messages = oracle_rows(conf, topic)
    assert sorted(r[:2] for r in oracle) == sorted([f"k{i}", f"v{i}"] for i in range(ROWS))
    assert sorted(result["read"]) == oracle
    written_by = {dict(m.headers())["written-by"].decode() for m in messages}
    assert_ran_on_the_workers(written_by, test_hosts, spark_cluster, "archive")
    assert_ran_on_the_workers(result["read_where"], test_hosts, spark_cluster, "archive")

    stream = result["stream"]
    # what a reader of the run wants to see (pytest -rP): where the Python of the batch and
    # the stream tasks ran (a session directory, the executor's own), and the micro-batches
    print(json.dumps({"batch_python": sorted({json.loads(w)["python"]
                                              for w in result["read_where"]}),
                      "stream_python": sorted({json.loads(w)["python"]
                                               for w in stream["read_where"]}),
                      "client_recent_progress_rows": stream["batches"]}, indent=1))
    stream_oracle, _ = oracle_rows(conf, stream_topic)
    assert len(stream_oracle) == 1000
    assert sorted(stream["read"]) == stream_oracle
    # as the client's query.recentProgress reports them, and as Spark's offset log has them
    assert [b for b in stream["batches"] if b] == [300, 300, 300, 100], stream["batches"]
    assert checkpoint_batch_sizes(shared / "checkpoint") == [300, 300, 300, 100]
    assert_ran_on_the_workers(stream["read_where"], test_hosts, spark_cluster, "archive")
