"""Stream offsets are JSON that Spark compares as strings: deterministic key order."""

from __future__ import annotations

import json

from spark_kafka_wire.stream_reader import from_json, to_json


def test_sorted_string_keys_and_round_trip() -> None:
    offsets = {("b", 10): 7, ("a", 2): 5, ("b", 2): 1, ("a", 0): 3}
    doc = to_json(offsets)
    assert json.dumps(doc) == '{"a": {"0": 3, "2": 5}, "b": {"10": 7, "2": 1}}'
    assert from_json(doc) == offsets
    # the same offsets built in any order serialize identically
    assert json.dumps(to_json(dict(reversed(list(offsets.items()))))) == json.dumps(doc)
