"""Fetch answers with no data below the partition's end, and quota-throttled answers, made on
the wire by the fault proxy (``FaultProxy.rewrite_fetches``) in front of Tansu (issue 26).

- Answers emptied for longer than the old count allowed (20 in a row) but shorter than the
  time budget (kafka.request.timeout.ms, client/fetching/empty_answers.py): the read waits and
  returns every record.
- Emptied past the budget: FetchStalledError within the budget plus a margin, naming how long
  it waited, the broker, topic, partition, offset and the option to raise.
- Empty answers carrying throttle_time_ms (KIP-219): the next Fetch reaches the broker no
  sooner than the throttle time after the answer left it, and that wait is not held against
  the budget (four throttles of 0.7 s read through a budget of 1.5 s).
- Emptied only while the Fetch allows less than 2 s (a broker whose storage read is cut at
  max_wait_ms, as Tansu on S3: issue 44): each empty answer doubles the next max_wait_ms, so
  the read goes through.
"""

from __future__ import annotations

import time

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import FetchStalledError
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from tests.support.fault_proxy import FetchEvent
from tests.support.id_oracle import id_bytes
from tests.support.librdkafka import produce
from tests.support.tansu import ProxiedTansu

pytestmark = pytest.mark.broker

N = 600
MARGIN_S = 1.5  # scheduling and teardown on two shared cores
# Short backoffs (the rule's kafka.retry.backoff.ms doubling up to .max.ms) so that more
# empty answers than the old limit of 20 fit in a few seconds.
FAST_BACKOFF = {"retry_backoff_ms": 10, "retry_backoff_max_ms": 40}


def _topic(broker: ProxiedTansu) -> str:
    topic = broker.new_topic(1)
    produce({"bootstrap.servers": broker.bootstrap, "batch.num.messages": 200}, topic,
            [(id_bytes(i), id_bytes(i)) for i in range(N)])
    return topic


def _client(broker: ProxiedTansu, **config: object) -> KafkaClient:
    return KafkaClient(ClientConfig.from_servers(broker.bootstrap, **config))


def _read(client: KafkaClient, topic: str) -> list[bytes]:
    return [v for chunk in fetch_range(client, topic, 0, 0, N)
            for v in chunk.values.to_pylist()]


def _fetches(events: list[FetchEvent]) -> tuple[int, int]:
    """(Fetch requests, Fetch answers) among ``events``."""
    return (sum(e.kind == "request" for e in events), sum(e.kind == "response" for e in events))


def test_empty_answers_longer_than_twenty_backoffs_are_waited_for(proxied_tansu,
                                                                   record_fact) -> None:
    topic = _topic(proxied_tansu)
    with _client(proxied_tansu, request_timeout_ms=15_000, **FAST_BACKOFF) as client:
        client.leader_connection(topic, 0)
        proxied_tansu.proxy.rewrite_fetches(empty=True, times=30)
        began = time.monotonic()
        values = _read(client, topic)
        seconds = time.monotonic() - began
    assert values == [id_bytes(i) for i in range(N)]
    requests, answers = _fetches(proxied_tansu.proxy.fetch_events())
    assert requests > 30 and answers > 30
    record_fact(f"30 emptied Fetch answers waited for: {N} records in {seconds:.2f} s, "
                f"{requests} Fetches")


def test_empty_answers_past_the_budget_fail_in_bounded_time(proxied_tansu,
                                                             record_fact) -> None:
    topic = _topic(proxied_tansu)
    budget_ms = 2000
    with _client(proxied_tansu, request_timeout_ms=budget_ms, **FAST_BACKOFF) as client:
        broker = client.leader_connection(topic, 0).name
        proxied_tansu.proxy.rewrite_fetches(empty=True)
        began = time.monotonic()
        with pytest.raises(FetchStalledError) as info:
            _read(client, topic)
        seconds = time.monotonic() - began
    assert budget_ms / 1000 - 0.1 <= seconds < budget_ms / 1000 + MARGIN_S, seconds
    err = info.value
    text = str(err)
    assert (err.topic, err.partition, err.offset, err.broker) == (topic, 0, 0, broker)
    assert err.setting == "kafka.request.timeout.ms" and err.answers > 20
    assert f"with no data for {err.waited_s:.1f} s" in text
    assert f"although the partition ends at {N}" in text
    assert f"{budget_ms} ms of kafka.request.timeout.ms ran out" in text
    assert "raise kafka.request.timeout.ms" in text
    assert f"topic {topic!r}, partition 0, offset 0, broker {broker}" in text
    record_fact(f"Fetches emptied for good: FetchStalledError after {seconds:.2f} s "
                f"({err.answers} answers, budget {budget_ms} ms)")


def test_throttled_empty_answers_hold_the_next_fetch(proxied_tansu, record_fact) -> None:
    topic = _topic(proxied_tansu)
    throttle_ms, throttled = 700, 4
    # 4 x 0.7 s of throttling outlasts this budget: it is not held against it.
    with _client(proxied_tansu, request_timeout_ms=1500, **FAST_BACKOFF) as client:
        client.leader_connection(topic, 0)
        proxy = proxied_tansu.proxy
        skip = len(proxy.fetch_events())
        proxy.rewrite_fetches(empty=True, throttle_ms=throttle_ms, times=throttled)
        values = _read(client, topic)
    assert values == [id_bytes(i) for i in range(N)]
    events = proxy.fetch_events()[skip:]
    gaps = []
    for i, event in enumerate(events):
        if event.kind == "response" and event.throttle_ms:
            after = [e for e in events[i + 1:] if e.kind == "request" and e.link == event.link]
            assert after, "no Fetch after a throttled answer"
            gaps.append(after[0].at - event.at)
    assert len(gaps) == throttled
    assert min(gaps) >= throttle_ms / 1000, gaps
    record_fact(f"throttled ({throttle_ms} ms) empty answers: next Fetch after "
                f"{', '.join(f'{g:.3f}' for g in gaps)} s")


def test_a_broker_whose_read_outlasts_max_wait_is_given_longer(proxied_tansu,
                                                                record_fact) -> None:
    """Tansu on S3 lists a partition's objects (one per batch) on each Fetch and stops at the
    request's max_wait_ms: once the listing takes longer (a few thousand batches, a busy
    machine) it answers empty below the high watermark for as long as it is asked with that
    wait (issue 44: the kill -9 stream fault test failed with FETCH_STALLED after 30 s). Here
    the proxy empties the answers to Fetches allowing less than 2 s: each empty answer
    doubles the next Fetch's max_wait_ms (500, 1000, 2000 ms), so the read goes through
    instead of asking with 500 ms until kafka.request.timeout.ms runs out."""
    topic = _topic(proxied_tansu)
    with _client(proxied_tansu, request_timeout_ms=5000, **FAST_BACKOFF) as client:
        client.leader_connection(topic, 0)
        proxy = proxied_tansu.proxy
        skip = len(proxy.fetch_events())
        proxy.rewrite_fetches(empty=True, below_wait_ms=2000)
        began = time.monotonic()
        values = _read(client, topic)
        seconds = time.monotonic() - began
    assert values == [id_bytes(i) for i in range(N)]
    waits = [e.max_wait_ms for e in proxy.fetch_events()[skip:] if e.kind == "request"]
    assert waits[:3] == [500, 1000, 2000] and set(waits[3:]) <= {2000}, waits
    record_fact(f"answers emptied below max_wait_ms 2000: {N} records in {seconds:.2f} s, "
                f"Fetches with max_wait_ms {waits}")
