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
