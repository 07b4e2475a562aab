"""What a source reads: Spark's three strategies (subscribe, subscribePattern, assign).

Exactly one must be given, with Spark's error messages (KafkaSourceProvider).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from spark_kafka_wire.client.cluster import TopicPartition
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.options import option

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
