"""Stream offsets are JSON that Spark compares as strings: deterministic key order."""

from __future__ import annotations

import json

from spark_kafka_wire.source.offsets_json import batch_start, from_json, to_json, with_start
from tests.support.errors import raises_condition


def test_sorted_string_keys_and_round_trip() -> None:
    offsets = {("b", 10): 7, ("a", 2): 5, ("b", 2): 1, ("a", 0): 3}
    doc = to_json(offsets)
    assert json.dumps(doc) == '{"a": {"0": 3, "2": 5}, "b": {"10": 7, "2": 1}}'
    assert from_json(doc) == offsets
    # the same offsets built in any order serialize identically
    assert json.dumps(to_json(dict(reversed(list(offsets.items()))))) == json.dumps(doc)


def test_a_batch_end_records_where_it_began() -> None:
    end = with_start({("t", 0): 9, ("t", 1): 4}, {("t", 1): 0})
    assert json.dumps(end) == '{"t": {"0": 9, "1": 4}, "@start": {"t": {"1": 0}}}'
    # the recorded start is not an offset of the batch's end
    assert from_json(end) == {("t", 0): 9, ("t", 1): 4}
    # it overrides the start Spark hands over (asked anew after a restart)
    assert batch_start({"t": {"0": 7, "1": 2}}, end) == {("t", 0): 7, ("t", 1): 0}
    assert batch_start({"t": {"0": 7}}, to_json({("t", 0): 9})) == {("t", 0): 7}
    # nothing recorded: the end is plain Spark-style JSON
    assert with_start({("t", 0): 9}, {}) == {"t": {"0": 9}}


def test_kafka07_offsets_translate_between_layouts_by_name() -> None:
    """0.7's partition numbers are positions in a layout (client/kafka07/cluster.py); a
    stream's offsets record it and are renumbered by name when brokers come or go."""
    from spark_kafka_wire.client.errors import CheckpointError
    from spark_kafka_wire.source.offsets_json import LAYOUT_KEY, recorded_layout, translate

    old = {"t": ("1-0", "1-1", "2-0", "2-1")}
    doc = with_start({("t", 0): 5, ("t", 3): 9}, {}, 4, old)
    assert doc[LAYOUT_KEY] == {"t": ["1-0", "1-1", "2-0", "2-1"]}
    assert recorded_layout(doc) == old and from_json(doc) == {("t", 0): 5, ("t", 3): 9}
    assert recorded_layout(to_json({("t", 0): 1})) is None
    # broker 1 left: 2-0 and 2-1 are now 0 and 1; broker 0 joined before broker 2
    new = {"t": ("0-0", "2-0", "2-1")}
    offsets = {("t", 0): 5, ("t", 1): 6, ("t", 2): 7, ("t", 3): 9}
    assert translate(offsets, old, new) == ({("t", 1): 7, ("t", 2): 9},
                                            [(("t", 0), "1-0"), (("t", 1), "1-1")])
    assert translate(offsets, None, new) == (offsets, [])
    with raises_condition(CheckpointError, "KAFKAWIRE_CHECKPOINT",
                          "partition 5 of 't' is not in the recorded layout"):
        translate({("t", 5): 1}, old, new)
    with raises_condition(CheckpointError, "KAFKAWIRE_CHECKPOINT",
                          "not topics mapped to partition names"):
        recorded_layout({LAYOUT_KEY: {"t": [1, 2]}})
