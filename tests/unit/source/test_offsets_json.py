"""Stream offsets are JSON that Spark compares as strings: deterministic key order."""

from __future__ import annotations

import json

from spark_kafka_wire.source.offsets_json import batch_start, from_json, to_json, with_start


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
