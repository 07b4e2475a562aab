"""Framing, headers and ApiVersions negotiation, against the layouts of Kafka's protocol guide
(https://kafka.apache.org/protocol) and Kafka's rules."""

from __future__ import annotations

import struct

import pytest

from spark_kafka_wire.protocol import framing
from spark_kafka_wire.protocol.errors import ProtocolError, UnsupportedVersionError
from spark_kafka_wire.protocol.messages import API_VERSIONS, FETCH, METADATA, PRODUCE
from spark_kafka_wire.protocol.primitives import Writer
from spark_kafka_wire.protocol.versions import choose_version, parse_api_versions
from tests.support.errors import raises_condition


def test_metadata_v0_request_matches_the_protocol_guide_grammar() -> None:
    # The guide's grammar: RequestOrResponse => Size RequestMessage; RequestMessage => ApiKey ApiVersion
    # CorrelationId ClientId MetadataRequest; MetadataRequest => [TopicName]; string = int16 len.
    frame = framing.encode_request(METADATA, 0, 7, "cli", {"topics": [{"name": "ab"}]})
    expected_body = (
        struct.pack(">hhi", 3, 0, 7) + b"\x00\x03cli" + struct.pack(">i", 1) + b"\x00\x02ab"
    )
    assert frame == struct.pack(">i", len(expected_body)) + expected_body


def test_flexible_request_uses_header_v2_with_classic_client_id() -> None:
    frame = framing.encode_request(METADATA, 9, 1, "c", {"topics": None})
    # size, key 3, version 9, correlation 1, client id as int16 string, empty tag section
    assert frame[4:15] == struct.pack(">hhi", 3, 9, 1) + b"\x00\x01c"
    assert frame[15] == 0  # header tagged fields
    assert framing.request_header_version(METADATA, 9) == 2
    assert framing.request_header_version(METADATA, 8) == 1


def test_null_client_id_is_int16_minus_one() -> None:
    frame = framing.encode_request(API_VERSIONS, 0, 1, None, {})
    assert frame[12:14] == b"\xff\xff"


def test_response_header_versions() -> None:
    assert framing.response_header_version(FETCH, 11) == 0
    assert framing.response_header_version(METADATA, 9) == 1
    # ApiVersions responses always use header v0, even in flexible versions
    assert framing.response_header_version(API_VERSIONS, 3) == 0


def test_split_response_skips_header_tagged_fields() -> None:
    w = Writer()
    w.int32(42)
    w.uvarint(1)  # one tagged field
    w.uvarint(5)
    w.uvarint(2)
    w.raw(b"zz")
    w.raw(b"BODY")
    cid, body = framing.split_response(METADATA, 9, w.getvalue())
    assert cid == 42 and bytes(body) == b"BODY"
    cid, body = framing.split_response(METADATA, 8, b"\x00\x00\x00\x2aBODY")
    assert cid == 42 and bytes(body) == b"BODY"


@pytest.mark.parametrize("size", [-1, (1 << 30) + 1])
def test_absurd_frame_size_is_rejected_before_allocating(size: int) -> None:
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL", "not speaking Kafka"):
        framing.frame_size(struct.pack(">i", size))


def _v0_body(error: int, ranges: list[tuple[int, int, int]]) -> bytes:
    return API_VERSIONS.encode_response(
        0, {"error_code": error,
            "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in ranges]},
    )


def test_api_versions_fallback_retries_with_broker_range() -> None:
    # A broker that knows ApiVersions only up to v2 answers our v3 with error 35 in a v0 body.
    result = parse_api_versions(3, _v0_body(35, [(18, 0, 2)]))
    assert result.retry_version == 2
    ok = parse_api_versions(2, API_VERSIONS.encode_response(
        2, {"error_code": 0, "api_keys": [{"api_key": 1, "min_version": 0, "max_version": 11}],
            "throttle_time_ms": 0}))
    assert ok.retry_version is None and ok.ranges == {1: (0, 11)}


def test_api_versions_fallback_without_list_retries_v0() -> None:
    assert parse_api_versions(3, _v0_body(35, [])).retry_version == 0


def test_choose_version_picks_highest_common() -> None:
    assert choose_version(FETCH, {1: (0, 17)}) == FETCH.max_version
    assert choose_version(FETCH, {1: (0, 6)}) == 6
    assert choose_version(PRODUCE, {0: (3, 13)}) == PRODUCE.max_version


def test_choose_version_fails_clearly_without_common_version() -> None:
    with raises_condition(UnsupportedVersionError, "KAFKA_BROKER_ERROR.UNSUPPORTED_VERSION",
                          r"no common Fetch version: broker offers 12-17"):
        choose_version(FETCH, {1: (12, 17)}, "b:9092")
    with raises_condition(UnsupportedVersionError, "KAFKA_BROKER_ERROR.UNSUPPORTED_VERSION",
                          "does not offer Produce"):
        choose_version(PRODUCE, {1: (0, 2)})


def test_pinned_release_versions() -> None:
    from spark_kafka_wire.protocol.versions import versions_for_release

    v082 = versions_for_release("0.8.2.2")
    assert v082[0] == (0, 0) and v082[1] == (0, 0) and 18 not in v082
    assert choose_version(FETCH, v082) == 0 and choose_version(PRODUCE, v082) == 0
    v0100 = versions_for_release("0.10.0")
    assert choose_version(PRODUCE, v0100) == 2 and choose_version(METADATA, v0100) == 1
    assert versions_for_release("2.8.1") == versions_for_release("0.11.0")
    with pytest.raises(ValueError, match="unknown broker release"):
        versions_for_release("banana")


def test_large_record_batches_are_spliced_into_the_frame_not_copied() -> None:
    """``encode_request_parts`` keeps byte fields of SPLICE_MIN bytes or more by reference;
    back to back its pieces are the frame ``encode_request`` builds."""
    from spark_kafka_wire.protocol.primitives import SPLICE_MIN

    big, small = bytes(range(256)) * (SPLICE_MIN // 256 + 1), b"tiny"
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 1000, "topic_data": [
        {"name": "t", "partition_data": [{"index": 0, "records": big},
                                         {"index": 1, "records": small},
                                         {"index": 2, "records": memoryview(big)}]}]}
    frame = framing.encode_request(PRODUCE, 8, 5, "cli", body)
    parts = framing.encode_request_parts(PRODUCE, 8, 5, "cli", body)
    assert b"".join(parts) == frame
    assert sum(1 for p in parts if p is big or (isinstance(p, memoryview) and p.obj is big)) == 2
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    w = Writer(splice=True)
    w.nullable_bytes(big)
    w.int8(1)
    assert w.size() == 4 + len(big) + 1 and w.getvalue() == b"".join(w.parts())
