"""What the cluster tier's tests check of every job (tests/cluster/test_*.py): where its tasks
ran (both Workers, the shipped Python and kafkawire, never the checkout) and what librdkafka,
the oracle, reads of a topic."""

from __future__ import annotations

import json
from pathlib import Path

import confluent_kafka

from tests.support.librdkafka import consume_all

ROOT = Path(__file__).resolve().parents[2]


def workers(test_hosts) -> set[str]:
    """The two Workers' addresses."""
    return {test_hosts["worker1"].address, test_hosts["worker2"].address}


def assert_ran_on_the_workers(wheres, test_hosts, spark_cluster, shipped: str) -> list[dict]:
    """Each JSON ``where`` of the job's UDF: the tasks ran on both Workers (and nowhere else),
    with the executors' Python from the archive and kafkawire from what was ``shipped``
    ("archive": the archive's site-packages; "py-files": the wheel as a .zip), inside a Worker's work
    directory and not in the checkout."""
    seen = [json.loads(w) for w in wheres]
    assert {w["ip"] for w in seen} == workers(test_hosts), seen
    work_dirs = [spark_cluster.worker_dir(test_hosts[h]) / "work" for h in ("worker1", "worker2")]
    for w in seen:
        # relative for py-files: executors put "./<file>" on sys.path, their working
        # directory being the one the archive is unpacked in (environment/bin/python's)
        module = Path(w["python"]).parents[2] / w["kafkawire"]
        assert any(module.is_relative_to(d) for d in work_dirs), w
        assert not module.is_relative_to(ROOT), w
        assert w["python"].endswith("/environment/bin/python"), w
        if shipped == "archive":
            assert "/environment/lib/" in w["kafkawire"], w
        else:
            assert ".zip/spark_kafka_wire/" in w["kafkawire"], w
    return seen


def oracle_rows(conf: dict, topic: str) -> tuple[list, list[confluent_kafka.Message]]:
    """Every record of ``topic`` as librdkafka reads it: sorted [key, value, partition,
    offset] rows (keys and values as text), and the messages themselves."""
    messages = consume_all(conf, topic)
    rows = sorted([m.key().decode(), m.value().decode(), m.partition(), m.offset()]
                  for m in messages)
    return rows, messages
