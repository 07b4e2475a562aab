"""Where a source starts and stops: offsets, timestamps, and Spark's rules between them.

For each end of the range a global timestamp wins over a per-partition timestamp map, which
wins over offsets (the losers are ignored with a warning, as in Spark); a batch read cannot
start at latest nor end at earliest; JSON maps must name exactly the partitions read.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    UNSUPPORTED_VALUE,
    VALUE_OUT_OF_RANGE,
    ConfigurationError,
)
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST
from spark_kafka_wire.client.metadata.cluster import TopicPartition, check_topic_name
from spark_kafka_wire.options import option, text_value
from spark_kafka_wire.protocol.errors import shown
from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX

log = logging.getLogger(__name__)

STARTING_OFFSETS = option("startingOffsets")
STARTING_TIMESTAMP = option("startingTimestamp")

# Each end of the range, in Spark's order of precedence: global timestamp, per-partition
# timestamps, offsets.
LIMIT_OPTIONS = {
    "starting": (STARTING_TIMESTAMP, option("startingOffsetsByTimestamp"), STARTING_OFFSETS),
    "ending": (option("endingTimestamp"), option("endingOffsetsByTimestamp"),
               option("endingOffsets")),
}


def _tp_list(tps: Iterable[TopicPartition]) -> str:
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
        raise ConfigurationError.of(
            INVALID_VALUE, "PARTITIONS_MISSING", option=option, what=what, word=word,
            parts="; ".join(parts), hint=hint)


@dataclass(frozen=True)
class OffsetSpec:
    """``earliest``/``latest`` for every partition, or a JSON map topic → partition → offset
    (-2 earliest, -1 latest) where a topic may also map to ``"earliest"`` or ``"latest"`` for
    all its partitions (``topics``; SPARK-58774, after Spark 4.2, which refuses it)."""

    default: int | None
    specific: dict[TopicPartition, int] = field(default_factory=dict)
    option: str = STARTING_OFFSETS.name
    topics: dict[str, int] = field(default_factory=dict)

    def for_partitions(self, tps: list[TopicPartition], option: str | None = None,
                       word: str = "subscribed") -> dict[TopicPartition, int]:
        """The offset (possibly -2/-1) of every partition; a JSON map must name exactly the
        partitions read, a topic's value naming all its partitions (Spark:
        KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED)."""
        if self.default is not None:
            return {tp: self.default for tp in tps}
        name = option or self.option
        by_topic = {tp: self.topics[tp[0]] for tp in tps if tp[0] in self.topics}
        _check_cover(self.specific, [tp for tp in tps if tp not in by_topic], name,
                     "an offset", word, " (use -2 for earliest, -1 for latest)")
        unread = sorted(set(self.topics) - {t for t, _ in tps})
        if unread:
            raise ConfigurationError.of(
                INVALID_VALUE, "TOPICS_NOT_READ", name=name, word=word,
                unread=", ".join(unread))
        return {tp: by_topic[tp] if tp in by_topic else self.specific[tp] for tp in tps}


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


def load_json(raw: str, option: str, example: str) -> object:
    """The JSON document of an option; ConfigurationError naming it for anything json cannot
    read (syntax, an integer of more than 4300 digits, nesting deeper than the stack)."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):  # json.JSONDecodeError is a ValueError
        raise ConfigurationError.of(
            INVALID_VALUE, option=option, expected=f"JSON like {example}", got=shown(raw)) from None


def partition_number(p: object, topic: str, option: str, key: bool = True) -> int:
    """A partition given as a JSON key (``"0"``, ``key``) or a JSON value (``0``): 0 to
    2**31-1."""
    number = p
    if key and isinstance(p, str) and p.isascii() and p.isdigit() and len(p) <= 10:
        number = int(p)
    if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= INT32_MAX:
        what = "a number" if key else "a partition number"
        raise ConfigurationError.of(
            INVALID_VALUE, "PARTITION_NUMBER", option=option, partition=shown(p), topic=topic, what=what,
            int32_max=INT32_MAX)
    return number


def _json_map(raw: str, option: str, example: str, topic_words: bool = False
              ) -> tuple[dict[TopicPartition, int], dict[str, str]]:
    """(topic-partition → integer, topic → word): a JSON object of topics, each mapping
    partition numbers to integers or, with ``topic_words``, naming a word for all its
    partitions."""
    doc = load_json(raw, option, example)
    if not isinstance(doc, dict) or not all(
            isinstance(v, dict) or (topic_words and isinstance(v, str)) for v in doc.values()):
        raise ConfigurationError.of(
            INVALID_VALUE, option=option, expected=f"JSON like {example}", got=shown(raw))
    out: dict[TopicPartition, int] = {}
    words: dict[str, str] = {}
    for topic, parts in doc.items():
        check_topic_name(topic, option)
        if isinstance(parts, str):
            words[topic] = parts
            continue
        for p, value in parts.items():
            pi = partition_number(p, topic, option)
            if not isinstance(value, int) or isinstance(value, bool) or value > INT64_MAX:
                raise ConfigurationError.of(
                    INVALID_VALUE, "PARTITION_LIMIT", option=option, topic=topic, partition=p,
                    int64_max=INT64_MAX, value=shown(value))
            out[(topic, pi)] = value
    return out, words


