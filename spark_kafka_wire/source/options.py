"""Source options (``spark.read.format("kafkawire")`` and ``readStream``), parsed once on the
driver into frozen values that travel to the tasks.

Names, defaults, precedence and errors follow Spark's built-in kafka source
(KafkaSourceProvider). What to read is parsed by ``strategy`` (exactly one of subscribe /
subscribePattern / assign), where to start and stop by ``limits``; this module adds the
reading behaviour (fetch sizes, isolation, failOnDataLoss, splitting and packing) and the
streaming options.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from pyspark.sql.types import StructType

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    KAFKA07_UNSUPPORTED,
    MISSING_OPTION,
    REFUSED_OPTION,
    UNSUPPORTED_VALUE,
    ConfigurationError,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity
from spark_kafka_wire.options import (
    SOURCE,
    Option,
    Use,
    bool_default,
    bool_value,
    client_config,
    fetch_settings,
    given,
    int_default,
    int_value,
    lower_keys,
    option,
    optional_int,
    options_for,
    text_default,
    text_value,
    warn_unknown_options,
    wire_text,
    with_config_file,
    zookeeper_security,
)
from spark_kafka_wire.options.formats import PERMISSIVE, FormatOptions, format_options
from spark_kafka_wire.source.formats import Decoding, planned_columns
from spark_kafka_wire.source.limits import (
    LIMIT_OPTIONS,
    STARTING_OFFSETS,
    Limit,
    check_limits,
    parse_limit,
    parse_offsets,
)
from spark_kafka_wire.source.rate_limits import parse_duration_ms
from spark_kafka_wire.source.strategy import Assign, Strategy, Subscribe, parse_strategy

log = logging.getLogger(__name__)

# Spark logs "... option ignored in batch queries" for these; so do we.
_IGNORED_IN_BATCH = (option("maxOffsetsPerTrigger"), option("minOffsetsPerTrigger"),
                     option("maxTriggerDelay"))
# Spark's consumer poll timeout: no effect here (every request is bounded by
# kafka.request.timeout.ms), but a value Spark refuses is refused, in batches and streams.
POLL_TIMEOUT = option("kafkaConsumer.pollTimeoutMs")


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
    fail_on_data_loss: bool = bool_default("failOnDataLoss")
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    # maxOffsetRangesPerPartition: at most this many ranges in one task (1: no packing)
    max_ranges_per_partition: int | None = None
    include_headers: bool = bool_default("includeHeaders")
    group_id: str | None = None
    group_id_prefix: str = text_default("groupIdPrefix")
    # Spark's fetchOffset.numRetries / retryIntervalMs as given (or the table's defaults,
    # Spark's): a stream asks again this way when a latest offset is below where its batch
    # begins.
    offset_fetch_attempts: int = int_default("fetchOffset.numRetries")
    offset_fetch_interval_ms: int = int_default("fetchOffset.retryIntervalMs")
    # value.format / key.format and the registry (parsed, nothing fetched) ...
    formats: FormatOptions = FormatOptions()
    # ... and, once the reader knows its reader schemas, what each task needs to decode
    decoding: Decoding | None = None

    @property
    def topics(self) -> tuple[str, ...]:
        """The subscribed or assigned topics (empty for subscribePattern)."""
        s = self.strategy
        return s.topics if isinstance(s, (Subscribe, Assign)) else ()

    @property
    def isolation_level(self) -> int:
        return self.fetch.isolation_level


def read_formats(options: Mapping[str, str]) -> FormatOptions:
    """A read's value.format / key.format settings alone (the DataFrame's schema depends on
    them), without parsing or checking the rest."""
    return format_options(with_config_file(lower_keys(options), SOURCE))


def with_decoding(options: SourceOptions, schema: StructType) -> SourceOptions:
    """``options`` with what the tasks need to decode the formatted columns of ``schema``
    (the DataFrame's, whose metadata names each column's reader schema)."""
    formats = options.formats
    if not formats.columns:
        return options
    assert formats.registry is not None
    return replace(options, decoding=Decoding(planned_columns(formats, schema),
                                              formats.registry, formats.mode == PERMISSIVE))


def include_headers(options: Mapping[str, str]) -> bool:
    return bool_value(lower_keys(options), "includeHeaders")


def check_trigger_limits(opts: Mapping[str, str]) -> None:
    """Spark refuses minOffsetsPerTrigger above maxOffsetsPerTrigger, in batch reads (where
    both are ignored) as in streams."""
    low = optional_int(opts, "minOffsetsPerTrigger")
    high = optional_int(opts, "maxOffsetsPerTrigger")
    if low is not None and high is not None and low > high:
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, "MIN_OFFSETS_ABOVE_MAX", low=low,
            high=high)


def parse_source_options(options: Mapping[str, str], batch: bool = True) -> SourceOptions:
    warn_unknown_options(lower_keys(options), SOURCE)
    opts = with_config_file(lower_keys(options), SOURCE)
    client = client_config(opts, SOURCE)
    strategy = parse_strategy(opts)

    fetch = fetch_settings(opts)
    int_value(opts, "kafka.default.api.timeout.ms")  # checked, no effect
    optional_int(opts, POLL_TIMEOUT)  # checked, no effect

    raw_strategy = text_value(opts, "startingOffsetsByTimestampStrategy").strip().lower()
    if raw_strategy not in ("error", "latest"):
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("startingOffsetsByTimestampStrategy").name,
                                    allowed="'error', 'latest'", got=repr(raw_strategy))
    starting = parse_limit(opts, "starting", latest_on_no_match=raw_strategy == "latest")
    ending = parse_limit(opts, "ending", latest_on_no_match=True)
    check_limits(starting, ending)

    min_partitions = optional_int(opts, "minPartitions")
    max_records = optional_int(opts, "maxRecordsPerPartition")

    planner = client
    attempts = optional_int(opts, "fetchOffset.numRetries")
    if attempts is not None:
        planner = replace(planner, retries=attempts - 1)  # Spark counts attempts
    interval = optional_int(opts, "fetchOffset.retryIntervalMs")
    if interval is not None:
        planner = replace(planner, retry_backoff_ms=interval, retry_backoff_max_ms=interval)

    group_id = wire_text(opts, "kafka.group.id")
    if group_id is not None:
        if batch:  # a stream's group is where commitOffsets commits: no warning there
            log.warning(
                "Kafka option 'kafka.group.id' is set: a batch read does not join the group, "
                "but several queries sharing one group id interfere with each other once "
                "offsets are committed; prefer 'groupIdPrefix'")
        if given(opts, "groupIdPrefix") is not None:
            log.warning("option groupIdPrefix is ignored because kafka.group.id is set")
    if batch:
        check_trigger_limits(opts)
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
        max_ranges_per_partition=optional_int(opts, "maxOffsetRangesPerPartition"),
        include_headers=bool_value(opts, "includeHeaders"),
        group_id=group_id,
        group_id_prefix=text_value(opts, "groupIdPrefix"),
        offset_fetch_attempts=int_value(opts, "fetchOffset.numRetries"),
        offset_fetch_interval_ms=int_value(opts, "fetchOffset.retryIntervalMs"),
        formats=format_options(opts),
    )


# ---------------------------------------------------------------------------------- streams

COMMIT_TARGETS = ("none", "kafka", "zookeeper", "both")
# Refused in streams, as Spark refuses them: a stream reads until it is stopped. Spark ignores
# endingTimestamp in streams; so does kafkawire, with a warning.
_ENDING = (option("endingOffsets"), option("endingOffsetsByTimestamp"))
_ENDING_IGNORED = option("endingTimestamp")


@dataclass(frozen=True)
class GroupStart:
    """``startingOffsets=group``: the group's committed offsets, earliest where none."""


