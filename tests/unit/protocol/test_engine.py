"""The layout engine itself: versions, nullability, defaults, tagged fields, strictness."""

from __future__ import annotations

import pytest

from spark_kafka_wire.client.fetching.offsets import fetch_body
from spark_kafka_wire.protocol.engine import NULL_UUID, ApiSpec, Field, Versions
from spark_kafka_wire.protocol.errors import LocalProtocolError, MessageEncodeError, ProtocolError
from spark_kafka_wire.protocol.messages import CREATE_TOPICS, FETCH, METADATA
from tests.support.errors import raises_condition

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
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "trailing"):
        DEMO.decode_request(0, good + b"\x00")


def test_unimplemented_version_is_refused() -> None:
    with raises_condition(LocalProtocolError, "KAFKAWIRE_LOCAL_PROTOCOL.VERSION_NOT_IMPLEMENTED",
                          "not implemented") as err:
        FETCH.encode_request(FETCH.max_version + 1, {})
    assert isinstance(err.value, ValueError)
    assert err.value.parameters["version"] == FETCH.max_version + 1


@pytest.mark.parametrize("cut", range(1, 40))
def test_truncated_messages_raise_protocol_error(cut: int) -> None:
    body = CREATE_TOPICS.encode_response(7, {
        "throttle_time_ms": 0, "topics": [{"name": "topic-a", "topic_id": NULL_UUID, "error_code": 0, "error_message": None,
                    "num_partitions": 3, "replication_factor": 1, "configs": [],
                    "topic_config_error_code": 4}]})
    with pytest.raises(ProtocolError):
        CREATE_TOPICS.decode_response(7, body[: len(body) - cut])


# ---------------------------------------------------------------------------- strict encoding


def test_a_misspelt_key_is_refused_naming_api_version_and_field() -> None:
    body = dict(fetch_body({("t", 0): 5}, 1, 1, 500, 1, 1))
    body["isolation_levl"] = body.pop("isolation_level")
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          r"Fetch v11 request: unknown field\(s\) "
                          r"isolation_levl") as err:
        FETCH.encode_request(11, body)
    assert (err.value.api, err.value.version, err.value.path) == ("Fetch", 11, "")
    # this side's mistake, not the broker's bytes (which a reader retries): h11's split
    assert isinstance(err.value, LocalProtocolError) and isinstance(err.value, ValueError)
    assert not isinstance(err.value, ProtocolError)


def test_unknown_keys_are_refused_inside_arrays_of_structs() -> None:
    body = fetch_body({("t", 0): 5, ("t", 1): 6}, 1, 1, 500, 1, 0)
    body["topics"][0]["partitions"][1]["fetch_ofset"] = 6
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          r"at topics\[0\]\.partitions\[1\]: unknown "
                          r"field\(s\) fetch_ofset"):
        FETCH.encode_request(4, body)


def test_a_missing_field_without_default_is_refused_and_one_with_a_default_filled() -> None:
    body = fetch_body({("t", 0): 5}, 1, 1, 500, 1, 1)
    del body["topics"][0]["partitions"][0]["fetch_offset"]
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          r"Fetch v0 request at topics\[0\]\."
                          r"partitions\[0\]: missing field\(s\) fetch_offset"):
        FETCH.encode_request(0, body)
    # replica_id, max_bytes, session_epoch ... have declared defaults: left out, they are sent
    full = fetch_body({("t", 0): 5}, 1, 1, 500, 1, 1)
    assert FETCH.decode_request(11, FETCH.encode_request(11, full))["replica_id"] == -1


def test_a_missing_field_of_another_version_only_is_not_required() -> None:
    # isolation_level exists from v4: a v3 request need not name it, a v4 one must
    body = {"max_wait_ms": 1, "min_bytes": 1, "topics": []}
    FETCH.encode_request(3, body)
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          "missing field.*isolation_level"):
        FETCH.encode_request(4, body)


def test_fields_of_newer_versions_are_version_negotiation_not_errors() -> None:
    body = fetch_body({("t", 0): 5}, 1, 1, 500, 1, 1)  # isolation_level: v4+, max_bytes: v3+
    assert FETCH.decode_request(0, FETCH.encode_request(0, body))["isolation_level"] == 0
    assert DEMO.encode_request(0, {"a": 1, "items": [], "t0": 3}) == bytes.fromhex(
        "00000001" "00000000")  # a tagged field of v2+ is not written in v0


def test_a_wrong_value_names_its_field_path() -> None:
    body = fetch_body({("t", 0): 5}, 1, 1, 500, 1, 1)
    body["topics"][0]["partitions"][0]["partition_max_bytes"] = "1 MB"
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          r"at topics\[0\]\.partitions\[0\]\."
                          r"partition_max_bytes: cannot encode '1 MB' as int32"):
        FETCH.encode_request(11, body)
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          r"at topics\[0\]: a struct must be a dict"):
        FETCH.encode_request(11, {**body, "topics": [("t", [])]})


def test_responses_are_encoded_as_strictly() -> None:
    with raises_condition(MessageEncodeError, "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE",
                          r"CreateTopics v7 response: missing "
                          r"field\(s\) throttle_time_ms"):
        CREATE_TOPICS.encode_response(7, {"topics": []})
