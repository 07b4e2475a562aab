r"""``kafkawire produce TOPIC [FILE|-]``: one record per line, as kcat -P does.

What a line holds (plain text split at ``--key-separator``, or a JSON object with key, value,
headers, partition and timestamp) and how keys and values become bytes is
``cli/produce_input.py``. Records are written by the client's Producer with the sink's
settings (``options/produce.py``: acks all and idempotence on by default, batching,
compression, the murmur2_random partitioner of Java clients and Spark). With ``--txn-id``
every record is written in one transaction of that transactional id, committed at the end of
the input and aborted when the command fails or is interrupted (so a reader with
isolation.level=read_committed sees all of the input or none of it).
"""

from __future__ import annotations

import dataclasses
import os
import random
import stat
import time
from collections.abc import Iterable
from typing import BinaryIO

import click
import numpy as np
import pyarrow as pa
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import stderr_console
from spark_kafka_wire.cli.produce_input import (
    CHUNK_LINES,
    FIELD_FORMATS,
    INPUT_FORMATS,
    Chunk,
    Header,
    InputError,
    decode_jsonl,
    decode_lines,
    line_chunks,
    unescape,
)
from spark_kafka_wire.cli.settings import GlobalOptions, connected
from spark_kafka_wire.cli.times import EpochMsType
from spark_kafka_wire.cli.topics import existing_topic, partitions_of
from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.metadata.cluster_adapters import KafkaCluster
from spark_kafka_wire.client.producer import Producer, assign_partitions
from spark_kafka_wire.client.producer.accumulator import headers_from_arrow
from spark_kafka_wire.client.producer.task_writers import own_writer
from spark_kafka_wire.options.produce import SinkOptions
from spark_kafka_wire.protocol.compression import CODEC_NAMES

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


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


def header_option(text: str) -> Header:
    """``-H KEY=VALUE`` (the first ``=`` splits; ``KEY`` alone is a header with a null
    value), as kcat's ``-H``."""
    key, found, value = text.partition("=")
    if not key:
        raise click.BadParameter(f"{text!r}: give KEY=VALUE", param_hint="-H/--header")
    return key, value.encode("utf-8") if found else None


def headers_column(chunk: Chunk, common: list[Header]) -> pa.Array | None:
    """Each record's headers: ``common`` (``-H``) first, then its own; None when none has
    any."""
    n = len(chunk.values)
    own = chunk.headers or [[] for _ in range(n)]
    if not common and not any(own):
        return None
    rows = [[{"key": k, "value": v} for k, v in (*common, *mine)] for mine in own]
    return pa.array(rows, HEADERS_TYPE)


def partitions_column(chunk: Chunk, fixed: int | None, keys: pa.Array, count: int,
                      rng: random.Random, sink: SinkOptions) -> np.ndarray:
    """Each record's partition: its own (JSON lines, checked against the topic's ``count``
    as they were read), else ``--partition``, else the partitioner's choice by key."""
    n = len(chunk.values)
    if fixed is not None:
        where = np.full(n, fixed, np.int32)
    else:
        where = assign_partitions(keys, n, count, rng, sink.partitioner)
    if chunk.partitions is not None and any(p is not None for p in chunk.partitions):
        given = np.array([-1 if p is None else p for p in chunk.partitions], np.int64)
        where = np.where(given >= 0, given, where).astype(np.int32)
    return where


def timestamps_column(chunk: Chunk, fixed: int | None) -> np.ndarray:
    """Each record's timestamp: its own (JSON lines), else ``--timestamp``, else now."""
    default = int(time.time() * 1000) if fixed is None else fixed
    if chunk.timestamps is None:
        return np.full(len(chunk.values), default, np.int64)
    return np.array([default if t is None else t for t in chunk.timestamps], np.int64)


