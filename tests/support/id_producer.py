"""librdkafka writing id records (tests/support/id_oracle.py) for the Spark fault scenarios
and the soak: all at once, or steadily from a thread while a query runs and the broker
restarts.

Both producers are idempotent with a long message timeout, which the harness showed to write
every id exactly once across a durable crash (tests/faults/test_harness.py); so whatever a
reader shows beyond "each id once" is the reader's doing.
"""

from __future__ import annotations

import threading
import time

import confluent_kafka

from tests.support.id_oracle import id_bytes

PRODUCER_CONF = {"enable.idempotence": True, "linger.ms": 5, "message.timeout.ms": 120_000,
                 "log_level": 2}  # the refused connects of a crash are expected


def produce_ids(bootstrap: str, topic: str, n: int, start: int = 0,
                timeout_s: float = 120) -> None:
    """Write ids ``start`` .. ``start + n - 1`` and wait until every one is acknowledged (a
    full local queue is waited out, not an error)."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONF,
                                         "batch.num.messages": 10_000})
    failed: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failed.append(str(err))

    for i in range(start, start + n):
        value = id_bytes(i)
        while True:
            try:
                producer.produce(topic, value, value, on_delivery=report)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(timeout_s) == 0, "ids not acknowledged in time"
    assert not failed, failed[:3]


class SteadyIdProducer:
    """Writes ids 0, 1, 2, ... at about ``rate_per_s`` from a daemon thread until
    :meth:`stop`, which waits for every id to be acknowledged and returns how many were
    written (ids 0 .. n-1).

    ``linger_ms`` is 100 by default, for fewer and larger batches: measured against a 1-second-trigger parquet stream at 2000 ids/s, micro-batches
    took about 1.0 s (ListOffsets 50-150 ms) against 1.4 s (250-500 ms) with linger.ms 5."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: int = 2000,
                 step_s: float = 0.05, linger_ms: int = 100) -> None:
        self.topic = topic
        self.rate_per_s = rate_per_s
        self.step_s = step_s
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap,
                                                  **PRODUCER_CONF, "linger.ms": linger_ms})
        self.sent = 0
        self.delivered = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="steady-ids", daemon=True)

    def _on_delivery(self, err, _msg) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.delivered += 1

    def _run(self) -> None:
        per_step = max(1, int(self.rate_per_s * self.step_s))
        began = time.monotonic()
        while not self._stop.is_set():
            # the ids due by now: a slow step (a crash, a busy machine) is caught up later
            due = int((time.monotonic() - began) * self.rate_per_s) + per_step
            while self.sent < due and not self._stop.is_set():
                value = id_bytes(self.sent)
                try:
                    self.producer.produce(self.topic, value, value,
                                          on_delivery=self._on_delivery)
                except BufferError:
                    self.producer.poll(0.05)
                    continue
                self.sent += 1
            self.producer.poll(0)
            self._stop.wait(self.step_s)

    def start(self) -> SteadyIdProducer:
        self._thread.start()
        return self

    def wait_for(self, delivered: int, timeout_s: float = 60) -> None:
        """Until at least ``delivered`` ids were acknowledged."""
        deadline = time.monotonic() + timeout_s
        while self.delivered < delivered:
            assert time.monotonic() < deadline, \
                f"only {self.delivered} of {delivered} ids acknowledged in {timeout_s}s"
            time.sleep(0.05)

    def stop(self, timeout_s: float = 120) -> int:
        self._stop.set()
        self._thread.join(30)
        assert self.producer.flush(timeout_s) == 0, "ids not acknowledged in time"
        assert not self.errors, self.errors[:3]
        assert self.delivered == self.sent
        return self.sent

    def __enter__(self) -> SteadyIdProducer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join(30)
            self.producer.flush(10)
