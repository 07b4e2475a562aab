"""Source options (``spark.read.format("kafkawire")``), parsed once on the driver.

Names, defaults, precedence and errors follow Spark's built-in kafka source
(KafkaSourceProvider): exactly one of subscribe / subscribePattern / assign; for each end of the
range a global timestamp wins over a per-partition timestamp map, which wins over offsets; a
batch read cannot start at latest nor end at earliest.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from spark_kafka_wire.client.cluster import TopicPartition
from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.fetcher import FetchSettings
from spark_kafka_wire.client.offsets import (
    EARLIEST,
    LATEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
)
from spark_kafka_wire.options import (
    SOURCE,
    Option,
    Use,
    bool_value,
    client_config,
    given,
    int_value,
    lower_keys,
    option,
    optional_int,
    options_for,
    text_value,
)
from spark_kafka_wire.source.rate_limits import parse_duration_ms

log = logging.getLogger(__name__)

# Spark logs "... option ignored in batch queries" for these; so do we.
_IGNORED_IN_BATCH = (option("maxOffsetsPerTrigger"), option("minOffsetsPerTrigger"),
                     option("maxTriggerDelay"))

SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN = (option("subscribe"), option("subscribePattern"),
                                        option("assign"))
STARTING_OFFSETS = option("startingOffsets")
STARTING_TIMESTAMP = option("startingTimestamp")

# Each end of the range, in Spark's order of precedence: global timestamp, per-partition
# timestamps, offsets.
_LIMIT_OPTIONS = {
    "starting": (STARTING_TIMESTAMP, option("startingOffsetsByTimestamp"), STARTING_OFFSETS),
    "ending": (option("endingTimestamp"), option("endingOffsetsByTimestamp"),
               option("endingOffsets")),
}


# ------------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class Subscribe:
    """A fixed list of topics; each must exist."""

    topics: tuple[str, ...]
    word = "subscribed"


@dataclass(frozen=True)
class SubscribePattern:
    """Every non-internal topic whose name the regex finds (``re.search``, unanchored, like
    Java's ``Matcher.find``)."""

    pattern: str
    word = "subscribed"

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


@dataclass(frozen=True)
class Assign:
    """Fixed topic-partitions, from JSON ``{"topic":[0,1]}``."""

    partitions: tuple[TopicPartition, ...]
    word = "assigned"

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(t for t, _ in self.partitions))


Strategy = Subscribe | SubscribePattern | Assign


# ---------------------------------------------------------------------------- offset limits


def _tp_list(tps) -> str:
    return ", ".join(f"{t}-{p}" for t, p in sorted(tps))


def _check_cover(given: Mapping[TopicPartition, int], tps: list[TopicPartition], option: str,
                 what: str, word: str, hint: str = "") -> None:
    missing = sorted(set(tps) - set(given))
    extra = sorted(set(given) - set(tps))
    if missing or extra:
        parts = []
        if missing:
            parts.append("it lacks " + _tp_list(missing))
        if extra:
            parts.append(f"it names partitions that are not {word} or do not exist: "
                         + _tp_list(extra))
        raise ConfigurationError(
            f"{option} must give {what} for every {word} partition: " + "; ".join(parts) + hint
        )


@dataclass(frozen=True)
class OffsetSpec:
    """``earliest``/``latest`` for every partition, or a JSON map topic → partition → offset
    (-2 earliest, -1 latest)."""

    default: int | None
    specific: dict[TopicPartition, int] = field(default_factory=dict)
    option: str = STARTING_OFFSETS.name

    def for_partitions(self, tps: list[TopicPartition], option: str | None = None,
                       word: str = "subscribed") -> dict[TopicPartition, int]:
        """The offset (possibly -2/-1) of every partition; a JSON map must name exactly the
        partitions read (Spark: KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED)."""
        if self.default is not None:
            return {tp: self.default for tp in tps}
        _check_cover(self.specific, tps, option or self.option, "an offset", word,
                     " (use -2 for earliest, -1 for latest)")
        return {tp: self.specific[tp] for tp in tps}


