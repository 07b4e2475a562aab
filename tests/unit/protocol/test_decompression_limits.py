"""Decompression is bounded per fetch answer, not only per batch (issue 27, item 3).

One answer may hold many small compressed batches (or legacy wrappers, or nested 0.7
wrappers) that each expand to just under a per-batch cap; a reader that keeps every
decompressed batch until it joins them ran out of memory instead of failing with a typed
error. The bombs here are built with the codec libraries themselves (zlib, zstandard, lz4,
cramjam, and kafka-python's xerial framing over python-snappy) inside hand-laid framing from
Kafka's protocol guide, not with this package's encoder. Each bomb is decoded in a child
process whose peak RSS is measured, so the bound holds for real memory, not only for what
tracemalloc sees.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import cramjam
import lz4.frame
import pytest
import zstandard
from crc32c import crc32c
from kafka.codec import snappy_encode

from spark_kafka_wire.protocol.compression import DecompressionLimitError
from spark_kafka_wire.protocol.kafka07 import decode_message_set
from spark_kafka_wire.protocol.limits import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    MAX_DECOMPRESSED_OPTION,
    decompression_limit,
)
from spark_kafka_wire.protocol.records import decode_record_batches
from tests.support.errors import raises_condition
from tests.unit.protocol.test_legacy_records import message

MiB = 1 << 20
BOMB = 200 * MiB  # what one bomb batch expands to: under the old per-batch cap of 256 MiB
COPIES = 6  # as in the report: 6 copies took a reader from 521 to 2,929 MiB
RSS_BOUND = 600 * MiB  # the child's peak RSS; the old code needed over 2 GiB here
WHERE = {"topic": "bombs", "partition": 3, "broker": "b7:9092"}
_CHUNK = 16 * MiB
_ZEROS = bytes(_CHUNK)


def _zigzag(v: int) -> bytes:
    u = (v << 1) ^ (v >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _record_parts(value_len: int, offset_delta: int = 0) -> tuple[bytes, bytes]:
    """One v2 record with a null key and ``value_len`` zero bytes: (bytes before the value,
    bytes after it), laid out by the protocol guide's Record."""
    body_head = (b"\x00" + _zigzag(0) + _zigzag(offset_delta) + _zigzag(-1)
                 + _zigzag(value_len))
    tail = _zigzag(0)  # no headers
    return _zigzag(len(body_head) + value_len + len(tail)) + body_head, tail


def _zeros(n: int) -> Iterator[bytes]:
    while n > 0:
        yield _ZEROS[:min(n, _CHUNK)]
        n -= _CHUNK


def _stream(head: bytes, zeros: int, tail: bytes) -> Iterator[bytes]:
    yield head
    yield from _zeros(zeros)
    yield tail


def _gzip(chunks: Iterator[bytes]) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join([c.compress(x) for x in chunks] + [c.flush()])


def _zstd(chunks: Iterator[bytes]) -> bytes:
    c = zstandard.ZstdCompressor(level=3).compressobj()
    return b"".join([c.compress(x) for x in chunks] + [c.flush()])


def _lz4(chunks: Iterator[bytes]) -> bytes:
    # Independent blocks, as Kafka requires; 4 MiB blocks (lz4 caps the ratio near 255x).
    c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX4MB,
                                     block_linked=False)
    return b"".join([c.begin()] + [c.compress(x) for x in chunks] + [c.flush()])


def _snappy_raw(chunks: Iterator[bytes]) -> bytes:
    return bytes(cramjam.snappy.compress_raw(b"".join(chunks)))


def _snappy_xerial(chunks: Iterator[bytes]) -> bytes:
    return snappy_encode(b"".join(chunks), xerial_compatible=True, xerial_blocksize=1 * MiB)


CODECS: dict[str, tuple[int, Callable[[Iterator[bytes]], bytes]]] = {
    "gzip": (1, _gzip),
    "snappy": (2, _snappy_raw),
    "snappy-xerial": (2, _snappy_xerial),
    "lz4": (3, _lz4),
    "zstd": (4, _zstd),
}


def v2_batch(codec: int, payload: bytes, count: int, base: int) -> bytes:
    """A RecordBatch (magic 2) around an already compressed ``payload``, laid out by the
    protocol guide: the CRC-32C covers attributes onwards, so copies re-stamped with other
    base offsets keep it."""
    rest = struct.pack(">hiqqqhii", codec, count - 1, 0, 0, -1, -1, -1, count)
    crc = crc32c(payload, crc32c(rest))
    return struct.pack(">qiibI", base, 49 + len(payload), -1, 2, crc) + rest + payload


def v2_bomb(name: str, size: int = BOMB) -> bytes:
    """One batch of one record whose value is ``size`` zero bytes."""
    codec, pack = CODECS[name]
    head, tail = _record_parts(size)
    return v2_batch(codec, pack(_stream(head, size, tail)), 1, 0)


