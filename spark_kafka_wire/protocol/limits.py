"""Limits and defaults of record data that the option table states as defaults.

Why a module of its own: the option table (``options/table.py``) is imported by every face,
the ``kafkawire`` command's lightest paths included, and must not pull in what decodes records
(numpy, pyarrow, the compression libraries) to learn a number. ``compression`` and
``records`` use these; nothing here imports more than ``primitives``.
"""

from __future__ import annotations

from spark_kafka_wire.protocol.primitives import INT32_MAX

# What one Arrow binary column holds (int32 offsets).
MAX_COLUMN_BYTES = INT32_MAX

# Decompression is bounded per fetch answer, not only per batch: an answer of many small
# batches that each expand to just under a per-batch cap would otherwise be held whole
# (6 re-stamped copies of one 6 KB zstd batch of 200 MiB took a reader from 0.5 to 2.9 GiB).
# The limit counts every byte decompressed for one answer (nested wrappers included) and is
# checked before each decompression, which stops producing output once it is used up.
#
# Default: DECOMPRESSION_RATIO times the bytes a Fetch asks for, at least
# DEFAULT_MAX_DECOMPRESSED_SIZE, at most what one Arrow column holds. A broker caps a batch at
# message.max.bytes (1 MiB) compressed, and typical topics compress 3-10x, logs and JSON up to
# 20-50x: the floor lets an answer of the default 1 MiB fetch expand 256x (a single batch read
# before this limit existed still reads), and larger fetch sizes keep 64x, above that range.
# Past it the data is far more likely a bomb than records; the option raises it.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
DECOMPRESSION_RATIO = 64
# The option that sets the limit (declared in ``spark_kafka_wire/options/table.py`` under this name);
# errors name it, so that a user knows what to raise.
MAX_DECOMPRESSED_OPTION = "kafka.fetch.max.decompressed.bytes"

# Java's and librdkafka's default zstd level.
ZSTD_DEFAULT_LEVEL = 3


def decompression_limit(fetch_bytes: int, configured: int | None = None) -> int:
    """Bytes the records of one answer to a Fetch of ``fetch_bytes`` may decompress to:
    ``configured`` when given, else the derived default (see DECOMPRESSION_RATIO)."""
    if configured is not None:
        return configured
    return min(MAX_COLUMN_BYTES,
               max(DEFAULT_MAX_DECOMPRESSED_SIZE, DECOMPRESSION_RATIO * fetch_bytes))
