"""``kafkawire offsets TOPIC --at WHEN``: the offset of each partition at a point in time.

Times are resolved by ``client.timestamps.offsets_for_times``, as a query's
``startingTimestamp`` is: the broker's ListOffsets answer is checked against the records around
it and replaced by a scan where it contradicts them (the test broker, Tansu, answers with its
own append time).
"""

from __future__ import annotations

import click

from spark_kafka_wire.cli.output import print_table
from spark_kafka_wire.cli.settings import GlobalOptions, connected
from spark_kafka_wire.cli.times import When, WhenType
from spark_kafka_wire.cli.topics import earliest_latest, existing_topic, partitions_of
from spark_kafka_wire.client.timestamps import offsets_for_times


@click.command()
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
    with connected(g.client_config()) as client:
        parts = partitions_of(existing_topic(client, topic), partition)
        if when.epoch_ms is None:
            lo, hi = earliest_latest(client, topic, parts, isolation)
            found: dict[int, int | None] = dict(lo if when.special == "earliest" else hi)
        else:
            answers = offsets_for_times(client, {(topic, p): when.epoch_ms for p in parts},
                                        isolation)
            found = {p: answers[(topic, p)] for p in parts}
    print_table(("partition", "offset"), [(p, found[p]) for p in parts],
                title=f"{topic} at {when}")