def restamp(batch: bytes, base: int) -> bytes:
    return struct.pack(">q", base) + batch[8:]


def legacy_inner(offset: int, magic: int, size: int) -> Iterator[bytes]:
    """One magic 0/1 message of ``size`` zero bytes, streamed (its CRC-32 computed as it goes)."""
    body_head = struct.pack(">bb", magic, 0) + (struct.pack(">q", 0) if magic else b"") \
        + struct.pack(">ii", -1, size)
    crc = zlib.crc32(body_head)
    for z in _zeros(size):
        crc = zlib.crc32(z, crc)
    yield struct.pack(">qiI", offset, 4 + len(body_head) + size, crc) + body_head
    yield from _zeros(size)


def m07(payload: bytes, codec: int) -> bytes:
    """A Kafka 0.7 magic 1 message: LENGTH, MAGIC, COMPRESSION, CRC32(payload), PAYLOAD."""
    return struct.pack(">ibbI", 6 + len(payload), 1, codec, zlib.crc32(payload)) + payload


def m07_stream(size: int) -> Iterator[bytes]:
    """A plain 0.7 message of ``size`` zero bytes, streamed."""
    crc = 0
    for z in _zeros(size):
        crc = zlib.crc32(z, crc)
    yield struct.pack(">ibbI", 6 + size, 1, 0, crc)
    yield from _zeros(size)


# ------------------------------------------------------------------ bombs, in a child process

_CHILD = """
import json, sys
from spark_kafka_wire.protocol.compression import DecompressionLimitError
kind, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
where = {"topic": "bombs", "partition": 3, "broker": "b7:9092"}
out = {}
try:
    if kind == "kafka07":
        from spark_kafka_wire.protocol.kafka07 import decode_message_set
        got = decode_message_set(data, 0, **where).records
    else:
        from spark_kafka_wire.protocol.records import decode_record_batches
        got = decode_record_batches(data, start_offset=0, **where)
    out["records"] = got.num_records
except DecompressionLimitError as exc:
    out.update(error=type(exc).__name__, message=str(exc), offset=exc.offset,
               topic=exc.topic, partition=exc.partition, broker=exc.broker)
# VmHWM: this process's own peak. getrusage's ru_maxrss is not: Linux carries the peak of
# the process that forked this one across exec, so a child of a large pytest process would
# report the parent's size.
with open("/proc/self/status") as status:
    out["maxrss"] = next(int(line.split()[1]) for line in status
                         if line.startswith("VmHWM:")) * 1024
print(json.dumps(out))
"""


def _bombs() -> dict[str, tuple[str, bytes]]:
    """name -> (decoder kind, an answer of COPIES bombs), each copy expanding to BOMB bytes."""
    out: dict[str, tuple[str, bytes]] = {}
    for name in CODECS:
        one = v2_bomb(name)
        out[f"v2-{name}"] = ("v2", b"".join(restamp(one, i) for i in range(COPIES)))
    for magic, codec, name in ((0, 1, "gzip"), (1, 2, "snappy-xerial"), (1, 3, "lz4")):
        pack = CODECS[name][1]
        inner = pack(legacy_inner(0, magic, BOMB))
        out[f"magic{magic}-{name}"] = ("v2", b"".join(
            message(i, magic, None, inner, attrs=codec, ts=0) for i in range(COPIES)))
    # 0.7: gzip inside snappy inside gzip; each copy's innermost set expands to BOMB bytes.
    level2 = m07(_gzip(m07_stream(BOMB)), 1)
    level1 = m07(_snappy_xerial(iter([level2])), 2)
    outer = m07(_gzip(iter([level1])), 1)
    out["kafka07-nested"] = ("kafka07", outer * COPIES)
    return out


@pytest.fixture(scope="module")
def bomb_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Path]]:
    root = tmp_path_factory.mktemp("bombs")
    files = {}
    for name, (kind, data) in _bombs().items():
        path = root / f"{name}.bin"
        path.write_bytes(data)
        files[name] = (kind, path)
    return files


BOMB_CASES = [f"v2-{n}" for n in CODECS] + [
    "magic0-gzip", "magic1-snappy-xerial", "magic1-lz4", "kafka07-nested"]


