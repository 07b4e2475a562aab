"""How long a reader waits for a broker that answers with no data below the partition's end.

A Fetch at an offset below the high watermark should return records, but a broker may answer
empty for a while: its storage is catching up (Tansu on S3 under load), a new leader is
loading the log, a 0.7 read stands at a segment end. Counting such answers (say 20 in a row,
about 10 s of backoff) would give up on a slow broker that is still catching up: a count says
nothing about time (issue 26). The rule here is the one of every other retry loop
(``KafkaClient.retry``): a time budget, ``kafka.request.timeout.ms`` from the first empty
answer in a row, or the operation's deadline when its client set one
(``KafkaClient.deadline``). Between answers the reader backs off as retries do:
``kafka.retry.backoff.ms``, doubled after each answer up to ``kafka.retry.backoff.max.ms``
(the first empty answer is asked again at once: at a 0.7 segment end that is all it takes).
When the budget cannot hold the next pause, :class:`FetchStalledError` says how long it
waited, where, and which option to raise. The 0.8+ range reader, its walk for transaction
markers and both 0.7 readers use this one rule; the multi-partition reader hands a range
whose answer was empty to the range reader, so it follows the rule too.

Quota throttling (KIP-219) is not a stall: a throttled broker answers at once, often empty,
with ``throttle_time_ms``, and the connection sends nothing more to it before that time has
passed (``BrokerConnection``). The broker said when to come back, so that wait is not held
against the reader: the budget is lengthened by each throttle time an empty answer carried.
An operation's deadline still caps everything: it is a promise to the caller.

Backing off is not enough when the broker's answer is bounded by the request itself. Tansu
on S3 (its ``dynostore``) lists every object of the partition (one per batch) on each Fetch
and stops listing once the request's max_wait_ms has passed: when the listing takes longer it
answers with no records below the high watermark, and asked again with the same max_wait_ms
it does the same, for as long as the listing stays that slow (issue 44: the kill -9 stream
fault test, Tansu on moto's S3 on two busy cores, FETCH_STALLED after 30 s; measured with a
client alone: a partition of 10,000 batches answered empty at 500 ms, records at 1000).
So the Fetch after an empty answer gives the broker longer: its max_wait_ms (0.8+ readers pass
``kafka.fetch.max.wait.ms`` in) doubles after each one, from at least
:data:`MIN_STALL_WAIT_MS`, never past the budget left after the pause, and stays grown for the
rest of the read (the broker has shown it needs that long). A broker that holds records below
the high watermark answers at once whatever the max_wait_ms (Kafka does), so the longer wait
costs nothing there.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import FetchStalledError
from spark_kafka_wire.client.wire.connection import Deadline

REQUEST_TIMEOUT_SETTING = "kafka.request.timeout.ms"
# The least max_wait_ms of a Fetch after an empty answer (Kafka's default fetch.max.wait.ms),
# so that a read configured not to wait (kafka.fetch.max.wait.ms 0) grows a wait as well.
MIN_STALL_WAIT_MS = 500


class EmptyAnswers:
    """The empty answers in a row of one reader, and the wait they have cost."""

    def __init__(self, config: ClientConfig,
                 deadline: Callable[[], Deadline | None] | None = None,
                 max_wait_ms: int | None = None) -> None:
        """``deadline``: the operation's deadline, asked at each empty answer.
        ``max_wait_ms``: the max_wait_ms of the reader's Fetches (kafka.fetch.max.wait.ms),
        grown after each empty answer (:attr:`max_wait_ms`); None for a reader whose requests
        have none (Kafka 0.7)."""
        self.config = config
        self._deadline = deadline
        self.configured_wait_ms = max_wait_ms
        self.max_wait_ms = max_wait_ms  # the max_wait_ms of the next Fetch (module docstring)
        self.count = 0
        self._first = 0.0  # monotonic time of the first empty answer in a row
        self._paused = 0.0  # seconds of throttling the broker asked for since then
        self._backoff = 0.0

    def progressed(self) -> None:
        """An answer carried data: the next empty one starts a new count and budget (the
        grown max_wait_ms is kept: see the module docstring)."""
        self.count = 0
        self._paused = 0.0

    def wait(self, *, topic: str, partition: int, offset: int, broker: str, why: str,
             throttle_ms: int = 0) -> None:
        """Back off after an empty answer, or raise FetchStalledError when the budget cannot
        hold the pause (``pause`` at the present time, then the sleep it asks for)."""
        pause = self.pause(time.monotonic(), topic=topic, partition=partition, offset=offset,
                           broker=broker, why=why, throttle_ms=throttle_ms)
        if pause > 0:
            time.sleep(pause)

    def pause(self, now: float, *, topic: str, partition: int, offset: int, broker: str,
              why: str, throttle_ms: int = 0) -> float:
        """Seconds to back off after an empty answer that came at ``now`` (monotonic), or
        raise FetchStalledError when the budget cannot hold the pause. The time is passed in
        and nothing sleeps here, so a reader's decision step (``fetch_plan.py``) stays free
        of I/O and its tests choose the clock. ``why`` says what the broker holds that it
        did not serve (it ends the message's first clause); ``throttle_ms``, the throttle
        time the answer carried and the connection honours, lengthens the budget (see the
        module docstring)."""
        if self.count == 0:
            self._first = now
            self._backoff = 0.0
        self.count += 1
        self._paused += max(0, throttle_ms) / 1000
        deadline = self._deadline() if self._deadline is not None else None
        if deadline is not None:
            ends, setting = deadline.at, deadline.setting
            budget_ms = None
        else:
            budget_ms = self.config.request_timeout_ms
            ends, setting = self._first + budget_ms / 1000 + self._paused, REQUEST_TIMEOUT_SETTING
        pause = self._backoff
        if now + pause >= ends:
            waited = now - self._first
            limit = f"{budget_ms} ms" if budget_ms is not None else "the deadline"
            throttled = (f", {self._paused:.1f} s of them throttled by the broker's quota"
                         if self._paused else "")
            raise FetchStalledError(
                f"the broker answered {self.count} Fetches in a row with no data for "
                f"{waited:.1f} s{throttled} although {why}; gave up when {limit} of "
                f"{setting} ran out. A broker catching up (slow storage, a new leader) may "
                f"need longer: raise {setting}",
                waited_s=waited, answers=self.count, setting=setting, topic=topic,
                partition=partition, offset=offset, broker=broker)
        first = self.config.retry_backoff_ms / 1000
        self._backoff = first if self._backoff == 0 else min(
            self._backoff * 2, self.config.retry_backoff_max_ms / 1000)
        if self.max_wait_ms is not None and self.configured_wait_ms is not None:
            # the broker may hold the next Fetch until the budget ends, not past it
            left_ms = round((ends - now - pause) * 1000)
            grown = 2 * max(self.max_wait_ms, MIN_STALL_WAIT_MS // 2)
            self.max_wait_ms = max(self.configured_wait_ms, min(grown, left_ms))
        return pause
