"""Kafka 0.7's protocol (spark_kafka_wire.protocol.kafka07) against byte vectors laid out by hand.

Every vector is written field by field from "Writing a Driver for Kafka" (Request Header,
Response Header, Message for 0.6 and 0.7, Produce, Fetch, Offsets), the 0.7 "Wire Format"
page (Multi-Fetch) and the Kafka design document (MultiMessageSetSend); compressed payloads
are written by hand too (a gzip member with one stored deflate block, RFC 1952/1951; a raw
snappy literal; snappy-java's stream header). The encoders must produce these bytes and the
decoders must read them.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from spark_kafka_wire.protocol.errors import (
    ERRORS,
    CorruptRecordError,
    ErrorCode,
    InvalidFetchSizeError,
    InvalidMessageError,
    Kafka07ErrorCode,
    KafkaError,
    OffsetInsideMessageError,
    OffsetOutOfRangeError,
    ProtocolError,
    WrongPartitionError,
    check_kafka07_error,
    kafka07_error_for_code,
)
from spark_kafka_wire.protocol.kafka07 import (
    EARLIEST_TIME,
    LATEST_TIME,
    FetchSpec,
    RequestType,
    decode_message_set,
    decode_multifetch,
    decode_offsets,
    encode_fetch,
    encode_message,
    encode_message_set,
    encode_multifetch,
    encode_multiproduce,
    encode_offsets,
    encode_produce,
    expects_answer,
    split_answer,
)
from spark_kafka_wire.protocol.versions import is_kafka07, versions_for_release
from tests.support.errors import raises_condition


def h(text: str) -> bytes:
    """Hex with spaces, '#' comments and line breaks."""
    return bytes.fromhex("".join(line.split("#")[0] for line in text.splitlines()))


# Message (0.6 and earlier): LENGTH | MAGIC 0 | CHECKSUM (CRC32 of PAYLOAD) | PAYLOAD
M0_HELLO = h("0000000a 00 3610a686 68656c6c6f")  # LENGTH 10 = 1 + 4 + 5
M0_WORLD = h("0000000a 00 3a771143 776f726c64")
# Message (0.7): LENGTH | MAGIC 1 | COMPRESSION | CHECKSUM | PAYLOAD
M1_HELLO = h("0000000b 01 00 3610a686 68656c6c6f")  # LENGTH 11 = 1 + 1 + 4 + 5
M1_A = h("00000007 01 00 e8b7be43 61")  # "a"
M1_B = h("00000007 01 00 71beeff9 62")  # "b"
INNER_AB = M1_A + M1_B  # 22 bytes


def gzip_stored(data: bytes) -> bytes:
    """A gzip member holding ``data`` in one stored deflate block (RFC 1952 / 1951)."""
    n = len(data)
    return (h("1f8b 08 00 00000000 00 ff") + bytes([1]) + struct.pack("<HH", n, n ^ 0xFFFF)
            + data + struct.pack("<II", zlib.crc32(data), n))


def snappy_literal(data: bytes) -> bytes:
    """A raw snappy block: varint length, one literal: tag (len-1) << 2 up to 60 bytes, else
    tag 60 << 2 and one byte len-1 (up to 127 bytes here, for a one-byte varint)."""
    n = len(data)
    assert 0 < n < 128
    tag = bytes([(n - 1) << 2]) if n <= 60 else bytes([60 << 2, n - 1])
    return bytes([n]) + tag + data


def xerial(raw_block: bytes) -> bytes:
    """snappy-java's stream: magic 82 'SNAPPY' 00, version 1, compatible 1, int32 + block."""
    return h("82534e4150505900 00000001 00000001") + struct.pack(">i", len(raw_block)) + raw_block


def wrapper(codec: int, payload: bytes) -> bytes:
    """A compressed message (magic 1, COMPRESSION codec) around ``payload``, by hand."""
    return struct.pack(">ibbI", 6 + len(payload), 1, codec, zlib.crc32(payload)) + payload