def produce_plain(sink: SinkOptions, topic: str, chunks: Iterable[Chunk], partition: int | None,
                  progress: Progress) -> int:
    """Records to a cluster of plain messages (Kafka 0.7) as the sink writes rows there
    (``client/producer/task_writers.py``'s ``own_writer``, ``client/kafka07/writer.py``: the key only
    picks the partition, 0.7 messages have none; each message set confirmed by the log end;
    a topic no broker has yet goes to partition 0 of each broker, which creates it, as 0.7's
    own producer did). Returns the records written."""
    with own_writer(sink.client, sink.produce, sink.partitioner, topic) as (writer, layout):
        count = len(layout.locations)
        if partition is not None and partition >= count:
            raise ConfigurationError.of(
                CONFIGURATION, "PARTITION_NOT_IN_KAFKA07_TOPIC", partition=partition,
                topic=topic, last=count - 1, names=', '.join(layout.names))
        with progress:
            task = progress.add_task("produce", total=None, records=0)
            for chunk in chunks:
                if chunk.values:
                    n = len(chunk.values)
                    explicit = None if partition is None else pa.array(np.full(n, partition,
                                                                               np.int32))
                    writer.append(topic, pa.array(chunk.keys, pa.binary()),
                                  pa.array(chunk.values, pa.binary()), explicit, None, 0)
                progress.update(task, advance=chunk.size, records=writer.records)
        return writer.records


def refuse_on_plain_messages(header: tuple[str, ...], timestamp: int | None, tombstone: bool,
                      input_format: str, txn_id: str | None) -> None:
    """What a Kafka 0.7 message cannot carry: refused before anything is sent."""
    asked = [name for name, given in (("-H/--header", header), ("--timestamp", timestamp),
                                      ("-Z/--tombstone", tombstone),
                                      ("--input-format jsonl", input_format == "jsonl"),
                                      ("--txn-id", txn_id)) if given]
    if asked:
        raise ConfigurationError.of(
            CONFIGURATION, "KAFKA07_PAYLOAD_ONLY", asked=', '.join(asked))


@click.command(short_help=summary("produce"))
@click.argument("topic")
@click.argument("file", type=click.File("rb"), default="-")
@click.option("--key-separator", "-K", metavar="SEP", default=None,
              help="Split each line into key and value at the first SEP (backslash escapes "
              "such as \\t as in kcat); lines without SEP have no key.")
@click.option("--input-format", type=click.Choice(INPUT_FORMATS), default="lines",
              show_default=True,
              help="jsonl: one JSON object per line with key, value, headers, partition and "
              "timestamp (what `tail --format json` prints; *_encoding base64 marks bytes).")
@click.option("--key-format", type=click.Choice(FIELD_FORMATS), default="utf8",
              show_default=True,
              help="How a key's text becomes bytes: as typed, hex, base64, or JSON (checked).")
@click.option("--value-format", type=click.Choice(FIELD_FORMATS), default="utf8",
              show_default=True, help="How a value's text becomes bytes, as --key-format.")
@click.option("-H", "--header", "header", multiple=True, metavar="KEY=VALUE",
              help="A header on every record (repeatable; KEY alone: a null value).")
@click.option("-Z", "--tombstone", is_flag=True,
              help="Write an empty value as null (a tombstone, which compaction deletes the "
              "key by), as kcat -Z.")
@click.option("--timestamp", type=EpochMsType(), default=None,
              help="The CreateTime of every record (ISO-8601 or ms since the epoch) "
              "[default: now; a JSON line's own timestamp wins].")
@click.option("--compression", "-z", type=click.Choice(sorted(CODEC_NAMES)), default=None,
              help="Compression codec [default: compression.type of --command-config, else "
              "none].")
@click.option("--partition", "-p", type=click.IntRange(min=0), default=None,
              help="Write every record to this partition (default: by key, murmur2 as Java "
              "clients; keyless records spread at random; a JSON line's own partition wins).")
@click.option("--keep-empty", is_flag=True,
              help="Write an empty line as a record with an empty value (default: empty "
              "lines are skipped). A \\r\\n line end is always a line end, as in Kafka's "
              "console producer.")
@click.option("--txn-id", metavar="ID", default=None,
              help="Write every record in one transaction of this transactional id, committed "
              "at the end of the input, aborted on failure or Ctrl-C.")
