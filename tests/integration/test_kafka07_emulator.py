"""The Kafka 0.7 broker emulator (tests/support/kafka07_broker.py), proven on its own.

The emulator is to judge kafkawire's 0.7 codecs, so nothing here touches spark_kafka_wire.
Three kinds of evidence:

1. Byte vectors laid out by hand from the 0.7 documents ("Writing a Driver for Kafka",
   the "Wire Format" wiki page, the design document): whole requests and responses written as
   hex, field by field, sent over a socket, the exact answer bytes compared.
2. An independent 0.7 client, samsa 0.3.11 (tests/support/samsa07, a Python 3 port), producing
   to the emulator and reading back, reading what the emulator's hand-built appends hold, asking
   OFFSETS, and finding the emulated brokers through its ZooKeeper discovery (kazoo).
3. Two brokers x two partitions registered in a real ZooKeeper; segments (a fetch stops at a
   segment end, OFFSETS by segment times); a corrupted CRC seen by readers.
"""

from __future__ import annotations

import gzip
import socket
import struct
import time
import uuid
import zlib
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient

from tests.support.kafka07_broker import (
    CODEC_GZIP,
    CODEC_SNAPPY,
    Kafka07Broker,
    compressed_message,
    decode_deep,
    encode_message,
    encode_message_set,
    snappy_compress,
)
from tests.support.samsa07 import wrap
from tests.support.samsa07.client import OFFSET_EARLIEST, OFFSET_LATEST
from tests.support.samsa07.cluster import Cluster
from tests.support.samsa07.exceptions import OffsetOutOfRangeError, WrongPartitionError


def h(text: str) -> bytes:
    """Hex with spaces, comments after '#' and line breaks allowed."""
    return bytes.fromhex("".join(line.split("#")[0] for line in text.splitlines()))


# -- hand-laid vectors ("Writing a Driver for Kafka": Request Header, Produce, Fetch, Offsets) --

# Message (0.7): LENGTH int32 | MAGIC int8 | [COMPRESSION int8 if MAGIC == 1] | CHECKSUM int32
# (CRC32 of the PAYLOAD) | PAYLOAD.   crc32(b"hello") = 3610a686, crc32(b"world") = 3a771143
MSG_HELLO = h("0000000a 00 3610a686 68656c6c6f")  # LENGTH 10 = 1 + 4 + 5
MSG_WORLD = h("0000000a 00 3a771143 776f726c64")

PRODUCE_TWO_MAGIC0 = h("""
    0000002c             # REQUEST_LENGTH 44 (excluding itself)
    0000                 # REQUEST_TYPE PRODUCE
    0004 74657374        # TOPIC_LENGTH 4, TOPIC "test"
    00000000             # PARTITION 0
    0000001c             # MESSAGES_LENGTH 28
    0000000a 00 3610a686 68656c6c6f   # "hello" (offset 0)
    0000000a 00 3a771143 776f726c64   # "world" (offset 14 = 0 + 4 + 10)
""")

FETCH_0_1000 = h("""
    00000018             # REQUEST_LENGTH 24
    0001                 # FETCH
    0004 74657374 00000000
    0000000000000000     # OFFSET 0
    000003e8             # MAX_SIZE 1000
""")
FETCH_0_1000_ANSWER = h("0000001e 0000") + MSG_HELLO + MSG_WORLD  # RESPONSE_LENGTH 30, NoError

OFFSETS_LATEST_10 = h("""
    00000018 0004 0004 74657374 00000000
    ffffffffffffffff     # TIME -1 (latest)
    0000000a             # MAX_NUMBER 10
""")
OFFSETS_LATEST_10_ANSWER = h("""
    00000016 0000        # RESPONSE_LENGTH 22, NoError
    00000002             # NUMBER_OFFSETS 2, descending:
    000000000000001c     # the high water mark 28 (where the next message goes)
    0000000000000000     # the first offset of the (only) segment
""")
OFFSETS_EARLIEST_10 = h("00000018 0004 0004 74657374 00000000 fffffffffffffffe 0000000a")
OFFSETS_EARLIEST_10_ANSWER = h("0000000e 0000 00000001 0000000000000000")  # 14 = 2+4+8

