"""Record data, framing, compression, varints and token decoders fed hostile bytes (issue 15).

What a broker (or a token endpoint) sends is input: random bytes, valid data with flipped
bytes, cut short, lengths that lie, CRCs that do not match, unknown magics and codecs, payloads
that are not what their codec says. The only exceptions that may escape are the typed ones
(ProtocolError and its subclasses; OAuthTokenError for tokens), record errors name the topic,
partition and broker given by the caller and the offset of the batch at fault, nothing hangs
(sizes are bounded and every example has a deadline), and a length prefix of 2**31 allocates
nothing near that size. tests/unit/protocol/test_messages_fuzz.py does the same for every
message layout.
"""

from __future__ import annotations

import gzip
import json
import random
import struct
import tracemalloc
import zlib
from base64 import urlsafe_b64encode
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import (
    BrokerConnectionError,
    DataLossError,
    OAuthTokenError,
)
from spark_kafka_wire.client.fetching.fetch_plan import (
    FetchAnswer,
    LogBoundsRequest,
    RangeFetch,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.security.sasl.bearer import jwt_claims, token_from
from spark_kafka_wire.client.security.sasl.oauth_config import OAuthConfig
from spark_kafka_wire.client.security.sasl.oauthbearer import server_error
from spark_kafka_wire.client.security.sasl.oidc import token_from_answer
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.compression import (
    DecompressionBombError,
    UnsupportedCodecError,
    compress,
    decompress,
)
from spark_kafka_wire.protocol.errors import CorruptRecordError, ProtocolError
from spark_kafka_wire.protocol.framing import MAX_FRAME_SIZE, frame_size, split_response
from spark_kafka_wire.protocol.messages import ALL_APIS
from spark_kafka_wire.protocol.primitives import Reader
from spark_kafka_wire.protocol.records import (
    DecodedRecords,
    TransactionEvents,
    decode_record_batches,
    encode_message_set,
    encode_record_batch,
)
from spark_kafka_wire.protocol.records.varint import (
    Malformed,
    _read_varints,
    read_varint,
    read_varints,
)
from tests.support.errors import raises_condition

FUZZ = settings(max_examples=100, deadline=5000,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
WHERE = {"topic": "orders", "partition": 7, "broker": "b1:9092"}
LIMIT = 1 << 20  # max_decompressed_size in these tests
MB = 1 << 20

# ---------------------------------------------------------------------------------- corpus


def _records(n: int, seed: int) -> tuple[list, list, list]:
    rnd = random.Random(seed)
    keys = [None if rnd.random() < 0.2 else rnd.randbytes(rnd.randint(0, 8)) for _ in range(n)]
    values = [rnd.randbytes(rnd.choice([0, 5, 40, 300])) for _ in range(n)]
    headers = [[("h", rnd.randbytes(3)), ("n", None)] if rnd.random() < 0.3 else None
               for _ in range(n)]
    return keys, values, headers


def _batch(codec: int, base: int, n: int = 6, **kw: Any) -> bytes:
    keys, values, headers = _records(n, base + codec)
    return encode_record_batch(keys, values, timestamps=1_700_000_000_000 + np.arange(n),
                               base_offset=base, compression=codec, headers=headers, **kw)


def _legacy(magic: int, codec: int, base: int, n: int = 5) -> bytes:
    keys, values, _ = _records(n, base + codec + 10 * magic)
    return encode_message_set(keys, values, magic=magic, compression=codec, base_offset=base,
                              timestamps=1_700_000_000_000)


def _marker(base: int, producer_id: int, commit: bool) -> bytes:
    """A transaction's COMMIT or ABORT control batch (KIP-98)."""
    raw = bytearray(encode_record_batch([struct.pack(">hh", 0, int(commit))],
                                        [struct.pack(">hi", 0, 3)], timestamps=1_700_000_000_000,
                                        base_offset=base, producer_id=producer_id,
                                        producer_epoch=0, transactional=True))
    struct.pack_into(">h", raw, 21, 0x30)  # transactional + control
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


# (bytes, [(position, base offset, magic) of each top-level entry])
def _entries(data: bytes) -> list[tuple[int, int, int]]:
    out, pos = [], 0
    while len(data) - pos >= 17:
        base, length = struct.unpack_from(">qi", data, pos)
        if length < 5 or pos + 12 + length > len(data):
            break
        out.append((pos, base, data[pos + 16]))
        pos += 12 + length
    return out


CORPUS: list[bytes] = [
    *(_batch(codec, 100 * (codec + 1)) for codec in range(5)),
    _batch(0, 50, producer_id=9, producer_epoch=0, base_sequence=0, transactional=True),
    *(_legacy(magic, codec, 600 + 10 * codec + 100 * magic) for magic in (0, 1)
      for codec in range(4)),
    _legacy(0, 0, 900) + _legacy(1, 2, 905) + _batch(3, 910) + _batch(0, 920),
    # Two producers' transactions, one aborted, one committed past a plain batch.
    _batch(0, 1000, producer_id=9, producer_epoch=0, base_sequence=0, transactional=True)
    + _batch(1, 1006, producer_id=3, producer_epoch=0, base_sequence=0, transactional=True)
    + _marker(1012, 9, False) + _batch(0, 1013) + _marker(1019, 3, True),
]


def _refix_crcs(data: bytes) -> bytes:
    """Every complete top-level entry's CRC recomputed (CRC-32C for v2, CRC-32 before)."""
    buf = bytearray(data)
    for pos, _, magic in _entries(data):
        length = struct.unpack_from(">i", buf, pos + 8)[0]
        end = pos + 12 + length
        if magic == 2 and length >= 49:
            struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:end])))
        elif magic in (0, 1):
            struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:end])))
    return bytes(buf)


