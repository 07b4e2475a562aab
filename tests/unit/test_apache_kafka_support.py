"""The Apache Kafka test bed's own logic that needs no broker: cluster ids the storage tool
takes, and the reading of what an observed broker logged of its clients' logins."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.support import apache_kafka
from tests.support.kafka_observer import read_stats


def test_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    """0xF8... encodes to "-..." in URL-safe base64: the storage tool would read such an id
    as an option, so another one is drawn."""
    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(drawn))  # the module apache_kafka calls
    made = apache_kafka.cluster_id()
    assert made == "AQEBAQEBAQEBAQEBAQEBAQ" and len(made) == 22


LOG = """\
[2026-11-26 00:49:36,590] DEBUG [data-plane-kafka-network-thread-1-REAUTH-SASL_PLAINTEXT-4] \
[SocketServer listenerType=BROKER, nodeId=1] Successfully authenticated with /127.0.0.1 \
(org.apache.kafka.common.network.Selector)
[2026-11-26 00:49:36,594] INFO [data-plane-kafka-network-thread-1-REAUTH-SASL_PLAINTEXT-4] \
kafkawire-auth listener=REAUTH mechanism=OAUTHBEARER authzid=carol principal=User:carol \
ext.traceId=abc123 (kafkawire.observer)
[2026-11-26 00:49:38,001] DEBUG [data-plane-kafka-network-thread-1-REAUTH-SASL_PLAINTEXT-4] \
[SocketServer listenerType=BROKER, nodeId=1] Successfully re-authenticated with /127.0.0.1 \
(org.apache.kafka.common.network.Selector)
[2026-11-26 00:49:38,100] INFO [data-plane-kafka-network-thread-1-REAUTH-SASL_PLAINTEXT-4] \
[SocketServer listenerType=BROKER, nodeId=1] Failed authentication with /127.0.0.1 \
(channelId=127.0.0.1:1-127.0.0.1:2-4-7) (Authentication failed: Invalid username or password) \
(org.apache.kafka.common.network.Selector)
[2026-11-26 00:49:39,000] DEBUG [data-plane-kafka-network-thread-1-REAUTH-SASL_PLAINTEXT-4] \
[SocketServer listenerType=BROKER, nodeId=1] Disconnecting expired channel: x : y \
(kafka.network.Processor)
[2026-11-26 00:49:39,500] DEBUG [data-plane-kafka-network-thread-1-SASL_SSL-SASL_SSL-2] \
[SocketServer listenerType=BROKER, nodeId=1] Successfully re-authenticated with /127.0.0.1 \
(org.apache.kafka.common.network.Selector)
[2026-11-26 00:49:39,600] INFO [data-plane-kafka-network-thread-1-SASL_SSL-SASL_SSL-2] \
kafkawire-auth listener=SASL_SSL mechanism=GSSAPI authzid=alice@KAFKAWIRE.TEST \
principal=User:alice (kafkawire.observer)
"""


def test_read_stats_attributes_each_line_to_its_listener(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(LOG)
    reauth = read_stats(str(log), "REAUTH")
    assert [(e.mechanism, e.principal, e.kafka_principal, e.extensions)
            for e in reauth.authentications] == [
        ("OAUTHBEARER", "carol", "User:carol", {"traceId": "abc123"})]
    assert reauth.logins == 1 and len(reauth.reauthentications) == 1
    assert reauth.failures == ["Authentication failed: Invalid username or password"]
    assert reauth.expired_closes == 1
    sasl_ssl = read_stats(str(log), "SASL_SSL")  # "SASL_SSL-SASL_SSL-2": not listener "SASL"
    assert sasl_ssl.principals() == ["alice@KAFKAWIRE.TEST"]
    assert len(sasl_ssl.reauthentications) == 1 and sasl_ssl.logins == 0
    assert read_stats(str(log), "SASL").authentications == []
    assert read_stats(str(tmp_path / "missing.log"), "REAUTH").authentications == []


def test_listeners_get_distinct_ports(monkeypatch: pytest.MonkeyPatch) -> None:
    """free_port() may find a port it found before (it releases each): every listener of a
    broker still gets its own, or Kafka refuses to start."""
    found = iter([5000, 5000, 5001, 5001, 5001, 5002, *range(6000, 6100)])
    monkeypatch.setattr(apache_kafka, "free_port", lambda: next(found))
    kafka = apache_kafka.ApacheKafka(reauth_ms=3000)
    kafka._properties("/nowhere")
    assert len(set(kafka.ports.values())) == len(kafka.ports) == 4  # PLAINTEXT, SASL, REAUTH, CONTROLLER
    assert list(kafka.ports.values())[:3] == [5000, 5001, 5002]


#: Two lines of a broker's requests.log (``request_log``) as Kafka 4.1 wrote them, the
#: request and response bodies cut short, then lines that are not requests.
REQUESTS = """\
1795702801099 Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":3,\
"requestApiVersion":12,"correlationId":2,"clientId":"spark-kafka-wire",\
"requestApiKeyName":"METADATA"},"request":{"topics":[],"allowAutoTopicCreation":false},\
"response":{"throttleTimeMs":0,"topics":[]},"connection":"10.213.169.2:51335-10.213.169.1:\
36992-1-0","totalTimeMs":67.396,"securityProtocol":"PLAINTEXT","listener":"PLAINTEXT"}
1795702802664 Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":2,\
"requestApiVersion":7,"correlationId":5,"clientId":"spark-kafka-wire",\
"requestApiKeyName":"LIST_OFFSETS"},"request":{"replicaId":-1,"topics":[]},\
"connection":"10.213.169.2:51335-10.213.169.6:40112-0-3","totalTimeMs":1.2}
1795702802665 Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":2,
[2026-11-26 14:20:01,099] INFO a server.log line (kafka.server.KafkaServer)
"""


def test_request_log_lines_give_the_api_and_the_clients_address() -> None:
    """The bench counts requests by API from one client address (the Spark driver's host):
    the address is the remote end of Kafka's connection id; a line cut short (the broker
    still writing) or another logger's line is skipped, not an error."""
    parsed = [apache_kafka.parse_request_line(line) for line in REQUESTS.splitlines()]
    assert parsed[2:] == [None, None]
    metadata, list_offsets = parsed[0], parsed[1]
    assert metadata == apache_kafka.LoggedRequest(1795702801099, 3, 12, "spark-kafka-wire",
                                                  "10.213.169.1")
    assert metadata.api_name == "Metadata"
    assert list_offsets is not None and list_offsets.client_address == "10.213.169.6"
    assert (list_offsets.api_name, list_offsets.completed_ms) == ("ListOffsets", 1795702802664)
    assert apache_kafka.api_name(9999) == "api9999"


def test_request_log_read_from_the_broker_directory(tmp_path: Path) -> None:
    """``read_request_log`` reads the file the log4j2 config names; none yet is no request."""
    broker = apache_kafka.ApacheKafka(request_log=True, directory=str(tmp_path))
    assert broker.read_request_log() == []
    Path(broker.request_log_path).write_text(REQUESTS)
    assert [r.api_name for r in broker.read_request_log()] == ["Metadata", "ListOffsets"]
    assert "kafka.request.logger" in apache_kafka._request_loggers(broker.request_log_path)
