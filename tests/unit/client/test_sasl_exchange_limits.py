"""What a broker may make the SASL client do (issue 27, items 6b and 6c), with a scripted
broker: a SCRAM server-first-message asking for more iterations than Kafka's ScramMechanism
allows (or fewer) is refused, naming the broker, before any is computed; PLAIN and OAUTHBEARER
over SASL_PLAINTEXT log one warning per process that their secret travels in clear."""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from spark_kafka_wire.client.errors import SaslAuthenticationError
from spark_kafka_wire.client.security.sasl import authenticate as authenticate_module
from spark_kafka_wire.client.security.sasl.authenticate import authenticate
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.mechanisms import (
    MAX_ITERATIONS,
    Scram,
    server_iterations,
)
from spark_kafka_wire.client.security.sasl.oauth_config import OAuthConfig
from spark_kafka_wire.client.security.sasl.tokens import TOKENS
from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.messages import SASL_AUTHENTICATE, SASL_HANDSHAKE

BROKER = "b1:9092 (node 1)"
PASSWORD = "hunter2-password"
SALT = base64.b64encode(b"0123456789abcdef").decode()


class _Broker:
    """SaslHandshake v1 and SaslAuthenticate: a SCRAM server-first-message asking for
    ``iterations``, or (any other mechanism) success at once."""

    name = BROKER
    host = "b1"
    api_versions = {SASL_HANDSHAKE.key: (0, 1), SASL_AUTHENTICATE.key: (0, 2)}

    def __init__(self, iterations: int = 4096) -> None:
        self.iterations = iterations
        self.tokens: list[bytes] = []

    def request(self, spec: ApiSpec, body: dict[str, Any],
                version: int | None = None) -> dict[str, Any]:
        if spec.key == SASL_HANDSHAKE.key:
            return {"error_code": 0, "mechanisms": [body["mechanism"]]}
        assert spec.key == SASL_AUTHENTICATE.key
        token = bytes(body["auth_bytes"])
        self.tokens.append(token)
        if token.startswith(b"n,,n="):  # SCRAM client-first: answer with the server-first
            nonce = token.decode().rsplit("r=", 1)[1]
            first = f"r={nonce}srv,s={SALT},i={self.iterations}"
            return {"error_code": 0, "auth_bytes": first.encode(), "session_lifetime_ms": 0}
        return {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": 0}

    def send_raw(self, token: bytes) -> None:
        raise AssertionError("SaslAuthenticate is used")

    def receive_raw(self) -> bytes:
        raise AssertionError("SaslAuthenticate is used")


@pytest.mark.parametrize("iterations", [MAX_ITERATIONS + 1, 20_000, 10_000_000, 4095, 1])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_iterations_outside_kafkas_bounds_are_refused(mechanism: str,
                                                            iterations: int) -> None:
    broker = _Broker(iterations)
    config = SaslConfig(mechanism, "alice", PASSWORD)
    with pytest.raises(SaslAuthenticationError) as info:
        authenticate(broker, config, "SASL_SSL")
    text = str(info.value)
    assert BROKER in text and f"asked for {iterations} SCRAM iterations" in text
    assert "4096 to 16384" in text and PASSWORD not in text
    assert len(broker.tokens) == 1  # no client-final: nothing computed, nothing answered


@pytest.mark.parametrize("iterations", [4096, MAX_ITERATIONS])
def test_scram_iterations_within_bounds_are_answered(iterations: int) -> None:
    client = Scram(SaslConfig("SCRAM-SHA-256", "alice", PASSWORD))
    nonce = client.first().decode().rsplit("r=", 1)[1]
    final = client.step(f"r={nonce}srv,s={SALT},i={iterations}".encode())
    assert final is not None and final.startswith(b"c=biws,r=")


@pytest.mark.parametrize(("message", "found"), [
    ("r=a,s=b,i=4096", 4096), ("r=a,s=b", None), ("r=a,s=b,i=x1", None),
    ("r=a,s=b,i=" + "9" * 5000, 10**18), ("r=a,s=b,i=\u0664\u0660", None),
])
def test_server_iterations(message: str, found: int | None) -> None:
    assert server_iterations(message) == found


# -------------------------------------------------------------- secrets in clear (item 6c)


@pytest.fixture
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if no login had warned yet in this process."""
    monkeypatch.setattr(authenticate_module, "_cleartext_warned", False)


def _oauth() -> SaslConfig:
    oauth = OAuthConfig(source="unsecured", principal="carol", claims_json='{"sub":"carol"}')
    return SaslConfig("OAUTHBEARER", "carol", "", oauth)


@pytest.mark.parametrize(("config", "what"), [
    (SaslConfig("PLAIN", "alice", PASSWORD), "password"), (_oauth(), "bearer token")],
    ids=["PLAIN", "OAUTHBEARER"])
def test_cleartext_secret_warns_once_per_process(config: SaslConfig, what: str,
                                                 fresh_process: None,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="spark_kafka_wire.client.security.sasl.authenticate")
    TOKENS.clear()
    for _ in range(3):
        authenticate(_Broker(), config, "SASL_PLAINTEXT")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    text = warnings[0].getMessage()
    assert config.mechanism in text and BROKER in text and what in text
    assert "SASL_SSL" in text and PASSWORD not in text and "eyJ" not in text


@pytest.mark.parametrize(("config", "protocol"), [
    (SaslConfig("PLAIN", "alice", PASSWORD), "SASL_SSL"),
    (_oauth(), "SASL_SSL"),
    (SaslConfig("SCRAM-SHA-256", "alice", PASSWORD), "SASL_PLAINTEXT"),
], ids=["PLAIN-SSL", "OAUTHBEARER-SSL", "SCRAM-PLAINTEXT"])
def test_no_warning_when_the_secret_is_not_sent_in_clear(
        config: SaslConfig, protocol: str, fresh_process: None,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="spark_kafka_wire.client.security.sasl.authenticate")
    TOKENS.clear()
    try:
        authenticate(_Broker(), config, protocol)
    except SaslAuthenticationError:
        pass  # SCRAM: the scripted broker cannot finish the exchange; the login was tried
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
