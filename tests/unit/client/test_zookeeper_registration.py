"""Consumer registrations and offsets of ZooKeeper-era groups (client/zookeeper/consumer_offsets.py
parse_registration, parse_offset) and the topics a wildcard registration names (cli/lag.py)."""

from __future__ import annotations

import json

import pytest

from spark_kafka_wire.cli.lag import subscribed_topics
from spark_kafka_wire.client.errors import ZooKeeperError
from spark_kafka_wire.client.zookeeper.consumer_offsets import parse_offset, parse_registration
from tests.support.errors import raises_condition


def test_registrations_of_each_era() -> None:
    v08 = {"version": 1, "subscription": {"a": 2}, "pattern": "static", "timestamp": "1"}
    assert parse_registration(json.dumps(v08).encode(), "g", "c") == {"a": 2}
    assert parse_registration(b'{"a": 1, "b": 3}', "g", "c") == {"a": 1, "b": 3}  # 0.7
    wild = {"version": 1, "subscription": {"logs-.*,audit": 1}, "pattern": "white_list"}
    assert parse_registration(json.dumps(wild).encode(), "g", "c") == {
        "*white_list:logs-.*,audit": 1}


@pytest.mark.parametrize("data", [b"not json", b"[1]", b'{"a": "x"}'])
def test_a_broken_registration_names_the_consumer(data: bytes) -> None:
    with raises_condition(ZooKeeperError, "KAFKAWIRE_ZOOKEEPER", "consumer host-1 in group 'g'"):
        parse_registration(data, "g", "host-1")


def test_a_registration_without_data_subscribes_to_nothing() -> None:
    """ZooKeeper's null data reaches us as None (kazoo), not b"" (it was a TypeError)."""
    assert parse_registration(None, "g", "c") == {}


def test_offsets_are_decimal_text() -> None:
    assert parse_offset(b"33", "/consumers/g/offsets/t/0", "zk:2181") == 33
    assert parse_offset(b" 7\n", "/consumers/g/offsets/t/1", "zk:2181") == 7


@pytest.mark.parametrize("data,held", [
    (None, "no data"),  # `create <path>` without a value in Kafka's ZooKeeper shell
    (b"", "''"),
    (b"twelve", "'twelve'"),
])
def test_a_node_that_holds_no_offset_is_named(data: bytes | None, held: str) -> None:
    """It was an AttributeError for None (no node, no ZooKeeperError) and a bare ValueError
    message for the others."""
    with raises_condition(ZooKeeperError, "KAFKAWIRE_ZOOKEEPER",
                          rf"ZooKeeper node /consumers/g/offsets/t/0 on zk:2181/c holds "
                          rf"{held}, not an offset \(the decimal text"):
        parse_offset(data, "/consumers/g/offsets/t/0", "zk:2181/c")


def test_wildcards_match_whole_names() -> None:
    names = ["audit", "audit2", "logs-a", "logs-b", "x"]
    assert subscribed_topics("x", names) == ["x"]
    assert subscribed_topics("*white_list:logs-.*,audit", names) == ["audit", "logs-a", "logs-b"]
    assert subscribed_topics("*black_list:logs-.*", names) == ["audit", "audit2", "x"]