@click.pass_obj
def produce(g: GlobalOptions, topic: str, file: BinaryIO, key_separator: str | None,
            input_format: str, key_format: str, value_format: str, header: tuple[str, ...],
            tombstone: bool, timestamp: int | None, compression: str | None,
            partition: int | None, keep_empty: bool, txn_id: str | None) -> None:
    """Write one record per line of FILE (standard input when - or absent) to TOPIC.

    Lines end at \\n or \\r\\n (the \\r is not part of the value); empty lines are skipped
    unless --keep-empty is given. Records are written idempotently where the broker can."""
    separator = None
    if key_separator is not None:
        if input_format == "jsonl":
            raise click.UsageError("--key-separator splits plain lines; a JSON line has its "
                                   "own key field")
        separator = unescape(key_separator)
        if not separator or b"\n" in separator:
            raise click.BadParameter("must be a non-empty string without a newline",
                                     param_hint="--key-separator")
    if keep_empty and input_format == "jsonl":
        raise click.UsageError("--keep-empty keeps empty plain lines; an empty JSON line is "
                               "no record")
    common = [header_option(h) for h in header]
    extra = {} if txn_id is None else {"kafka.transactional.id": txn_id}
    sink = g.sink_options(topic, compression, extra)
    # Lines typed at a terminal are sent one by one as they are typed, as kcat does.
    interactive = file.isatty()
    lines = line_chunks(file, separator, 1 if interactive else CHUNK_LINES, keep_empty)
    decode = decode_jsonl if input_format == "jsonl" else decode_lines
    if sink.client.plain_messages:
        refuse_on_plain_messages(header, timestamp, tombstone, input_format, txn_id)
        chunks = decode(lines, key_format, value_format, tombstone)
        n = produce_plain(sink, topic, chunks, partition, progress_bar(file, interactive))
        click.echo(f"{n} record{'' if n == 1 else 's'} written to {topic}")
        return
    settings = sink.produce if txn_id is None else \
        dataclasses.replace(sink.produce, transactional_id=txn_id)
    with connected(sink.client, "produce") as client:
        info = existing_topic(KafkaCluster(client), topic)
        if partition is not None:
            partitions_of(info, partition)
        chunks = decode(lines, key_format, value_format, tombstone, info.num_partitions)
        producer = Producer(client, settings)
        rng = random.Random()
        progress = progress_bar(file, interactive)
        try:
            with progress:
                task = progress.add_task("produce", total=remaining_size(file), records=0)
                appended = 0
                for chunk in chunks:
                    if not chunk.values:  # only skipped lines: nothing to send
                        progress.update(task, advance=chunk.size)
                        continue
                    keys = pa.array(chunk.keys, pa.binary())
                    hdrs, header_bytes = (None, None)
                    column = headers_column(chunk, common)
                    if column is not None:
                        hdrs, header_bytes = headers_from_arrow(column)
                    producer.append(
                        topic, keys, pa.array(chunk.values, pa.binary()),
                        partitions_column(chunk, partition, keys, info.num_partitions, rng,
                                          sink),
                        timestamps_column(chunk, timestamp), hdrs, header_bytes)
                    appended += len(chunk.values)
                    progress.update(task, advance=chunk.size, records=appended)
                    if interactive:
                        producer.flush()
                producer.flush()
                producer.end_own_transaction(commit=True)
        except InputError as exc:
            # The lines before the bad one were appended: they reach the brokers (then are
            # aborted with the transaction), so what the topic holds is exactly what is said.
            producer.flush()
            if txn_id is not None:
                producer.end_own_transaction(commit=False)
                then = f"transaction {txn_id!r} aborted: nothing of the input is committed"
            else:
                n = producer.records_sent
                then = (f"the {n} record{'' if n == 1 else 's'} of the lines before it "
                        f"{'was' if n == 1 else 'were'} written to {topic}")
            raise InputError(f"{exc.format_message()}; {then}") from None
        except BaseException:
            producer.abort()  # buffered records forgotten, requests in flight dropped
            producer.abort_transaction()  # then what reached the brokers is aborted
            raise
    n = producer.records_sent
    where = topic if txn_id is None else f"{topic} in transaction {txn_id!r}, committed"
    click.echo(f"{n} record{'' if n == 1 else 's'} written to {where}")