@pytest.mark.parametrize("case", BOMB_CASES)
def test_bomb_answers_fail_typed_within_bounded_memory(
        case: str, bomb_files: dict[str, tuple[str, Path]]) -> None:
    """COPIES compressed entries of a few KB to a few MB that each expand to 200 MiB, in one
    answer: the decoder stops at the default per-answer limit with DecompressionLimitError
    naming topic, partition, offset, broker and the option, its peak RSS under RSS_BOUND."""
    kind, path = bomb_files[case]
    assert path.stat().st_size < COPIES * BOMB // 20  # a bomb: tiny next to what it expands to
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run([sys.executable, "-c", _CHILD, kind, str(path)], capture_output=True,
                         text=True, timeout=300, env=env, check=False)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got.get("error") == "DecompressionLimitError", got
    assert (got["topic"], got["partition"], got["broker"]) == ("bombs", 3, "b7:9092")
    # The second copy crosses the limit (2 x 200 MiB > 256 MiB); 0.7 names byte offsets.
    expected_offset = len(path.read_bytes()) // COPIES if kind == "kafka07" else 1
    assert got["offset"] == expected_offset, got
    assert MAX_DECOMPRESSED_OPTION in got["message"], got["message"]
    assert str(DEFAULT_MAX_DECOMPRESSED_SIZE) in got["message"]
    assert got["maxrss"] < RSS_BOUND, f"peak RSS {got['maxrss'] / MiB:.0f} MiB"


# ------------------------------------------------------------- near the limit, in process

LIMIT = 4 * MiB


@pytest.mark.parametrize("name", sorted(CODECS))
def test_v2_answers_up_to_the_limit_decode(name: str) -> None:
    """Batches that together decompress to just under the limit all decode; one more byte of
    records in the answer (not in any one batch) fails, naming the batch that crossed it."""
    part = LIMIT // 4
    value = part - 16  # the record and its varints fit in the rest
    one = v2_bomb(name, value)
    head, tail = _record_parts(value)
    records = len(head) + value + len(tail)
    fits = LIMIT // records
    answer = b"".join(restamp(one, i) for i in range(fits))
    d = decode_record_batches(answer, start_offset=0, max_decompressed_size=fits * records,
                              **WHERE)
    assert d.num_records == fits and d.next_offset == fits
    assert all(len(v) == value for v in d.values.to_pylist())
    with raises_condition(DecompressionLimitError, "KAFKAWIRE_PROTOCOL.DECOMPRESSION_LIMIT",
                          MAX_DECOMPRESSED_OPTION) as info:
        decode_record_batches(answer, start_offset=0, max_decompressed_size=fits * records - 1,
                              **WHERE)
    e = info.value
    assert (e.topic, e.partition, e.offset, e.broker) == ("bombs", 3, fits - 1, "b7:9092")
    assert e.limit == fits * records - 1


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_wrappers_share_the_answers_limit(magic: int) -> None:
    inner = _gzip(legacy_inner(0, magic, MiB))
    answer = b"".join(message(i, magic, None, inner, attrs=1, ts=0) for i in range(4))
    set_size = sum(len(x) for x in legacy_inner(0, magic, MiB))
    d = decode_record_batches(answer, start_offset=0, max_decompressed_size=4 * set_size)
    assert d.num_records == 4
    with pytest.raises(DecompressionLimitError) as info:
        decode_record_batches(answer, start_offset=0, max_decompressed_size=4 * set_size - 1,
                              **WHERE)
    assert info.value.offset == 3  # the wrapper that crossed it


def test_kafka07_nesting_levels_share_the_answers_limit() -> None:
    """Every level of a nested 0.7 message takes from the one limit."""
    plain = b"".join(m07_stream(MiB))
    level1 = m07(_gzip(iter([plain])), 1)
    outer = m07(_gzip(iter([level1])), 1)
    answer = outer * 3
    need = 3 * (len(level1) + len(plain))
    read = decode_message_set(answer, 0, max_decompressed_size=need)
    assert read.records.num_records == 3
    with pytest.raises(DecompressionLimitError) as info:
        decode_message_set(answer, 0, max_decompressed_size=need - 1, **WHERE)
    assert info.value.offset == 2 * len(outer)


def test_highly_compressible_data_reads_at_the_default() -> None:
    """A 1 MiB answer (the default fetch size) of 50x compressible records reads at the
    default limit."""
    assert decompression_limit(1 * MiB) == DEFAULT_MAX_DECOMPRESSED_SIZE
    rows = [(b"%08d" % i) * 6 + b"x" * 2400 for i in range(20_000)]  # 2.45 KB, ~50x in zstd
    c = zstandard.ZstdCompressor(level=3)
    batches = []
    for b in range(4):
        body = b"".join(_record_parts(len(v))[0] + v + b"\x00" for v in rows)
        batches.append(v2_batch(4, c.compress(body), len(rows), b * len(rows)))
    answer = b"".join(batches)
    ratio = 4 * len(body) / len(answer)
    assert len(answer) < MiB and ratio > 50, (len(answer), ratio)
    d = decode_record_batches(answer, start_offset=0)
    assert d.num_records == 4 * len(rows)


def test_the_default_limit_follows_the_fetch_size() -> None:
    assert decompression_limit(16 * MiB) == 64 * 16 * MiB
    assert decompression_limit(256 * MiB) == 2**31 - 1  # what one Arrow column holds
    assert decompression_limit(256 * MiB, configured=5) == 5