def test_the_hand_laid_constants() -> None:
    assert zlib.crc32(b"hello") == 0x3610A686 and zlib.crc32(b"world") == 0x3A771143
    assert zlib.crc32(b"a") == 0xE8B7BE43 and zlib.crc32(b"b") == 0x71BEEFF9
    import gzip

    import cramjam
    assert gzip.decompress(gzip_stored(INNER_AB)) == INNER_AB
    assert bytes(cramjam.snappy.decompress_raw(snappy_literal(INNER_AB))) == INNER_AB


# -- requests -------------------------------------------------------------------------------


def test_produce_request() -> None:
    assert encode_produce("test", 0, M0_HELLO + M0_WORLD) == h("""
        0000002c          # REQUEST_LENGTH 44 = 2 + 2 + 4 + 4 + 4 + 28
        0000              # PRODUCE
        0004 74657374     # TOPIC_LENGTH 4, "test"
        00000000          # PARTITION 0
        0000001c          # MESSAGES_LENGTH 28
    """) + M0_HELLO + M0_WORLD


def test_fetch_request() -> None:
    assert encode_fetch("test", 3, 14, 1000) == h("""
        00000018 0001 0004 74657374 00000003
        000000000000000e  # OFFSET 14
        000003e8          # MAX_SIZE 1000
    """)


def test_offsets_requests() -> None:
    assert encode_offsets("test", 0, LATEST_TIME, 10) == h(
        "00000018 0004 0004 74657374 00000000 ffffffffffffffff 0000000a")
    assert encode_offsets("test", 0, EARLIEST_TIME, 1) == h(
        "00000018 0004 0004 74657374 00000000 fffffffffffffffe 00000001")
    assert encode_offsets("test", 1, 1_700_000_000_000, 5) == h(
        "00000018 0004 0004 74657374 00000001 0000018bcfe56800 00000005")


def test_multifetch_request() -> None:
    assert encode_multifetch([FetchSpec("test", 0, 0, 1000), FetchSpec("ab", 1, 28, 300)]) == h("""
        0000002e          # REQUEST_LENGTH 46 = 2 + 2 + 22 + 20
        0002              # MULTIFETCH
        0002              # two FETCHes
        0004 74657374 00000000 0000000000000000 000003e8
        0002 6162     00000001 000000000000001c 0000012c
    """)


def test_multiproduce_request() -> None:
    assert encode_multiproduce([("test", 0, M0_HELLO), ("test", 1, M0_WORLD)]) == h("""
        0000003c          # REQUEST_LENGTH 60 = 2 + 2 + 28 + 28
        0003              # MULTIPRODUCE
        0002              # two PRODUCEs
        0004 74657374 00000000 0000000e 0000000a 00 3610a686 68656c6c6f
        0004 74657374 00000001 0000000e 0000000a 00 3a771143 776f726c64
    """)


def test_request_types_and_answers() -> None:
    assert [int(t) for t in RequestType] == [0, 1, 2, 3, 4]
    assert not expects_answer(RequestType.PRODUCE) and not expects_answer(RequestType.MULTIPRODUCE)
    assert expects_answer(RequestType.FETCH) and expects_answer(RequestType.OFFSETS)
    with pytest.raises(ValueError):
        encode_fetch("", 0, 0, 1)
    with pytest.raises(UnicodeEncodeError):
        encode_fetch("tópico", 0, 0, 1)


# -- messages -------------------------------------------------------------------------------


def test_message_encoding_matches_the_hand_layout() -> None:
    assert encode_message(b"hello", magic=0) == M0_HELLO
    assert encode_message(b"hello") == M1_HELLO
    assert encode_message_set([b"a", b"b"]) == INNER_AB
    assert encode_message_set([b"hello", b"world"], magic=0) == M0_HELLO + M0_WORLD
    assert encode_message(b"", magic=0) == h("00000005 00 00000000")
    assert encode_message(gzip_stored(INNER_AB), codec=1) == wrapper(1, gzip_stored(INNER_AB))
    with pytest.raises(ValueError):
        encode_message(b"x", magic=0, codec=1)
    with pytest.raises(ProtocolError):
        encode_message_set([b"x"], compression="lz4")


