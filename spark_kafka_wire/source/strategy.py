"""What a source reads: Spark's three strategies (subscribe, subscribePattern, assign).

Exactly one must be given, with Spark's error messages (KafkaSourceProvider).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    MISSING_OPTION,
    ConfigurationError,
)
from spark_kafka_wire.client.metadata.cluster import TopicPartition, check_topic_name
from spark_kafka_wire.options import option
from spark_kafka_wire.protocol.errors import shown
from spark_kafka_wire.source.limits import load_json, partition_number

SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN = (option("subscribe"), option("subscribePattern"),
                                        option("assign"))


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


def parse_strategy(opts: dict[str, str]) -> Strategy:
    chosen = [o for o in (SUBSCRIBE, SUBSCRIBE_PATTERN, ASSIGN) if o.key in opts]
    if not chosen:
        raise ConfigurationError.of(MISSING_OPTION, "SUBSCRIPTION")
    if len(chosen) > 1:
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, "SUBSCRIPTIONS",
            chosen=', '.join(o.name for o in chosen))
    value = opts[chosen[0].key]
    if chosen[0] is SUBSCRIBE:
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise ConfigurationError.of(
                INVALID_VALUE, "SUBSCRIBE_NO_TOPIC", value=shown(value))
        for t in topics:
            check_topic_name(t, "option 'subscribe'")
        return Subscribe(topics)
    if chosen[0] is SUBSCRIBE_PATTERN:
        pattern = value.strip()
        if not pattern:
            raise ConfigurationError.of(
                INVALID_VALUE, "SUBSCRIBE_PATTERN_EMPTY", value=shown(value))
        compile_pattern(pattern)
        return SubscribePattern(pattern)
    text = value.strip()
    example = '{"topicA":[0,1],"topicB":[0]}'
    if not text.startswith("{"):
        raise ConfigurationError.of(
            INVALID_VALUE, "ASSIGN_NOT_JSON", example=example, value=shown(value))
    doc = load_json(text, "option 'assign'", example)
    if not isinstance(doc, dict) or not all(isinstance(v, list) for v in doc.values()):
        raise ConfigurationError.of(
            INVALID_VALUE, "ASSIGN_NOT_JSON", example=example, value=shown(value))
    tps: list[TopicPartition] = []
    for topic, parts in doc.items():
        check_topic_name(topic, "option 'assign'")
        for p in parts:
            tps.append((topic, partition_number(p, topic, "option 'assign'", key=False)))
    return Assign(tuple(dict.fromkeys(sorted(tps))))


# Java regex syntax Python's re does not read, and what to write instead.
_JAVA_ONLY = (
    (re.compile(r"\(\?<(?![=!])"), "(?P<name>...) for a named group, not Java's (?<name>...)"),
    (re.compile(r"\\Q"), "the text escaped (re.escape) instead of Java's \\Q...\\E"),
    (re.compile(r"\\[pP]\{"), "a class such as [A-Za-z] instead of Java's \\p{...}"),
    (re.compile(r"&&\["), "a plain class instead of Java's intersection [...&&[...]]"),
)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """``subscribePattern`` compiled, or ConfigurationError saying why (with a hint for the
    Java syntax a pattern written for Spark's kafka source may hold)."""
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        reason = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
        hints = [hint for java, hint in _JAVA_ONLY if java.search(pattern)]
        raise ConfigurationError.of(
            INVALID_VALUE, "SUBSCRIBE_PATTERN_NOT_REGEX", reason=reason,
            write=f"; write {'; '.join(hints)}" if hints else "") from None
