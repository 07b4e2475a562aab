"""Client sides of the SASL mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802,
RFC 7677; Kafka's use: KIP-84, https://cwiki.apache.org/confluence/x/qnHmAw).

A mechanism is a small state machine: ``first()`` gives the initial token, ``step(token)`` the
answer to each server token (None when the client has nothing more to send; ValueError, whose
message never holds a secret, when the server's token ends the exchange as a failure), and
``done`` says whether the exchange is complete, so the caller checks that the server did not stop
early. SCRAM uses scramp's ScramClient (https://github.com/tlocke/scramp), which checks the
server signature and raises on a server-final carrying ``e=``. GSSAPI (RFC 4752) lives in
``gssapi.py``.
"""

from __future__ import annotations

from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.gssapi import Gssapi
from spark_kafka_wire.client.security.sasl.kerberos import KerberosConfig
from spark_kafka_wire.client.security.sasl.oauthbearer import OAuthBearer


class Plain:
    """RFC 4616: one message ``authzid NUL authcid NUL passwd`` (empty authzid), no answer."""

    def __init__(self, config: SaslConfig) -> None:
        self._config = config
        self.done = False

    def first(self) -> bytes:
        self.done = True
        return b"\0" + self._config.username.encode() + b"\0" + self._config.password.encode()

    def step(self, token: bytes) -> bytes | None:
        return None


#: The iteration counts a broker may ask of a SCRAM client, as Kafka's ScramMechanism bounds
#: them (minIterations 4096, maxIterations 16384, for SHA-256 and SHA-512 alike). Java's
#: ScramSaslClient refuses fewer than the minimum (a weaker proof of the password to whoever
#: asked); more than the maximum is refused here too, because each iteration costs the client
#: an HMAC and a hostile broker could ask for millions on every login of every task.
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


def server_iterations(server_first: str) -> int | None:
    """The ``i=`` attribute of a SCRAM server-first-message (RFC 5802 section 7), None when
    it has none that is a number (scramp then refuses the message with its own words)."""
    for attribute in server_first.split(","):
        if attribute.startswith("i="):
            value = attribute[2:]
            if not (value.isascii() and value.isdigit()):
                return None
            return int(value) if len(value) <= 18 else 10**18  # int() refuses 4300+ digits
    return None


class Scram:
    """RFC 5802 client: client-first, client-final, then the server-final is verified."""

    def __init__(self, config: SaslConfig) -> None:
        import scramp  # noqa: PLC0415 (only SCRAM logins need it; the CLI starts without it)

        self._client = scramp.ScramClient([config.mechanism], config.username, config.password)
        self._stage = 0
        self.done = False

    def first(self) -> bytes:
        self._stage = 1
        return self._client.get_client_first().encode()

    def step(self, token: bytes) -> bytes | None:
        import scramp  # noqa: PLC0415 (see __init__)

        text = token.decode("utf-8", "replace")
        if text.startswith("e="):
            raise ValueError(f"the server answered SCRAM with error {text[2:]!r}")
        try:
            if self._stage == 1:
                iterations = server_iterations(text)
                if iterations is not None and not \
                        MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
                    raise ValueError(
                        f"the broker asked for {iterations} SCRAM iterations, outside the "
                        f"{MIN_ITERATIONS} to {MAX_ITERATIONS} Kafka's brokers use "
                        "(ScramMechanism); kafkawire does not answer it. A broker asking for "
                        "that is misconfigured or not the broker you meant: check "
                        "kafka.bootstrap.servers and the broker's SCRAM credentials "
                        "(kafka-configs --alter --add-config 'SCRAM-SHA-256=[iterations=...]')")
                self._client.set_server_first(text)
                self._stage = 2
                return self._client.get_client_final().encode()
            if self._stage == 2:
                self._client.set_server_final(text)
                self._stage = 3
                self.done = True
                return None
        except scramp.ScramException as exc:
            # scramp's messages quote the server's tokens and error names, never the password.
            raise ValueError(f"SCRAM exchange refused: {exc}") from None
        raise ValueError("the server sent a token after the SCRAM exchange ended")


def mechanism_for(config: SaslConfig, host: str = "") -> Plain | Scram | OAuthBearer | Gssapi:
    """The client side of ``config.mechanism``; ``host`` is the broker's host as connected
    (GSSAPI names the broker's service principal after it)."""
    if config.mechanism == "OAUTHBEARER":
        return OAuthBearer(config)
    if config.mechanism == "GSSAPI":
        return Gssapi(config.kerberos or KerberosConfig(), host)
    return Plain(config) if config.mechanism == "PLAIN" else Scram(config)