_DELAY = option("maxTriggerDelay")


@dataclass(frozen=True)
class StreamOptions:
    source: SourceOptions  # its ``ending`` is unused by streams
    starting: Limit | GroupStart
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = parse_duration_ms(text_default(_DELAY), _DELAY.name)
    commit_offsets: str = text_default("commitOffsets")
    group_id: str | None = None
    zookeeper_connect: str | None = None
    # how to reach it (zookeeper.ssl.*, zookeeper.sasl.jaas.config); the repr hides secrets
    zookeeper_security: ZooKeeperSecurity | None = None

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
    warn_unknown_options(lower_keys(options), SOURCE)
    opts = with_config_file(lower_keys(options), SOURCE)
    for o in _ENDING:
        if o.key in opts:
            raise ConfigurationError.of(REFUSED_OPTION, "BATCH_ONLY_OPTION", option=o.name)
    if _ENDING_IGNORED.key in opts:
        log.warning("%s option ignored in streaming queries (as in Spark): a stream reads until "
                    "it is stopped; use Trigger.AvailableNow to stop at the current end",
                    _ENDING_IGNORED.name)
        opts = {k: v for k, v in opts.items() if k != _ENDING_IGNORED.key}
    stream_only = {o.key for o in options_for(Use.STREAM_READ) if _stream_only(o)}
    source = parse_source_options({k: v for k, v in opts.items() if k not in stream_only},
                                  batch=False)

    raw_start = given(opts, STARTING_OFFSETS)
    starting: Limit | GroupStart
    if raw_start is not None and raw_start.strip().lower() == "group":
        starting = GroupStart()
    elif any(o.key in opts for o in LIMIT_OPTIONS["starting"][:2]):
        starting = source.starting  # timestamps win over startingOffsets, as in Spark
    else:
        raw = raw_start if raw_start is not None else str(STARTING_OFFSETS.stream_default)
        starting = parse_offsets(raw, STARTING_OFFSETS.name, allow_earliest=True,
                                 allow_latest=True)

    commit = text_value(opts, "commitOffsets").strip().lower()
    if commit not in COMMIT_TARGETS:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("commitOffsets").name,
                                    allowed=", ".join(COMMIT_TARGETS), got=repr(commit))
    group_id = source.group_id
    needs_group = commit != "none" or isinstance(starting, GroupStart)
    if needs_group and not group_id:
        raise ConfigurationError.of(MISSING_OPTION, "GROUP_ID")
    if not source.client.has_group_coordinator and commit in ("kafka", "both"):
        raise ConfigurationError.of(
            KAFKA07_UNSUPPORTED, "COMMIT_OFFSETS", commit=commit)
    if not source.client.has_group_coordinator and isinstance(starting, GroupStart) \
            and commit != "zookeeper":
        raise ConfigurationError.of(KAFKA07_UNSUPPORTED, "GROUP_OFFSETS")
    zk = given(opts, "zookeeper.connect")
    if commit in ("zookeeper", "both") and not (zk and zk.strip()):
        raise ConfigurationError.of(
            MISSING_OPTION, "COMMIT_ZOOKEEPER_CONNECT", commit=commit)
    check_trigger_limits(opts)
    optional_int(opts, POLL_TIMEOUT)  # checked, no effect (parse_source_options never sees it)
    return StreamOptions(
        source=source,
        starting=starting,
        max_offsets_per_trigger=optional_int(opts, "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=optional_int(opts, "minOffsetsPerTrigger"),
        max_trigger_delay_ms=parse_duration_ms(text_value(opts, _DELAY), _DELAY.name),
        commit_offsets=commit,
        group_id=group_id,
        zookeeper_connect=zk.strip() if zk else None,
        zookeeper_security=zookeeper_security(opts) if commit in ("zookeeper", "both") else None,
    )
