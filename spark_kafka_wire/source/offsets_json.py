"""Stream offsets as JSON: what Spark checkpoints for a kafkawire stream.

``{"topic": {"partition": next_offset}}`` as in Spark's own Kafka source, with keys in sorted
order because Spark compares serialized offsets as strings. A batch's end may also record where
the batch began (``START_KEY``) and the task count its ranges were packed for (``TASKS_KEY``).
"""

from __future__ import annotations

from collections.abc import Mapping

from spark_kafka_wire.client.errors import CheckpointError
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.metadata.cluster_api import Layout
from spark_kafka_wire.protocol.errors import shown
from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX

Offsets = dict[TopicPartition, int]

START_KEY = "@start"
"""Key of a batch end's JSON that holds where the batch began for the partitions whose start
Spark would otherwise ask for again: every partition of a query's first batch (a restarted
query asks ``initialOffset()`` anew, and ``latest`` has moved on) and partitions that appeared
during a later batch (their earliest offset can move with retention). Spark writes the end
offsets to the checkpoint before it runs the batch, so this makes the range durable, as
Spark's own Kafka source does by writing its initial offsets to the checkpoint. ``@`` cannot
occur in a Kafka topic name, so the key never collides with a topic."""

TASKS_KEY = "@tasks"
"""Key of a batch end's JSON that holds the number of tasks the batch's small ranges are packed
for when minPartitions is not given (planning.default_task_count, which depends on the CPUs of
the machine the query runs on). A replay after a restart on another machine then packs the
batch into the same tasks, as exactly-once writes need. A batch end without it was written
before kafkawire packed ranges: its ranges are not packed, so its replay is split as it was."""

LAYOUT_KEY = "@layout07"
"""Key of a Kafka 0.7 stream's offsets that holds the layout its partition numbers refer to:
per topic, the partitions' 0.7 names (``<broker id>-<partition>``) in number order. 0.7's
numbering is positional (``client/kafka07/cluster.py``): a broker that leaves or joins
renumbers the partitions after it, so offsets are translated between layouts by name
(:func:`translate`) and a batch is read from the partitions its end's layout names."""

_RECORDED = (START_KEY, TASKS_KEY, LAYOUT_KEY)


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for topic in sorted({t for t, _ in offsets}):
        parts = {str(p): o for (t, p), o in offsets.items() if t == topic}
        out[topic] = {k: parts[k] for k in sorted(parts)}
    return out


_MAX_PARTITION = INT32_MAX
_MAX_OFFSET = INT64_MAX


def from_json(doc: Mapping[str, Mapping[str, int]]) -> Offsets:
    """The offsets a JSON document names (what a batch's end records, if anything, left out).

    CheckpointError, naming the value that is wrong, for anything but what :func:`to_json`
    writes: Spark hands back whatever the checkpoint holds."""
    if not isinstance(doc, Mapping):
        raise CheckpointError(f"expected a JSON object, got {shown(doc)}")
    out: Offsets = {}
    for topic, parts in doc.items():
        if topic in _RECORDED:
            continue
        if not isinstance(topic, str) or not isinstance(parts, Mapping):
            raise CheckpointError(f"topic {shown(topic)} maps to {shown(parts)}, not to an "
                                  "object of partitions")
        for p, offset in parts.items():
            if not isinstance(p, str) or not p.isascii() or not p.isdigit() \
                    or len(p) > 10 or int(p) > _MAX_PARTITION:
                raise CheckpointError(f"{shown(p)} in topic {topic!r} is not a partition number")
            if not isinstance(offset, int) or isinstance(offset, bool) \
                    or not 0 <= offset <= _MAX_OFFSET:
                raise CheckpointError(f"the offset of {topic}-{p} is {shown(offset)}, not an "
                                      f"offset (0 to {_MAX_OFFSET})")
            out[(topic, int(p))] = offset
    return out


def with_start(end: Offsets, began: Mapping[TopicPartition, int], tasks: int | None = None,
               layout: Layout | None = None) -> dict:
    """``end`` as JSON, recording where the batch began for the partitions in ``began`` and,
    when given, the task count its ranges are packed for and (Kafka 0.7) the layout."""
    doc: dict = to_json(end)
    if began:
        doc[START_KEY] = to_json(began)
    if tasks is not None:
        doc[TASKS_KEY] = tasks
    if layout is not None:
        doc[LAYOUT_KEY] = {t: list(layout[t]) for t in sorted(layout)}
    return doc


def recorded_layout(doc: Mapping) -> Layout | None:
    """The Kafka 0.7 layout a document's partition numbers refer to (LAYOUT_KEY), if any."""
    if not isinstance(doc, Mapping):
        raise CheckpointError(f"expected a JSON object, got {shown(doc)}")
    raw = doc.get(LAYOUT_KEY)
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not all(
            isinstance(t, str) and isinstance(names, list)
            and all(isinstance(n, str) for n in names) for t, names in raw.items()):
        raise CheckpointError(f"{LAYOUT_KEY} is {shown(raw)}, not topics mapped to partition names")
    return {t: tuple(names) for t, names in raw.items()}


def translate(offsets: Offsets, old: Layout | None, new: Layout
              ) -> tuple[Offsets, list[tuple[TopicPartition, str]]]:
    """``offsets`` numbered by the ``old`` layout, renumbered by ``new`` through the
    partitions' names; the (old partition, name) of those ``new`` no longer has. Without an
    old layout the numbers are taken as they are."""
    if old is None:
        return dict(offsets), []
    out: Offsets = {}
    vanished: list[tuple[TopicPartition, str]] = []
    for (topic, number), offset in offsets.items():
        names = old.get(topic, ())
        if number >= len(names):
            raise CheckpointError(f"partition {number} of {topic!r} is not in the recorded "
                                  f"layout ({', '.join(names)})")
        name = names[number]
        now = new.get(topic, ())
        if name in now:
            out[(topic, now.index(name))] = offset
        else:
            vanished.append(((topic, number), name))
    return out, vanished


def recorded_tasks(end: Mapping) -> int | None:
    """The task count a batch's end recorded for packing (``TASKS_KEY``), None if none."""
    if not isinstance(end, Mapping):
        raise CheckpointError(f"expected a JSON object, got {shown(end)}")
    tasks = end.get(TASKS_KEY)
    if tasks is None:
        return None
    if not isinstance(tasks, int) or isinstance(tasks, bool) or not 1 <= tasks <= _MAX_PARTITION:
        raise CheckpointError(f"{TASKS_KEY} is {shown(tasks)}, not a task count (1 to "
                              f"{_MAX_PARTITION})")
    return tasks


def batch_start(start: Mapping, end: Mapping) -> Offsets:
    """Where the batch from ``start`` to ``end`` begins: ``start``, overridden by the start
    that ``end`` recorded when it was planned."""
    begin = from_json(start)
    if not isinstance(end, Mapping):
        raise CheckpointError(f"expected a JSON object, got {shown(end)}")
    begin.update(from_json(end.get(START_KEY, {})))
    return begin
