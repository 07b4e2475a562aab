"""``kafkawire tail TOPIC...`` and ``kafkawire consume TOPIC...``: records of one or more
topics, from where ``-o`` says, in a table, JSON, CSV or a kcat format string.

``tail`` is Unix tail: the last 10 records of each partition, then exit (``-f`` keeps
following). ``consume`` is kcat ``-C``: from the beginning, following until Ctrl-C unless
``-e`` (exit at the end). Both take the same options; start offsets are
``cli/start_offsets.py``, format strings ``cli/record_format.py``, key and value formats
``cli/records.py``, the printer and range reads ``cli/reading.py``; ``--group`` reads as a
member of a consumer group (``cli/group_consume.py``).

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
from collections.abc import Callable

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.group_consume import run_group
from spark_kafka_wire.cli.reading import (
    FOLLOW_POLL_S,
    Printer,
    matching_topics,
    partition_chunks,
    read_ranges,
    registry_decoder,
    start_offsets,
)
from spark_kafka_wire.cli.record_format import compile_format, is_format_string
from spark_kafka_wire.cli.records import SHOWN_FORMATS, Record, records_of
from spark_kafka_wire.cli.settings import GlobalOptions, connected_any
from spark_kafka_wire.cli.start_offsets import (
    BEGINNING,
    END,
    LAST,
    StartSpec,
    StartType,
    spec_for,
)
from spark_kafka_wire.cli.topics import cluster_offsets, partitions_of
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.offsets import EARLIEST, LATEST
from spark_kafka_wire.client.groups.assignment import ASSIGNORS, RANGE
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.metadata.cluster_api import Cluster

FORMATS = ("table", "json", "csv")
ISOLATIONS = ("read_uncommitted", "read_committed")


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



def read_records(client: Cluster, tps: list[TopicPartition], specs: tuple[StartSpec, ...],
                 default: StartSpec, settings: FetchSettings,
                 sink: Callable[[list[Record]], None], stop: Callable[[], bool]
                 ) -> dict[TopicPartition, int]:
    """Records from each partition's start to its end now; the ends (where following goes
    on from)."""
    lo = cluster_offsets(client, {tp: EARLIEST for tp in tps}, settings.isolation_level)
    hi = cluster_offsets(client, {tp: LATEST for tp in tps}, settings.isolation_level)
    if client.offsets_count_records:
        starts = start_offsets(client, tps, specs, default, lo, hi, settings.isolation_level)
        read_ranges(client, {tp: (starts[tp], hi[tp]) for tp in tps}, settings, sink, stop)
        return hi
    # offsets are positions in the log (Kafka 0.7's bytes; module docstring)
    for tp in tps:
        spec = spec_for(specs, tp[1], default)
        if spec.kind == LAST:
            sink(last_records(client, tp[0], tp[1], spec.value, lo[tp], hi[tp], settings))
        else:
            start = start_offsets(client, [tp], (spec,), spec, lo, hi,
                                  settings.isolation_level)[tp]
            read_ranges(client, {tp: (start, hi[tp])}, settings, sink, stop)
        if stop():
            break
    return hi


def run(g: GlobalOptions, topic: tuple[str, ...], pattern: str | None,
        specs: tuple[StartSpec, ...], default: StartSpec, follow: bool, partition: int | None,
        fmt: str, count: int | None, key_format: str, value_format: str,
        isolation: str | None, group: tuple[str | None, str] = (None, RANGE),
        group_default: StartSpec | None = None, registry: str | None = None) -> None:
    """What ``tail`` and ``consume`` do once their options are read; with ``group`` (name,
    assignor) as a member of that consumer group (cli/group_consume.py), a partition without
    a commit starting at ``group_default`` (else ``default``) unless ``-o`` names it;
    ``registry``: the Schema Registry URL of the avro, protobuf and json-schema formats."""
    if not topic and pattern is None:
        raise click.UsageError("name a topic, or give --pattern")
    decoder = registry_decoder(key_format, value_format, registry)
    if group[0] is not None:
        if partition is not None:
            raise click.UsageError("--partition and --group exclude each other: the group "
                                   "assigns the partitions")
        run_group(g, topic, pattern, group[0], group[1], specs, group_default or default,
                  not follow, fmt, count, key_format, value_format, isolation, decoder)
        return
    settings = g.fetch_settings(None if isolation is None else
                                {"kafka.isolation.level": isolation})
    with connected_any(g.client_config()) as client:
        infos = matching_topics(client, topic, pattern)
        tps = [(t.name, p) for t in infos for p in partitions_of(t, partition)]
        printer = Printer(fmt, count, key_format, value_format, len(infos), decoder)
        # A table is printed whole, so its columns line up; the others stream.
        pending: list[Record] = []
        sink = pending.extend if fmt == "table" else printer.print

        def stop() -> bool:
            return printer.done or (count is not None and len(pending) >= count)

        position = read_records(client, tps, specs, default, settings, sink, stop)
        printer.print(pending)
        pending.clear()
        while follow and not printer.done:
            time.sleep(FOLLOW_POLL_S)
            ends = cluster_offsets(client, {tp: LATEST for tp in tps}, settings.isolation_level)
            grown = {tp: (position[tp], ends[tp]) for tp in tps if ends[tp] > position[tp]}
            read_ranges(client, grown, settings, sink, stop)
            printer.print(pending)
            pending.clear()
            position.update({tp: end for tp, (_, end) in grown.items()})


def _read_options(command: Callable) -> Callable:
    """The options ``tail`` and ``consume`` share."""
    for option in reversed([
        click.argument("topic", nargs=-1),
        click.option("--pattern", metavar="REGEX", default=None,
                     help="Also every topic whose whole name matches REGEX (as "
                     "subscribePattern; internal topics left out)."),
        click.option("-o", "--offset", "specs", type=StartType(), multiple=True,
                     help="Where to start: beginning, end, an offset N, -N (the last N), "
                     "@TIME (ISO-8601 or ms); P:SPEC for partition P only (repeatable)."),
        click.option("--partition", "-p", type=click.IntRange(min=0), default=None,
                     help="Only this partition (of each topic)."),
        click.option("--format", "fmt", default="table", show_default=True,
                     metavar="table|json|csv|FORMAT",
                     help="json: one object per line (topic, partition, offset, timestamp, "
                     "key, value, headers; *_encoding says base64 where bytes are not "
                     "UTF-8). A FORMAT with % is kcat's -f: %t %p %o %k %s %K %S %T %h, "
                     "\\n for a newline."),
        click.option("--key-format", type=click.Choice(SHOWN_FORMATS), default="text",
                     show_default=True,
                     help="Keys as UTF-8 text (base64 where not), hex, base64 or parsed JSON; "
                     "avro, protobuf, json-schema: Confluent-framed, decoded with each "
                     "record's writer schema from --schema-registry and shown as JSON (a "
                     "record that does not decode: a warning, and its bytes in base64)."),
        click.option("--value-format", type=click.Choice(SHOWN_FORMATS), default="text",
                     show_default=True, help="Values, as --key-format."),
        click.option("--schema-registry", "-r", "schema_registry", metavar="URL",
                     default=None,
                     help="The Schema Registry (Confluent's API; http(s)://[user:password@]"
                     "host[:port][/path], comma-separated for several) the avro, protobuf "
                     "and json-schema formats read schemas from, by id (kcat -r)."),
        click.option("--isolation", type=click.Choice(ISOLATIONS), default=None,
                     help="read_committed: skip aborted transactions and stop at the last "
                     "stable offset [default: isolation.level of --command-config, else "
                     "read_uncommitted]."),
        click.option("-c", "--count", type=click.IntRange(min=1), default=None,
                     help="Exit after printing this many records."),
        click.option("-G", "--group", default=None, metavar="GROUP",
                     help="Read as a member of this consumer group (kcat -G): the topics are "
                     "the subscription, the group assigns the partitions, each starts at the "
                     "group's committed offset (-o applies where none is), what is printed is "
                     "committed (every 5 s, on rebalance, on exit); Ctrl-C leaves the group."),
        click.option("--assignor", type=click.Choice(ASSIGNORS), default=RANGE,
                     show_default=True,
                     help="With --group: how the group leader assigns partitions (Kafka's "
                     "partition.assignment.strategy; members of one group need one in "
                     "common)."),
    ]):
        command = option(command)
    return command


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS and not is_format_string(fmt):
        raise click.BadParameter(f"{fmt!r} is none of table, json, csv, and has no % to be a "
                                 "format string", param_hint="--format")
    if is_format_string(fmt):
        compile_format(fmt)  # an unknown %X fails before connecting


@click.command(short_help=summary("tail"))
@_read_options
@click.option("-n", "--last", "last", type=click.IntRange(min=0), default=None,
              help="The records at the last N offsets of each partition [default: 10].")
@click.option("--from-beginning", is_flag=True,
              help="Every record of each partition, from its earliest offset (-o beginning).")
@click.option("-f", "--follow", is_flag=True,
              help="Then keep printing records as they are written (Ctrl-C stops).")
@click.pass_obj
def tail(g: GlobalOptions, topic: tuple[str, ...], pattern: str | None,
         specs: tuple[StartSpec, ...], partition: int | None, fmt: str, key_format: str,
         value_format: str, schema_registry: str | None, isolation: str | None,
         count: int | None, group: str | None, assignor: str, last: int | None,
         from_beginning: bool, follow: bool) -> None:
    """Print the last records of each partition of TOPIC (one or more), optionally following.

    \b
    kafkawire tail orders                      the last 10 records of each partition
    kafkawire tail orders -o @2026-05-01T12:00Z -c 100
    kafkawire tail orders -o 0:1500 -p 0 --format '%o %k=%s\\n'
    kafkawire tail --pattern 'orders-.*' -f --format json
    kafkawire tail orders --group audit -f      a member of group audit, from its commits
    """
    _check_format(fmt)
    if sum(bool(x) for x in (last is not None, from_beginning, specs)) > 1:
        raise click.UsageError("give one of -n/--last, --from-beginning and -o/--offset")
    default = StartSpec(BEGINNING) if from_beginning else StartSpec(LAST, 10 if last is None
                                                                     else last)
    run(g, topic, pattern, specs, default, follow, partition, fmt, count, key_format,
        value_format, isolation, (group, assignor), registry=schema_registry)


@click.command(short_help=summary("consume"))
@_read_options
@click.option("-e", "--exit-at-end", is_flag=True,
              help="Exit once every partition's end is printed (kcat -e) instead of following.")
@click.pass_obj
def consume(g: GlobalOptions, topic: tuple[str, ...], pattern: str | None,
            specs: tuple[StartSpec, ...], partition: int | None, fmt: str, key_format: str,
            value_format: str, schema_registry: str | None, isolation: str | None,
            count: int | None, group: str | None, assignor: str, exit_at_end: bool) -> None:
    """Print the records of TOPIC (one or more) from the beginning and follow it, as kcat -C.

    \b
    kafkawire consume orders -e                       everything there is, then exit
    kafkawire consume orders -o end                   only what is written from now on
    kafkawire consume orders -o -5 --value-format json --format json
    kafkawire consume orders -e --value-format avro -r http://registry:8081
    kafkawire consume orders -G billing           a member of group billing (kcat -G)

    With --group a partition the group has no commit for starts at its end, as
    kafka-console-consumer and kcat -G start (auto.offset.reset=latest); -o beginning reads
    it from its start.
    """
    _check_format(fmt)
    run(g, topic, pattern, specs, StartSpec(BEGINNING), not exit_at_end, partition, fmt,
        count, key_format, value_format, isolation, (group, assignor), StartSpec(END),
        schema_registry)
