"""The layout engine itself: versions, nullability, defaults, tagged fields, strictness."""

from __future__ import annotations

import pytest

from spark_kafka_wire.protocol.engine import ApiSpec, Field, Versions
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.messages import CREATE_TOPICS, FETCH, METADATA

F = Field
DEMO = ApiSpec(
    key=999, name="Demo", min_version=0, max_version=3, flexible_from=2,
    request=(
        F("a", "int32"),
        F("b", "string", "1+", nullable="1+", default=None),
        F("items", "[]", fields=(F("x", "int16"), F("y", "[]int64", "3+"))),
        F("t0", "int64", "2+", default=-1, tag=0, tagged="2+"),
        F("t5", "string", "2+", nullable="2+", default=None, tag=5, tagged="2+"),
    ),
    response=(),
)


def test_versions_parse() -> None:
    assert 3 in Versions.parse("0+") and 3 not in Versions.parse("4+")
    assert 5 in Versions.parse("3-7") and 8 not in Versions.parse("3-7")
    assert 0 in Versions.parse("0") and 1 not in Versions.parse("0")
    assert 0 not in Versions.parse("none") and 0 not in Versions.parse(None)


def test_fields_outside_a_version_are_neither_written_nor_required() -> None:
    v0 = DEMO.encode_request(0, {"a": 1, "b": "ignored in v0", "items": [{"x": 2}]})
    assert v0 == bytes.fromhex("00000001" "00000001" "0002")
    decoded = DEMO.decode_request(0, v0)
    assert decoded == {"a": 1, "b": None, "items": [{"x": 2, "y": []}], "t0": -1, "t5": None}


def test_tagged_fields_written_only_when_not_default_and_in_tag_order() -> None:
    plain = DEMO.encode_request(2, {"a": 1, "items": []})
    assert plain == bytes.fromhex("00000001" "00" "01" "00")  # null compact string, empty array, no tags
    tagged = DEMO.encode_request(2, {"a": 1, "items": [], "t5": "z", "t0": 7})
    # two tags: tag 0 (8 bytes int64), tag 5 (compact string "z" = 02 7a)
    assert tagged.endswith(bytes.fromhex("02" "00" "08" "0000000000000007" "05" "02" "027a"))
    assert DEMO.decode_request(2, tagged)["t0"] == 7
    assert DEMO.decode_request(2, tagged)["t5"] == "z"


def test_unknown_tagged_fields_are_skipped() -> None:
    body = bytes.fromhex("00000001" "00" "01" "02" "09" "03" "aabbcc" "00" "08" "0000000000000003")
    decoded = DEMO.decode_request(2, body)
    assert decoded["t0"] == 3


def test_non_nullable_null_is_refused_both_ways() -> None:
    with pytest.raises(ValueError, match="cannot be null"):
        METADATA.encode_request(0, {"topics": None})  # null array only from v1
    with pytest.raises(ProtocolError):
        METADATA.decode_request(0, bytes.fromhex("ffffffff"))


def test_trailing_bytes_are_an_error() -> None:
    good = DEMO.encode_request(0, {"a": 1, "items": []})
    with pytest.raises(ProtocolError, match="trailing"):
        DEMO.decode_request(0, good + b"\x00")


def test_unimplemented_version_is_refused() -> None:
    with pytest.raises(ValueError, match="not implemented"):
        FETCH.encode_request(FETCH.max_version + 1, {})


@pytest.mark.parametrize("cut", range(1, 40))
def test_truncated_messages_raise_protocol_error(cut: int) -> None:
    body = CREATE_TOPICS.encode_response(7, {
        "topics": [{"name": "topic-a", "error_code": 0, "error_message": None,
                    "num_partitions": 3, "replication_factor": 1, "configs": [],
                    "topic_config_error_code": 4}]})
    with pytest.raises(ProtocolError):
        CREATE_TOPICS.decode_response(7, body[: len(body) - cut])
