"""Stream offsets as JSON: what Spark checkpoints for a kafkawire stream.

``{"topic": {"partition": next_offset}}`` as in Spark's own Kafka source, with keys in sorted
order because Spark compares serialized offsets as strings. A batch's end may also record where
the batch began (``START_KEY``).
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_kafka_wire.client.cluster import TopicPartition
from spark_kafka_wire.client.errors import CheckpointError
from spark_kafka_wire.protocol.errors import shown

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


_MAX_PARTITION = 2**31 - 1
_MAX_OFFSET = 2**63 - 1


def _damaged(what: str) -> CheckpointError:
    return CheckpointError(
        f"stream checkpoint offsets: {what}. kafkawire writes {{\"topic\": {{\"partition\": "
        "offset}}}; the checkpoint was edited, damaged or written by another source: restore "
        "it, or start the query with a new checkpointLocation")


def from_json(doc: Mapping[str, Mapping[str, int]]) -> Offsets:
    """The offsets a JSON document names (its recorded batch start, if any, left out).

    CheckpointError, naming the value that is wrong, for anything but what :func:`to_json`
    writes: Spark hands back whatever the checkpoint holds."""
    if not isinstance(doc, Mapping):
        raise _damaged(f"expected a JSON object, got {shown(doc)}")
    out: Offsets = {}
    for topic, parts in doc.items():
        if topic == START_KEY:
            continue
        if not isinstance(topic, str) or not isinstance(parts, Mapping):
            raise _damaged(f"topic {shown(topic)} maps to {shown(parts)}, not to an object of "
                           "partitions")
        for p, offset in parts.items():
            if not isinstance(p, str) or not p.isascii() or not p.isdigit() \
                    or len(p) > 10 or int(p) > _MAX_PARTITION:
                raise _damaged(f"{shown(p)} in topic {topic!r} is not a partition number")
            if not isinstance(offset, int) or isinstance(offset, bool) \
                    or not 0 <= offset <= _MAX_OFFSET:
                raise _damaged(f"the offset of {topic}-{p} is {shown(offset)}, not an offset "
                               f"(0 to {_MAX_OFFSET})")
            out[(topic, int(p))] = offset
    return out


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
    if not isinstance(end, Mapping):
        raise _damaged(f"expected a JSON object, got {shown(end)}")
    begin.update(from_json(end.get(START_KEY, {})))
    return begin
