"""The decisions of a range read, without I/O: answer in, next request or records out.

``fetcher.fetch_range`` reads one partition's range [start, end); every choice it makes lives
here, in :class:`RangeFetch`, as a state machine in the manner of h11: it says what to ask the
broker next (:meth:`RangeFetch.next_request`: a :class:`FetchRequest`, or a
:class:`LogBoundsRequest` when only the partition's current bounds can tell data loss from a
truncated or deleted partition), is fed what came back (``receive`` an answer, ``fetch_failed``
an error, ``log_bounds`` the bounds) and hands out the records ready to emit. It decides where
the next Fetch starts and whether one can be sent ahead while an answer decodes, when an
answer means data loss (reported or raised, see ``fetcher``'s module docstring), when empty
answers mean a stalled broker (``empty_answers``: the time of each answer is passed in, the
back-off comes out as the request's ``pause_s`` and the longer wait it gives the broker as its
``max_wait_ms``), when the budget must double for a batch
larger than it, and under read_committed when the range is followed past its end for the
transaction markers still missing. Where the read stands is one value, :class:`RangeState`,
changed only through :data:`TRANSITIONS`, so every path a read can take is written in one
place (and tested there). The I/O loop (``fetcher.py``) owns connections, retries,
metadata, the pipelining and the clock; it sends what this says and feeds it what came back,
so tests drive every decision by feeding answers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import DataLossError
from spark_kafka_wire.client.fetching.empty_answers import EmptyAnswers
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.offsets import READ_COMMITTED
from spark_kafka_wire.client.wire.connection import Deadline
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    OffsetOutOfRangeError,
    ProtocolError,
    UnknownTopicOrPartitionError,
)
from spark_kafka_wire.protocol.records import (
    CommittedFilter,
    DecodedRecords,
    TransactionCounts,
    TransactionEvents,
    decode_record_batches,
    next_batch_offset,
)

# The warnings of skipped data loss and the read_committed counts keep the logger they have
# always had, the range reader's, which users and tests filter on.
log = logging.getLogger("spark_kafka_wire.client.fetching.fetcher")

MAX_FETCH_BYTES_LIMIT = 256 << 20
# How often one offset may come back out of range while the log says it exists before the read
# gives up (a topic deleted and re-created while being read can do that briefly).
MAX_DISAPPEARED = 3

_DELETED = "the topic or partition no longer exists (it was deleted)"


def report_data_loss(topic: str, partition: int, start: int, end: int, reason: str,
                     fail: bool, broker: str | None = None,
                     code: int = ErrorCode.OFFSET_OUT_OF_RANGE) -> None:
    """Raise DataLossError, or (``fail`` false) log the lost range as a warning."""
    if fail:
        raise DataLossError(topic, partition, start, end, reason, broker, code)
    log.warning("Skipping offsets [%d, %d) of %s-%d: %s. Some data may have been lost because "
                "they are not available in Kafka any more (failOnDataLoss is false)",
                start, end, topic, partition, reason)


@dataclass
class FetchAnswer:
    records: memoryview | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    broker: str
    aborted: list[tuple[int, int]] | None
    throttle_ms: int = 0  # KIP-219 throttle time the connection honours (empty_answers.py)
    throttled: bool = False  # a quota's answer without the partition: ask again (read_answer)


class RangeState(Enum):
    """Where a range read stands (:attr:`RangeFetch.state`): IN_RANGE, Fetches at the next
    offset below the end; PAST_END (read_committed), the range is read and transactions of it
    wait for their markers past its end, walked for in batch headers; DONE, the range is read
    and each of its transactions decided; STOPPED, ended early on data loss it was told to
    skip (failOnDataLoss false)."""

    IN_RANGE = "in range"
    PAST_END = "past the end"
    DONE = "done"
    STOPPED = "stopped"


#: The only state changes a range read makes (``RangeFetch._enter`` refuses any other): a read
#: that ends stays ended, and once past the end it only finishes (what it meets there is not
#: the range's data, so nothing there stops the read early).
TRANSITIONS: dict[RangeState, frozenset[RangeState]] = {
    RangeState.IN_RANGE: frozenset({RangeState.PAST_END, RangeState.DONE, RangeState.STOPPED}),
    RangeState.PAST_END: frozenset({RangeState.DONE}),
    RangeState.DONE: frozenset(),
    RangeState.STOPPED: frozenset(),
}
ENDED = frozenset({RangeState.DONE, RangeState.STOPPED})


@dataclass(frozen=True)
class FetchRequest:
    """The single-partition Fetch to send next. ``past_end``: a walk for transaction markers
    past the range, read uncommitted (a marker may lie above the last stable offset) and
    never sent ahead. ``pause_s``: back off this long first (empty answers).
    ``max_wait_ms``: the Fetch's max_wait_ms, None for kafka.fetch.max.wait.ms; longer once
    the broker answered empty below the partition's end (``empty_answers``)."""
    offset: int
    max_bytes: int
    past_end: bool = False
    pause_s: float = 0.0
    max_wait_ms: int | None = None


