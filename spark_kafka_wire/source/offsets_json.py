"""Stream offsets as JSON: what Spark checkpoints for a kafkawire stream.

``{"topic": {"partition": next_offset}}`` as in Spark's own Kafka source, with keys in sorted
order because Spark compares serialized offsets as strings. A batch's end may also record where
the batch began (``START_KEY``).
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_kafka_wire.client.cluster import TopicPartition

Offsets = dict[TopicPartition, int]

START_KEY = "@start"
"""Key of a batch end's JSON that holds where the batch began for the partitions whose start
Spark would otherwise ask for again: every partition of a query's first batch (a restarted
query asks ``initialOffset()`` anew, and ``latest`` has moved on) and partitions that appeared
during a later batch (their earliest offset can move with retention). Spark writes the end
offsets to the checkpoint before it runs the batch, so this makes the range durable, as
Spark's own Kafka source does by writing its initial offsets to the checkpoint. ``@`` cannot
occur in a Kafka topic name, so the key never collides with a topic."""


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for topic in sorted({t for t, _ in offsets}):
        parts = {str(p): o for (t, p), o in offsets.items() if t == topic}
        out[topic] = {k: parts[k] for k in sorted(parts)}
    return out


def from_json(doc: Mapping[str, Mapping[str, int]]) -> Offsets:
    """The offsets a JSON document names (its recorded batch start, if any, left out)."""
    return {(t, int(p)): int(o) for t, parts in doc.items() if t != START_KEY
            for p, o in parts.items()}


def with_start(end: Offsets, began: Mapping[TopicPartition, int]) -> dict:
    """``end`` as JSON, recording where the batch began for the partitions in ``began``."""
    doc: dict = to_json(end)
    if began:
        doc[START_KEY] = to_json(began)
    return doc


def batch_start(start: Mapping, end: Mapping) -> Offsets:
    """Where the batch from ``start`` to ``end`` begins: ``start``, overridden by the start
    that ``end`` recorded when it was planned."""
    begin = from_json(start)
    begin.update(from_json(end.get(START_KEY, {})))
    return begin
