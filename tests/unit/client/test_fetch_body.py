"""One layout for every Fetch kafkawire sends (client/offsets.fetch_body): partitions nested
by topic in sorted order, each from its offset with the per-partition budget."""

from __future__ import annotations

from spark_kafka_wire.client.fetching.offsets import fetch_body
from spark_kafka_wire.protocol.messages import FETCH


def test_partitions_nest_by_topic_in_order() -> None:
    body = fetch_body({("b", 1): 5, ("a", 2): 4, ("a", 0): 3}, 100, 300, 500, 1, 1)
    assert body == {
        "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 300, "isolation_level": 1,
        "topics": [
            {"topic": "a", "partitions": [
                {"partition": 0, "fetch_offset": 3, "partition_max_bytes": 100},
                {"partition": 2, "fetch_offset": 4, "partition_max_bytes": 100}]},
            {"topic": "b", "partitions": [
                {"partition": 1, "fetch_offset": 5, "partition_max_bytes": 100}]},
        ],
    }


def test_the_body_round_trips_at_a_legacy_and_a_current_version() -> None:
    body = fetch_body({("t", 0): 7, ("t", 3): 9}, 1 << 20, 1 << 20, 500, 1, 0)
    for version in (0, 4, 7, 11):  # every field each version needs is there
        decoded = FETCH.decode_request(version, FETCH.encode_request(version, body))
        assert [(p["partition"], p["fetch_offset"], p["partition_max_bytes"])
                for p in decoded["topics"][0]["partitions"]] == [(0, 7, 1 << 20), (3, 9, 1 << 20)]
        assert decoded["max_wait_ms"] == 500 and decoded["min_bytes"] == 1
