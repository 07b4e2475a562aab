"""``kafkawire tail TOPIC``: the last records of each partition, then new ones as they come.

Ranges are read with ``Cluster.read_range`` (on 0.8+ ``client.fetcher.fetch_range``, the
reader a Spark task uses), between
offsets resolved as a query resolves them; ``--follow`` polls each partition's end and reads
what was added. Offsets deleted by retention while reading are skipped (a tail is a look, not
a pipeline that must notice data loss).

On a Kafka 0.7 cluster offsets are byte positions, so "the last N offsets" is no place to
start: a read must begin at a message boundary. The last N records are found by reading from
the start of the log's last segment (OFFSETS lists segment starts,
``Cluster.last_records_starts``), and from earlier segments while that holds fewer than N.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.records import (
    CSV_HEADER,
    TABLE_HEADER,
    Record,
    records_of,
    table_cells,
    to_csv,
    to_json,
)
from spark_kafka_wire.cli.settings import GlobalOptions, connected_any
from spark_kafka_wire.cli.topics import (
    cluster_offsets,
    earliest_latest,
    existing_topic,
    partitions_of,
)
from spark_kafka_wire.client.cluster_api import Cluster
from spark_kafka_wire.client.fetch_settings import FetchSettings
from spark_kafka_wire.client.offsets import LATEST
from spark_kafka_wire.protocol.records.columns import DecodedRecords

FORMATS = ("table", "json", "csv")
FOLLOW_POLL_S = 0.5  # how often --follow asks for each partition's end


class Printer:
    """Prints records in one format and counts them; ``done`` once ``limit`` were printed."""

    def __init__(self, fmt: str, limit: int | None) -> None:
        self.fmt, self.limit = fmt, limit
        self.printed = 0
        self.header_shown = False

    @property
    def done(self) -> bool:
        return self.limit is not None and self.printed >= self.limit

    def take(self, records: Iterable[Record]) -> list[Record]:
        out: list[Record] = []
        for r in records:
            if self.limit is not None and self.printed + len(out) >= self.limit:
                break
            out.append(r)
        return out

    def print(self, records: Iterable[Record]) -> None:
        batch = self.take(records)
        self.printed += len(batch)
        if self.fmt == "json":
            for r in batch:
                click.echo(to_json(r))
        elif self.fmt == "csv":
            if not self.header_shown:
                click.echo(",".join(CSV_HEADER))
            for r in batch:
                click.echo(to_csv(r))
        elif batch or not self.header_shown:
            print_table(TABLE_HEADER, [table_cells(r) for r in batch],
                        show_header=not self.header_shown)
        self.header_shown = True


def partition_chunks(client: Cluster, topic: str, p: int, start: int, end: int,
                     settings: FetchSettings) -> Iterator[DecodedRecords]:
    """The records of [start, end) of one partition, chunk by chunk, data loss skipped."""
    return client.read_range((topic, p), start, end, settings, fail_on_data_loss=False)


def read_ranges(client: Cluster, topic: str, ranges: dict[int, tuple[int, int]],
                settings: FetchSettings, sink: Callable[[list[Record]], None],
                stop: Callable[[], bool]) -> None:
    """Records of each partition's [start, end), partition by partition, chunk by chunk."""
    for p, (start, end) in sorted(ranges.items()):
        if start >= end:
            continue
        for chunk in partition_chunks(client, topic, p, start, end, settings):
            sink(list(records_of(topic, p, chunk)))
            if stop():
                return


def last_records(cluster: Cluster, topic: str, p: int, n: int, lo: int, hi: int,
                 settings: FetchSettings) -> list[Record]:
    """The last ``n`` records before offset ``hi`` of a partition whose offsets are byte
    positions (see the module docstring): read from the last segment start, then from
    earlier ones while too few."""
    last: deque[Record] = deque(maxlen=n)
    for start in cluster.last_records_starts((topic, p), n, lo, hi):
        last.clear()
        for chunk in partition_chunks(cluster, topic, p, start, hi, settings):
            last.extend(records_of(topic, p, chunk))
        if len(last) >= n:
            break
    return list(last)


@click.command(short_help=summary("tail"))
@click.argument("topic")
@click.option("-n", "--last", "last", type=click.IntRange(min=0), default=None,
              help="The records at the last N offsets of each partition [default: 10].")
@click.option("--from-beginning", is_flag=True,
              help="Every record of each partition, from its earliest offset.")
@click.option("-f", "--follow", is_flag=True,
              help="Then keep printing records as they are written (Ctrl-C stops).")
@click.option("--partition", "-p", type=click.IntRange(min=0), default=None,
              help="Only this partition.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table",
              show_default=True,
              help="json: one object per line (topic, partition, offset, timestamp, key, value, "
              "headers; UTF-8 text, or base64 where it is not, said by *_encoding).")
@click.option("-c", "--count", type=click.IntRange(min=1), default=None,
              help="Exit after printing this many records.")
@click.pass_obj
def tail(g: GlobalOptions, topic: str, last: int | None, from_beginning: bool, follow: bool,
         partition: int | None, fmt: str, count: int | None) -> None:
    """Print the last records of TOPIC (of each partition), optionally following it."""
    if from_beginning and last is not None:
        raise click.UsageError("give -n/--last or --from-beginning, not both")
    n = 10 if last is None else last
    settings = g.fetch_settings()
    printer = Printer(fmt, count)
    # A table is printed whole, so its columns line up; JSON and CSV stream line by line.
    pending: list[Record] = []
    sink = pending.extend if fmt == "table" else printer.print

    def stop() -> bool:
        return printer.done or (count is not None and len(pending) >= count)

    with connected_any(g.client_config()) as client:
        parts = partitions_of(existing_topic(client, topic), partition)
        lo, hi = earliest_latest(client, topic, parts, settings.isolation_level)
        if client.byte_offsets and not from_beginning:
            for p in parts:  # Kafka 0.7: the last N records, not the last N offsets
                sink(last_records(client, topic, p, n, lo[p], hi[p], settings))
                if stop():
                    break
        else:
            start = {p: lo[p] if from_beginning else max(lo[p], hi[p] - n) for p in parts}
            read_ranges(client, topic, {p: (start[p], hi[p]) for p in parts}, settings, sink,
                        stop)
        printer.print(pending)
        pending.clear()
        position = dict(hi)
        while follow and not printer.done:
            time.sleep(FOLLOW_POLL_S)
            ends = cluster_offsets(client, {(topic, p): LATEST for p in parts},
                                   settings.isolation_level)
            grown = {p: (position[p], ends[(topic, p)]) for p in parts
                     if ends[(topic, p)] > position[p]}
            read_ranges(client, topic, grown, settings, sink, stop)
            printer.print(pending)
            pending.clear()
            position.update({p: end for p, (_, end) in grown.items()})
