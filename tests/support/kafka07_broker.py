"""An emulated Kafka 0.7 broker for tests (issue 18: kafkawire's Kafka 0.7 support).

Why it exists: no installable software runs a Kafka 0.7 broker any more, yet kafkawire is to
read 0.7 clusters. ``Kafka07Broker`` is such a broker on a loopback port, with in-memory logs,
that registers itself in a real ZooKeeper the way 0.7 brokers did. It is the judge of
kafkawire's future 0.7 codecs, so it shares no code with ``spark_kafka_wire``: every byte layout
below is written here from the public 0.7 documents, and the emulator is proven on its own
(tests/integration/test_kafka07_emulator.py) with hand-laid byte vectors and an independent
0.7 client (samsa 0.3.11, ported in tests/support/samsa07).

Sources. The layouts come from the Kafka wiki pages "Wire Format" (0.7, by Jeffrey Damick and
Taylor Gautier) and "Writing a Driver for Kafka" (0.7), and the Kafka design document
(implementation chapter: the log, message format, ZooKeeper directories). Where those pages
say "FIXME: VERIFY" or say nothing, the behaviour follows the Apache Kafka 0.7.2 source
(kafka.log.Log, kafka.log.LogManager, kafka.server.KafkaRequestHandlers,
kafka.network.SocketServer, kafka.message.ByteBufferMessageSet / Message / CompressionUtils,
kafka.server.KafkaZooKeeper); each such place says so.

What it emulates:

- Framing: a request is ``int32 length | int16 request type | body``; a response is
  ``int32 length | int16 error code | payload`` ("Writing a Driver": Request Header, Response
  Header). No correlation ids: a connection's requests are answered in order. A request type
  other than PRODUCE 0, FETCH 1, MULTIFETCH 2, MULTIPRODUCE 3, OFFSETS 4, a length <= 0 or
  above ``max_request_bytes``, a request too short for its fields, or any failure while handling
  one closes the connection without an answer (0.7.2 SocketServer.Processor closes the socket on
  every exception; KafkaRequestHandlers.handlerFor throws on an unknown type).
- The log: each topic/partition is a list of segments holding the message entries back to
  back; the offset of a message is its byte position in the partition ("An offset is just the
  byte offset in a given log"), the next one is ``offset + 4 + LENGTH``. A segment rolls when a
  produce finds the last one already over ``segment_bytes`` ("Kafka will write to the current
  segment file until it goes over that size, and then will write the next message in new
  segment file"; Log.maybeRoll before the append), so a produced message set is never split.
- PRODUCE / MULTIPRODUCE (no response: "There is no response to a PRODUCE Request"): every
  message is checked as ByteBufferMessageSet's deep iterator does in Log.append: magic 0
  (``LENGTH | MAGIC | CRC32 | PAYLOAD``) or magic 1 (``LENGTH | MAGIC | COMPRESSION | CRC32 |
  PAYLOAD``), the CRC32 of the payload, and for a compressed message (codec bits
  ``attributes & 0x03``: 1 gzip, 2 snappy) the nested message set after decompression,
  recursively. Compressed wrappers are stored as sent ("it's stored compressed on the broker").
  A failed check (bad CRC, unknown magic or codec, undecompressable payload, a first message
  longer than the set) closes the connection and appends nothing from that produce (the
  partition's log is created first, empty, as getOrCreateLog runs before the checks): 0.7 has
  no way to report it (InvalidMessage 2 never reaches a producer). A partial message at the end of
  a produced set is dropped (ByteBufferMessageSet.validBytes). A payload above
  ``max_message_size`` drops the produce silently, connection kept (0.7.2 logs a warning).
  Partition -1 picks a random partition (ProducerRequest.RandomPartition). A produce to an
  unknown topic creates it with ``num_partitions`` partitions (only the written partition gets
  a log, as in 0.7.2) and registers it in ZooKeeper.
- Snappy: 0.7 compresses with snappy-java's SnappyOutputStream (xerial framing: magic
  ``82 'SNAPPY' 00``, int32 version 1, int32 compatible version 1, then int32-length-prefixed
  raw snappy blocks) and reads with SnappyInputStream, which also accepts a bare raw snappy
  block (a payload whose first byte is not 0x82, or whose 8-byte magic differs). The emulator
  accepts both, as a 0.7 broker does. The wire documents do not name a snappy framing.
- FETCH / MULTIFETCH: the stored bytes from the requested offset, at most MAX_SIZE of them, cut
  mid-message or mid-header if MAX_SIZE says so ("If it ends halfway through a message header,
  you get a broken header. This is not an error"), and never past the end of the segment that
  holds the offset ("A fetch of messages will not cross the segment boundary"). An offset inside
  a message is not checked: the bytes from there are returned (the "FIXME: VERIFY" of the driver
  page; Log.read does not check). Offset below the first segment or above the log end:
  OffsetOutOfRange (1); at the log end: empty; partition outside 0..count-1: WrongPartition (3);
  an invalid topic name: Unknown (-1); a topic or partition without a log yet: empty, no error
  (0.7.2 LogManager.getLog). A negative MAX_SIZE for bytes that exist closes the connection
  (a 0.7.2 broker first writes a 6-byte header with a negative length, then fails; the
  emulator writes nothing). MULTIFETCH answers ``int32 length | int16 0`` followed by one whole
  FETCH response (its own length and error code) per fetch, in order (design document,
  "MultiMessageSetSend").
- OFFSETS: Log.getOffsetsBefore: the start offset of every segment with its last-modified time,
  plus (when the last segment is not empty) the log end stamped "now"; -1 (latest) starts from
  the last entry, -2 (earliest) from the first, a time T from the last entry whose time is
  <= T; up to MAX_NUMBER offsets from there downwards (descending). A partition without a log
  answers [0] for -1/-2 and [] otherwise; a wrong partition or a negative MAX_NUMBER closes the
  connection (the 0.7.2 handler has no error path for OFFSETS). The response always carries
  error 0.
- ZooKeeper ("Wire Format" ZooKeeper section; 0.7.2 KafkaZooKeeper): ephemeral
  ``/brokers/ids/<id>`` = ``creator:host:port`` with creator ``<host>-<epoch ms>``, and
  ephemeral ``/brokers/topics/<topic>/<id>`` = the topic's partition count on this broker;
  parents are created persistent and empty. Several brokers (different ids) may share one
  ZooKeeper, optionally under a chroot. ``deregister()`` ends the broker's ZooKeeper session,
  so its ephemeral nodes go at once.

Not emulated: disk files and recovery, flushing (everything appended is visible at once, as with
``log.flush.interval=1``; a real 0.7 broker serves only flushed bytes), retention by age or size
(``delete_oldest_segments()`` drops segments on demand), time-based rolls (``roll()`` forces
one), the asynchronous registration of new topics (done at once here), the JMX stats, and the
0.7.0 behaviour of a FETCH creating the log of an unknown topic (0.7.2 answers it empty).

Test helpers: ``create_topic`` (N partitions, all with a log), ``append`` (a raw message set,
validated like a produce or not), ``log_bytes`` / ``messages`` / ``payloads`` (the stored log
raw, shallow or decompressed), ``segments`` / ``set_segment_bytes`` / ``set_segment_times`` /
``roll`` / ``delete_oldest_segments``, ``corrupt_crc``, ``requests`` (every request with its
outcome), ``register`` / ``deregister`` (ZooKeeper). The module's encoders
(``encode_message``, ``encode_message_set``, ``compressed_message``) build test data.

Usage::

    with Kafka07Broker(broker_id=0) as broker:
        broker.create_topic("t", partitions=2)
        broker.append("t", 0, encode_message_set([b"a", b"b"], magic=0))
        broker.register(zookeeper_connect)          # optional
        ...                                          # point a client at broker.host/port
        broker.log_bytes("t", 0), broker.requests     # what is stored / what was asked
"""