@pytest.mark.parametrize("codec", ["gzip", "snappy"])
def test_compressed_sets_are_one_wrapper_that_decodes_back(codec: str) -> None:
    data = encode_message_set([b"a", b"b"], compression=codec)
    assert struct.unpack_from(">ibb", data) == (len(data) - 4, 1, 1 if codec == "gzip" else 2)
    if codec == "snappy":  # snappy-java's stream framing, as 0.7 writes
        assert data[10:18] == h("82534e4150505900")
    read = decode_message_set(data, 500)
    assert read.records.offsets.tolist() == [500, 500]
    assert read.records.values.to_pylist() == [b"a", b"b"]


# -- FETCH answers ----------------------------------------------------------------------------

LOG = M0_HELLO + M0_WORLD + M1_HELLO  # offsets 0, 14, 28; log end 43


def test_split_answer_and_a_whole_fetch() -> None:
    code, body = split_answer(h("0000") + LOG)
    assert code == 0 and bytes(body) == LOG
    read = decode_message_set(body, 0)
    assert read.records.offsets.tolist() == [0, 14, 28]
    assert read.records.values.to_pylist() == [b"hello", b"world", b"hello"]
    assert read.records.keys.null_count == 3
    assert read.records.timestamps.tolist() == [-1] * 3
    assert read.records.timestamp_types.tolist() == [-1] * 3
    assert read.records.timestamp_types.dtype == np.int32
    assert (read.next_offset, read.messages, read.partial_bytes) == (43, 3, 0)
    assert read.records.next_offset == 43
    with pytest.raises(ProtocolError):
        split_answer(b"\x00")


def test_offsets_are_the_fetch_start_plus_the_position() -> None:
    read = decode_message_set(M0_WORLD + M1_HELLO, 1_000_014)
    assert read.records.offsets.tolist() == [1_000_014, 1_000_028]
    assert read.next_offset == 1_000_043


@pytest.mark.parametrize("cut", [1, 3, 4, 5, 9, 13])
def test_an_answer_cut_inside_the_last_message_ends_before_it(cut: int) -> None:
    # cut 1, 3: inside the LENGTH header ("you get a broken header"); 4: LENGTH only;
    # 5, 9: inside the header fields; 13: inside the payload
    read = decode_message_set(M0_HELLO + M0_WORLD[:cut], 0)
    assert read.records.values.to_pylist() == [b"hello"]
    assert (read.next_offset, read.partial_bytes) == (14, cut)


@pytest.mark.parametrize("cut", [0, 2, 4, 10])
def test_an_answer_holding_no_whole_message(cut: int) -> None:
    read = decode_message_set(M0_HELLO[:cut], 70)
    assert read.records.num_records == 0 and read.messages == 0
    assert read.records.next_offset is None
    assert (read.next_offset, read.partial_bytes) == (70, cut)


def test_end_offset_leaves_out_messages_at_or_past_it() -> None:
    read = decode_message_set(LOG, 0, end_offset=28)
    assert read.records.values.to_pylist() == [b"hello", b"world"]
    assert (read.next_offset, read.partial_bytes) == (28, 15)


def test_gzip_wrapper_records_carry_the_wrapper_offset() -> None:
    body = M0_HELLO + wrapper(1, gzip_stored(INNER_AB)) + M0_WORLD
    read = decode_message_set(body, 100)
    assert read.records.values.to_pylist() == [b"hello", b"a", b"b", b"world"]
    assert read.records.offsets.tolist() == [100, 114, 114, 114 + 4 + 6 + 45]
    assert read.messages == 3 and read.next_offset == 100 + len(body)


@pytest.mark.parametrize("framing", ["xerial", "raw"])
def test_snappy_wrapper(framing: str) -> None:
    payload = snappy_literal(INNER_AB)
    if framing == "xerial":
        payload = xerial(payload)
    body = wrapper(2, payload) + M1_HELLO
    read = decode_message_set(body, 0)
    assert read.records.values.to_pylist() == [b"a", b"b", b"hello"]
    assert read.records.offsets.tolist() == [0, 0, len(body) - len(M1_HELLO)]


