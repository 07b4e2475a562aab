"""An address that answers, but not in Kafka's protocol (issue 46 item 8): recognised from
the first answer's bytes and reported at once as KAFKAWIRE_BROKER_CONNECTION.NOT_KAFKA, saying
what the server looks like and what to set, instead of a ProtocolError about frame sizes or a
request timeout blaming a Kafka 0.9 broker. (A real HTTP server and a real Kafka TLS
listener: tests/integration/test_not_kafka.py.)"""

from __future__ import annotations

import pickle
import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.errors import NoBrokersAvailableError, NotKafkaError
from spark_kafka_wire.protocol.framing import foreign_protocol
from tests.support.errors import assert_condition

NOT_KAFKA = "KAFKAWIRE_BROKER_CONNECTION.NOT_KAFKA"


@pytest.mark.parametrize(("head", "kind"), [
    (b"HTTP/1.1 400 Bad Request", "an HTTP server"),
    (b"HTTP", "an HTTP server"),
    (b"SSH-2.0-OpenSSH_9.6", "an SSH server"),
    (bytes.fromhex("15030300020250"), "a TLS port (its answer is a TLS alert)"),
    (bytes.fromhex("160303007a020000"), "a TLS port (its answer is a TLS handshake record)"),
])
def test_another_protocols_first_bytes_are_named(head: bytes, kind: str) -> None:
    assert foreign_protocol(head) == kind


@pytest.mark.parametrize("head", [
    struct.pack(">ii", 120, 1),  # a Kafka answer: its size, then the correlation id
    b"HTTX", b"HT", b"",
])
def test_a_kafka_size_prefix_is_no_other_protocol(head: bytes) -> None:
    assert foreign_protocol(head) is None


@pytest.fixture
def peer() -> Iterator[tuple[list[bytes], str]]:
    """A port whose server reads what the client sends and answers ``answer[0]`` at once."""
    answer: list[bytes] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(4096)
                    conn.sendall(answer[0])
                    conn.recv(4096)  # until the client closes
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield answer, f"127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    server.close()


def _not_kafka(address: str, **settings: object) -> NotKafkaError:
    host, port = address.rsplit(":", 1)
    config = ClientConfig.from_servers(address, **settings)  # type: ignore[arg-type]
    started = time.monotonic()
    with pytest.raises(NotKafkaError) as raised, BrokerConnection(host, int(port), config):
        pass
    assert time.monotonic() - started < 1, "said at once, not after the request timeout"
    return raised.value


def test_an_http_answer_is_called_an_http_server(peer) -> None:
    answer, address = peer
    answer.append(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    error = _not_kafka(address)
    assert_condition(error, NOT_KAFKA, f"{address} answered, but not in Kafka's protocol",
                     "it looks like an HTTP server", "not a web server, a Schema Registry")
    again = pickle.loads(pickle.dumps(error))  # an error of a Spark task travels
    assert type(again) is NotKafkaError and str(again) == str(error)


@pytest.mark.parametrize(("sasl", "protocol"), [(False, "SSL"), (True, "SASL_SSL")])
def test_a_tls_alert_says_which_security_protocol_to_set(peer, sasl: bool, protocol: str
                                                        ) -> None:
    answer, address = peer
    answer.append(bytes.fromhex("15030300020250"))
    settings: dict[str, object] = {}
    if sasl:
        settings = {"security_protocol": "SASL_PLAINTEXT",
                    "sasl": SaslConfig("PLAIN", "u", "p")}
    error = _not_kafka(address, **settings)
    assert_condition(error, NOT_KAFKA, "it looks like a TLS port",
                     f"set kafka.security.protocol={protocol}")


def test_a_mismatched_correlation_id_on_apiversions_is_no_kafka(peer) -> None:
    answer, address = peer
    answer.append(struct.pack(">ii", 4, 12345))  # a well-formed frame, another id
    error = _not_kafka(address)
    assert_condition(error, NOT_KAFKA, "correlation id 12345, not 1")


def test_garbage_in_answer_to_apiversions_is_no_kafka(peer) -> None:
    answer, address = peer
    answer.append(b"\x7f\xff\xff\xffgarbage")  # no known protocol, a 2 GiB size
    error = _not_kafka(address)
    assert_condition(error, NOT_KAFKA, r"its answer begins b'\\x7f\\xff\\xff\\xff'",
                     "Check that kafka.bootstrap.servers names a Kafka broker's listener")


def test_a_client_reports_it_without_retrying(peer) -> None:
    """Conclusive: a read or a planner does not retry for kafka.request.timeout.ms."""
    answer, address = peer
    answer.append(b"HTTP/1.0 404 Not Found\r\n\r\n")
    started = time.monotonic()
    with KafkaClient(ClientConfig.from_servers(address)) as client, \
            pytest.raises(NoBrokersAvailableError) as raised:
        client.fetch_metadata([])
    assert time.monotonic() - started < 2
    assert isinstance(raised.value.last, NotKafkaError)
    assert "it looks like an HTTP server" in str(raised.value)
