"""Source options (``spark.read.format("kafkawire")``), parsed once on the driver."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .client.config import ClientConfig
from .client.fetcher import FetchSettings
from .client.offsets import EARLIEST, LATEST
from .options import bool_option, client_config, int_option, lower_keys
from .protocol.errors import ConfigurationError

_NOT_YET = {
    "assign": "the 'assign' option", "subscribepattern": "the 'subscribePattern' option",
    "startingtimestamp": "startingTimestamp", "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "minpartitions": "minPartitions", "maxrecordsperpartition": "maxRecordsPerPartition",
}


@dataclass(frozen=True)
class OffsetSpec:
    """``earliest``/``latest`` for every partition, or a JSON map topic → partition → offset
    (-2 earliest, -1 latest)."""

    default: int | None
    specific: dict[tuple[str, int], int] = field(default_factory=dict)

    def for_partitions(self, tps: list[tuple[str, int]], option: str) -> dict[tuple[str, int], int]:
        if self.default is not None:
            return {tp: self.default for tp in tps}
        missing = sorted(set(tps) - set(self.specific))
        extra = sorted(set(self.specific) - set(tps))
        if missing or extra:
            parts = []
            if missing:
                parts.append("it lacks " + ", ".join(f"{t}-{p}" for t, p in missing))
            if extra:
                parts.append("it names partitions that are not subscribed or do not exist: "
                             + ", ".join(f"{t}-{p}" for t, p in extra))
            raise ConfigurationError(
                f"{option} must give an offset for every subscribed partition: "
                + "; ".join(parts)
            )
        return {tp: self.specific[tp] for tp in tps}


def parse_offsets(raw: str | None, option: str, default: int, allow_earliest: bool, allow_latest: bool) -> OffsetSpec:
    if raw is None:
        return OffsetSpec(default)
    text = raw.strip()
    word = text.lower()
    if word in ("earliest", "latest"):
        value = EARLIEST if word == "earliest" else LATEST
        _check_special(value, option, allow_earliest, allow_latest, None)
        return OffsetSpec(value)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise ConfigurationError(
            f"{option} must be 'earliest', 'latest' or JSON like "
            f"{{\"topic\":{{\"0\":23,\"1\":-2}}}}, got {raw!r}"
        ) from None
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise ConfigurationError(f"{option} JSON must map topic -> {{partition: offset}}, got {raw!r}")
    specific: dict[tuple[str, int], int] = {}
    for topic, parts in doc.items():
        for p, off in parts.items():
            try:
                pi = int(p)
            except ValueError:
                raise ConfigurationError(f"{option}: partition {p!r} of {topic!r} is not a number") from None
            if not isinstance(off, int) or isinstance(off, bool) or off < -2:
                raise ConfigurationError(
                    f"{option}: offset for {topic}-{p} must be an integer >= -2, got {off!r}"
                )
            _check_special(off, option, allow_earliest, allow_latest, f"{topic}-{pi}")
            specific[(topic, pi)] = off
    return OffsetSpec(None, specific)


def _check_special(value: int, option: str, allow_earliest: bool, allow_latest: bool, where: str | None) -> None:
    at = f" for {where}" if where else ""
    if value == EARLIEST and not allow_earliest:
        raise ConfigurationError(f"{option}{at} cannot be earliest (-2) for batch queries")
    if value == LATEST and not allow_latest:
        raise ConfigurationError(f"{option}{at} cannot be latest (-1) for batch queries")


@dataclass(frozen=True)
class SourceOptions:
    client: ClientConfig
    topics: tuple[str, ...]
    starting: OffsetSpec
    ending: OffsetSpec
    fetch: FetchSettings
    max_records_per_batch: int


def parse_source_options(options: Mapping[str, str]) -> SourceOptions:
    opts = lower_keys(options)
    for key, name in _NOT_YET.items():
        if key in opts:
            raise ConfigurationError(f"{name} is not supported yet by kafkawire; use 'subscribe'")
    if bool_option(opts, "includeheaders", False, "includeHeaders"):
        raise ConfigurationError("includeHeaders=true is not supported yet by kafkawire")
    client, kafka = client_config(opts, {
        "max.partition.fetch.bytes", "fetch.max.bytes", "fetch.max.wait.ms", "fetch.min.bytes",
        "check.crcs", "isolation.level",
    })
    subscribe = opts.get("subscribe")
    if subscribe is None:
        raise ConfigurationError(
            "one of the options 'subscribe', 'subscribePattern' or 'assign' is required; "
            "kafkawire supports 'subscribe' (a comma-separated list of topics)"
        )
    topics = tuple(dict.fromkeys(t.strip() for t in subscribe.split(",") if t.strip()))
    if not topics:
        raise ConfigurationError("option 'subscribe' names no topic")
    isolation = kafka.get("isolation.level", "read_uncommitted").lower()
    if isolation != "read_uncommitted":
        raise ConfigurationError(
            f"kafka.isolation.level={isolation} is not supported yet; use read_uncommitted"
        )
    fetch = FetchSettings(
        max_partition_fetch_bytes=int_option(kafka, "max.partition.fetch.bytes", 1 << 20, 1,
                                       "kafka.max.partition.fetch.bytes"),
        fetch_max_bytes=int_option(kafka, "fetch.max.bytes", 50 << 20, 1, "kafka.fetch.max.bytes"),
        max_wait_ms=int_option(kafka, "fetch.max.wait.ms", 500, 0, "kafka.fetch.max.wait.ms"),
        min_bytes=int_option(kafka, "fetch.min.bytes", 1, 0, "kafka.fetch.min.bytes"),
        check_crcs=bool_option(kafka, "check.crcs", True, "kafka.check.crcs"),
    )
    return SourceOptions(
        client=client,
        topics=topics,
        starting=parse_offsets(opts.get("startingoffsets"), "startingOffsets", EARLIEST,
                               allow_earliest=True, allow_latest=False),
        ending=parse_offsets(opts.get("endingoffsets"), "endingOffsets", LATEST,
                             allow_earliest=False, allow_latest=True),
        fetch=fetch,
        max_records_per_batch=int_option(opts, "maxrecordsperbatch", 10_000, 1, "maxRecordsPerBatch"),
    )