def test_nested_wrappers() -> None:
    inner_gzip = wrapper(1, gzip_stored(INNER_AB))  # gzip(a, b)
    outer = wrapper(2, xerial(snappy_literal(M1_HELLO + inner_gzip)))  # snappy(hello, gzip(...))
    read = decode_message_set(outer + M0_WORLD, 7)
    assert read.records.values.to_pylist() == [b"hello", b"a", b"b", b"world"]
    assert read.records.offsets.tolist() == [7, 7, 7, 7 + len(outer)]


def test_a_wrapper_cut_short_is_partial() -> None:
    body = M0_HELLO + wrapper(1, gzip_stored(INNER_AB))
    read = decode_message_set(body[:-5], 0)
    assert read.records.values.to_pylist() == [b"hello"] and read.next_offset == 14


def test_a_bad_crc_names_the_byte_offset_topic_partition_and_broker() -> None:
    bad = M0_WORLD[:5] + b"\x00\x00\x00\x00" + M0_WORLD[9:]
    with pytest.raises(CorruptRecordError) as err:
        decode_message_set(M0_HELLO + bad, 200, topic="t", partition=2, broker="h:9092")
    assert not isinstance(err.value, OffsetInsideMessageError)
    e = err.value
    assert (e.topic, e.partition, e.offset, e.broker) == ("t", 2, 214, "h:9092")
    assert "CRC32 mismatch" in str(e) and "214" in str(e)
    # without the CRC check the bytes come through
    assert decode_message_set(M0_HELLO + bad, 0, check_crcs=False).records.num_records == 2


def test_a_bad_crc_inside_a_wrapper() -> None:
    bad_inner = M1_A[:6] + b"\x00\x00\x00\x00" + M1_A[10:] + M1_B
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "inside the compressed message") as err:
        decode_message_set(M0_HELLO + wrapper(1, gzip_stored(bad_inner)), 0)
    assert err.value.offset == 14


def test_a_bad_first_crc_at_a_known_boundary_is_corruption() -> None:
    bad = M0_HELLO[:5] + b"\xff\xff\xff\xff" + M0_HELLO[9:]
    with pytest.raises(OffsetInsideMessageError):
        decode_message_set(bad, 0)
    with pytest.raises(CorruptRecordError) as err:
        decode_message_set(bad, 0, start_is_boundary=True)
    assert not isinstance(err.value, OffsetInsideMessageError)


@pytest.mark.parametrize("inside", [2, 5, 9, 16, 20])
def test_an_answer_from_an_offset_inside_a_message(inside: int) -> None:
    # The broker sends the log's bytes from any offset: from 2, LENGTH reads 000a0036 and
    # MAGIC 0x10; from 5, LENGTH 3610a686 and MAGIC 0x68 ...
    with raises_condition(OffsetInsideMessageError, "KAFKAWIRE_PROTOCOL.OFFSET_INSIDE_MESSAGE",
                          "inside a message") as err:
        decode_message_set(LOG[inside:], inside, topic="t", partition=0, broker="b:1")
    assert err.value.offset == inside and err.value.topic == "t"


def test_impossible_headers_after_a_good_message_are_corruption() -> None:
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "MAGIC 7"):
        decode_message_set(M0_HELLO + h("0000000a 07 3a771143 776f726c64"), 0)
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "LENGTH 2"):
        decode_message_set(M0_HELLO + h("00000002 0000"), 0)
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "COMPRESSION byte 0x03"):  # lz4: not in 0.7
        decode_message_set(M0_HELLO + h("0000000b 01 03 3610a686 68656c6c6f"), 0)


def test_a_wrapper_that_does_not_decompress() -> None:
    with pytest.raises(CorruptRecordError) as err:
        decode_message_set(M0_HELLO + wrapper(1, b"not gzip"), 0)
    assert err.value.offset == 14


# -- OFFSETS and MULTIFETCH answers ----------------------------------------------------------


