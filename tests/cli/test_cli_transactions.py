"""``kafkawire transactions`` against a transaction librdkafka (confluent-kafka) left open: it
is listed and described as Ongoing on its partitions, holds read_committed readers back, and
``abort`` ends it (the readers reach the end, the producer is fenced)."""

from __future__ import annotations

import uuid

import confluent_kafka as ck
import pytest

from tests.cli.conftest import tsv
from tests.cli.test_cli_produce import read_committed

pytestmark = pytest.mark.broker


def test_an_open_transaction_is_listed_described_and_aborted(kw, bootstrap, new_topic) -> None:
    topic = new_topic(1, "cli-txn-open")
    tid = f"cli-dead-job-{uuid.uuid4().hex[:8]}"
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                            "log_level": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=b"uncommitted %d" % i, partition=0)
    assert producer.flush(30) == 0  # written, never committed: a job that died here

    listed = {r["transactional id"]: r for r in tsv(kw("transactions").stdout)}
    assert listed[tid]["state"] == "Ongoing"
    ongoing = tsv(kw("transactions", "--state", "Ongoing").stdout)
    assert tid in {r["transactional id"] for r in ongoing}
    assert all(r["state"] == "Ongoing" for r in ongoing)
    [described] = tsv(kw("transactions", "describe", tid).stdout)
    assert described["state"] == "Ongoing" and described["partitions"] == f"{topic}-0"
    assert described["open since"] != "" and int(described["producer id"]) >= 0

    seen, end, high = read_committed(bootstrap, topic)
    assert seen == [] and end == 0 < high, "the open transaction does not hold readers back"

    result = kw("transactions", "abort", tid)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"transaction of {tid} aborted (held {topic}-0): producer "
                                    f"id {described['producer id']} fenced")
    assert result.stdout.rstrip().endswith("now Empty")  # aborted, the new epoch holds nothing
    seen, end, high = read_committed(bootstrap, topic)
    assert seen == [] and end == high > 5, "the readers did not reach the end"
    with pytest.raises(ck.KafkaException):  # the producer that held it is fenced
        producer.commit_transaction(10)

    again = kw("transactions", "abort", "--transactional-id", tid)
    assert again.exit_code == 0
    assert again.stdout.strip() == f"transactional id {tid} has no open transaction " \
        "(Empty); nothing aborted"
    unknown = kw("transactions", "describe", f"never-{tid}")
    assert unknown.exit_code == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in unknown.stderr