from __future__ import annotations

import gzip
import random
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import snappy
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError

from tests.support.frame_server import FrameServer

# -- constants from the documents ----------------------------------------------------------------

PRODUCE, FETCH, MULTIFETCH, MULTIPRODUCE, OFFSETS = 0, 1, 2, 3, 4
REQUEST_NAMES = {PRODUCE: "PRODUCE", FETCH: "FETCH", MULTIFETCH: "MULTIFETCH",
                 MULTIPRODUCE: "MULTIPRODUCE", OFFSETS: "OFFSETS"}

# Response error codes ("Writing a Driver for Kafka", Response Header table).
UNKNOWN = -1
NO_ERROR = 0
OFFSET_OUT_OF_RANGE = 1
INVALID_MESSAGE = 2  # never sent by a 0.7.2 broker: a bad produce closes the connection
WRONG_PARTITION = 3
INVALID_FETCH_SIZE = 4  # never sent by a 0.7.2 broker: fetches are cut, not refused

LATEST_TIME, EARLIEST_TIME = -1, -2  # OFFSETS TIME special values

CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY = 0, 1, 2  # COMPRESSION attribute (magic 1 only)
CODEC_MASK = 0x03  # kafka.message.Message.CompressionCodeMask

XERIAL_MAGIC = b"\x82SNAPPY\x00"  # snappy-java SnappyCodec.MAGIC_HEADER
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # + version 1, compatible version 1
XERIAL_BLOCK = 32 * 1024  # SnappyOutputStream's default block size

# Broker configuration defaults (0.7.2 KafkaConfig; segment size from the driver page).
DEFAULT_SEGMENT_BYTES = 512 * 1024 * 1024  # "configurable size (512MB by default)"
DEFAULT_MAX_MESSAGE_SIZE = 1_000_000  # max.message.size
DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024  # max.socket.request.bytes
MAX_TOPIC_NAME_LENGTH = 255  # max.topic.name.length


