"""What a schema or a record may cost the formats layer: the bounds every decoder checks
before it allocates or recurses (issue 45).

A record and a registry answer are data: neither may crash or hang a worker, nor take more
memory or time than a small multiple of its own size. Each bound is defined here once, and
docs/security.md lists them with the limits of the Java and C clients they follow.
"""

from __future__ import annotations

#: How deep a schema (Avro named types and collections, Protobuf messages, JSON Schema
#: subschemas) or a record's value may nest. Protobuf's own parsers stop at 100 by default
#: (``CodedInputStream``'s recursion limit in C++ and Java); a deeper value fails as a bad
#: record (PERMISSIVE flags it) and a deeper schema is refused with its subject and id,
#: instead of exhausting Python's recursion limit or the C stack of a compiled decoder.
MAX_NESTING_DEPTH = 100

#: How many nodes (a struct, a field's type, an array's element, a leaf...) a schema's Spark
#: type may expand to. A Spark type has no references: every use of an Avro named type, a
#: Protobuf message or a JSON Schema ``$ref`` is a copy, so a 2 KB schema whose definition A
#: uses B twice, B uses C twice, ... 20 deep, is a Spark type of 2**21 nodes (13 s and 370 MiB
#: at planning, an Arrow child array per node in every batch), and an Avro writer schema like
#: it turns a record of a few bytes into as many values. Neither Java's Avro (its ``Schema``
#: keeps references), spark-avro, Spark's from_protobuf nor Confluent's converters bound the
#: expansion, so there is no Java limit to follow; 100,000 nodes is far beyond the schemas
#: topics carry (a few thousand fields) and still plans in about a second. A schema that
#: expands further is refused (SchemaTooComplexError) naming its subject or id.
MAX_SCHEMA_NODES = 100_000

#: What an Avro record may decode into: at most ``AVRO_VALUES_PER_BYTE`` values per byte of
#: the record plus ``AVRO_VALUES_PER_RECORD``. Java's Avro (1.11.3, CVE-2023-39410) bounds a
#: collection's items and a string's or bytes' length by
#: ``org.apache.avro.limits.collectionItems.maxLength``, ``...bytes.maxLength`` and
#: ``...string.maxLength`` (Integer.MAX_VALUE - 8 each by default); here a length and the
#: items of a block whose items take a byte or more are bounded exactly by the bytes left in
#: the record, which is tighter. What those knobs cannot bound is an array of items written
#: as no bytes at all (null, an empty record, a fixed of size 0): ten bytes can claim 10**12
#: of them, so those count against this budget. 32 values a byte leaves room for records of
#: nested records and short arrays of empty markers (a record of ``{"a": int}`` is 2 values in
#: 1 byte) while a hostile record costs no more than a few times what fastavro spends on an
#: ordinary one of its size; records over it fail alone (``mode=PERMISSIVE`` flags them).
AVRO_VALUES_PER_BYTE = 32
AVRO_VALUES_PER_RECORD = 256
