"""The fault harness itself, checked with librdkafka and raw sockets as the clients (the
client under test, ours, is tested against the harness elsewhere): the durable broker keeps
acknowledged records across a crash, and each fault of the proxy does what it says."""

from __future__ import annotations

import socket
import struct
import time

import confluent_kafka
import confluent_kafka.admin
import pytest

from tests.support.id_oracle import assert_exactly_once, count_ids, id_records, tally
from tests.support.librdkafka import produce
from tests.support.raw_kafka import (
    answers_metadata,
    metadata_answer,
    metadata_request,
    read_frame,
    read_to_end,
)

pytestmark = pytest.mark.broker

PRODUCE = 0
METADATA = 3
API_VERSIONS = 18


def _connect(port: int, timeout: float = 5.0) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def test_tansu_advertises_the_proxy_so_every_connection_goes_through_it(durable_broker):
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": durable_broker.bootstrap})
    brokers = admin.list_topics(timeout=10).brokers.values()
    assert [(b.host, b.port) for b in brokers] == [("127.0.0.1", durable_broker.proxy.port)]
    assert durable_broker.tansu.port != durable_broker.proxy.port


def test_records_survive_crash_and_restart(durable_broker):
    topic = durable_broker.new_topic()
    produce({"bootstrap.servers": durable_broker.bootstrap}, topic, id_records(1000))
    port = durable_broker.tansu.port

    durable_broker.crash_and_restart(down_s=0.5)

    assert durable_broker.tansu.starts == 2 and durable_broker.tansu.port == port
    assert_exactly_once(durable_broker.bootstrap, topic, range(1000))


def test_idempotent_librdkafka_delivers_exactly_once_across_crash(durable_broker):
    """The DURABLE-CRASH procedure while a producer writes: every record exactly once."""
    n = 20_000
    topic = durable_broker.new_topic(partitions=3)
    producer = confluent_kafka.Producer({
        "bootstrap.servers": durable_broker.bootstrap, "enable.idempotence": True,
        "linger.ms": 5, "batch.num.messages": 500, "message.timeout.ms": 60_000})
    delivered: list[int] = []
    failed: list[str] = []

    def report(err, msg) -> None:
        if err is None:
            delivered.append(1)
        else:
            failed.append(str(err))

    for key, value in id_records(n):
        producer.produce(topic, value, key, on_delivery=report)
        producer.poll(0)
    deadline = time.monotonic() + 30
    while len(delivered) < n // 5 and time.monotonic() < deadline:
        producer.poll(0.01)
    assert n // 5 <= len(delivered) < n, "the crash must come with records in flight"

    durable_broker.crash_and_restart(down_s=1.0)

    assert producer.flush(60) == 0
    assert failed == []
    assert len(delivered) == n
    assert_exactly_once(durable_broker.bootstrap, topic, range(n))


def test_refused_connects_then_accepted_on_the_same_port(durable_broker):
    proxy = durable_broker.proxy
    proxy.refuse()
    with pytest.raises(ConnectionRefusedError):
        _connect(proxy.port)

    errors: list[confluent_kafka.KafkaError] = []
    producer = confluent_kafka.Producer({
        "bootstrap.servers": durable_broker.bootstrap, "error_cb": errors.append,
        "reconnect.backoff.max.ms": 200})
    producer.poll(2)
    assert any("Connection refused" in err.str() for err in errors), errors

    proxy.accept()
    assert answers_metadata(proxy.port)
    topic = durable_broker.new_topic()
    producer.produce(topic, b"0", b"0")
    assert producer.flush(10) == 0


def test_stall_holds_answers_until_pass_through(durable_broker):
    proxy = durable_broker.proxy
    proxy.stall()
    with _connect(proxy.port, timeout=0.5) as sock:
        sock.sendall(metadata_request(7))
        with pytest.raises(socket.timeout):
            sock.recv(1)
        assert proxy.stats().requests == 0  # requests are held too

        proxy.pass_through()
        sock.settimeout(5)
        frame = read_frame(sock)
    assert frame is not None and struct.unpack(">i", frame[4:8])[0] == 7


def test_hold_requests_holds_one_api_key_after_some_passed(durable_broker):
    """hold_requests(METADATA, after=1): the first Metadata goes through, the second is held
    (other connections' other API keys flow), then forwarded by release_held; with drop=True
    the held frame never reaches the broker and its connection is closed."""
    proxy = durable_broker.proxy
    proxy.hold_requests(METADATA, after=1)
    with _connect(proxy.port) as sock:
        sock.sendall(metadata_request(1))
        assert read_frame(sock) is not None
        sock.sendall(metadata_request(2))
        stats = proxy.wait_until_held(1, timeout=5)
        assert stats.held == 1 and stats.held_in_all == 1
        sock.settimeout(0.3)
        with pytest.raises(socket.timeout):
            sock.recv(1)
        assert proxy.release_held() == 1
        sock.settimeout(5)
        frame = read_frame(sock)
    assert frame is not None and struct.unpack(">i", frame[4:8])[0] == 2
    assert answers_metadata(proxy.port)  # released: no hold any more

    proxy.hold_requests(METADATA)
    with _connect(proxy.port) as sock:
        sock.sendall(metadata_request(3))
        proxy.wait_until_held(1, timeout=5)
        sent = proxy.stats().requests
        assert proxy.release_held(drop=True) == 1
        assert read_to_end(sock) == b""  # closed without an answer
    assert proxy.stats().requests == sent and proxy.stats().held == 0