def parse_offsets(raw: str, option: str, allow_earliest: bool, allow_latest: bool
                  ) -> OffsetSpec:
    text = raw.strip()
    word = text.lower()
    if word in ("earliest", "latest"):
        value = EARLIEST if word == "earliest" else LATEST
        _check_special(value, option, allow_earliest, allow_latest, None)
        return OffsetSpec(value, option=option)
    example = '{"topic":{"0":23,"1":-2}} or {"topic":"latest"}'
    if not text.startswith("{"):
        raise ConfigurationError.of(
            INVALID_VALUE, option=option, expected=f"'earliest', 'latest' or JSON like {example}",
            got=shown(raw))
    specific, words = _json_map(text, option, example, topic_words=True)
    topics: dict[str, int] = {}
    for topic, given_word in words.items():  # a topic's "earliest" / "latest" (SPARK-58774)
        which = given_word.strip().lower()
        if which not in ("earliest", "latest"):
            raise ConfigurationError.of(
                INVALID_VALUE, "TOPIC_OFFSET_WORD", option=option, topic=topic,
                given_word=shown(given_word))
        topics[topic] = EARLIEST if which == "earliest" else LATEST
        _check_special(topics[topic], option, allow_earliest, allow_latest, topic)
    for (topic, p), off in specific.items():
        if off < -2:
            raise ConfigurationError.of(
                INVALID_VALUE, "PARTITION_OFFSET", option=option, topic=topic, partition=p, off=off)
        _check_special(off, option, allow_earliest, allow_latest, f"{topic}-{p}")
    return OffsetSpec(None, specific, option=option, topics=topics)


def _check_special(value: int, option: str, allow_earliest: bool, allow_latest: bool,
                   where: str | None) -> None:
    at = f" for {where}" if where else ""
    if value == EARLIEST and not allow_earliest:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "EARLIEST_AS_BATCH_END", option=option, at=at)
    if value == LATEST and not allow_latest:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "LATEST_AS_BATCH_START", option=option, at=at)


def _timestamp_value(raw: str, option: str) -> int:
    text = raw.strip()
    digits = text[1:] if text[:1] in "+-" else text
    # ASCII digits of at most a long's length, as Java's Long.parseLong reads them
    if not (digits.isascii() and digits.isdigit() and len(digits.lstrip("0")) <= 19):
        raise ConfigurationError.of(
            INVALID_VALUE, "TIMESTAMP_NOT_A_NUMBER", option=option, text=shown(text))
    value = int(text)
    if value < 0:
        # Negative values are ListOffsets' special queries (-1 latest, -2 earliest, ...).
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, option=option, bound="a timestamp >= 0 in ms", got=value)
    if value > INT64_MAX:
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, option=option, bound=f"a timestamp up to {INT64_MAX} ms",
            got=value)
    return value


def parse_limit(opts: dict[str, str], end: str, *, latest_on_no_match: bool) -> Limit:
    """One end ("starting" or "ending") of the range, by Spark's precedence: global timestamp,
    then per-partition timestamps, then offsets. The options that lose are not parsed."""
    timestamp, by_timestamp, offsets = LIMIT_OPTIONS[end]
    present = [o.name for o in LIMIT_OPTIONS[end] if o.key in opts]
    if len(present) > 1:
        log.warning("%s given together: %s is used, the others are ignored (Spark's "
                    "precedence)", " and ".join(present), present[0])
    if timestamp.key in opts:
        return TimestampSpec(_timestamp_value(opts[timestamp.key], timestamp.name),
                             option=timestamp.name, latest_on_no_match=latest_on_no_match)
    if by_timestamp.key in opts:
        raw = opts[by_timestamp.key].strip()
        specific, _ = _json_map(raw, by_timestamp.name, '{"topic":{"0":1700000000000}}')
        for (topic, p), ts in specific.items():
            if ts < 0:
                raise ConfigurationError.of(
                    VALUE_OUT_OF_RANGE, "PARTITION_TIMESTAMP_NEGATIVE", by_timestamp=by_timestamp.name,
                    topic=topic, partition=p, ts=ts)
        return TimestampSpec(None, specific, option=by_timestamp.name,
                             latest_on_no_match=latest_on_no_match)
    return parse_offsets(text_value(opts, offsets), offsets.name,
                         allow_earliest=end == "starting", allow_latest=end == "ending")


def check_limits(starting: Limit, ending: Limit) -> None:
    """Spark's checkOffsetLimitValidity: two per-partition maps of the same kind must name the
    same partitions, and a start given as a number cannot be after its end."""
    if isinstance(starting, OffsetSpec) and isinstance(ending, OffsetSpec):
        if starting.default is not None or ending.default is not None:
            return
        # a topic given as "earliest"/"latest" on either side is compared once resolved
        whole = set(starting.topics) | set(ending.topics)
        s = {tp: o for tp, o in starting.specific.items() if tp[0] not in whole}
        e = {tp: o for tp, o in ending.specific.items() if tp[0] not in whole}
        unit = "offset"
    elif isinstance(starting, TimestampSpec) and isinstance(ending, TimestampSpec):
        s, e, unit = starting.specific, ending.specific, "timestamp"
        if starting.timestamp is not None or ending.timestamp is not None:
            return  # Spark compares per-partition maps only (resolved offsets later)
    else:
        return
    if set(s) != set(e):
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, "DIFFERENT_PARTITIONS", option=starting.option,
            option2=ending.option, value=_tp_list(set(s) - set(e)) or 'none',
            value2=_tp_list(set(e) - set(s)) or 'none')
    for (t, p), start in sorted(s.items()):
        end = e[(t, p)]
        if start >= 0 and end >= 0 and start > end:
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "START_AFTER_END", unit=unit, start=start, topic=t,
                partition=p, end=end, option=starting.option, option2=ending.option)