@dataclass(frozen=True)
class TimestampSpec:
    """Offsets found by record timestamp: one ms value for every partition
    (``startingTimestamp``) or a JSON map topic → partition → ms (``...OffsetsByTimestamp``).

    ``latest_on_no_match``: what a partition with no record at or after its timestamp gets;
    for the end of a range always latest, for the start Spark's
    ``startingOffsetsByTimestampStrategy`` (``error`` by default, or ``latest``).
    """

    timestamp: int | None
    specific: dict[TopicPartition, int] = field(default_factory=dict)
    option: str = STARTING_TIMESTAMP.name
    latest_on_no_match: bool = False

    def for_partitions(self, tps: list[TopicPartition], word: str = "subscribed"
                       ) -> dict[TopicPartition, int]:
        if self.timestamp is not None:
            return {tp: self.timestamp for tp in tps}
        _check_cover(self.specific, tps, self.option, "a timestamp", word)
        return {tp: self.specific[tp] for tp in tps}


Limit = OffsetSpec | TimestampSpec


def _json_map(raw: str, option: str, example: str) -> dict[TopicPartition, int]:
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise ConfigurationError(f"{option} must be JSON like {example}, got {raw!r}")
    out: dict[TopicPartition, int] = {}
    for topic, parts in doc.items():
        for p, value in parts.items():
            try:
                pi = int(p)
            except ValueError:
                raise ConfigurationError(
                    f"{option}: partition {p!r} of {topic!r} is not a number") from None
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigurationError(
                    f"{option}: the value for {topic}-{p} must be an integer, got {value!r}")
            out[(topic, pi)] = value
    return out


def parse_offsets(raw: str, option: str, allow_earliest: bool, allow_latest: bool
                  ) -> OffsetSpec:
    text = raw.strip()
    word = text.lower()
    if word in ("earliest", "latest"):
        value = EARLIEST if word == "earliest" else LATEST
        _check_special(value, option, allow_earliest, allow_latest, None)
        return OffsetSpec(value, option=option)
    if not text.startswith("{"):
        raise ConfigurationError(
            f"{option} must be 'earliest', 'latest' or JSON like "
            f"{{\"topic\":{{\"0\":23,\"1\":-2}}}}, got {raw!r}"
        )
    specific = _json_map(text, option, '{"topic":{"0":23,"1":-2}}')
    for (topic, p), off in specific.items():
        if off < -2:
            raise ConfigurationError(
                f"{option}: offset for {topic}-{p} must be an integer >= -2, got {off!r}")
        _check_special(off, option, allow_earliest, allow_latest, f"{topic}-{p}")
    return OffsetSpec(None, specific, option=option)


def _check_special(value: int, option: str, allow_earliest: bool, allow_latest: bool,
                   where: str | None) -> None:
    at = f" for {where}" if where else ""
    if value == EARLIEST and not allow_earliest:
        raise ConfigurationError(f"{option}{at} cannot be earliest (-2) for batch queries")
    if value == LATEST and not allow_latest:
        raise ConfigurationError(f"{option}{at} cannot be latest (-1) for batch queries")