def now_ms() -> int:
    return int(time.time() * 1000)


# -- messages (own codec, from the driver page's "Message (Kafka 0.7 and later)") -----------


class MessageError(ValueError):
    """A message or message set a 0.7 broker refuses (the connection is closed)."""


class Message07(NamedTuple):
    """One message as laid out in a message set: ``offset`` is the byte position of its
    4-byte LENGTH field (in the partition log, or in the set it was parsed from)."""

    offset: int
    size: int  # the LENGTH field: bytes after it
    magic: int
    attributes: int  # 0 for magic 0 (no attribute byte)
    crc: int  # as stored (unsigned)
    payload: bytes

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK if self.magic == 1 else CODEC_NONE

    @property
    def next_offset(self) -> int:
        return self.offset + 4 + self.size

    @property
    def valid(self) -> bool:
        return zlib.crc32(self.payload) == self.crc

    @property
    def crc_position(self) -> int:
        """Byte position of the CRC field relative to ``offset``."""
        return 4 + (1 if self.magic == 0 else 2)


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def encode_message(payload: bytes, *, magic: int = 1, codec: int = CODEC_NONE,
                   crc: int | None = None) -> bytes:
    """``LENGTH | MAGIC | [COMPRESSION] | CHECKSUM | PAYLOAD``; ``crc`` overrides the checksum
    (to build corrupt messages)."""
    checksum = crc32(payload) if crc is None else crc
    if magic == 0:
        if codec:
            raise ValueError("magic 0 has no compression attribute")
        body = struct.pack(">BI", 0, checksum) + payload
    else:
        body = struct.pack(">BBI", magic, codec, checksum) + payload
    return struct.pack(">i", len(body)) + body


def encode_message_set(payloads: Iterable[bytes], *, magic: int = 1) -> bytes:
    """Uncompressed messages back to back (a message set has no count or length of its own)."""
    return b"".join(encode_message(p, magic=magic) for p in payloads)


def gzip_compress(data: bytes) -> bytes:
    return gzip.compress(data)


def snappy_compress(data: bytes, *, framing: str = "xerial") -> bytes:
    """``framing="xerial"`` as snappy-java's SnappyOutputStream (what 0.7 producers write),
    ``"raw"`` a bare snappy block (which 0.7's SnappyInputStream also reads)."""
    if framing == "raw":
        return snappy.compress(data)
    if framing != "xerial":
        raise ValueError(f"unknown snappy framing {framing!r}")
    out = bytearray(XERIAL_HEADER)
    for i in range(0, max(len(data), 1), XERIAL_BLOCK):
        block = snappy.compress(data[i:i + XERIAL_BLOCK])
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def compressed_message(inner_set: bytes, codec: int, *, snappy_framing: str = "xerial",
                       crc: int | None = None) -> bytes:
    """A magic-1 wrapper whose payload is ``inner_set`` compressed ("Let's look at what
    compressed messages act like": CP1 becomes the PAYLOAD of the compressed message)."""
    if codec == CODEC_GZIP:
        payload = gzip_compress(inner_set)
    elif codec == CODEC_SNAPPY:
        payload = snappy_compress(inner_set, framing=snappy_framing)
    else:
        raise ValueError(f"codec {codec} is not a 0.7 compression codec")
    return encode_message(payload, magic=1, codec=codec, crc=crc)


def decompress(codec: int, payload: bytes) -> bytes:
    """The nested message set of a compressed message, as 0.7's CompressionUtils.decompress
    reads it (GZIPInputStream; snappy-java 1.0.4.1 SnappyInputStream)."""
    if codec == CODEC_GZIP:
        try:
            return gzip.decompress(payload)
        except (OSError, EOFError, zlib.error) as exc:
            raise MessageError(f"gzip: {exc}") from None
    if codec == CODEC_SNAPPY:
        return _snappy_input_stream(payload)
    raise MessageError(f"{codec} is an unknown compression codec")


def _snappy_input_stream(payload: bytes) -> bytes:
    """SnappyInputStream.readHeader: the first 16 bytes are the xerial header only if they
    start with 0x82 and carry the full magic; anything else is one raw snappy block."""
    try:
        header = payload[:16]
        if len(header) < 16 or header[0] != XERIAL_MAGIC[0] or header[:8] != XERIAL_MAGIC:
            return snappy.decompress(payload)
        (version,) = struct.unpack_from(">i", header, 8)
        if version < 1:
            raise MessageError(f"snappy: incompatible codec version {version}")
        out = bytearray()
        pos = 16
        while len(payload) - pos >= 4:
            (size,) = struct.unpack_from(">i", payload, pos)
            pos += 4
            if size < 0 or len(payload) - pos < size:
                raise MessageError("snappy: failed to read chunk")
            out += snappy.decompress(payload[pos:pos + size])
            pos += size
        return bytes(out)
    except MessageError:
        raise
    except Exception as exc:  # python-snappy raises its own UncompressError and others
        raise MessageError(f"snappy: {exc}") from None


