"""A read's Fetch settings (sizes, CRC checks, isolation level), apart from the fetch plan;
and the same for a Kafka 0.7 FETCH.

Why a module of its own: the settings are built wherever options are parsed (queries, the
CLI), while the plan that uses them decodes records (numpy, pyarrow, the codecs); keeping them
apart lets a command that only asks for metadata or offsets start without those.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.client import defaults
from spark_kafka_wire.client.fetching.offsets import ISOLATION_LEVELS
from spark_kafka_wire.protocol.limits import decompression_limit


@dataclass(frozen=True)
class FetchSettings:
    """A read's Fetch sizes, CRC checks and isolation level; defaults: defaults.py's."""

    max_partition_fetch_bytes: int = defaults.MAX_PARTITION_FETCH_BYTES
    fetch_max_bytes: int = defaults.FETCH_MAX_BYTES
    max_wait_ms: int = defaults.FETCH_MAX_WAIT_MS
    min_bytes: int = defaults.FETCH_MIN_BYTES
    isolation_level: int = ISOLATION_LEVELS[defaults.ISOLATION_LEVEL]
    check_crcs: bool = defaults.CHECK_CRCS
    # kafka.fetch.max.decompressed.bytes; None: derived from the fetch size (entries.py)
    max_decompressed_bytes: int | None = None

    def decompression_limit(self, fetch_bytes: int) -> int:
        """What the records of an answer to a Fetch of ``fetch_bytes`` may decompress to, and
        what a task may hold decompressed at once."""
        return decompression_limit(fetch_bytes, self.max_decompressed_bytes)


@dataclass(frozen=True)
class FetchSettings07:
    # MAX_SIZE of a FETCH (0.7's consumer fetch.size was 300 KiB, "Writing a Driver" uses
    # 300K as its example); grown x2 for a larger message, up to max_fetch_size. Defaults:
    # the options these come from (fetch_settings07 below, from options.fetch_settings), as
    # defaults.py has them.
    fetch_size: int = defaults.MAX_PARTITION_FETCH_BYTES
    max_fetch_size: int = defaults.FETCH_MAX_BYTES
    check_crcs: bool = defaults.CHECK_CRCS
    # kafka.fetch.max.decompressed.bytes; None: derived from the FETCH's size, as for 0.8+
    max_decompressed_size: int | None = None


def fetch_settings07(fetch: FetchSettings) -> FetchSettings07:
    """A Kafka 0.7 FETCH's sizes from the same options: MAX_SIZE is
    kafka.max.partition.fetch.bytes, grown (doubled) for a larger message up to
    kafka.fetch.max.bytes (or MAX_SIZE, when that is larger); kafka.check.crcs and
    kafka.fetch.max.decompressed.bytes as for 0.8+."""
    return FetchSettings07(fetch_size=fetch.max_partition_fetch_bytes,
                           max_fetch_size=max(fetch.fetch_max_bytes,
                                              fetch.max_partition_fetch_bytes),
                           check_crcs=fetch.check_crcs,
                           max_decompressed_size=fetch.max_decompressed_bytes)