def decode(data: bytes, **kw: Any) -> DecodedRecords | ProtocolError:
    """The records, or the ProtocolError, after checking that the error names where it
    happened; any other exception fails the test."""
    try:
        d = decode_record_batches(data, start_offset=kw.pop("start_offset", 0),
                                  max_decompressed_size=LIMIT, **WHERE, **kw)
    except ProtocolError as exc:
        assert (exc.topic, exc.partition, exc.broker) == ("orders", 7, "b1:9092"), exc
        assert "orders" in str(exc) and "b1:9092" in str(exc)
        if isinstance(exc, CorruptRecordError):
            assert exc.offset is not None, f"no offset in: {exc}"
        return exc
    n = d.num_records
    assert len(d.offsets) == len(d.timestamps) == len(d.keys) == len(d.values) == n
    assert d.headers is None or len(d.headers) == n
    return d


# ------------------------------------------------------------------------- record batches


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    decode(data)
    decode(data, check_crcs=False)
    decode(_refix_crcs(data), check_crcs=True)


_LENGTH_VALUES = [0, 1, 4, 5, 13, 48, 49, 60, 2**31 - 1, -1, -(2**31)]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A corpus entry with a few structure-aware mutations: bit flips, bytes set to boundary
    values, cuts, inserts, deletes, and the length, count and magic fields set to lies."""
    buf = bytearray(draw(st.sampled_from(CORPUS)))
    entries = _entries(bytes(buf))
    for _ in range(draw(st.integers(1, 4))):
        if not buf:
            break
        kind = draw(st.sampled_from(["flip", "byte", "cut", "insert", "delete", "length",
                                     "count", "magic", "attributes"]))
        i = draw(st.integers(0, len(buf) - 1))
        pos, _, magic = draw(st.sampled_from(entries))
        if kind == "flip":
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            buf[i] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif kind == "cut":
            del buf[i:]
        elif kind == "insert":
            buf[i:i] = draw(st.binary(min_size=1, max_size=6))
        elif kind == "delete":
            del buf[i:i + draw(st.integers(1, 6))]
        elif pos + 61 <= len(buf):
            if kind == "length":
                struct.pack_into(">i", buf, pos + 8, draw(st.sampled_from(_LENGTH_VALUES)))
            elif kind == "count" and magic == 2:
                struct.pack_into(">i", buf, pos + 57, draw(st.sampled_from(_LENGTH_VALUES)))
            elif kind == "count":  # a legacy message's key length
                struct.pack_into(">i", buf, pos + 18 + 8 * magic,
                                 draw(st.sampled_from(_LENGTH_VALUES)))
            elif kind == "magic":
                buf[pos + 16] = draw(st.sampled_from([0, 1, 2, 3, 0x7F, 0xFF]))
            else:  # codec bits and flags
                at = pos + (22 if magic == 2 else 17)
                buf[at] = draw(st.integers(0, 255))
    return bytes(buf)


@settings(FUZZ, max_examples=300)
@given(mutated(), st.sampled_from([0, 5, 150, 905]))
def test_mutated_batches(data: bytes, start: int) -> None:
    decode(data, start_offset=start)
    decode(data, start_offset=start, check_crcs=False)
    decode(_refix_crcs(data), start_offset=start)
    decode(data, start_offset=start, aborted_transactions=[(9, 50), (3, 0)])
    # read_committed by markers: the events of the whole answer, past the range end too.
    decode(data, start_offset=start, end_offset=start + 7, aborted_transactions=[(3, 0)],
           transactions=TransactionEvents())


@settings(FUZZ, max_examples=150)
@given(st.sampled_from(CORPUS), st.data())
def test_crc_mismatch_names_topic_partition_and_offset(data: bytes, draw: st.DataObject) -> None:
    """A flipped bit anywhere a CRC covers (or in the CRC) fails the read with a
    CorruptRecordError at that entry's base offset."""
    pos, base, magic = draw.draw(st.sampled_from(_entries(data)))
    length = struct.unpack_from(">i", data, pos + 8)[0]
    crc_at = pos + (17 if magic == 2 else 12)  # v2: CRC-32C of [21, end); v0/1: CRC-32 of
    i = draw.draw(st.integers(crc_at, pos + 12 + length - 1))  # [16, end) (magic onwards)
    if i == pos + 16:
        i += 1  # the magic byte picks the decoder: test_wrong_magic
    buf = bytearray(data)
    buf[i] ^= 1 << draw.draw(st.integers(0, 7))
    err = decode(bytes(buf))
    assert isinstance(err, CorruptRecordError) and "CRC-32" in str(err), err
    assert err.offset == base, (err, base)