@dataclass(frozen=True)
class LogBoundsRequest:
    """Ask for the partition's (earliest, latest) offsets now, or None when it no longer
    exists, and feed them to :meth:`RangeFetch.log_bounds`: only they tell records deleted
    by retention from a truncated or deleted partition."""
    offset: int


def grown(max_bytes: int, topic: str, partition: int, offset: int, broker: str) -> int:
    """The budget for a Fetch whose answer held bytes but no complete batch: the first batch is
    larger than the budget (possible with old brokers). Doubled, as the Kafka design document
    describes (https://kafka.apache.org/documentation/#impl_reads), up to a limit."""
    if max_bytes >= MAX_FETCH_BYTES_LIMIT:
        raise ProtocolError(f"a record batch is larger than {MAX_FETCH_BYTES_LIMIT} bytes",
                            topic=topic, partition=partition, offset=offset, broker=broker)
    return min(max_bytes * 2, MAX_FETCH_BYTES_LIMIT)


class RangeFetch:
    """One range read [start, end): in the range, then (read_committed, with transactions
    still open) past it for their markers, then done, or stopped early on data loss it was
    told to skip (:class:`RangeState`, in :attr:`state`). See the module docstring; the rules
    themselves are described in ``fetcher``'s."""

    def __init__(self, topic: str, partition: int, start: int, end: int,
                 settings: FetchSettings, fail_on_data_loss: bool, config: ClientConfig,
                 deadline: Callable[[], Deadline | None] | None = None,
                 counts: TransactionCounts | None = None) -> None:
        """``config`` and ``deadline`` set the empty-answer budget (``EmptyAnswers``);
        ``counts`` (read_committed) is filled as in ``fetcher.fetch_range``."""
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.settings, self.fail_on_data_loss = settings, fail_on_data_loss
        self._config, self._deadline = config, deadline
        self.offset = start
        self.max_bytes = self._first_budget()
        self.empty = EmptyAnswers(config, deadline, settings.max_wait_ms)
        self.disappeared = 0
        self.state = RangeState.IN_RANGE  # changed only by _enter
        # The offset ranges reported lost and skipped (failOnDataLoss false), in order: past
        # the end, a transaction whose marker may have gone with them is dropped, not failed.
        self.skipped: list[tuple[int, int]] = []
        self.broker: str | None = None  # the broker of the last answer in the range
        self.committed = (CommittedFilter(counts)
                          if settings.isolation_level == READ_COMMITTED else None)
        self._bounds_for: tuple[str, str | None, int] | None = None  # why bounds were asked
        self._pause = 0.0
        if start >= end:  # nothing to fetch
            self._range_read()

    def _first_budget(self) -> int:
        return min(self.settings.max_partition_fetch_bytes, self.settings.fetch_max_bytes)

    # ------------------------------------------------------------------------ what to send

    def next_request(self) -> FetchRequest | LogBoundsRequest | None:
        """What to ask next, None once the read is done (asking does not change the state)."""
        if self.state in ENDED:
            return None
        if self._bounds_for is not None:
            return LogBoundsRequest(self.offset)
        return FetchRequest(self.offset, self.max_bytes, self.state is RangeState.PAST_END,
                            self._pause, self._max_wait_ms())

    def _max_wait_ms(self) -> int | None:
        """The max_wait_ms of the next Fetch when empty answers grew it, else None."""
        wait = self.empty.max_wait_ms
        return None if wait == self.settings.max_wait_ms else wait

    def prefetch(self, answer: FetchAnswer) -> FetchRequest | None:
        """The Fetch to send while ``answer`` decodes: the one its batch headers say comes
        next, when it is inside the range (past it, markers are walked one Fetch at a time)."""
        if self.state is not RangeState.IN_RANGE or answer.throttled:
            return None
        ahead = next_batch_offset(answer.records)
        if ahead is not None and self.offset < ahead < self.end:
            return FetchRequest(ahead, self.max_bytes, max_wait_ms=self._max_wait_ms())
        return None

    # ------------------------------------------------------------------------ what came back

    def receive(self, answer: FetchAnswer, now: float) -> list[DecodedRecords]:
        """Take the answer to the request last given, which came at ``now`` (monotonic); the
        chunks ready to emit, in offset order."""
        self._pause = 0.0
        if self.state is RangeState.PAST_END:
            return self._receive_markers(answer, now)
        self.broker = answer.broker
        if answer.throttled:  # no data: the same Fetch again, once the throttle has passed
            return []
        data, offset, end = answer.records, self.offset, self.end
        events = TransactionEvents()
        decoded = decode_record_batches(
            data if data is not None else b"",
            start_offset=offset, end_offset=end, check_crcs=self.settings.check_crcs,
            topic=self.topic, partition=self.partition, broker=answer.broker,
            max_decompressed_size=self.settings.decompression_limit(self.max_bytes),
            aborted_transactions=answer.aborted,
            transactions=events if self.committed is not None else None,
        )
        if decoded.next_offset is None:
            if data is not None and len(data) > 0:
                self.max_bytes = grown(self.max_bytes, self.topic, self.partition, offset,
                                       answer.broker)
                return []
            limit = answer.high_watermark
            if self.committed is not None and answer.last_stable_offset >= 0:
                limit = answer.last_stable_offset
            if limit <= offset:  # deleted or truncated: the bounds tell which
                self._bounds_for = ("ended", answer.broker, limit)
                return []
            self._pause = self.empty.pause(
                now, topic=self.topic, partition=self.partition, offset=offset,
                broker=answer.broker, why=f"the partition ends at {limit}",
                throttle_ms=answer.throttle_ms)
            return []
        self.empty.progressed()
        if (decoded.num_records and int(decoded.offsets[0]) > offset
                and answer.log_start_offset > offset):
            # The log start moved past the offset asked for: the records in between are gone
            # (a gap above the log start is compaction or transaction markers, not loss).
            self._lost(offset, min(answer.log_start_offset, int(decoded.offsets[0])),
                       f"the log now starts at offset {answer.log_start_offset} (older records "
                       "were deleted, e.g. by retention)", answer.broker)
        if decoded.next_offset <= offset:
            raise ProtocolError(
                f"fetch made no progress (next offset {decoded.next_offset})",
                topic=self.topic, partition=self.partition, offset=offset,
                broker=answer.broker,
            )
        self.offset = decoded.next_offset
        if self.committed is None:
            out = [decoded] if decoded.num_records else []
        else:
            self.committed.add(decoded, events, self._where(answer.broker))
            out = self.committed.ready()
        if self.offset >= end:
            out += self._range_read()
        return out

    def fetch_failed(self, exc: UnknownTopicOrPartitionError | OffsetOutOfRangeError
                     ) -> list[DecodedRecords]:
        """Take the error the request last given ended with (after the client's retries)."""
        self._pause = 0.0
        if self.state is RangeState.PAST_END:
            self._undecided(f"fetching markers past the range at offset {self.offset} failed: "
                            f"{exc}", exc.broker, True)
            return self._finish()
        if isinstance(exc, UnknownTopicOrPartitionError):
            self._lost(self.offset, self.end, _DELETED, exc.broker,
                       ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return self._stop()
        self._bounds_for = ("out of range", exc.broker, 0)
        return []

    def log_bounds(self, bounds: tuple[int, int] | None) -> list[DecodedRecords]:
        """Take the answer to a :class:`LogBoundsRequest`: (earliest, latest), or None when
        the topic or partition no longer exists."""
        assert self._bounds_for is not None, "no log bounds were asked for"
        why, broker, limit = self._bounds_for
        self._bounds_for = None
        offset, end = self.offset, self.end
        if bounds is None:
            self._lost(offset, end, _DELETED, broker, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return self._stop()
        if why == "ended":  # an empty answer at the partition's end (``limit``)
            self._lost(offset, end,
                       f"the partition now ends at offset {limit} but offsets up to {end} were "
                       "planned; the log was truncated or the topic re-created", broker)
            return self._stop()
        lo, hi = bounds  # OFFSET_OUT_OF_RANGE
        if offset < lo:
            self._lost(offset, min(lo, end),
                       f"the log now starts at offset {lo} (older records were deleted, e.g. by "
                       "retention)", broker)
            self.offset = lo
            return self._range_read() if lo >= end else []
        if offset >= hi:
            self._lost(offset, end,
                       f"the partition now ends at offset {hi} but offsets up to {end} were "
                       "planned; the log was truncated or the topic re-created", broker)
            return self._stop()
        self.disappeared += 1
        if self.disappeared > MAX_DISAPPEARED:
            self._lost(offset, end,
                       f"the broker keeps answering OFFSET_OUT_OF_RANGE although the log holds "
                       f"offsets [{lo}, {hi})", broker)
            return self._stop()
        return []

    # ------------------------------------------------------------------------ transitions

    def _enter(self, state: RangeState) -> None:
        """Move to ``state``: the one place the state changes, by :data:`TRANSITIONS`."""
        assert state in TRANSITIONS[self.state], \
            f"a range read cannot go from {self.state.value} to {state.value}"
        self.state = state

    def _where(self, broker: str | None) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition, "broker": broker}

    def _lost(self, start: int, stop: int, reason: str, broker: str | None,
              code: int = ErrorCode.OFFSET_OUT_OF_RANGE) -> None:
        report_data_loss(self.topic, self.partition, start, stop, reason,
                         self.fail_on_data_loss, broker, code)
        self.skipped.append((start, stop))

    def _stop(self) -> list[DecodedRecords]:
        """The range read stops on data loss it was told to skip."""
        return self._range_read(RangeState.STOPPED)

    def _range_read(self, ending: RangeState = RangeState.DONE) -> list[DecodedRecords]:
        """The range is read (``ending`` DONE) or stopped (STOPPED): the read ends so, unless
        transactions in a range read to its end wait for markers past it."""
        if self.committed is None:
            self._enter(ending)
            return []
        if self.committed.undecided:
            if ending is RangeState.STOPPED:
                self._undecided("the read stopped at the data loss reported above", self.broker,
                                True)
                return self._finish(ending)
            self._enter(RangeState.PAST_END)  # from where the batches read end, with a fresh
            self.max_bytes = self._first_budget()  # budget (and the broker's wait as it grew)
            self.empty = EmptyAnswers(self._config, self._deadline, self.empty.max_wait_ms)
            return []
        return self._finish(ending)

    def _finish(self, ending: RangeState = RangeState.DONE) -> list[DecodedRecords]:
        assert self.committed is not None
        self._enter(ending)
        log.debug("%s-%d [%d, %d) read_committed: %s", self.topic, self.partition, self.start,
                  self.end, self.committed.counts)
        return self.committed.ready()

    def _receive_markers(self, answer: FetchAnswer, now: float) -> list[DecodedRecords]:
        """An answer past the range: batch headers walked for the markers still missing."""
        assert self.committed is not None
        data, offset = answer.records, self.offset
        events = TransactionEvents()
        decoded = decode_record_batches(
            data if data is not None else b"",
            start_offset=offset, end_offset=self.end, check_crcs=self.settings.check_crcs,
            topic=self.topic, partition=self.partition, broker=answer.broker,
            max_decompressed_size=self.settings.decompression_limit(self.max_bytes),
            aborted_transactions=[], transactions=events,
        )
        if decoded.next_offset is None:
            if data is not None and len(data) > 0:
                self.max_bytes = grown(self.max_bytes, self.topic, self.partition, offset,
                                       answer.broker)
                return []
            if answer.high_watermark <= offset:
                self._undecided(f"the partition ends at offset {answer.high_watermark} (its "
                                "high watermark) without them", answer.broker,
                                bool(self.skipped))
                return self._finish()
            self._pause = self.empty.pause(
                now, topic=self.topic, partition=self.partition, offset=offset,
                broker=answer.broker, why=f"the partition ends at {answer.high_watermark} "
                "(looking for transaction markers)", throttle_ms=answer.throttle_ms)
            return []
        self.empty.progressed()
        if decoded.next_offset <= offset:
            raise ProtocolError(
                f"fetch made no progress (next offset {decoded.next_offset})",
                topic=self.topic, partition=self.partition, offset=offset, broker=answer.broker)
        self.committed.add(decoded, events, self._where(answer.broker))
        self.offset = decoded.next_offset
        return self._finish() if not self.committed.undecided else []

    def _undecided(self, reason: str, broker: str | None, skippable: bool) -> None:
        """Transactions of the range have no marker left to read: their records are dropped
        with a warning (markers lost with skipped data, failOnDataLoss false), else the read
        fails."""
        assert self.committed is not None
        waiting = self.committed.undecided
        start, end = self.start, self.end
        held = ", ".join(f"producer {pid} from offset {first}"
                         for pid, first in sorted(waiting.items(), key=lambda w: w[1]))
        if skippable and not self.fail_on_data_loss:
            self.committed.abort_undecided()
            log.warning(
                "Skipping the records of %s-%d in [%d, %d) whose transactions have no marker "
                "left to read (%s): %s. Whether they were committed cannot be known "
                "(failOnDataLoss is false)", self.topic, self.partition, start, end, held,
                reason)
            return
        raise ProtocolError(
            f"read_committed: records in the range [{start}, {end}) belong to transactions "
            f"with no COMMIT or ABORT marker in the log ({held}): {reason}. Whether they were "
            "committed cannot be known, so none is returned. A read_committed range ends at "
            "or below the last stable offset, below which every transaction has ended, so the "
            "log or the broker is inconsistent: check the partition with another "
            "read_committed client, or read it with kafka.isolation.level=read_uncommitted",
            topic=self.topic, partition=self.partition, offset=min(waiting.values()),
            broker=broker)
