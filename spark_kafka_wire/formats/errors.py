"""Errors of the formats layer: a record its column's format cannot decode, a value it cannot
encode (issue 32), a schema too large or deep to read (issue 45).

Each names where the record is (topic, partition, offset) or which row of which topic, the
writer schema's id when the record has one, and what to do; the facts stay attributes and
survive pickling, since a Spark task raises them and the driver shows them.
"""

from __future__ import annotations

from spark_kafka_wire.formats.limits import MAX_NESTING_DEPTH, MAX_SCHEMA_NODES
from spark_kafka_wire.protocol.errors import KafkaWireError


class UndecodableRecordError(KafkaWireError):
    """A record its column's format could not decode (under ``mode=FAILFAST``): not in
    Confluent's wire format, a writer schema that cannot be resolved to the reader schema, or
    bytes that are not what the schema says."""

    condition = "KAFKAWIRE_UNDECODABLE_RECORD"

    def __init__(self, column: str, topic: str | None, partition: int, offset: int,
                 schema_id: int | None, reason: str, corrupt_column: str) -> None:
        """``topic`` None: a column decoded by ``from_confluent``, where ``offset`` is the
        row's position in its Arrow batch (the record's place in Kafka is not known)."""
        self.column, self.topic, self.partition, self.offset = column, topic, partition, offset
        self.schema_id, self.reason, self.corrupt_column = schema_id, reason, corrupt_column
        writer = f" (writer schema id {schema_id})" if schema_id is not None else ""
        where = (f"the record at topic {topic!r}, partition {partition}, offset {offset}"
                 if topic is not None else f"row {offset} of a batch of the column")
        self._build(self.condition, column=column, where=where, writer=writer, reason=reason,
                    corrupt=corrupt_column)


class UnencodableValueError(KafkaWireError, ValueError):
    """A row whose column value does not fit the schema it is written with."""

    condition = "KAFKAWIRE_UNENCODABLE_VALUE"

    def __init__(self, column: str, topic: str, schema_id: int, reason: str) -> None:
        self.column, self.topic, self.schema_id, self.reason = column, topic, schema_id, reason
        self._build(self.condition, column=column, topic=topic, schema_id=schema_id,
                    reason=reason)


class SchemaTooComplexError(KafkaWireError, ValueError):
    """A schema (``kind``: "Avro schema", "JSON Schema", "Protobuf schema") whose Spark type would expand
    beyond MAX_SCHEMA_NODES nodes or nest deeper than MAX_NESTING_DEPTH: refused while it is
    expanded, since a schema is data and a 2 KB one can expand exponentially. The subject and id are given where the schema was
    fetched (``naming``); the formats layer knows only the schema's text."""

    condition = "KAFKAWIRE_SCHEMA_TOO_COMPLEX"

    def __init__(self, kind: str, reason: str, subject: str | None = None,
                 schema_id: int | None = None) -> None:
        self.kind, self.reason, self.subject, self.schema_id = kind, reason, subject, schema_id
        named = [f"id {schema_id}"] if schema_id is not None else []
        named += [f"subject {subject!r}"] if subject is not None else []
        which = f" ({', '.join(named)})" if named else ""
        self._build(self.condition, kind=kind, which=which, reason=reason,
                    nodes=f"{MAX_SCHEMA_NODES:,}", depth=MAX_NESTING_DEPTH)

    def naming(self, subject: str | None, schema_id: int | None) -> SchemaTooComplexError:
        """The same refusal naming the registry's subject and schema id."""
        return SchemaTooComplexError(self.kind, self.reason, subject, schema_id)