@pytest.mark.parametrize("magic_byte", [3, 4, 0x7F, 0x80, 0xFF])
def test_wrong_magic(magic_byte: int) -> None:
    for data in CORPUS:
        pos, base, _ = _entries(data)[0]
        buf = bytearray(data)
        buf[pos + 16] = magic_byte
        err = decode(bytes(buf))
        assert isinstance(err, CorruptRecordError) and f"magic {magic_byte}" in str(err)
        assert err.offset == base


def _v2_with_payload(codec: int, payload: bytes, count: int, base: int = 40) -> bytes:
    """A v2 batch header (valid CRC) around ``payload`` declared as ``codec``."""
    rest = struct.pack(">hiqqqhii", codec, max(count - 1, 0), 0, 0, -1, -1, -1, count)
    crc = crc32c(payload, crc32c(rest))
    head = struct.pack(">qiibI", base, 49 + len(payload), -1, 2, crc)
    return head + rest + payload


_VALID = encode_record_batch(None, [b"v" * 50] * 8, timestamps=0)[61:]  # 8 raw records


@settings(FUZZ, max_examples=200)
@given(st.integers(1, 7), st.one_of(
    st.binary(max_size=200),
    st.tuples(st.sampled_from([1, 2, 3, 4]), st.integers(0, 200)).map(  # another codec, cut
        lambda t: compress(t[0], _VALID, magic=2)[:t[1]]),
    st.sampled_from([compress(c, _VALID, magic=2) for c in (1, 2, 3, 4)]),
), st.sampled_from([0, 1, 8, 2**31 - 1]))
def test_bad_compressed_payloads(codec: int, payload: bytes, count: int) -> None:
    """Whatever a batch's compressed payload holds: records, or a typed error at its base
    offset (UnsupportedCodecError for ids 5-7)."""
    got = decode(_v2_with_payload(codec, payload, count))
    if isinstance(got, ProtocolError):
        assert got.offset == 40, got
        if codec > 4:
            assert isinstance(got, UnsupportedCodecError)


@settings(FUZZ, max_examples=100)
@given(st.sampled_from([0, 1]), st.integers(1, 7), st.binary(max_size=150))
def test_bad_legacy_wrappers(magic: int, codec: int, payload: bytes) -> None:
    value = payload
    size = 4 + 1 + 1 + 8 * magic + 4 + 4 + len(value)
    body = bytes([magic, codec]) + (struct.pack(">q", 5) if magic else b"") + \
        struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    raw = struct.pack(">qiI", 77, size, zlib.crc32(body)) + body
    got = decode(raw)
    if isinstance(got, ProtocolError):
        assert got.offset == 77, got


