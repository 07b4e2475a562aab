"""Broker addresses as messages and the CLI show them (client/config.py ``format_address``).

Kafka registers an IPv6 listener with a bare host (``"host": "::1"`` beside the endpoint
``PLAINTEXT://[::1]:9092``, tests/spark/test_kafka39_zookeeper.py reads one), and Metadata
answers bare hosts too. Shown as ``::1:9092`` the address is ambiguous and cannot be given
back as kafka.bootstrap.servers (it reads as a host with no port); ``[::1]:9092`` can.
"""

from __future__ import annotations

import re

import pytest

from spark_kafka_wire.client.config import ClientConfig, format_address, parse_bootstrap
from spark_kafka_wire.client.errors import NoBrokersAvailableError
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.client.zookeeper.registry import BrokerAddress
from spark_kafka_wire.testing.embedded import free_port


@pytest.mark.parametrize("host,port,shown", [
    ("::1", 9092, "[::1]:9092"),
    ("fe80::1:2", 9093, "[fe80::1:2]:9093"),
    ("127.0.0.1", 9092, "127.0.0.1:9092"),
    ("broker-1.example", 19092, "broker-1.example:19092"),
])
def test_an_address_is_shown_as_bootstrap_servers_takes_it_back(host, port, shown) -> None:
    assert format_address(host, port) == shown
    assert parse_bootstrap(shown) == [(host, port)]
    assert str(BrokerAddress(host, port)) == shown


def test_connections_and_failures_name_ipv6_brokers_in_brackets() -> None:
    config = ClientConfig.from_servers("[::1]:9092")
    assert BrokerConnection("::1", 9092, config, node_id=1).name == "[::1]:9092 (node 1)"
    port = free_port()  # nothing listens there: refused at once
    client = KafkaClient(ClientConfig.from_servers(f"[::1]:{port}", connect_timeout_ms=2000))
    try:
        with pytest.raises(NoBrokersAvailableError) as info:
            client.any_connection()
    finally:
        client.close()
    assert info.value.servers == [f"[::1]:{port}"]
    assert re.search(rf"\[::1\]:{port}\b", str(info.value)), str(info.value)
