"""kafka.bootstrap.servers pointing at a port that is not Kafka's (issue 46 item 8): a real
HTTP server (Python's http.server, which waits for the end of a line Kafka's bytes never send,
as a Schema Registry or a web server may) and Apache Kafka's own TLS listener reached in
plaintext are named for what they are within seconds, not after kafka.request.timeout.ms with
advice for Kafka 0.9 brokers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.errors import NoBrokersAvailableError, NotKafkaError
from tests.support.errors import assert_condition

NOT_KAFKA = "KAFKAWIRE_BROKER_CONNECTION.NOT_KAFKA"


class _Registry(BaseHTTPRequestHandler):
    """Answers every GET and HEAD with 404, as a registry does for a path it does not serve."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(404)
        self.end_headers()

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def http_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _first_failure(servers: str) -> NotKafkaError:
    started = time.monotonic()
    # the defaults: 30 s of request timeout that a wrong port used to take
    with KafkaClient(ClientConfig.from_servers(servers)) as client, \
            pytest.raises(NoBrokersAvailableError) as raised:
        client.fetch_metadata([])
    assert time.monotonic() - started < 5, str(raised.value)
    assert isinstance(raised.value.last, NotKafkaError), str(raised.value)
    return raised.value.last


def test_an_http_server_is_named_within_seconds(http_server: str) -> None:
    error = _first_failure(http_server)
    assert_condition(error, NOT_KAFKA, f"{http_server} answered, but not in Kafka's protocol",
                     "it looks like an HTTP server", "HTTP/1.0 404",
                     "not a web server, a Schema Registry or a REST proxy")
    assert "0.9" not in str(error)


def test_a_kafka_tls_listener_reached_in_plaintext_says_to_set_ssl(tls_broker) -> None:
    error = _first_failure(tls_broker.bootstrap_servers)
    assert_condition(error, NOT_KAFKA, "it looks like a TLS port",
                     "set kafka.security.protocol=SSL")
