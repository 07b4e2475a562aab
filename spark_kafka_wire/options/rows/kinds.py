"""What a row of the option table is: an :class:`Option` (name, kind of value, default, where it
applies, documentation), where it is used (:class:`Use`), and a :class:`RefusedValue`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, Flag, auto

from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX


class Use(Flag):
    """Where an option is read: batch and streaming reads, batch and streaming writes."""

    READ = auto()
    STREAM_READ = auto()
    WRITE = auto()
    STREAM_WRITE = auto()


NOWHERE = Use(0)
SOURCE = Use.READ | Use.STREAM_READ
SINK = Use.WRITE | Use.STREAM_WRITE
EVERYWHERE = SOURCE | SINK


class Kind(Enum):
    """What an option's value is, for the shared parsers and the option reference's default column."""

    TEXT = "text"  # read by the option's own code: names, lists, JSON, durations
    BOOL = "boolean"  # true or false, any case
    INT = "integer"  # between the option's minimum and maximum
    BYTES = "bytes"  # an INT counting bytes, shown in KiB / MiB
    COUNT = "count"  # a positive integer up to the maximum; these options have no default


@dataclass(frozen=True)
class Option:
    """One option, as users spell it (``startingOffsets``, ``kafka.fetch.max.bytes``).

    ``uses`` says where kafkawire reads it; for an option with a ``refused`` reason, where it
    is refused. ``ignored_in`` says where it is accepted without effect (a key Spark's kafka
    format takes, or one side's setting given to the other). ``doc`` is the option reference's meaning
    cell (Markdown, one line); ``stream_default`` / ``stream_doc`` replace the default and the
    doc in streaming reads where the option means something else there.
    """

    name: str
    uses: Use
    doc: str = ""
    kind: Kind = Kind.TEXT
    default: str | int | bool | None = None  # None: unset means absent
    minimum: int = 0  # INT and BYTES
    # INT, BYTES and COUNT; None: the Java type's range, Integer.MAX_VALUE for INT and BYTES
    # (most are Java ints, and those sent to brokers are int32 fields), Long.MAX_VALUE for COUNT
    maximum: int | None = None
    default_doc: str | None = None  # the option reference's default cell when ``default`` cannot say it
    kafkawire_only: bool = False  # not an option of Spark's kafka format
    stream_default: str | None = None
    stream_doc: str | None = None
    ignored_in: Use = NOWHERE
    refused: str | None = None
    # the option reference's table and help() group of options that are not connection, read or write
    # settings of Spark's kafka format: "formats" (value formats and the Schema Registry)
    section: str = ""

    @property
    def key(self) -> str:
        """The name as the parsers see it: Spark hands options over case-insensitively."""
        return self.name.lower()

    @property
    def highest(self) -> int:
        """The largest value an integer option takes."""
        if self.maximum is not None:
            return self.maximum
        return INT64_MAX if self.kind is Kind.COUNT else INT32_MAX


@dataclass(frozen=True)
class RefusedValue:
    """A Kafka client setting kafkawire does not use, refused with one value only: the value
    whose silent loss would change which records are read or where they are written (other
    values are what kafkawire does anyway, accepted without effect)."""

    name: str
    uses: Use  # where the value is refused
    value: str  # lower case
    reason: str

    @property
    def key(self) -> str:
        return self.name.lower()

