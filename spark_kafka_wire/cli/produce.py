r"""``kafkawire produce TOPIC [FILE|-]``: one record per line, as kcat -P does.

Lines are read as Kafka's console producer reads them (Java's ``readLine``): a line ends at
``\n`` or ``\r\n``, so a file saved on Windows gives the same values as on Unix, and an empty
line is skipped (a stray blank line is a typo, not an empty record) unless ``--keep-empty``
asks for it. A ``\r`` anywhere else is kept: values are bytes.

Lines are written by the client's Producer with the sink's settings (``sink.options``: acks
all and idempotence on by default, batching, compression, the murmur2_random partitioner of
Java clients and Spark), read in bounded chunks so a file of any size streams through.
"""

from __future__ import annotations

import os
import random
import stat
import time
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import click
import numpy as np
import pyarrow as pa
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import stderr_console
from spark_kafka_wire.cli.settings import GlobalOptions, connected
from spark_kafka_wire.cli.topics import existing_topic, partitions_of
from spark_kafka_wire.client.cluster_adapters import KafkaCluster
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.producer import Producer, assign_partitions
from spark_kafka_wire.protocol.compression import CODEC_NAMES
from spark_kafka_wire.sink.kafka07_writer import topic_writer
from spark_kafka_wire.sink.options import SinkOptions

CHUNK_LINES = 10_000
CHUNK_BYTES = 1 << 20
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "0": "\0", "\\": "\\"}