def _peak(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _expect_error(call: Callable[[], Any], error: type[Exception] = ProtocolError) -> Callable:
    def run() -> None:
        with pytest.raises(error):
            call()
    return run


def _record(body: bytes) -> bytes:
    """One v2 record: its zigzag length varint, then ``body``."""
    return _zigzag(len(body)) + body


def _zigzag(v: int) -> bytes:
    z = (v << 1) ^ (v >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


HUGE = 2**31 - 1
_BIG_LEN = _zigzag(HUGE)
LIES: dict[str, bytes] = {
    "batch length": struct.pack(">qiib", 0, HUGE, -1, 2) + bytes(60),
    "record count": _v2_with_payload(0, _record(b"\0\0\0\x02\x00\x02\x00\x00"), HUGE),
    "record length": _v2_with_payload(0, _BIG_LEN + bytes(20), 1),
    "key length": _v2_with_payload(0, _record(b"\0\0\0" + _BIG_LEN + b"k\0\0"), 1),
    "value length": _v2_with_payload(0, _record(b"\0\0\0\x01" + _BIG_LEN + b"v\0"), 1),
    "header count": _v2_with_payload(0, _record(b"\0\0\0\x01\x01" + _BIG_LEN + b"\0\0"), 1),
    "header key length": _v2_with_payload(
        0, _record(b"\0\0\0\x01\x01\x02" + _BIG_LEN + b"k\0"), 1),
    "legacy key length": _refix_crcs(struct.pack(">qiI", 0, 30, 0) + b"\0\0"
                                     + struct.pack(">i", HUGE) + bytes(20)),
    "legacy value length": _refix_crcs(struct.pack(">qiI", 0, 30, 0) + b"\0\0"
                                       + struct.pack(">ii", -1, HUGE) + bytes(16)),
    "legacy wrapper value": _refix_crcs(struct.pack(">qiI", 0, 30, 0) + b"\0\x01"
                                        + struct.pack(">ii", -1, HUGE) + bytes(16)),
    "snappy size": _v2_with_payload(2, b"\xff\xff\xff\xff\x0f" + bytes(20), 1),
    "xerial block": _v2_with_payload(2, b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, HUGE)
                                     + bytes(10), 1),
    "lz4 content size": _v2_with_payload(3, b"\x04\x22\x4d\x18\x68\x40" + struct.pack(
        "<Q", 2**63 - 1) + b"\x00" + bytes(8), 1),
    "lz4 block size": _v2_with_payload(3, b"\x04\x22\x4d\x18\x60\x40\x82" + struct.pack(
        "<I", HUGE) + bytes(8), 1),
    "zstd content size": _v2_with_payload(4, b"\x28\xb5\x2f\xfd\xa4" + struct.pack(
        "<Q", 2**62) + bytes(20), 1),
    "gzip size trailer": _v2_with_payload(1, gzip.compress(b"x" * 100, mtime=0)[:-4]
                                          + struct.pack("<I", 2**32 - 1), 1),
}


@pytest.mark.parametrize("lie", sorted(LIES))
def test_lying_lengths_allocate_nothing(lie: str) -> None:
    data = LIES[lie]

    def run() -> None:
        for check in (True, False):
            got = decode(data, check_crcs=check)
            assert isinstance(got, ProtocolError) or got.num_records <= 1, lie
    assert _peak(run) < 4 * MB, lie


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_bombs_stop_at_the_limit(codec: int) -> None:
    bomb = compress(codec, bytes(64 * MB), magic=2)
    assert _peak(_expect_error(lambda: decompress(codec, bomb, LIMIT), DecompressionBombError)
                 ) < 8 * MB + len(bomb)


# ---------------------------------------------------------------------- varints, framing


@FUZZ
@given(st.binary(max_size=24))
@example(b"\xff" * 11)
@example(b"\x80" * 10 + b"\x01")
def test_varints(data: bytes) -> None:
    for read in (Reader.uvarint, Reader.varint):
        r = Reader(data)
        try:
            v = read(r)
        except ProtocolError:
            continue
        assert r.pos <= 10 and -(2**63) <= v < 2**64
    try:
        v, p = read_varint(data, 0, len(data))
        assert -(2**31) <= v < 2**31 and p <= 5
    except Malformed:
        pass
    arr = np.frombuffer(data + b"\0", np.uint8)
    pos = np.arange(len(data), dtype=np.int64)
    for width in (5, 10):
        try:
            values, after = read_varints(arr, pos, np.full(len(pos), len(data), np.int64),
                                         width, "fuzz")
        except Malformed:
            continue
        assert (after <= len(data)).all() and len(values) == len(pos)


@FUZZ
@given(st.binary(min_size=1, max_size=40), st.data())
@example(b"\x80", None)
@example(b"\xff\x7f", None)
@example(b"\x80\x80\x01", None)
def test_read_varints_table_path(data: bytes, draw: Any) -> None:
    """The two-byte table path reads what the general reader reads, and fails alike."""
    n = len(data)
    if draw is None:
        pos, lim = np.array([0], np.int64), np.array([n], np.int64)
    else:
        pos = np.array(sorted(draw.draw(st.lists(st.integers(0, n), min_size=1, max_size=8))),
                       np.int64)
        lim = np.minimum(pos + draw.draw(st.integers(0, 6)), n)
    arr = np.frombuffer(data, np.uint8)
    for width in (5, 10):
        try:
            expected: Any = _read_varints(arr, pos, lim, width, "fuzz")
        except Malformed as exc:
            expected = (exc.reason, exc.record)
        try:
            got: Any = read_varints(arr, pos, lim, width, "fuzz")
        except Malformed as exc:
            got = (exc.reason, exc.record)
        if isinstance(expected[0], str):
            assert got == expected
        else:
            assert got[0].dtype == np.int64 and got[1].dtype == np.int64
            assert got[0].tolist() == expected[0].tolist()
            assert got[1].tolist() == expected[1].tolist()


@FUZZ
@given(st.binary(max_size=8))
@example(b"\x7f\xff\xff\xff")
@example(b"\x80\x00\x00\x00")
@example(b"\x00\x00")
def test_frame_size(prefix: bytes) -> None:
    try:
        n = frame_size(prefix)
    except ProtocolError:
        return
    assert 0 <= n <= MAX_FRAME_SIZE


RESPONSE_HEADERS = [(spec, v) for spec in ALL_APIS.values()
                    for v in range(spec.min_version, spec.max_version + 1)]


@FUZZ
@given(st.sampled_from(RESPONSE_HEADERS), st.one_of(
    st.binary(max_size=60),
    st.binary(max_size=20).map(lambda b: b"\0\0\0\1" + b"\xff\xff\xff\xff\x0f" + b),
    st.binary(max_size=20).map(lambda b: b"\0\0\0\1\x01\x00" + b"\xff\xff\xff\xff\x07" + b)))
def test_response_headers(case: Any, frame: bytes) -> None:
    spec, version = case
    try:
        cid, body = split_response(spec, version, frame)
    except ProtocolError:
        return
    assert len(body) <= len(frame)


# ------------------------------------------------------------------------- the fetch path


# An empty answer below the partition's end is given up on within a short budget
# (client/fetching/empty_answers.py), on the clock the reader passes in.
_CONFIG = ClientConfig.from_servers("stub:9092", request_timeout_ms=100, retry_backoff_ms=1,
                                    retry_backoff_max_ms=2)


def _read(script: dict[int, bytes], start: int, end: int, check_crcs: bool = True,
          isolation_level: int = 0) -> Iterator[DecodedRecords]:
    """Read [start, end) of orders-7 from ``script``, Fetch answers (records) keyed by fetch
    offset from broker b1:9092 whose log holds [0, 1000): fed to the range read's decision
    step as ``fetch_range`` feeds it (no socket)."""
    settings = FetchSettings(check_crcs=check_crcs, isolation_level=isolation_level)
    plan = RangeFetch("orders", 7, start, end, settings, True, _CONFIG)
    clock = 0.0
    while (want := plan.next_request()) is not None:
        if isinstance(want, LogBoundsRequest):
            yield from plan.log_bounds((0, 1000))
            continue
        clock += want.pause_s
        records = script.get(want.offset, b"")
        yield from plan.receive(
            FetchAnswer(memoryview(records), 1000, 1000, 0, "b1:9092", None), clock)


def test_fetch_of_a_corrupt_batch_names_topic_partition_offset_and_broker() -> None:
    good, bad = _batch(0, 100), bytearray(_batch(0, 106))
    bad[-3] ^= 0x10  # inside the last value: only the CRC can tell
    script = {100: good + bytes(bad)}
    with pytest.raises(CorruptRecordError) as info:
        list(_read(script, 100, 112))
    e = info.value
    assert (e.topic, e.partition, e.offset, e.broker) == ("orders", 7, 106, "b1:9092")
    assert "CRC-32C mismatch" in str(e) and \
        "topic 'orders', partition 7, offset 106, broker b1:9092" in str(e)
    # kafka.check.crcs=false reads it
    assert sum(d.num_records for d in _read(script, 100, 112, check_crcs=False)) == 12


@settings(FUZZ, max_examples=60)
@given(mutated())
def test_fetch_of_damaged_data(data: bytes) -> None:
    entries = _entries(data)
    start = entries[0][1] if entries else 0
    script = {start: data}
    for isolation_level in (0, 1):  # read_committed: markers decide, looked for past 50
        try:
            for chunk in _read(script, start, start + 50, isolation_level=isolation_level):
                assert len(chunk.offsets) == chunk.num_records
        except (ProtocolError, DataLossError) as exc:  # data loss: offsets that jump back
            assert (exc.topic, exc.partition, exc.broker) == ("orders", 7, "b1:9092"), exc


def test_an_unresolvable_advertised_host_is_a_connection_error() -> None:
    """Brokers advertise names in Metadata; one no resolver takes must not crash the client."""
    for host in ("a..b", "x" * 64 + ".example"):
        conn = BrokerConnection(host, 9092, ClientConfig((("h", 9092),), connect_timeout_ms=500))
        with raises_condition(BrokerConnectionError, "KAFKAWIRE_BROKER_CONNECTION",
                              "cannot connect"):
            conn.connect()


# ---------------------------------------------------------------------------- OAuth tokens


def _jwt(claims: Any) -> str:
    def part(b: bytes) -> str:
        return urlsafe_b64encode(b).rstrip(b"=").decode()
    raw = claims if isinstance(claims, bytes) else json.dumps(claims, allow_nan=True).encode()
    return f"{part(b'{}')}.{part(raw)}.sig"


claim_values = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1e308, -1e308, 2**63]),
)
jwt_payloads = st.one_of(
    st.dictionaries(st.sampled_from(["exp", "iat", "sub", "x"]), claim_values, max_size=4),
    st.integers(1, 3000).map(lambda n: ("[" * n + "]" * n).encode()),
    st.sampled_from([b'{"exp":1e999}', b'{"exp":NaN,"iat":-Infinity}', b"\xff\xfe",
                     b'{"exp":' + b"9" * 5000 + b"}", b"[]", b"null"]),
    st.binary(max_size=40),
)


