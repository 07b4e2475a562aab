"""What ``tail``, ``consume`` and their ``--group`` form (cli/group_consume.py) share: the
printer of records in each format, reading offset ranges partition by partition, the topics a
command names or its ``--pattern`` matches, and where each partition's read starts. Apart from
cli/tail.py so that the group reader, which tail.py starts, imports no command module."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import click

from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.record_format import compile_format, is_format_string
from spark_kafka_wire.cli.records import (
    CSV_HEADER,
    REGISTRY_FORMATS,
    TABLE_HEADER,
    Record,
    records_of,
    table_cells,
    to_csv,
    to_json,
)
from spark_kafka_wire.cli.start_offsets import TIME, StartSpec, spec_for, start_offset
from spark_kafka_wire.cli.topics import existing_topic, name_matcher
from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    MISSING_OPTION,
    ConfigurationError,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.metadata.cluster import TopicInfo, TopicPartition
from spark_kafka_wire.client.metadata.cluster_api import Cluster
from spark_kafka_wire.protocol.records.columns import DecodedRecords

if TYPE_CHECKING:  # imported when a registry format is chosen (registry_decoder)
    from spark_kafka_wire.cli.registry_decoding import RecordDecoder

FOLLOW_POLL_S = 0.5  # how often --follow asks for each partition's end


class Printer:
    """Prints records in one format and counts them; ``done`` once ``limit`` were printed.
    ``fmt`` is table, json, csv or a kcat format string; a table names each record's topic
    when ``topics`` is more than one. ``decoder`` decodes the fields of a registry format,
    only the records printed (``registry_decoder``)."""

    def __init__(self, fmt: str, limit: int | None, key_format: str = "text",
                 value_format: str = "text", topics: int = 1,
                 decoder: RecordDecoder | None = None) -> None:
        self.fmt, self.limit, self.decoder = fmt, limit, decoder
        self.key_format, self.value_format = key_format, value_format
        self.with_topic = topics > 1
        self.template: Callable[[Record, str, str], bytes] | None = \
            compile_format(fmt) if is_format_string(fmt) else None
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
        if self.decoder is not None and batch:
            batch = self.decoder.decode(batch)
        kf, vf = self.key_format, self.value_format
        template = self.template
        if template is not None:
            out = sys.stdout.buffer  # raw bytes: a key or value is written as it is
            out.write(b"".join([template(r, kf, vf) for r in batch]))
            out.flush()
        elif self.fmt == "json":
            for r in batch:
                click.echo(to_json(r, kf, vf))
        elif self.fmt == "csv":
            if not self.header_shown:
                click.echo(",".join(CSV_HEADER))
            for r in batch:
                click.echo(to_csv(r, kf, vf))
        elif batch or not self.header_shown:
            header = (("topic", *TABLE_HEADER) if self.with_topic else TABLE_HEADER)
            rows = [((r.topic, *table_cells(r, kf, vf)) if self.with_topic
                     else table_cells(r, kf, vf)) for r in batch]
            print_table(header, rows, show_header=not self.header_shown)
        self.header_shown = True


def registry_decoder(key_format: str, value_format: str, url: str | None
                     ) -> RecordDecoder | None:
    """The decoder of the registry formats among ``key_format`` and ``value_format``, with
    the registry at ``url`` (``--schema-registry``); None when neither is one. Built before
    connecting, so a missing or bad URL fails first."""
    chosen = [f"--{field}-format {fmt}" for field, fmt in (("key", key_format),
                                                           ("value", value_format))
              if fmt in REGISTRY_FORMATS]
    if not chosen:
        if url is not None:
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "CLI_SCHEMA_REGISTRY_UNUSED",
                registry_formats=', '.join(REGISTRY_FORMATS))
        return None
    if url is None:
        raise ConfigurationError.of(
            MISSING_OPTION, "CLI_SCHEMA_REGISTRY", chosen=' and '.join(chosen))
    # imported here: only a registry format loads the registry, Avro and Protobuf modules
    from spark_kafka_wire.cli.registry_decoding import RecordDecoder  # noqa: PLC0415

    return RecordDecoder(url, key_format, value_format)


def partition_chunks(client: Cluster, topic: str, p: int, start: int, end: int,
                     settings: FetchSettings) -> Iterator[DecodedRecords]:
    """The records of [start, end) of one partition, chunk by chunk, data loss skipped."""
    return client.read_range((topic, p), start, end, settings, fail_on_data_loss=False)


def read_ranges(client: Cluster, ranges: dict[TopicPartition, tuple[int, int]],
                settings: FetchSettings, sink: Callable[[list[Record]], None],
                stop: Callable[[], bool]) -> None:
    """Records of each partition's [start, end), partition by partition, chunk by chunk."""
    for (topic, p), (start, end) in sorted(ranges.items()):
        if start >= end:
            continue
        for chunk in partition_chunks(client, topic, p, start, end, settings):
            sink(list(records_of(topic, p, chunk)))
            if stop():
                return


def matching_topics(client: Cluster, names: tuple[str, ...], pattern: str | None
                    ) -> list[TopicInfo]:
    """The topics named (each must exist) and those whose whole name matches ``pattern`` (a
    regular expression, as ``subscribePattern``; internal topics left out), each once."""
    found = [existing_topic(client, name) for name in dict.fromkeys(names)]
    if pattern is not None:
        matches = name_matcher(pattern, "--pattern")
        named = {t.name for t in found}
        md = client.fetch_metadata()
        found += sorted((t for t in md.topics.values()
                         if t.error_code == 0 and not t.is_internal and matches(t.name)
                         and t.name not in named), key=lambda t: t.name)
        if not found:
            raise ConfigurationError.of(
                INVALID_VALUE, "PATTERN_MATCHES_NO_TOPIC", pattern=pattern)
    return found


def start_offsets(client: Cluster, tps: list[TopicPartition], specs: tuple[StartSpec, ...],
                  default: StartSpec, lo: dict[TopicPartition, int],
                  hi: dict[TopicPartition, int], isolation: int) -> dict[TopicPartition, int]:
    """Where each partition's read starts (0.8+), as its ``-o`` spec says."""
    chosen = {tp: spec_for(specs, tp[1], default) for tp in tps}
    times = {tp: s.value for tp, s in chosen.items() if s.kind == TIME}
    at = client.offsets_for_times(times, isolation) if times else {}
    return {tp: start_offset(s, lo[tp], hi[tp], at.get(tp)) for tp, s in chosen.items()}
