"""How a refused SaslHandshake is explained when the answer does not simply say the mechanism
is missing (client/security/sasl/authenticate.py): a listener without SASL (Kafka's ILLEGAL_SASL_STATE,
Tansu's UNSUPPORTED_SASL_MECHANISM listing the very mechanism asked for) and a SASL listener
whose answer contradicts itself, told apart by a Metadata request sent without a login."""

from __future__ import annotations

from typing import Any

import pytest

from spark_kafka_wire.client.errors import BrokerConnectionError, SaslAuthenticationError
from spark_kafka_wire.client.security.sasl.authenticate import authenticate
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.messages import METADATA, SASL_HANDSHAKE


class _Link:
    name = "b1:9092 (node 1)"
    host = "b1"
    api_versions = {SASL_HANDSHAKE.key: (0, 1)}

    def __init__(self, handshake: dict[str, Any], metadata_closes: bool) -> None:
        self.handshake = handshake
        self.metadata_closes = metadata_closes
        self.sent: list[str] = []

    def request(self, spec: ApiSpec, body: dict[str, Any],
                version: int | None = None) -> dict[str, Any]:
        self.sent.append(spec.name)
        if spec.key == SASL_HANDSHAKE.key:
            return self.handshake
        assert spec.key == METADATA.key
        if self.metadata_closes:
            raise BrokerConnectionError(self.name, "connection closed by the broker")
        return {"brokers": [], "topics": []}

    def send_raw(self, token: bytes) -> None:
        raise AssertionError("no token may be sent")

    def receive_raw(self) -> bytes:
        raise AssertionError("no token may be read")


CONFIG = SaslConfig(mechanism="PLAIN", username="alice", password="hunter2")


@pytest.mark.parametrize(("answer", "protocol", "use"), [
    ({"error_code": 34, "mechanisms": []}, "SASL_PLAINTEXT", "PLAINTEXT"),  # Kafka
    ({"error_code": 33, "mechanisms": ["PLAIN"]}, "SASL_SSL", "SSL"),  # Tansu
], ids=["illegal-state", "lists-the-mechanism"])
def test_a_listener_without_sasl(answer: dict, protocol: str, use: str) -> None:
    link = _Link(answer, metadata_closes=False)
    with pytest.raises(SaslAuthenticationError) as info:
        authenticate(link, CONFIG, protocol)
    text = str(info.value)
    assert "this listener does not take SASL logins" in text
    assert f"kafka.security.protocol={use}," in text and "SASL port" in text
    assert "has not enabled" not in text and "hunter2" not in text
    assert link.sent == ["SaslHandshake", "Metadata"]


def test_a_sasl_listener_that_lists_the_mechanism_it_refuses() -> None:
    link = _Link({"error_code": 33, "mechanisms": ["PLAIN", "SCRAM-SHA-256"]},
                 metadata_closes=True)
    with pytest.raises(SaslAuthenticationError) as info:
        authenticate(link, CONFIG, "SASL_PLAINTEXT")
    text = str(info.value)
    assert "while listing PLAIN, SCRAM-SHA-256 as enabled" in text
    assert "SASL setup is inconsistent" in text and "sasl.enabled.mechanisms" in text
    assert "does not take SASL logins" not in text


def test_a_mechanism_not_listed_names_the_enabled_ones_without_probing() -> None:
    link = _Link({"error_code": 33, "mechanisms": ["SCRAM-SHA-512"]}, metadata_closes=True)
    with pytest.raises(SaslAuthenticationError) as info:
        authenticate(link, CONFIG, "SASL_PLAINTEXT")
    assert "has not enabled PLAIN" in str(info.value) and "it enables: SCRAM-SHA-512" in str(
        info.value)
    assert link.sent == ["SaslHandshake"]
