"""``kafkawire offsets TOPIC --at WHEN``: the offset of each partition at a point in time.

Times are resolved by ``client.timestamps.offsets_for_times``, as a query's
``startingTimestamp`` is: the broker's ListOffsets answer is checked against the records around
it and replaced by a scan where it contradicts them (the test broker, Tansu, answers with its
own append time).
"""

from __future__ import annotations

import logging

import click

from spark_kafka_wire.cli.commands import summary
from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.settings import GlobalOptions, connected_any
from spark_kafka_wire.cli.times import When, WhenType
from spark_kafka_wire.cli.topics import earliest_latest, existing_topic, partitions_of

log = logging.getLogger(__name__)


def contradiction_summary(topic: str, partitions: list[int]) -> str:
    """One line for every partition whose ListOffsets answer the records contradicted: a
    warning per partition buries the table on a broker that answers wrongly everywhere."""
    shown = ", ".join(map(str, partitions[:10])) + (", ..." if len(partitions) > 10 else "")
    n = len(partitions)
    return (f"the broker's ListOffsets answer by time contradicted the records of {topic} in "
            f"{n} partition{'' if n == 1 else 's'} ({shown}); the offsets shown there were "
            "found by reading the records (Tansu answers with its own append time); --debug "
            "shows each answer")


@click.command(short_help=summary("offsets"))
@click.argument("topic")
@click.option("--at", "when", type=WhenType(), default="latest", show_default=True,
              help="earliest, latest, an ISO-8601 time (UTC unless it has an offset) or "
              "milliseconds since the epoch: the first offset whose record timestamp is at or "
              "after it ('-' where no record is).")
@click.option("--partition", "-p", type=click.IntRange(min=0), default=None,
              help="Only this partition.")
@click.pass_obj
def offsets(g: GlobalOptions, topic: str, when: When, partition: int | None) -> None:
    """Offset of each partition of TOPIC at a point in time."""
    isolation = g.fetch_settings().isolation_level
    with connected_any(g.client_config()) as client:
        parts = partitions_of(existing_topic(client, topic), partition)
        if when.epoch_ms is None:
            lo, hi = earliest_latest(client, topic, parts, isolation)
            found: dict[int, int | None] = dict(lo if when.special == "earliest" else hi)
        elif not client.offsets_count_records:
            # 0.7 keeps no timestamps: its OFFSETS answers which segment was last modified
            # before the time, so the offset is the start of the first segment after that
            stamps = client.offsets_for_times({(topic, p): when.epoch_ms for p in parts},
                                              isolation)
            found = {p: stamps[(topic, p)] for p in parts}
            log.info("Kafka 0.7 answers offsets by time at segment granularity: each offset "
                     "is the start of the first segment written after the time")
        else:
            wrong: list[int] = []

            def contradicted(tp: tuple[str, int], why: str) -> None:
                wrong.append(tp[1])
                log.info("ListOffsets by time for %s-%d contradicts the records: %s", *tp, why)

            answers = client.offsets_for_times({(topic, p): when.epoch_ms for p in parts},
                                               isolation, on_contradiction=contradicted)
            found = {p: answers[(topic, p)] for p in parts}
            if wrong:
                log.warning(contradiction_summary(topic, sorted(wrong)))
    print_table(("partition", "offset"), [(p, found[p]) for p in parts],
                title=f"{topic} at {when}")