def unescape(text: str) -> bytes:
    """A separator as typed: ``\\t``, ``\\n``, ``\\r``, ``\\0``, ``\\\\`` and ``\\xHH`` become
    the bytes they name (shells pass them literally); anything else stands for itself."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            e = text[i + 1]
            if e in _ESCAPES:
                out += _ESCAPES[e].encode()
                i += 2
                continue
            hex_digits = text[i + 2:i + 4]
            if e == "x" and len(hex_digits) == 2 and all(
                    d in "0123456789abcdefABCDEF" for d in hex_digits):
                out.append(int(hex_digits, 16))
                i += 4
                continue
        out += c.encode()
        i += 1
    return bytes(out)


def split_line(line: bytes, separator: bytes | None) -> tuple[bytes | None, bytes]:
    """(key, value): the key before the first separator; no key where there is none."""
    if separator is not None:
        key, found, value = line.partition(separator)
        if found:
            return key, value
    return None, line


def line_body(raw: bytes) -> bytes:
    r"""A line without its ending, ``\n`` or ``\r\n`` (a lone ``\r`` is data)."""
    if raw.endswith(b"\r\n"):
        return raw[:-2]
    return raw[:-1] if raw.endswith(b"\n") else raw


def line_chunks(source: BinaryIO, separator: bytes | None, max_lines: int = CHUNK_LINES,
                keep_empty: bool = False
                ) -> Iterator[tuple[list[bytes | None], list[bytes], int]]:
    r"""(keys, values, bytes read) for up to ``max_lines`` lines or CHUNK_BYTES bytes at a
    time; the line ending (``\n`` or ``\r\n``) is not part of its value, and empty lines
    are skipped unless ``keep_empty`` (their bytes still count as read, for the progress
    bar)."""
    keys: list[bytes | None] = []
    values: list[bytes] = []
    size = 0
    for raw in source:
        size += len(raw)
        line = line_body(raw)
        if not line and not keep_empty:
            continue
        key, value = split_line(line, separator)
        keys.append(key)
        values.append(value)
        if len(values) >= max_lines or size >= CHUNK_BYTES:
            yield keys, values, size
            keys, values, size = [], [], 0
    if values or size:
        yield keys, values, size


def remaining_size(source: BinaryIO) -> int | None:
    """Bytes left in a regular file (for the progress bar's total); None for a pipe."""
    try:
        st = os.fstat(source.fileno())
        return max(0, st.st_size - source.tell()) if stat.S_ISREG(st.st_mode) else None
    except (OSError, AttributeError, ValueError):  # no file descriptor (a test's BytesIO)
        return None


def progress_bar(file: BinaryIO, interactive: bool) -> Progress:
    """Records and bytes sent, on stderr when it is a terminal and the lines are not typed."""
    return Progress(TextColumn("[bold]{task.fields[records]:,} records"), BarColumn(),
                    DownloadColumn(), TimeElapsedColumn(), console=stderr_console(),
                    transient=True, disable=interactive or not stderr_console().is_terminal)


def produce07(sink: SinkOptions, topic: str,
              chunks: Iterable[tuple[list[bytes | None], list[bytes], int]],
              partition: int | None, progress: Progress) -> int:
    """Lines to a Kafka 0.7 cluster as the sink writes rows there (``sink.kafka07_writer``:
    the key only picks the partition, 0.7 messages have none; each message set confirmed by
    the log end; a topic no broker has yet goes to partition 0 of each broker, which creates
    it, as 0.7's own producer did). Returns the records written."""
    with topic_writer(sink, topic) as (writer, layout):
        count = len(layout.locations)
        if partition is not None and partition >= count:
            raise ConfigurationError(
                f"--partition {partition}: topic {topic!r} has partitions 0-{count - 1} on its "
                f"Kafka 0.7 brokers, numbered by broker id, then partition "
                f"({', '.join(layout.names)})")
        with progress:
            task = progress.add_task("produce", total=None, records=0)
            for keys, values, size in chunks:
                if values:
                    n = len(values)
                    explicit = None if partition is None else pa.array(np.full(n, partition,
                                                                               np.int32))
                    writer.append(topic, pa.array(keys, pa.binary()),
                                  pa.array(values, pa.binary()), explicit, None)
                progress.update(task, advance=size, records=writer.written.records)
        return writer.written.records


@click.command(short_help=summary("produce"))
@click.argument("topic")
@click.argument("file", type=click.File("rb"), default="-")
@click.option("--key-separator", "-K", metavar="SEP", default=None,
              help="Split each line into key and value at the first SEP (backslash escapes "
              "such as \\t as in kcat); lines without SEP have no key.")
@click.option("--compression", "-z", type=click.Choice(sorted(CODEC_NAMES)), default=None,
              help="Compression codec [default: compression.type of --command-config, else "
              "none].")
@click.option("--partition", "-p", type=click.IntRange(min=0), default=None,
              help="Write every record to this partition (default: by key, murmur2 as Java "
              "clients; keyless records spread at random).")
@click.option("--keep-empty", is_flag=True,
              help="Write an empty line as a record with an empty value (default: empty "
              "lines are skipped). A \\r\\n line end is always a line end, as in Kafka's "
              "console producer.")
@click.pass_obj
def produce(g: GlobalOptions, topic: str, file: BinaryIO, key_separator: str | None,
            compression: str | None, partition: int | None, keep_empty: bool) -> None:
    """Write one record per line of FILE (standard input when - or absent) to TOPIC.

    Lines end at \\n or \\r\\n (the \\r is not part of the value); empty lines are skipped
    unless --keep-empty is given."""
    separator = None
    if key_separator is not None:
        separator = unescape(key_separator)
        if not separator or b"\n" in separator:
            raise click.BadParameter("must be a non-empty string without a newline",
                                     param_hint="--key-separator")
    sink = g.sink_options(topic, compression)
    # Lines typed at a terminal are sent one by one as they are typed, as kcat does.
    interactive = file.isatty()
    chunks = line_chunks(file, separator, 1 if interactive else CHUNK_LINES, keep_empty)
    if sink.client.kafka07:
        n = produce07(sink, topic, chunks, partition, progress_bar(file, interactive))
        click.echo(f"{n} record{'' if n == 1 else 's'} written to {topic}")
        return
    with connected(sink.client, "produce") as client:
        info = existing_topic(KafkaCluster(client), topic)
        if partition is not None:
            partitions_of(info, partition)
        producer = Producer(client, sink.produce)
        rng = random.Random()
        progress = progress_bar(file, interactive)
        try:
            with progress:
                task = progress.add_task("produce", total=remaining_size(file), records=0)
                appended = 0
                for keys, values, size in chunks:
                    if not values:  # only skipped lines: nothing to send
                        progress.update(task, advance=size)
                        continue
                    key_array = pa.array(keys, pa.binary())
                    n = len(values)
                    where = np.full(n, partition, np.int32) if partition is not None else \
                        assign_partitions(key_array, n, info.num_partitions, rng,
                                          sink.partitioner)
                    producer.append(topic, key_array, pa.array(values, pa.binary()), where,
                                    int(time.time() * 1000))
                    appended += n
                    progress.update(task, advance=size, records=appended)
                    if interactive:
                        producer.flush()
                producer.flush()
        except BaseException:
            producer.abort()
            raise
    n = producer.records_sent
    click.echo(f"{n} record{'' if n == 1 else 's'} written to {topic}")
