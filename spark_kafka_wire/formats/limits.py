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

#: How many nodes (struct fields, array elements, map keys and values, leaves) the Spark
#: type of a schema may expand to. A JSON Schema ``$ref`` and a Protobuf message type are
#: expanded wherever they are used, so a 2 KB schema whose definitions each use the next
#: twice, 20 deep, expands to 2**21 nodes (13 s and 370 MiB at planning, and an Arrow child
#: array per node in every batch). Neither Spark's from_protobuf nor Confluent's Java
#: converters bound the expansion, so there is no Java limit to follow; 100,000 is far
#: above the widest schemas Spark plans in reasonable time (its whole-stage code generation
#: already gives up beyond spark.sql.codegen.maxFields, 100 fields), and one expansion of
#: that many nodes takes a fraction of a second. Shared by the formats that expand types.
MAX_SCHEMA_NODES = 100_000