def test_delay_holds_each_answer(durable_broker):
    proxy = durable_broker.proxy
    proxy.delay(0.4)
    began = time.monotonic()
    assert answers_metadata(proxy.port)
    assert time.monotonic() - began >= 0.4
    proxy.delay(0)
    began = time.monotonic()
    assert answers_metadata(proxy.port)
    assert time.monotonic() - began < 0.4


def test_cut_after_closes_a_connection_in_the_middle_of_an_answer(durable_broker):
    proxy = durable_broker.proxy
    proxy.cut_after(10)
    with _connect(proxy.port) as sock:
        sock.sendall(metadata_request(1))
        assert len(read_to_end(sock)) == 10
    assert proxy.stats().faults == 1
    assert answers_metadata(proxy.port)  # one connection only (times=1)

    proxy.cut_after(0, times=None)  # every connection, before its first answer byte
    for _ in range(2):
        assert metadata_answer(proxy.port) is None
    proxy.pass_through()
    assert answers_metadata(proxy.port)


def test_corrupt_changes_one_byte_of_the_chosen_answer(durable_broker):
    proxy = durable_broker.proxy
    clean = metadata_answer(proxy.port)
    assert clean is not None

    proxy.corrupt(offset=9, xor=0x20, api_key=API_VERSIONS)  # not a Metadata answer
    assert metadata_answer(proxy.port) == clean
    proxy.pass_through()

    proxy.corrupt(offset=9, xor=0x20, skip=1)
    assert metadata_answer(proxy.port) == clean  # skipped
    corrupted = metadata_answer(proxy.port)
    assert corrupted is not None and len(corrupted) == len(clean)
    assert [i for i in range(len(clean)) if clean[i] != corrupted[i]] == [9]
    assert corrupted[9] == clean[9] ^ 0x20
    assert metadata_answer(proxy.port) == clean  # spent


def test_truncate_cuts_an_answer_short_and_closes(durable_broker):
    proxy = durable_broker.proxy
    clean = metadata_answer(proxy.port)
    proxy.truncate(6)
    with _connect(proxy.port) as sock:
        sock.sendall(metadata_request(0x4B57))
        assert read_to_end(sock) == clean[:6]


def test_reset_gives_econnreset_and_cut_all_an_end_of_stream(durable_broker):
    proxy = durable_broker.proxy
    with _connect(proxy.port) as sock:
        proxy.wait_for(lambda s: s.open_connections == 1, what="one open connection")
        proxy.reset()
        with pytest.raises(ConnectionResetError):
            sock.recv(1)
    with _connect(proxy.port) as sock:
        proxy.wait_for(lambda s: s.open_connections == 1, what="one open connection")
        proxy.cut_all()
        assert sock.recv(1) == b""
    stats = proxy.wait_for(lambda s: s.open_connections == 0, what="no open connection")
    assert stats.connections == 2


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
def test_a_lost_produce_answer_is_retried(durable_broker, idempotent):
    """truncate(0, api_key=PRODUCE): the broker stores the batch, its answer never comes and
    librdkafka sends it again; the oracle sees the copies exactly when idempotence is off."""
    topic = durable_broker.new_topic()
    durable_broker.proxy.truncate(0, api_key=PRODUCE)
    produce({"bootstrap.servers": durable_broker.bootstrap, "enable.idempotence": idempotent,
             "linger.ms": 50}, topic, id_records(100))
    assert durable_broker.proxy.stats().faults == 1

    count = count_ids(durable_broker.bootstrap, topic, range(100))
    assert (count.lost, count.duplicated) == (0, 0 if idempotent else 100), count.summary()


def test_stalled_answers_of_requests_the_broker_executed(durable_broker):
    """stall(requests=False): requests reach the broker, their answers are held."""
    topic = durable_broker.new_topic()
    errors: list[str | None] = []
    producer = confluent_kafka.Producer({
        "bootstrap.servers": durable_broker.bootstrap, "enable.idempotence": False,
        "retries": 0, "message.timeout.ms": 1000})
    for key, value in id_records(2):
        producer.produce(topic, value, key, on_delivery=lambda err, msg: errors.append(err))
        producer.flush(5)
        durable_broker.proxy.stall(requests=False)  # after the first: metadata is known
    assert errors[0] is None and "timed out" in str(errors[1]).lower(), errors

    durable_broker.proxy.pass_through()
    assert_exactly_once(durable_broker.bootstrap, topic, range(2))


def test_the_oracle_reports_lost_and_duplicated_together():
    count = tally([b"0", b"1", b"1", b"1", b"3", b"x"], range(4))
    assert (count.lost, count.duplicated, count.unexpected) == (1, 2, 1)
    with pytest.raises(AssertionError, match=r"lost 1 \(e.g. \[2\]\), duplicated 2"):
        count.assert_exactly_once()