def parse_message(body: bytes, offset: int, size: int) -> Message07:
    """A message from the bytes after its LENGTH field (kafka.message.Message)."""
    if not body:
        raise MessageError(f"empty message at {offset}")
    magic = body[0]
    if magic == 0:
        header = 5
        attributes = 0
    elif magic == 1:
        header = 6
        attributes = body[1] if len(body) > 1 else 0
    else:
        raise MessageError(f"magic byte value of {magic} is unknown (at {offset})")
    if len(body) < header:
        raise MessageError(f"message at {offset} is shorter than its header")
    (crc,) = struct.unpack_from(">I", body, header - 4)
    return Message07(offset, size, magic, attributes, crc, bytes(body[header:]))


def iter_messages(data: bytes, base_offset: int = 0) -> Iterator[Message07]:
    """Shallow iteration over whole messages; stops at a partial message at the end (as a
    fetch answer may hold), raises MessageError for a negative LENGTH or unparsable message."""
    pos = 0
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0:
            raise MessageError(f"invalid message size {size} at {base_offset + pos}")
        if len(data) - pos - 4 < size:
            return
        yield parse_message(data[pos + 4:pos + 4 + size], base_offset + pos, size)
        pos += 4 + size


def decode_deep(data: bytes, base_offset: int = 0) -> list[tuple[int, bytes]]:
    """(offset of the stored message, payload) of every message, decompressing wrappers
    (inner messages report their wrapper's offset: to 0.7, "M1, M2, don't really exist")."""
    out: list[tuple[int, bytes]] = []
    for m in iter_messages(data, base_offset):
        if m.codec:
            out += [(m.offset, p) for _, p in decode_deep(decompress(m.codec, m.payload))]
        else:
            out.append((m.offset, m.payload))
    return out


def validate_message_set(data: bytes, max_message_size: int | None = None) -> tuple[int, int]:
    """What Log.append checks before appending a produced set: (valid bytes, messages).

    Shallow pass (ByteBufferMessageSet.verifyMessageSize): per message the CRC (MessageError)
    then the payload size (``_TooLarge``). Deep pass (Log.append's iteration): CRCs of nested
    sets after decompression, recursively. The first message cut short or a negative LENGTH is
    an error; a later one cut short ends the set (validBytes)."""
    valid = 0
    for m in _checked_shallow(data):
        if max_message_size is not None and len(m.payload) > max_message_size:
            raise _TooLarge(f"payload size of {len(m.payload)} larger than {max_message_size}")
        valid = m.next_offset
    return valid, _count_deep(data[:valid])


def _checked_shallow(data: bytes) -> Iterator[Message07]:
    pos = 0
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or len(data) - pos - 4 < size:
            if pos == 0 or size < 0:
                raise MessageError(f"invalid message size: {size} only received bytes: "
                                   f"{len(data) - pos - 4} at {pos}")
            return
        m = parse_message(data[pos + 4:pos + 4 + size], pos, size)
        if not m.valid:
            raise MessageError(f"message at {pos} is invalid (CRC)")
        yield m
        pos += 4 + size


def _count_deep(data: bytes) -> int:
    count = 0
    for m in _checked_shallow(data):
        if m.codec:  # codec 3 fails in decompress (UnknownCodecException)
            count += _count_deep(decompress(m.codec, m.payload))
        else:
            count += 1
    return count


class _TooLarge(Exception):
    """MessageSizeTooLargeException: the produce is dropped, the connection kept."""


# -- the log ---------------------------------------------------------------------------------------


@dataclass
class Segment:
    start: int
    data: bytearray
    mtime_ms: int  # the segment file's last-modified time

    @property
    def size(self) -> int:
        return len(self.data)


class SegmentInfo(NamedTuple):
    start: int
    size: int
    mtime_ms: int


@dataclass
class _Log:
    segments: list[Segment]

    @property
    def start(self) -> int:
        return self.segments[0].start

    @property
    def end(self) -> int:
        last = self.segments[-1]
        return last.start + last.size

    def read(self, offset: int, max_size: int) -> bytes:
        """Log.read + Log.findRange + FileMessageSet.read."""
        if offset < self.start or offset > self.end:
            raise _Error(OFFSET_OUT_OF_RANGE, f"offset {offset} is out of range")
        if offset == self.end:
            return b""
        for seg in self.segments:
            if seg.start <= offset < seg.start + seg.size:
                if max_size < 0:  # FileMessageSet.read gives a negative size; sending it throws
                    raise _Close(f"negative MAX_SIZE {max_size} (IllegalArgumentException)")
                rel = offset - seg.start
                return bytes(seg.data[rel:rel + max_size])
        return b""  # only an empty segment inside the log (never built here)

    def offsets_before(self, when: int, max_number: int, now: int) -> list[int]:
        """Log.getOffsetsBefore."""
        table = [(s.start, s.mtime_ms) for s in self.segments]
        if self.segments[-1].size > 0:
            table.append((self.end, now))
        if when == LATEST_TIME:
            index = len(table) - 1
        elif when == EARLIEST_TIME:
            index = 0
        else:
            index = len(table) - 1
            while index >= 0 and table[index][1] > when:
                index -= 1
        count = min(max_number, index + 1)
        if count < 0:
            raise _Close(f"negative MAX_NUMBER {max_number} (NegativeArraySizeException)")
        return [table[index - j][0] for j in range(count)]