def _timestamp_value(raw: str, option: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigurationError(
            f"{option} expects a single long value (milliseconds since the epoch), "
            f"got {raw.strip()!r}") from None
    if value < 0:
        # Negative values are ListOffsets' special queries (-1 latest, -2 earliest, ...).
        raise ConfigurationError(f"{option} must be a timestamp >= 0 in ms, got {value}")
    return value


def parse_limit(opts: dict[str, str], end: str, *, latest_on_no_match: bool) -> Limit:
    """One end ("starting" or "ending") of the range, by Spark's precedence: global timestamp,
    then per-partition timestamps, then offsets. The options that lose are not parsed."""
    timestamp, by_timestamp, offsets = _LIMIT_OPTIONS[end]
    present = [o.name for o in _LIMIT_OPTIONS[end] if o.key in opts]
    if len(present) > 1:
        log.warning("%s given together: %s is used, the others are ignored (Spark's "
                    "precedence)", " and ".join(present), present[0])
    if timestamp.key in opts:
        return TimestampSpec(_timestamp_value(opts[timestamp.key], timestamp.name),
                             option=timestamp.name, latest_on_no_match=latest_on_no_match)
    if by_timestamp.key in opts:
        raw = opts[by_timestamp.key].strip()
        specific = _json_map(raw, by_timestamp.name, '{"topic":{"0":1700000000000}}')
        for (topic, p), ts in specific.items():
            if ts < 0:
                raise ConfigurationError(f"{by_timestamp.name}: the timestamp for {topic}-{p} "
                                         f"must be >= 0 (ms), got {ts}")
        return TimestampSpec(None, specific, option=by_timestamp.name,
                             latest_on_no_match=latest_on_no_match)
    return parse_offsets(text_value(opts, offsets), offsets.name,
                         allow_earliest=end == "starting", allow_latest=end == "ending")


def _check_limits(starting: Limit, ending: Limit) -> None:
    """Spark's checkOffsetLimitValidity: two per-partition maps of the same kind must name the
    same partitions, and a start given as a number cannot be after its end."""
    if isinstance(starting, OffsetSpec) and isinstance(ending, OffsetSpec):
        s, e, unit = starting.specific, ending.specific, "offset"
        if starting.default is not None or ending.default is not None:
            return
    elif isinstance(starting, TimestampSpec) and isinstance(ending, TimestampSpec):
        s, e, unit = starting.specific, ending.specific, "timestamp"
        if starting.timestamp is not None or ending.timestamp is not None:
            return  # Spark compares per-partition maps only (a later start reads nothing)
    else:
        return
    if set(s) != set(e):
        raise ConfigurationError(
            f"{starting.option} and {ending.option} name different partitions: "
            f"only in {starting.option}: {_tp_list(set(s) - set(e)) or 'none'}; "
            f"only in {ending.option}: {_tp_list(set(e) - set(s)) or 'none'}"
        )
    for (t, p), start in sorted(s.items()):
        end = e[(t, p)]
        if start >= 0 and end >= 0 and start > end:
            raise ConfigurationError(
                f"the starting {unit} {start} of {t}-{p} is after its ending {unit} {end}; "
                f"check {starting.option} and {ending.option}"
            )


def parse_strategy(opts: dict[str, str]) -> Strategy:
    chosen = [o for o in (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN) if o.key in opts]
    if not chosen:
        raise ConfigurationError(
            "one of the options 'subscribe', 'subscribePattern' or 'assign' is required: "
            "'subscribe' takes a comma-separated list of topics, 'subscribePattern' a regular "
            "expression, 'assign' JSON like {\"topicA\":[0,1]}"
        )
    if len(chosen) > 1:
        raise ConfigurationError(
            "only one of the options 'subscribe', 'subscribePattern' or 'assign' can be "
            f"given; got {', '.join(o.name for o in chosen)}"
        )
    value = opts[chosen[0].key]
    if chosen[0] is SUBSCRIBE:
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise ConfigurationError(
                f"option 'subscribe' names no topic (its value is {value!r})")
        return Subscribe(topics)
    if chosen[0] is SUBSCRIBE_PATTERN:
        pattern = value.strip()
        if not pattern:
            raise ConfigurationError(
                f"option 'subscribePattern' is an empty pattern (its value is {value!r})")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigurationError(
                f"option 'subscribePattern' is not a valid regular expression: {exc}"
            ) from None
        return SubscribePattern(pattern)
    text = value.strip()
    example = '{"topicA":[0,1],"topicB":[0]}'
    if not text.startswith("{"):
        raise ConfigurationError(
            f"option 'assign' must be JSON like {example}; got {value!r}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()):
        raise ConfigurationError(f"option 'assign' must be JSON like {example}; got {value!r}")
    tps: list[TopicPartition] = []
    for topic, parts in doc.items():
        for p in parts:
            if not isinstance(p, int) or isinstance(p, bool) or p < 0:
                raise ConfigurationError(
                    f"option 'assign': partition {p!r} of {topic!r} is not a partition number")
            tps.append((topic, p))
    return Assign(tuple(dict.fromkeys(sorted(tps))))


# ------------------------------------------------------------------------------------ all


@dataclass(frozen=True)
class SourceOptions:
    client: ClientConfig  # for the tasks (executors)
    strategy: Strategy
    starting: Limit
    ending: Limit
    fetch: FetchSettings
    max_records_per_batch: int
    # Driver-side offset lookups: the task client's settings, with fetchOffset.numRetries and
    # fetchOffset.retryIntervalMs applied when given.
    planner_client: ClientConfig | None = None
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    group_id: str | None = None
    group_id_prefix: str = "spark-kafka-relation"

    @property
    def topics(self) -> tuple[str, ...]:
        """The subscribed or assigned topics (empty for subscribePattern)."""
        s = self.strategy
        return s.topics if isinstance(s, (Subscribe, Assign)) else ()

    @property
    def isolation_level(self) -> int:
        return self.fetch.isolation_level


def include_headers(options: Mapping[str, str]) -> bool:
    return bool_value(lower_keys(options), "includeHeaders")


def parse_source_options(options: Mapping[str, str]) -> SourceOptions:
    opts = lower_keys(options)
    client = client_config(opts, SOURCE)
    strategy = parse_strategy(opts)

    isolation = text_value(opts, "kafka.isolation.level").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ConfigurationError(
            f"kafka.isolation.level must be read_uncommitted or read_committed, got {isolation!r}")
    fetch = FetchSettings(
        max_partition_fetch_bytes=int_value(opts, "kafka.max.partition.fetch.bytes"),
        fetch_max_bytes=int_value(opts, "kafka.fetch.max.bytes"),
        max_wait_ms=int_value(opts, "kafka.fetch.max.wait.ms"),
        min_bytes=int_value(opts, "kafka.fetch.min.bytes"),
        isolation_level=READ_COMMITTED if isolation == "read_committed" else READ_UNCOMMITTED,
        check_crcs=bool_value(opts, "kafka.check.crcs"),
    )
    int_value(opts, "kafka.default.api.timeout.ms")  # checked, no effect

    raw_strategy = text_value(opts, "startingOffsetsByTimestampStrategy").strip().lower()
    if raw_strategy not in ("error", "latest"):
        raise ConfigurationError(
            "startingOffsetsByTimestampStrategy must be 'error' or 'latest', got "
            f"{raw_strategy!r}")
    starting = parse_limit(opts, "starting", latest_on_no_match=raw_strategy == "latest")
    ending = parse_limit(opts, "ending", latest_on_no_match=True)
    _check_limits(starting, ending)

    min_partitions = optional_int(opts, "minPartitions")
    max_records = optional_int(opts, "maxRecordsPerPartition")

    planner = client
    attempts = optional_int(opts, "fetchOffset.numRetries")
    if attempts is not None:
        planner = replace(planner, retries=attempts - 1)  # Spark counts attempts
    interval = optional_int(opts, "fetchOffset.retryIntervalMs")
    if interval is not None:
        planner = replace(planner, retry_backoff_ms=interval, retry_backoff_max_ms=interval)

    group_id = given(opts, "kafka.group.id")
    if group_id is not None:
        log.warning(
            "Kafka option 'kafka.group.id' is set: a batch read does not join the group, but "
            "several queries sharing one group id interfere with each other once offsets are "
            "committed; prefer 'groupIdPrefix'")
        if given(opts, "groupIdPrefix") is not None:
            log.warning("option groupIdPrefix is ignored because kafka.group.id is set")
    for o in _IGNORED_IN_BATCH:
        if o.key in opts:
            log.warning("%s option ignored in batch queries", o.name)

    return SourceOptions(
        client=client,
        strategy=strategy,
        starting=starting,
        ending=ending,
        fetch=fetch,
        max_records_per_batch=int_value(opts, "maxRecordsPerBatch"),
        planner_client=planner,
        fail_on_data_loss=bool_value(opts, "failOnDataLoss"),
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        include_headers=bool_value(opts, "includeHeaders"),
        group_id=group_id,
        group_id_prefix=text_value(opts, "groupIdPrefix"),
    )


# ---------------------------------------------------------------------------------- streams

COMMIT_TARGETS = ("none", "kafka", "zookeeper", "both")
# Refused in streams, in this order: a stream reads until it is stopped.
_ENDING = (option("endingOffsets"), option("endingTimestamp"), option("endingOffsetsByTimestamp"))


@dataclass(frozen=True)
class GroupStart:
    """``startingOffsets=group``: the group's committed offsets, earliest where none."""


@dataclass(frozen=True)
class StreamOptions:
    source: SourceOptions  # its ``ending`` is unused by streams
    starting: Limit | GroupStart
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    commit_offsets: str = "none"
    group_id: str | None = None
    zookeeper_connect: str | None = None

    @property
    def commits_to_kafka(self) -> bool:
        return self.commit_offsets in ("kafka", "both")

    @property
    def commits_to_zookeeper(self) -> bool:
        return self.commit_offsets in ("zookeeper", "both")


def _stream_only(o: Option) -> bool:
    """Read by streams alone, or with another meaning there: kept from the batch parser."""
    return Use.READ not in o.uses or o.stream_default is not None or o.stream_doc is not None


def parse_stream_options(options: Mapping[str, str]) -> StreamOptions:
    """Options of ``spark.readStream.format("kafkawire")``: the batch source's, except that
    startingOffsets defaults to latest (and may be ``group``), ending options are refused, and
    the stream-only rate limits and offset commits apply."""
    opts = lower_keys(options)
    for o in _ENDING:
        if o.key in opts:
            raise ConfigurationError(
                f"option {o.key!r} is not valid for streaming queries; a stream reads until it "
                "is stopped (use Trigger.AvailableNow to stop at the current end)")
    stream_only = {o.key for o in options_for(Use.STREAM_READ) if _stream_only(o)}
    source = parse_source_options({k: v for k, v in opts.items() if k not in stream_only})

    raw_start = given(opts, STARTING_OFFSETS)
    starting: Limit | GroupStart
    if raw_start is not None and raw_start.strip().lower() == "group":
        starting = GroupStart()
    elif any(o.key in opts for o in _LIMIT_OPTIONS["starting"][:2]):
        starting = source.starting  # timestamps win over startingOffsets, as in Spark
    else:
        raw = raw_start if raw_start is not None else str(STARTING_OFFSETS.stream_default)
        starting = parse_offsets(raw, STARTING_OFFSETS.name, allow_earliest=True,
                                 allow_latest=True)

    commit = text_value(opts, "commitOffsets").strip().lower()
    if commit not in COMMIT_TARGETS:
        raise ConfigurationError(
            f"commitOffsets must be one of {', '.join(COMMIT_TARGETS)}, got {commit!r}")
    group_id = source.group_id
    needs_group = commit != "none" or isinstance(starting, GroupStart)
    if needs_group and not group_id:
        raise ConfigurationError(
            "commitOffsets and startingOffsets=group need a consumer group: set kafka.group.id "
            "(the group lag tools will show)")
    zk = given(opts, "zookeeper.connect")
    if commit in ("zookeeper", "both") and not (zk and zk.strip()):
        raise ConfigurationError(
            f"commitOffsets={commit} needs zookeeper.connect (host:port[,host:port][/chroot])")
    delay = option("maxTriggerDelay")
    return StreamOptions(
        source=source,
        starting=starting,
        max_offsets_per_trigger=optional_int(opts, "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=optional_int(opts, "minOffsetsPerTrigger"),
        max_trigger_delay_ms=parse_duration_ms(text_value(opts, delay), delay.name),
        commit_offsets=commit,
        group_id=group_id,
        zookeeper_connect=zk.strip() if zk else None,
    )
