"""The table of ``kafkawire``'s commands: where each is defined and the one line ``--help``
shows for it.

Why a table: a command's module imports the client (sockets, TLS, SASL, record batches with
numpy and pyarrow), about a second of imports, which ``kafkawire --help``, ``--version`` and
shell completion of command names do not need. The group (``app.LazyGroup``) lists commands
from this table and imports a command's module only when that command runs or its own help is
asked for. Each command takes its short help from here (``summary``), so the listing and the
command never disagree. This module imports nothing but the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The environment variable ``--bootstrap-server`` falls back to (as the test suite's).
BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"
#: What ``--output`` accepts: tables as drawn (or TSV for a pipe), or JSON lines
#: (``output.print_table``).
OUTPUTS = ("table", "json")


@dataclass(frozen=True)
class CommandEntry:
    """Where a command's click object lives, and its one-line summary."""

    module: str
    attribute: str
    summary: str


COMMANDS: dict[str, CommandEntry] = {
    "broker": CommandEntry(
        "spark_kafka_wire.cli.broker", "broker",
        "Run a local Kafka-compatible broker until Ctrl-C."),
    "check": CommandEntry(
        "spark_kafka_wire.cli.check", "check",
        "Connect and show what kafkawire can use on each broker."),
    "consume": CommandEntry(
        "spark_kafka_wire.cli.tail", "consume",
        "Print the records of topics from an offset or time, following them (kcat -C)."),
    "describe": CommandEntry(
        "spark_kafka_wire.cli.topics", "describe",
        "Leader, replicas, ISR and offsets of each partition of a topic."),
    "groups": CommandEntry(
        "spark_kafka_wire.cli.groups", "groups",
        "List consumer groups; describe, reset the offsets of and delete one."),
    "lag": CommandEntry(
        "spark_kafka_wire.cli.lag", "lag",
        "Committed offset, end offset and lag of a consumer group."),
    "offsets": CommandEntry(
        "spark_kafka_wire.cli.offsets", "offsets",
        "Offset of each partition of a topic at a point in time."),
    "produce": CommandEntry(
        "spark_kafka_wire.cli.produce", "produce",
        "Write one record per input line to a topic."),
    "tail": CommandEntry(
        "spark_kafka_wire.cli.tail", "tail",
        "Print the last records of topics, optionally following them."),
    "topics": CommandEntry(
        "spark_kafka_wire.cli.topics", "topics",
        "List, create and delete topics; add partitions."),
    "transactions": CommandEntry(
        "spark_kafka_wire.cli.transactions", "transactions",
        "List transactional ids; describe one; abort what a dead producer left open."),
}


def summary(name: str) -> str:
    """The short help of command ``name`` (its ``short_help``)."""
    return COMMANDS[name].summary