# -- requests ----------------------------------------------------------------------------------------


class LoggedRequest(NamedTuple):
    request_type: int
    name: str
    outcome: str  # "answered" | "no response" | "dropped: <why>" | "closed: <why>"
    detail: dict


class _Close(Exception):
    """Close the connection without answering (what 0.7.2's SocketServer does on any error)."""


class _Error(Exception):
    """A fetch error answered with an error code."""

    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Close("request too short (BufferUnderflowException)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self.take(8))[0]

    def short_string(self) -> str | None:
        """Utils.readShortString: int16 length (negative: null), UTF-8 bytes."""
        n = self.int16()
        if n < 0:
            return None
        return self.take(n).decode("utf-8", errors="replace")


def _topic_error(topic: str | None) -> str | None:
    """TopicNameValidator (0.7.2): why ``topic`` is illegal, or None."""
    if topic is None:
        return "null topic"
    if not topic:
        return "topic name is illegal, can't be empty"
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        return f"topic name is illegal, can't be longer than {MAX_TOPIC_NAME_LENGTH} characters"
    if topic in (".", ".."):
        return f"topic name {topic} is illegal"
    for ch in topic:
        c = ord(ch)
        if (ch == "/" or c <= 0x1F or 0x7F <= c <= 0x9F or 0xD800 <= c <= 0xF8FF
                or 0xFFF0 <= c <= 0xFFFF):
            return f"topic name {topic!r} is illegal, doesn't match expected regular expression"
    return None


def _response(code: int, payload: bytes = b"") -> bytes:
    return struct.pack(">ih", 2 + len(payload), code) + payload


# -- the broker ----------------------------------------------------------------------------------------


@dataclass
class _Config:
    num_partitions: int = 1
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    # topic.partition.count.map and topic.log.file.size
    topic_partitions: dict[str, int] = field(default_factory=dict)
    topic_segment_bytes: dict[str, int] = field(default_factory=dict)


class Kafka07Broker(FrameServer):
    """One emulated Kafka 0.7.2 broker (``broker_id``) on a free loopback port."""

    def __init__(
        self,
        broker_id: int = 0,
        *,
        host: str = "127.0.0.1",
        num_partitions: int = 1,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        clock: Callable[[], int] = now_ms,
        seed: int | None = None,
    ) -> None:
        super().__init__(host)
        self.broker_id = broker_id
        self.thread_name = f"kafka07-broker-{broker_id}"
        self.config = _Config(num_partitions, segment_bytes, max_message_size, max_request_bytes)
        self.clock = clock
        self.requests: list[LoggedRequest] = []
        self._random = random.Random(seed)
        self._logs: dict[tuple[str, int], _Log] = {}
        self._zk: KazooClient | None = None
        self.zk_connect: str | None = None
        self.zk_chroot = ""
        self.creator_id: str | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> Kafka07Broker:
        self.start_listening()
        return self

    def stop(self) -> None:
        """Deregister from ZooKeeper, close the listener and every connection."""
        self.deregister()
        self.stop_listening()

    def __enter__(self) -> Kafka07Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port

    # -- ZooKeeper -------------------------------------------------------------------------------
    def register(self, zk_connect: str, chroot: str = "", timeout: float = 15.0) -> None:
        """Register like a 0.7 broker: ephemeral ``/brokers/ids/<id>`` = ``creator:host:port``
        and ephemeral ``/brokers/topics/<topic>/<id>`` = partition count for every topic it
        holds, in a ZooKeeper session of its own (under ``chroot`` when given)."""
        if self._zk is not None:
            raise RuntimeError("already registered")
        chroot = chroot.rstrip("/")
        if chroot:
            root = KazooClient(hosts=zk_connect, timeout=timeout)
            root.start(timeout=timeout)
            try:
                root.ensure_path(chroot)
            finally:
                root.stop()
                root.close()
        zk = KazooClient(hosts=zk_connect + chroot, timeout=timeout)
        zk.start(timeout=timeout)
        path = f"/brokers/ids/{self.broker_id}"
        self.creator_id = f"{self.host}-{self.clock()}"
        try:
            zk.create(path, f"{self.creator_id}:{self.host}:{self.port}".encode(),
                      ephemeral=True, makepath=True)
        except NodeExistsError:
            zk.stop()
            zk.close()
            raise RuntimeError(f"A broker is already registered on the path {path}") from None
        self._zk, self.zk_connect, self.zk_chroot = zk, zk_connect, chroot
        with self._lock:
            topics = sorted({t for t, _ in self._logs})
        for topic in topics:
            self._register_topic(topic)

    def deregister(self) -> None:
        """End the ZooKeeper session: the broker's ephemeral nodes disappear at once."""
        zk, self._zk = self._zk, None
        if zk is not None:
            zk.stop()
            zk.close()

    @property
    def registered(self) -> bool:
        return self._zk is not None

    def _register_topic(self, topic: str) -> None:
        zk = self._zk
        if zk is None:
            return
        path = f"/brokers/topics/{topic}/{self.broker_id}"
        data = str(self._partition_count(topic)).encode()
        try:
            zk.create(path, data, ephemeral=True, makepath=True)
        except NodeExistsError:
            zk.set(path, data)

    # -- test API --------------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, *,
                     segment_bytes: int | None = None) -> None:
        """A topic with ``partitions`` partitions on this broker (0.7's
        topic.partition.count.map), each with an empty log, registered in ZooKeeper."""
        why = _topic_error(name)
        if why:
            raise ValueError(why)
        with self._lock:
            if name in self.config.topic_partitions or self._has_topic(name):
                raise ValueError(f"topic {name} exists")
            self.config.topic_partitions[name] = partitions
            if segment_bytes is not None:
                self.config.topic_segment_bytes[name] = segment_bytes
            for p in range(partitions):
                self._logs[(name, p)] = self._new_log()
        self._register_topic(name)

    def set_segment_bytes(self, size: int, topic: str | None = None) -> None:
        """log.file.size (broker-wide) or topic.log.file.size (one topic)."""
        with self._lock:
            if topic is None:
                self.config.segment_bytes = size
            else:
                self.config.topic_segment_bytes[topic] = size

    def append(self, topic: str, partition: int, message_set: bytes, *,
               validate: bool = True) -> int:
        """Append a raw message set as a PRODUCE would (``validate=False`` stores the bytes
        unchecked, e.g. corrupt data); returns the offset it was written at."""
        with self._lock:
            if validate:
                try:
                    valid, _ = validate_message_set(message_set, self.config.max_message_size)
                except (MessageError, _TooLarge) as exc:
                    raise ValueError(f"a 0.7 broker refuses this message set: {exc}") from None
                message_set = message_set[:valid]
            return self._append(topic, partition, message_set)

    def roll(self, topic: str, partition: int) -> None:
        """Start a new segment at the log end (as a time-based roll would)."""
        with self._lock:
            log = self._log(topic, partition)
            log.segments.append(Segment(log.end, bytearray(), self.clock()))

    def delete_oldest_segments(self, topic: str, partition: int, count: int = 1) -> None:
        """Retention: drop the ``count`` oldest segments (Log.markDeletedWhile; deleting them
        all first rolls a fresh empty segment at the log end)."""
        with self._lock:
            log = self._log(topic, partition)
            if count >= len(log.segments):
                log.segments.append(Segment(log.end, bytearray(), self.clock()))
                count = len(log.segments) - 1
            del log.segments[:count]

    def log_bytes(self, topic: str, partition: int) -> bytes:
        """The partition log, segments concatenated (byte i is at offset start_offset + i)."""
        with self._lock:
            return b"".join(bytes(s.data) for s in self._log(topic, partition).segments)

    def segments(self, topic: str, partition: int) -> list[SegmentInfo]:
        with self._lock:
            return [SegmentInfo(s.start, s.size, s.mtime_ms)
                    for s in self._log(topic, partition).segments]

    def set_segment_times(self, topic: str, partition: int, times_ms: list[int]) -> None:
        """Set each segment's last-modified time (what OFFSETS with a time compares)."""
        with self._lock:
            segs = self._log(topic, partition).segments
            if len(times_ms) != len(segs):
                raise ValueError(f"{len(segs)} segments, {len(times_ms)} times")
            for seg, t in zip(segs, times_ms, strict=True):
                seg.mtime_ms = t

    def start_offset(self, topic: str, partition: int) -> int:
        with self._lock:
            return self._log(topic, partition).start

    def end_offset(self, topic: str, partition: int) -> int:
        with self._lock:
            return self._log(topic, partition).end

    def has_log(self, topic: str, partition: int) -> bool:
        with self._lock:
            return (topic, partition) in self._logs

    def messages(self, topic: str, partition: int) -> list[Message07]:
        """The stored messages (shallow: compressed wrappers as stored), with their offsets."""
        with self._lock:
            log = self._log(topic, partition)
            out: list[Message07] = []
            for seg in log.segments:
                out += iter_messages(bytes(seg.data), seg.start)
            return out

    def payloads(self, topic: str, partition: int) -> list[tuple[int, bytes]]:
        """Every stored payload, wrappers decompressed: (offset of the stored message, payload)."""
        with self._lock:
            log = self._log(topic, partition)
            out: list[tuple[int, bytes]] = []
            for seg in log.segments:
                out += decode_deep(bytes(seg.data), seg.start)
            return out

    def corrupt_crc(self, topic: str, partition: int, offset: int) -> None:
        """Flip the CRC of the stored message at ``offset`` (a message boundary)."""
        with self._lock:
            log = self._log(topic, partition)
            for seg in log.segments:
                for m in iter_messages(bytes(seg.data), seg.start):
                    if m.offset == offset:
                        pos = offset - seg.start + m.crc_position
                        seg.data[pos:pos + 4] = struct.pack(">I", m.crc ^ 0xFFFFFFFF)
                        return
            raise ValueError(f"no message starts at offset {offset}")

    def clear_requests(self) -> None:
        self.requests.clear()

    def outcomes(self, name: str | None = None) -> list[str]:
        return [r.outcome for r in list(self.requests) if name is None or r.name == name]

    # -- internals -------------------------------------------------------------------------------
    def _new_log(self) -> _Log:
        return _Log([Segment(0, bytearray(), self.clock())])

    def _log(self, topic: str, partition: int) -> _Log:
        try:
            return self._logs[(topic, partition)]
        except KeyError:
            raise KeyError(f"no log for {topic}-{partition}") from None

    def _has_topic(self, topic: str) -> bool:
        return any(t == topic for t, _ in self._logs)

    def _partition_count(self, topic: str) -> int:
        return self.config.topic_partitions.get(topic, self.config.num_partitions)

    def _segment_bytes(self, topic: str) -> int:
        return self.config.topic_segment_bytes.get(topic, self.config.segment_bytes)

    def _check_partition(self, topic: str, partition: int) -> None:
        """LogManager.getLogPool: InvalidPartitionException outside 0..count-1."""
        count = self._partition_count(topic)
        if partition < 0 or partition >= count:
            raise _Error(WRONG_PARTITION, f"wrong partition {partition} valid partitions "
                                          f"(0,{count - 1})")

    def _get_or_create_log(self, topic: str, partition: int) -> _Log:
        """LogManager.getOrCreateLog: a new topic is registered in ZooKeeper."""
        log = self._logs.get((topic, partition))
        if log is None:
            new_topic = not self._has_topic(topic)
            log = self._logs[(topic, partition)] = self._new_log()
            if new_topic:
                self._register_topic(topic)
        return log

    def _append(self, topic: str, partition: int, data: bytes) -> int:
        """Log.append: roll first if the last segment is over the size, then append (an
        empty set appends nothing)."""
        log = self._get_or_create_log(topic, partition)
        last = log.segments[-1]
        if last.size > self._segment_bytes(topic):
            last = Segment(log.end, bytearray(), self.clock())
            log.segments.append(last)
        offset = log.end
        if data:
            last.data += data
            last.mtime_ms = self.clock()
        return offset

    # -- server ------------------------------------------------------------------------------------
    def size_ok(self, size: int) -> bool:
        if size <= 0 or size > self.config.max_request_bytes:
            self._log_request(-1, "closed: invalid request size", {"size": size})
            return False
        return True

    def handle(self, frame: bytes) -> bytes | None:
        return self._handle(frame)

    def _log_request(self, request_type: int, outcome: str, detail: dict) -> None:
        if len(self.requests) < 100_000:
            self.requests.append(LoggedRequest(
                request_type, REQUEST_NAMES.get(request_type, f"type{request_type}"), outcome,
                detail))

    def _handle(self, frame: bytes) -> bytes | None:
        """Bytes to send (b"" for none) or None to close the connection."""
        reader = _Reader(frame)
        detail: dict = {}
        request_type = -1
        try:
            request_type = reader.int16()
            handler = {
                PRODUCE: self._produce, FETCH: self._fetch, MULTIFETCH: self._multifetch,
                MULTIPRODUCE: self._multiproduce, OFFSETS: self._offsets,
            }.get(request_type)
            if handler is None:
                raise _Close(f"no mapping found for handler id {request_type}")
            out, outcome = handler(reader, detail)
        except _Close as exc:
            self._log_request(request_type, f"closed: {exc}", detail)
            return None
        except Exception as exc:  # as 0.7.2's Processor: any error closes the connection
            self._log_request(request_type, f"closed: {type(exc).__name__}: {exc}", detail)
            return None
        self._log_request(request_type, outcome, detail)
        return out

    # PRODUCE / MULTIPRODUCE
    def _read_produce(self, reader: _Reader) -> tuple[str | None, int, bytes]:
        topic = reader.short_string()
        partition = reader.int32()
        size = reader.int32()
        return topic, partition, reader.take(size)

    def _apply_produce(self, topic: str | None, partition: int, data: bytes) -> dict:
        """KafkaRequestHandlers.handleProducerRequest for one topic/partition."""
        info: dict = {"topic": topic, "partition": partition, "bytes": len(data)}
        why = _topic_error(topic)
        if why:
            raise _Close(f"InvalidTopicException: {why}")
        assert topic is not None
        with self._lock:
            if partition == -1:  # ProducerRequest.RandomPartition
                partition = self._random.randrange(self._partition_count(topic))
                info["chosen_partition"] = partition
            try:
                self._check_partition(topic, partition)
            except _Error as exc:
                raise _Close(f"InvalidPartitionException: {exc}") from None
            self._get_or_create_log(topic, partition)  # before the checks, as in 0.7.2
            try:
                valid, count = validate_message_set(data, self.config.max_message_size)
            except _TooLarge as exc:
                info["dropped"] = f"MessageSizeTooLargeException: {exc}"
                return info
            except MessageError as exc:
                raise _Close(f"InvalidMessage: {exc}") from None
            info["messages"] = count
            info["offset"] = self._append(topic, partition, data[:valid])
            info["appended"] = valid
        return info

    def _produce(self, reader: _Reader, detail: dict) -> tuple[bytes, str]:
        topic, partition, data = self._read_produce(reader)
        detail.update({"topic": topic, "partition": partition, "bytes": len(data)})
        info = self._apply_produce(topic, partition, data)
        detail.update(info)
        if "dropped" in info:
            return b"", f"dropped: {info['dropped']}"
        return b"", "no response"

    def _multiproduce(self, reader: _Reader, detail: dict) -> tuple[bytes, str]:
        count = reader.int16()
        produces = [self._read_produce(reader) for _ in range(max(count, 0))]
        done: list[dict] = []
        detail["produces"] = done
        for topic, partition, data in produces:  # in order: a failure keeps the earlier ones
            done.append({"topic": topic, "partition": partition, "bytes": len(data)})
            done[-1] = self._apply_produce(topic, partition, data)
        dropped = [d["dropped"] for d in done if "dropped" in d]
        return b"", f"dropped: {dropped[0]}" if dropped else "no response"

    # FETCH / MULTIFETCH
    def _read_fetch(self, reader: _Reader) -> tuple[str | None, int, int, int]:
        return reader.short_string(), reader.int32(), reader.int64(), reader.int32()

    def _fetch_one(self, topic: str | None, partition: int, offset: int,
                   max_size: int) -> tuple[int, bytes]:
        """KafkaRequestHandlers.readMessageSet: (error code, message bytes)."""
        if _topic_error(topic):
            return UNKNOWN, b""
        assert topic is not None
        with self._lock:
            try:
                self._check_partition(topic, partition)
                log = self._logs.get((topic, partition))
                if log is None:
                    return NO_ERROR, b""
                return NO_ERROR, log.read(offset, max_size)
            except _Error as exc:
                return exc.code, b""

    def _fetch(self, reader: _Reader, detail: dict) -> tuple[bytes, str]:
        topic, partition, offset, max_size = self._read_fetch(reader)
        detail.update({"topic": topic, "partition": partition, "offset": offset,
                       "max_size": max_size})
        code, data = self._fetch_one(topic, partition, offset, max_size)
        detail.update({"error": code, "bytes": len(data)})
        return _response(code, data), "answered"

    def _multifetch(self, reader: _Reader, detail: dict) -> tuple[bytes, str]:
        count = reader.int16()
        fetches = [self._read_fetch(reader) for _ in range(max(count, 0))]
        detail["fetches"] = [{"topic": t, "partition": p, "offset": o, "max_size": m}
                             for t, p, o, m in fetches]
        parts = []
        for f, (topic, partition, offset, max_size) in zip(detail["fetches"], fetches,
                                                           strict=True):
            code, data = self._fetch_one(topic, partition, offset, max_size)
            f.update({"error": code, "bytes": len(data)})
            parts.append(_response(code, data))
        return _response(NO_ERROR, b"".join(parts)), "answered"

    # OFFSETS
    def _offsets(self, reader: _Reader, detail: dict) -> tuple[bytes, str]:
        topic = reader.short_string()
        partition = reader.int32()
        when = reader.int64()
        max_number = reader.int32()
        detail.update({"topic": topic, "partition": partition, "time": when,
                       "max_number": max_number})
        why = _topic_error(topic)
        if why:
            raise _Close(f"InvalidTopicException: {why}")
        assert topic is not None
        with self._lock:
            try:
                self._check_partition(topic, partition)
            except _Error as exc:
                raise _Close(f"InvalidPartitionException: {exc}") from None
            log = self._logs.get((topic, partition))
            if log is None:  # Log.getEmptyOffsets
                offsets = [0] if when in (LATEST_TIME, EARLIEST_TIME) else []
            else:
                offsets = log.offsets_before(when, max_number, self.clock())
        detail["offsets"] = offsets
        payload = struct.pack(">i", len(offsets)) + b"".join(struct.pack(">q", o) for o in offsets)
        return _response(NO_ERROR, payload), "answered"