@FUZZ
@given(st.one_of(jwt_payloads.map(_jwt), st.text(max_size=60)),
       st.sampled_from([None, 10**30, 2**63]))
@example(_jwt(b'{"exp":1e999}'), None)
@example(_jwt(b"[" * 3000 + b"]" * 3000), None)
def test_tokens(value: str, expires_ms: int | None) -> None:
    """What a token endpoint or provider returns: a Token whose times are plain integers a
    refresh can compute with, or OAuthTokenError."""
    claims = jwt_claims(value)
    assert claims is None or isinstance(claims, dict)
    try:
        token = token_from(value, "test", expires_ms=expires_ms)
    except OAuthTokenError:
        return
    for t in (token.expires_ms, token.start_ms):
        assert t is None or (isinstance(t, int) and 0 <= t <= 2**63 - 1), t


@FUZZ
@given(st.one_of(st.binary(max_size=60), st.integers(1, 3000).map(lambda n: b"[" * n)))
def test_oauthbearer_server_errors(answer: bytes) -> None:
    assert isinstance(server_error(answer), dict)


endpoint_answers = st.one_of(
    st.dictionaries(st.sampled_from(["access_token", "expires_in", "token_type"]), st.one_of(
        claim_values, jwt_payloads.map(_jwt), st.just("opaque-token")), max_size=3).map(
        lambda d: json.dumps(d, allow_nan=True).encode()),
    st.sampled_from([b'{"access_token":"t","expires_in":1e999}',
                     b'{"access_token":"t","expires_in":' + b"9" * 5000 + b"}",
                     b'{"access_token":"t","expires_in":1e308}',
                     b'{"access_token":"t","expires_in":NaN}', b'{"access_token":"t"}',
                     b"[" * 3000, b"\xff", b""]),
    st.binary(max_size=60),
)


@FUZZ
@given(endpoint_answers)
@example(b'{"access_token":"t","expires_in":1e308}')
def test_token_endpoint_answers(body: bytes) -> None:
    config = OAuthConfig(source="oidc", principal="c", endpoint_url="https://idp/token",
                         client_id="c", client_secret="s")
    try:
        token = token_from_answer(body, "token endpoint", config)
    except OAuthTokenError:
        return
    assert token.expires_ms is None or 0 <= token.expires_ms <= 2**63 - 1