# A gzip wrapper (magic 1, COMPRESSION 1) around two magic-0 messages "a" and "b". The gzip
# member is written by hand with one stored (uncompressed) deflate block (RFC 1952 / 1951).
INNER_AB = h("""
    00000006 00 e8b7be43 61    # "a"
    00000006 00 71beeff9 62    # "b"
""")
GZIP_AB = h("""
    1f8b 08 00 00000000 00 ff  # gzip header: deflate, no flags, mtime 0, OS unknown
    01 1400 ebff               # final stored block, LEN 20, NLEN ~20 (little-endian)
""") + INNER_AB + h("""
    4db45833                   # CRC32 of the 20 bytes (little-endian 3358b44d)
    14000000                   # ISIZE 20
""")
GZIP_WRAPPER = h("00000031 01 01 c1d6b6d1") + GZIP_AB  # LENGTH 49 = 1+1+4+43, crc32(GZIP_AB)
PRODUCE_GZIP = h("""
    00000045 0000 0004 74657374 00000000   # REQUEST_LENGTH 69, PRODUCE test/0
    00000035                               # MESSAGES_LENGTH 53
""") + GZIP_WRAPPER

# Snappy: a raw block is varint(uncompressed length) + a literal (tag (20-1) << 2); snappy-java's
# SnappyOutputStream (0.7's writer) frames blocks as 82 'SNAPPY' 00, version 1, compatible
# version 1, then int32 length + block.
SNAPPY_RAW_AB = h("14 4c") + INNER_AB
SNAPPY_XERIAL_AB = h("82534e4150505900 00000001 00000001 00000016") + SNAPPY_RAW_AB


def test_the_hand_laid_constants_are_what_the_documents_say() -> None:
    assert zlib.crc32(b"hello") == 0x3610A686 and zlib.crc32(b"world") == 0x3A771143
    assert zlib.crc32(b"a") == 0xE8B7BE43 and zlib.crc32(b"b") == 0x71BEEFF9
    assert zlib.crc32(INNER_AB) == 0x3358B44D and gzip.decompress(GZIP_AB) == INNER_AB
    assert zlib.crc32(GZIP_AB) == 0xC1D6B6D1 and len(GZIP_AB) == 43
    assert len(PRODUCE_TWO_MAGIC0) == 4 + 0x2C and len(PRODUCE_GZIP) == 4 + 0x45
    # The emulator's own encoders agree with the hand layout (tests use them for bulk data).
    assert encode_message(b"hello", magic=0) == MSG_HELLO
    assert encode_message_set([b"a", b"b"], magic=0) == INNER_AB
    assert encode_message(GZIP_AB, magic=1, codec=CODEC_GZIP) == GZIP_WRAPPER
    assert decode_deep(GZIP_WRAPPER) == [(0, b"a"), (0, b"b")]


# -- fixtures and socket helpers ---------------------------------------------------------------


@pytest.fixture
def zk_root(zookeeper: str) -> Iterator[tuple[str, str]]:
    """(connect string, a fresh chroot) on the session's real ZooKeeper."""
    yield zookeeper, f"/kafka07-{uuid.uuid4().hex[:10]}"


def connect(b: Kafka07Broker) -> socket.socket:
    s = socket.create_connection(b.address, timeout=5)
    return s


