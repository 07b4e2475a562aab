"""The parity bed itself: both formats in one session, on the same Apache Kafka broker."""

from __future__ import annotations

import confluent_kafka as ck

from tests.parity.both import read_same


def test_both_formats_read_the_same_topic(spark, bootstrap, new_topic):
    topic = new_topic(partitions=3)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for i in range(30):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 3,
                         timestamp=1_600_000_000_000 + i, headers=[("h", f"{i}".encode())])
    assert producer.flush(10) == 0
    rows = read_same(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert len(rows) == 30