def test_offsets_answer() -> None:
    code, body = split_answer(h("""
        0000                  # NoError
        00000002              # NUMBER_OFFSETS
        000000000000001c      # the log end, 28
        0000000000000000      # the segment start
    """))
    assert code == 0 and decode_offsets(body) == [28, 0]
    assert decode_offsets(h("00000000")) == []
    with pytest.raises(ProtocolError):
        decode_offsets(h("00000002 0000000000000001"))


def test_multifetch_answer() -> None:
    answer = h("""
        0000                  # NoError for the whole answer
        0000001e 0000         # part 1: SIZE 30 = 2 + 28, NoError
    """) + M0_HELLO + M0_WORLD + h("""
        00000002 0003         # part 2: SIZE 2, WrongPartition, no messages
        00000007 0000         # part 3: SIZE 7, NoError, 5 bytes of a cut message
    """) + M0_HELLO[:5]
    code, body = split_answer(answer)
    parts = decode_multifetch(body, 3)
    assert code == 0 and [c for c, _ in parts] == [0, 3, 0]
    assert bytes(parts[0][1]) == M0_HELLO + M0_WORLD and bytes(parts[1][1]) == b""
    assert decode_message_set(parts[2][1], 0).records.num_records == 0
    with pytest.raises(ProtocolError):
        decode_multifetch(body, 4)
    with pytest.raises(ProtocolError):
        decode_multifetch(body, 2)


# -- error codes ------------------------------------------------------------------------------


def test_kafka07_error_codes_are_their_own_table() -> None:
    assert [int(c) for c in Kafka07ErrorCode] == [-1, 0, 1, 2, 3, 4]
    cases = {1: OffsetOutOfRangeError, 2: InvalidMessageError, 3: WrongPartitionError,
             4: InvalidFetchSizeError, -1: KafkaError}
    for code, cls in cases.items():
        err = kafka07_error_for_code(code, topic="t", partition=1, offset=28, broker="b:1")
        assert type(err) is cls and err.code == code
        assert "topic 't'" in str(err) and "offset 28" in str(err) and "b:1" in str(err)
    assert "WrongPartition (3)" in str(kafka07_error_for_code(3))
    assert kafka07_error_for_code(3).invalid_metadata
    # the 0.8+ table keeps its meanings for 2..4
    assert ERRORS[3][0].name == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.name
    assert ERRORS[2][0].name == "CORRUPT_MESSAGE"
    check_kafka07_error(0)
    with pytest.raises(WrongPartitionError):
        check_kafka07_error(3, topic="t")


def test_kafka07_releases() -> None:
    assert is_kafka07("0.7.2") and is_kafka07("0.7") and is_kafka07("0.7.1.1")
    assert not is_kafka07("0.8.2") and not is_kafka07("0.7.9") and not is_kafka07("10.7")
    with pytest.raises(ValueError):
        versions_for_release("0.7.2")  # a 0.8+ connection cannot use a 0.7 broker


def test_an_answer_shorter_than_max_size_ended_at_a_segment_end() -> None:
    # No message is cut at a segment end, so a LENGTH running past a short answer is damage:
    # from byte 1 of M1_HELLO, LENGTH reads 00000b01 (2817) and MAGIC 0x00.
    with pytest.raises(OffsetInsideMessageError):
        decode_message_set(M1_HELLO[1:], 1, max_size=100)
    assert decode_message_set(M1_HELLO[1:], 1).partial_bytes == 14  # no MAX_SIZE: just cut
    with raises_condition(CorruptRecordError, "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD",
                          "runs past the end of the segment"):
        decode_message_set(M0_HELLO + M0_WORLD[:8], 0, max_size=100)
    # as long as MAX_SIZE: cut by it, not an error
    assert decode_message_set(M0_HELLO + M0_WORLD[:8], 0, max_size=22).next_offset == 14


def test_an_arrow_column_of_payloads() -> None:
    import pyarrow as pa

    assert encode_message_set(pa.array([b"a", b"b"])) == INNER_AB
    assert encode_message_set(pa.chunked_array([[b"hello"], [b"world"]]), magic=0) == \
        M0_HELLO + M0_WORLD
    with pytest.raises(ValueError, match="no null payload"):
        encode_message_set(pa.array([b"a", None]))