def recv_exact(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def answer(s: socket.socket) -> bytes:
    """One whole response: RESPONSE_LENGTH and what follows."""
    head = recv_exact(s, 4)
    return head + recv_exact(s, struct.unpack(">i", head)[0])


def exchange(b: Kafka07Broker, *requests: bytes) -> list[bytes]:
    """Send the requests on one connection; the answers of those that have one (not PRODUCE
    or MULTIPRODUCE), in order."""
    with connect(b) as s:
        for r in requests:
            s.sendall(r)
        expected = sum(1 for r in requests if struct.unpack_from(">h", r, 4)[0] not in (0, 3))
        return [answer(s) for _ in range(expected)]


def closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def fetch_request(topic: str, partition: int, offset: int, max_size: int) -> bytes:
    t = topic.encode()
    body = struct.pack(">hh", 1, len(t)) + t + struct.pack(">iqi", partition, offset, max_size)
    return struct.pack(">i", len(body)) + body


def produce_request(topic: str, partition: int, messages: bytes) -> bytes:
    t = topic.encode()
    body = (struct.pack(">hh", 0, len(t)) + t + struct.pack(">ii", partition, len(messages))
            + messages)
    return struct.pack(">i", len(body)) + body


def offsets_request(topic: str, partition: int, when: int, max_number: int) -> bytes:
    t = topic.encode()
    body = struct.pack(">hh", 4, len(t)) + t + struct.pack(">iqi", partition, when, max_number)
    return struct.pack(">i", len(body)) + body


def offsets_of(response: bytes) -> list[int]:
    length, code, n = struct.unpack_from(">ihi", response)
    assert code == 0 and length == len(response) - 4 == 2 + 4 + 8 * n
    return list(struct.unpack_from(f">{n}q", response, 10))


# -- 1. hand-laid vectors over a socket ----------------------------------------------------------


def test_produce_two_magic0_messages_then_fetch_and_offsets_answer_exact_bytes(broker) -> None:
    b = broker()
    # PRODUCE has no response: the next bytes on the connection are the FETCH answer.
    got = exchange(b, PRODUCE_TWO_MAGIC0, FETCH_0_1000, OFFSETS_LATEST_10, OFFSETS_EARLIEST_10)
    assert got == [FETCH_0_1000_ANSWER, OFFSETS_LATEST_10_ANSWER, OFFSETS_EARLIEST_10_ANSWER]
    assert b.log_bytes("test", 0) == MSG_HELLO + MSG_WORLD
    assert [(m.offset, m.next_offset, m.payload) for m in b.messages("test", 0)] == [
        (0, 14, b"hello"), (14, 28, b"world")]
    assert b.outcomes() == ["no response", "answered", "answered", "answered"]


def test_fetch_answers_are_cut_at_max_size_mid_message_and_mid_header(broker) -> None:
    b = broker()
    b.append("test", 0, MSG_HELLO + MSG_WORLD)
    got = exchange(
        b,
        h("00000018 0001 0004 74657374 00000000 0000000000000000 00000014"),  # MAX_SIZE 20
        h("00000018 0001 0004 74657374 00000000 0000000000000000 00000010"),  # MAX_SIZE 16
        h("00000018 0001 0004 74657374 00000000 0000000000000000 00000000"),  # MAX_SIZE 0
    )
    assert got == [
        # 22 = 2 + 20: "hello" whole, then "world" cut after LENGTH, MAGIC and a CRC byte
        h("00000016 0000 0000000a 00 3610a686 68656c6c6f 0000000a 00 3a"),
        # 18 = 2 + 16: "hello", then half of the next LENGTH field (a broken header)
        h("00000012 0000 0000000a 00 3610a686 68656c6c6f 0000"),
        h("00000002 0000"),
    ]


def test_fetch_offsets_inside_at_end_and_beyond_the_log_and_wrong_partition(broker) -> None:
    b = broker()  # num.partitions 1
    b.append("test", 0, MSG_HELLO + MSG_WORLD)
    got = exchange(
        b,
        h("00000018 0001 0004 74657374 00000000 0000000000000003 00000008"),  # inside "hello"
        h("00000018 0001 0004 74657374 00000000 000000000000000e 000003e8"),  # 14: "world"
        h("00000018 0001 0004 74657374 00000000 000000000000001c 000003e8"),  # 28: the end
        h("00000018 0001 0004 74657374 00000000 000000000000001d 000003e8"),  # 29: beyond
        h("00000018 0001 0004 74657374 00000001 0000000000000000 000003e8"),  # partition 1
        h("00000018 0001 0004 74657374 ffffffff 0000000000000000 000003e8"),  # partition -1
        h("00000019 0001 0005 6f74686572 00000000 0000000000000000 000003e8"),  # no such topic
        h("00000016 0001 0002 2e2e 00000000 0000000000000000 000003e8"),  # topic ".." invalid
    )
    assert got == [
        h("0000000a 0000 0a 00 3610a686 6865"),  # bytes 3..10 as stored: no boundary check
        h("00000010 0000") + MSG_WORLD,
        h("00000002 0000"),  # at the high water mark: empty, no error
        h("00000002 0001"),  # OffsetOutOfRange
        h("00000002 0003"),  # WrongPartition
        h("00000002 0003"),
        h("00000002 0000"),  # a topic without a log: empty (0.7.2 LogManager.getLog)
        h("00000002 ffff"),  # Unknown (-1): InvalidTopicException has no code of its own
    ]


def test_offset_below_the_first_segment_is_out_of_range(broker) -> None:
    b = broker(segment_bytes=10)
    b.append("test", 0, MSG_HELLO)
    b.append("test", 0, MSG_WORLD)  # "hello" (14 bytes) is over 10: a new segment at 14
    b.delete_oldest_segments("test", 0)
    assert b.segments("test", 0)[0].start == 14
    got = exchange(b, fetch_request("test", 0, 0, 100), fetch_request("test", 0, 14, 100),
                   OFFSETS_EARLIEST_10, OFFSETS_LATEST_10)
    assert got[0] == h("00000002 0001")
    assert got[1] == h("00000010 0000") + MSG_WORLD
    assert offsets_of(got[2]) == [14] and offsets_of(got[3]) == [28, 14]


def test_gzip_wrapper_is_validated_deep_and_stored_as_sent(broker) -> None:
    b = broker()
    (got,) = exchange(b, PRODUCE_GZIP, FETCH_0_1000)
    assert got == h("00000037 0000") + GZIP_WRAPPER  # 55 = 2 + 53: the wrapper, byte for byte
    assert b.payloads("test", 0) == [(0, b"a"), (0, b"b")]
    assert b.requests[0].detail["messages"] == 2 and b.end_offset("test", 0) == 53


@pytest.mark.parametrize("payload", [SNAPPY_RAW_AB, SNAPPY_XERIAL_AB], ids=["raw", "xerial"])
def test_snappy_wrapper_raw_block_or_xerial_framing(broker, payload: bytes) -> None:
    b = broker()
    wrapper = struct.pack(">iBBI", 6 + len(payload), 1, 2, zlib.crc32(payload)) + payload
    (got,) = exchange(b, produce_request("test", 0, wrapper), fetch_request("test", 0, 0, 100))
    assert got == struct.pack(">ih", 2 + len(wrapper), 0) + wrapper
    assert b.payloads("test", 0) == [(0, b"a"), (0, b"b")]


def test_multifetch_answers_each_fetch_whole_in_order(broker) -> None:
    b = broker()
    b.append("test", 0, MSG_HELLO + MSG_WORLD)
    request = h("""
        00000030 0002 0002                         # REQUEST_LENGTH 48, MULTIFETCH, 2 fetches
        0004 74657374 00000000 0000000000000000 0000000e   # test/0 @0 max 14
        0004 74657374 00000000 000000000000000e 00000064   # test/0 @14 max 100
    """)
    (got,) = exchange(b, request)
    assert got == h("0000002a 0000") + h("00000010 0000") + MSG_HELLO + h("00000010 0000") + MSG_WORLD


def test_multifetch_carries_an_error_code_per_fetch(broker) -> None:
    b = broker(num_partitions=2)
    b.append("test", 0, MSG_HELLO)
    body = struct.pack(">hh", 2, 3) + b"".join(
        fetch_request(*f)[6:] for f in (("test", 0, 0, 100), ("test", 0, 99, 100),
                                        ("test", 7, 0, 100)))
    (got,) = exchange(b, struct.pack(">i", len(body)) + body)
    assert got == (h("00000022 0000") + h("00000010 0000") + MSG_HELLO
                   + h("00000002 0001") + h("00000002 0003"))  # 34 = 2 + (6 + 14) + 6 + 6


def test_a_negative_max_size_closes_the_connection_only_when_bytes_are_read(broker) -> None:
    b = broker()
    b.append("test", 0, MSG_HELLO)
    assert exchange(b, fetch_request("test", 0, 14, -1), fetch_request("test", 0, 15, -1)) == [
        h("00000002 0000"), h("00000002 0001")]  # at the end / beyond: nothing is read
    with connect(b) as s:
        s.sendall(fetch_request("test", 0, 0, -1))
        assert closed(s)

def test_multiproduce_appends_each_produce(broker) -> None:
    b = broker(num_partitions=2)
    request = h("""
        0000003c 0003 0002                            # REQUEST_LENGTH 60, MULTIPRODUCE, 2
        0004 74657374 00000000 0000000e 0000000a 00 3610a686 68656c6c6f   # test/0 "hello"
        0004 74657374 00000001 0000000e 0000000a 00 3a771143 776f726c64   # test/1 "world"
    """)
    assert exchange(b, request, OFFSETS_LATEST_10) == [h(
        "00000016 0000 00000002 000000000000000e 0000000000000000")]
    assert b.log_bytes("test", 0) == MSG_HELLO and b.log_bytes("test", 1) == MSG_WORLD


def test_a_bad_crc_closes_the_connection_and_appends_nothing(broker) -> None:
    b = broker()
    bad = PRODUCE_TWO_MAGIC0.replace(h("3a771143"), h("3a771144"))
    with connect(b) as s:
        s.sendall(bad + FETCH_0_1000)
        assert closed(s)
    assert b.log_bytes("test", 0) == b""  # the log exists (created before the checks), empty
    assert b.outcomes() == ["closed: InvalidMessage: message at 14 is invalid (CRC)"]
    # a bad CRC inside a gzip wrapper is found too (deep validation)
    bad_inner = INNER_AB.replace(h("71beeff9"), h("71beeff8"))
    with connect(b) as s:
        s.sendall(produce_request("test", 0, compressed_message(bad_inner, CODEC_GZIP)))
        assert closed(s)
    assert b.log_bytes("test", 0) == b""


@pytest.mark.parametrize("what,messages", [
    ("unknown magic", struct.pack(">iBI", 6, 2, zlib.crc32(b"x")) + b"x"),
    ("codec 3", struct.pack(">iBBI", 7, 1, 3, zlib.crc32(b"x")) + b"x"),
    ("not gzip", encode_message(b"not gzip at all", magic=1, codec=CODEC_GZIP)),
    ("not snappy", encode_message(b"\xff\xff\xff\xff\xff", magic=1, codec=CODEC_SNAPPY)),
    ("first message cut", MSG_HELLO[:-1]),
    ("negative length", h("ffffffff")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_invalid_produces_close_the_connection(broker, what: str, messages: bytes) -> None:
    b = broker()
    b.create_topic("test")
    with connect(b) as s:
        s.sendall(produce_request("test", 0, messages))
        assert closed(s), what
    assert b.log_bytes("test", 0) == b""


def test_a_multiproduce_keeps_the_produces_before_a_bad_one(broker) -> None:
    b = broker(num_partitions=2)
    bad = MSG_WORLD.replace(h("3a771143"), h("00000000"))
    body = struct.pack(">hh", 3, 2) + produce_request("test", 0, MSG_HELLO)[6:] + \
        produce_request("test", 1, bad)[6:]
    with connect(b) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        assert closed(s)
    assert b.log_bytes("test", 0) == MSG_HELLO and b.log_bytes("test", 1) == b""

def test_a_partial_trailing_message_of_a_produce_is_dropped(broker) -> None:
    b = broker()
    exchange(b, produce_request("test", 0, MSG_HELLO + MSG_WORLD[:7]), FETCH_0_1000)
    assert b.log_bytes("test", 0) == MSG_HELLO


def test_unknown_request_types_and_bad_lengths_close_the_connection(broker) -> None:
    b = broker()
    for request in (h("00000008 0005 0004 74657374"),  # type 5: not a 0.7 request
                    h("00000000"),                      # REQUEST_LENGTH 0
                    h("00000004 0001 0004"),             # a FETCH cut short
                    h("00000018 0004 0004 74657374 00000001 ffffffffffffffff 0000000a")):  # OFFSETS, partition 1
        with connect(b) as s:
            s.sendall(request)
            assert closed(s), request.hex()
    assert [o.split(":")[0] for o in b.outcomes()] == ["closed"] * 4


def test_oversized_message_is_dropped_connection_kept_and_partition_minus_one(broker) -> None:
    b = broker(max_message_size=4, num_partitions=3, seed=7)
    got = exchange(b, produce_request("test", 0, MSG_HELLO), offsets_request("test", 0, -1, 5),
                   produce_request("test", -1, h("00000005 00 00000000")),  # empty payload
                   offsets_request("test", 0, -2, 1))  # answered: the produce before is done
    assert offsets_of(got[0]) == [0]  # nothing appended, and the connection still answers
    assert b.requests[0].outcome.startswith("dropped: MessageSizeTooLarge")
    chosen = b.requests[2].detail["chosen_partition"]
    assert 0 <= chosen < 3 and b.log_bytes("test", chosen) == h("00000005 00 00000000")


# -- segments and OFFSETS by time -------------------------------------------------------------------


def test_a_fetch_stops_at_the_segment_end_and_offsets_follow_segment_times(broker) -> None:
    now = [10_000]
    b = broker(segment_bytes=30, clock=lambda: now[0])
    two = MSG_HELLO + MSG_WORLD  # 28 bytes
    for _ in range(3):
        b.append("test", 0, two)  # 28 (<= 30, stays), 56 (> 30: roll before the 3rd)
    assert [(s.start, s.size) for s in b.segments("test", 0)] == [(0, 56), (56, 28)]
    got = exchange(b, fetch_request("test", 0, 42, 1000), fetch_request("test", 0, 56, 1000),
                   fetch_request("test", 0, 50, 1000))
    assert got[0] == h("00000010 0000") + MSG_WORLD  # 42..56 only, though the log goes on to 84
    assert got[1] == struct.pack(">ih", 30, 0) + two
    assert got[2] == h("00000008 0000") + MSG_WORLD[8:]  # inside a message, still at the end
    b.set_segment_times("test", 0, [1_000, 2_000])
    asks = [(-1, 10), (-1, 1), (-2, 10), (999, 10), (1_000, 10), (2_500, 10), (2_500, 1),
            (10_000, 10)]
    got = exchange(b, *(offsets_request("test", 0, t, n) for t, n in asks))
    assert [offsets_of(r) for r in got] == [
        [84, 56, 0], [84], [0], [], [0], [56, 0], [56], [84, 56, 0]]


def test_offsets_for_a_partition_without_a_log(broker) -> None:
    b = broker(num_partitions=2)
    got = exchange(b, *(offsets_request("nothing", 1, t, 5) for t in (-1, -2, 123)),
                   offsets_request("nothing", 0, -1, 0))
    assert [offsets_of(r) for r in got] == [[0], [0], [], [0]]


def test_a_corrupted_crc_is_served_as_stored(broker, samsa) -> None:
    b = broker()
    b.append("test", 0, MSG_HELLO + MSG_WORLD)
    b.corrupt_crc("test", 0, 14)
    (got,) = exchange(b, FETCH_0_1000)
    assert got == FETCH_0_1000_ANSWER.replace(h("3a771143"), h("c588eebc"))
    assert [m.valid for m in b.messages("test", 0)] == [True, False]
    # samsa sees it too: its decoder refuses the message whose CRC does not match
    with pytest.raises(AssertionError, match="does not match"):
        samsa(b).fetch("test", 0, 0, 1000)


# -- 2. samsa, an independent 0.7 client -----------------------------------------------------------


def test_samsa_produces_and_fetches_back(broker, samsa) -> None:
    b = broker(num_partitions=2)
    c = samsa(b)
    c.produce("events", 0, [b"one", b"two"])  # magic 0 (samsa's default)
    c.produce("events", 0, [b"three"], version=1)  # magic 1, no compression
    c.multiproduce([("events", 1, [b"x"]), ("events", 0, [b"four"])])
    got = c.fetch("events", 0, 0, 10_000)
    assert [(m.offset, bytes(m.payload), m["magic"]) for m in got] == [
        (0, b"one", 0), (12, b"two", 0), (24, b"three", 1), (39, b"four", 0)]
    assert [m.next_offset for m in got][-1] == b.end_offset("events", 0) == 52
    assert b.payloads("events", 0) == [(0, b"one"), (12, b"two"), (24, b"three"), (39, b"four")]
    assert [bytes(m.payload) for m in c.fetch("events", 1, 0, 100)] == [b"x"]
    assert c.offsets("events", 0, OFFSET_LATEST, 5) == [52, 0]
    assert c.offsets("events", 0, OFFSET_EARLIEST, 5) == [0]
    sets = [list(s) for s in c.multifetch([("events", 0, 12, 24), ("events", 1, 0, 100)])]
    assert [[bytes(m.payload) for m in s] for s in sets] == [[b"two"], [b"x"]]
    with pytest.raises(OffsetOutOfRangeError):
        c.fetch("events", 0, 53, 100)
    with pytest.raises(WrongPartitionError):
        c.fetch("events", 2, 0, 100)


def test_samsa_reads_what_hand_built_appends_hold(broker, samsa) -> None:
    b = broker()
    at = [b.append("t", 0, MSG_HELLO + MSG_WORLD), b.append("t", 0, GZIP_WRAPPER),
          b.append("t", 0, compressed_message(INNER_AB, CODEC_SNAPPY)),
          b.append("t", 0, compressed_message(INNER_AB, CODEC_SNAPPY, snappy_framing="raw")),
          b.append("t", 0, encode_message(b"plain", magic=1))]
    assert at == [0, 28, 81, 133, 165]
    got = samsa(b).fetch("t", 0, 0, 10_000)
    assert [(m.offset, m.get("compression")) for m in got] == [
        (0, None), (14, None), (28, 1), (81, 2), (133, 2), (165, 0)]
    assert wrap.deep(got) == [(0, b"hello"), (14, b"world"), (28, b"a"), (28, b"b"),
                              (81, b"a"), (81, b"b"), (133, b"a"), (133, b"b"),
                              (165, b"plain")]


@pytest.mark.parametrize("codec,framing", [(wrap.GZIP, "xerial"), (wrap.SNAPPY, "xerial"),
                                           (wrap.SNAPPY, "raw")])
def test_samsa_compressed_produce_through_the_wrapper(broker, samsa, codec, framing) -> None:
    b = broker()
    c = samsa(b)
    wrap.produce_compressed(c, "z", 0, [b"p1", b"p2", b"p3"], codec, snappy_framing=framing)
    wrap.produce_compressed(c, "z", 0, [b"q"], codec, inner_version=1, snappy_framing=framing)
    got = c.fetch("z", 0, 0, 10_000)
    assert [m["compression"] for m in got] == [codec, codec]
    first_end = got[0].next_offset
    assert wrap.deep(got) == [(0, b"p1"), (0, b"p2"), (0, b"p3"), (first_end, b"q")]
    assert b.payloads("z", 0) == wrap.deep(got)
    assert [r.detail["messages"] for r in b.requests if r.name == "PRODUCE"] == [3, 1]


def test_samsa_short_fetches_and_raw_answers(broker, samsa) -> None:
    b = broker()
    b.append("t", 0, MSG_HELLO + MSG_WORLD)
    c = samsa(b)
    assert c.fetch("t", 0, 0, 3) == []  # shorter than a header: samsa returns nothing...
    assert wrap.fetch_raw(c, "t", 0, 0, 3) == (0, h("000000"))  # ...the broker sent 3 bytes
    assert [bytes(m.payload) for m in c.fetch("t", 0, 0, 20)] == [b"hello"]  # partial dropped
    assert wrap.fetch_raw(c, "t", 0, 0, 20) == (0, MSG_HELLO + MSG_WORLD[:6])
    assert wrap.fetch_raw(c, "t", 0, 29, 20) == (1, b"")
    # a fetch holding a whole header but not the whole first message: samsa retries 1.5x
    # larger until it fits (with less than the header it gives up with nothing)
    assert [bytes(m.payload) for m in c.fetch("t", 0, 0, 12)] == [b"hello"]
    assert [r.detail["max_size"] for r in b.requests if r.name == "FETCH"][-2:] == [12, 18]
    assert c.fetch("t", 0, 0, 8) == []


def test_samsa_offsets_by_time(broker, samsa) -> None:
    now = [50_000]
    b = broker(segment_bytes=10, clock=lambda: now[0])
    for _ in range(3):
        b.append("t", 0, MSG_HELLO)  # a new segment each time: 0, 14, 28
    b.set_segment_times("t", 0, [100, 200, 300])
    c = samsa(b)
    assert c.offsets("t", 0, OFFSET_LATEST, 10) == [42, 28, 14, 0]
    assert c.offsets("t", 0, 250, 10) == [14, 0]
    assert c.offsets("t", 0, 250, 1) == [14]
    assert c.offsets("t", 0, 50, 10) == []
    assert c.offsets("t", 0, OFFSET_EARLIEST, 10) == [0]


# -- 3. ZooKeeper -----------------------------------------------------------------------------------


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.05)


def test_two_brokers_two_partitions_registered_in_zookeeper(broker, zk_root) -> None:
    connect_string, chroot = zk_root
    brokers = [broker(broker_id=i) for i in (0, 1)]
    for b in brokers:
        b.create_topic("events", 2)
        b.register(connect_string, chroot)
    zk = KazooClient(hosts=connect_string)
    zk.start(timeout=15)
    try:
        assert sorted(zk.get_children(f"{chroot}/brokers/ids")) == ["0", "1"]
        for b in brokers:
            data, stat = zk.get(f"{chroot}/brokers/ids/{b.broker_id}")
            creator, host, port = data.decode().split(":")  # "creator:host:port"
            assert (creator, host, int(port)) == (b.creator_id, "127.0.0.1", b.port)
            assert creator.startswith("127.0.0.1-") and stat.ephemeralOwner != 0
            data, stat = zk.get(f"{chroot}/brokers/topics/events/{b.broker_id}")
            assert data == b"2" and stat.ephemeralOwner != 0
        assert zk.get(f"{chroot}/brokers")[1].ephemeralOwner == 0  # parents are persistent
        with pytest.raises(RuntimeError, match="already registered"):
            broker(broker_id=1).register(connect_string, chroot)
        brokers[1].deregister()  # gone from ZooKeeper at once (its session ends)
        assert zk.get_children(f"{chroot}/brokers/ids") == ["0"]
        assert zk.get_children(f"{chroot}/brokers/topics/events") == ["0"]
    finally:
        zk.stop()
        zk.close()


def test_samsa_finds_the_emulated_brokers_through_zookeeper(broker, zk_root) -> None:
    connect_string, chroot = zk_root
    brokers = {i: broker(broker_id=i) for i in (3, 7)}
    for b in brokers.values():
        b.create_topic("events", 2)
        b.register(connect_string, chroot)
    zk = KazooClient(hosts=connect_string + chroot)
    zk.start(timeout=15)
    cluster = Cluster(zk)
    try:
        assert sorted(cluster.brokers.keys()) == [3, 7]
        assert {(k, v.host, v.port) for k, v in cluster.brokers.items()} == {
            (i, "127.0.0.1", b.port) for i, b in brokers.items()}
        topic = cluster.topics["events"]
        parts = sorted(topic.partitions, key=lambda p: (p.broker.id, p.number))
        assert [(p.broker.id, p.number) for p in parts] == [(3, 0), (3, 1), (7, 0), (7, 1)]
        for p in parts:
            p.publish([f"{p.broker.id}-{p.number}".encode()])
        for p in parts:
            assert [bytes(m.payload) for m in p.fetch(0, 1000)] == [
                f"{p.broker.id}-{p.number}".encode()]
            assert p.latest_offset() == 12 and p.earliest_offset() == 0
        assert brokers[7].payloads("events", 1) == [(0, b"7-1")]

        # A new topic: samsa sends to partition 0 of each broker ("virtual" partitions, the
        # driver page's "Creating New Topics"); the brokers then register it in ZooKeeper.
        fresh = cluster.topics["fresh"]
        assert sorted((p.broker.id, p.number) for p in fresh.partitions) == [(3, 0), (7, 0)]
        for p in list(fresh.partitions):
            p.publish([b"first"])
            p.fetch(0, 100)  # same connection: the produce has been handled
        wait_for(lambda: len(list(fresh.partitions.actual)) == 2)
        assert zk.get("/brokers/topics/fresh/3")[0] == b"1"  # num.partitions

        brokers[7].deregister()
        wait_for(lambda: sorted(cluster.brokers.keys()) == [3])
        wait_for(lambda: sorted((p.broker.id, p.number) for p in topic.partitions) == [
            (3, 0), (3, 1)])
    finally:
        for b in list(cluster.brokers.values()):
            client = getattr(b, "_Broker__client", None)
            if client is not None:
                client.disconnect()
        zk.stop()
        zk.close()


def test_registering_after_topics_exist_and_snappy_helper_round_trip(broker, zk_root) -> None:
    connect_string, chroot = zk_root
    b = broker(broker_id=5, num_partitions=4)
    b.append("early", 2, encode_message(b"x"))  # topic created before ZooKeeper registration
    b.register(connect_string, chroot)
    zk = KazooClient(hosts=connect_string + chroot)
    zk.start(timeout=15)
    try:
        assert zk.get("/brokers/topics/early/5")[0] == b"4"
    finally:
        zk.stop()
        zk.close()
    assert decode_deep(compressed_message(INNER_AB, CODEC_SNAPPY)) == [(0, b"a"), (0, b"b")]
    assert snappy_compress(INNER_AB)[:16] == SNAPPY_XERIAL_AB[:16]
