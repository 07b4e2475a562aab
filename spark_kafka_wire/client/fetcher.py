"""Read one partition's fixed offset range [start, end) in bounded chunks.

Each Fetch returns whole batches from the leader; the decoder drops records outside the range
and reports the offset after the last complete batch, which is where the next Fetch starts
(control batches, compaction gaps and a cut-off trailing batch all follow from that rule).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from ..protocol.errors import ProtocolError, check_error, error_for_code
from ..protocol.messages import FETCH
from ..protocol.records import DecodedRecords, decode_record_batches
from .cluster import KafkaClient

MAX_FETCH_BYTES_LIMIT = 256 << 20


@dataclass(frozen=True)
class FetchSettings:
    max_partition_fetch_bytes: int = 1 << 20
    fetch_max_bytes: int = 50 << 20
    max_wait_ms: int = 500
    min_bytes: int = 1
    isolation_level: int = 0
    check_crcs: bool = True
    max_empty_fetches: int = 20


@dataclass
class _Answer:
    records: memoryview | None
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    broker: str
    aborted: list[tuple[int, int]] | None


def _fetch_once(
    client: KafkaClient, topic: str, partition: int, offset: int, max_bytes: int, s: FetchSettings
) -> _Answer:
    conn = client.leader_connection(topic, partition)
    resp = conn.request(
        FETCH,
        {
            "max_wait_ms": s.max_wait_ms,
            "min_bytes": s.min_bytes,
            "max_bytes": max(s.fetch_max_bytes, max_bytes),
            "isolation_level": s.isolation_level,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": partition, "fetch_offset": offset, "partition_max_bytes": max_bytes}
                    ],
                }
            ],
        },
    )
    check_error(resp["error_code"], topic=topic, partition=partition, broker=conn.name, context="Fetch")
    for t in resp["responses"]:
        if t["topic"] != topic:
            continue
        for p in t["partitions"]:
            if p["partition_index"] == partition:
                check_error(
                    p["error_code"], topic=topic, partition=partition, offset=offset,
                    broker=conn.name, context="Fetch",
                )
                aborted = None
                if s.isolation_level == 1:  # read_committed: the decoder drops aborted data
                    aborted = [(a["producer_id"], a["first_offset"])
                               for a in p["aborted_transactions"] or ()]
                return _Answer(
                    p["records"], p["high_watermark"], p["last_stable_offset"],
                    p["log_start_offset"], conn.name, aborted,
                )
    raise ProtocolError("Fetch response lacks the requested partition", topic=topic,
                        partition=partition, offset=offset, broker=conn.name)


def fetch_range(
    client: KafkaClient,
    topic: str,
    partition: int,
    start: int,
    end: int,
    settings: FetchSettings = FetchSettings(),
) -> Iterator[DecodedRecords]:
    """Yield the records with start <= offset < end, one decoded chunk per Fetch.

    Memory is bounded by the fetch size: a chunk is yielded before the next Fetch is sent.
    """
    offset = start
    max_bytes = settings.max_partition_fetch_bytes
    empty = 0
    while offset < end:
        answer = client.retry(
            lambda o=offset, m=max_bytes: _fetch_once(client, topic, partition, o, m, settings),
            f"Fetch {topic}-{partition} at offset {offset}",
        )
        data = answer.records
        decoded = decode_record_batches(
            data if data is not None else b"",
            start_offset=offset, end_offset=end, check_crcs=settings.check_crcs,
            topic=topic, partition=partition, aborted_transactions=answer.aborted,
        )
        if decoded.next_offset is None:
            if data is not None and len(data) > 0:
                # Bytes but no complete batch: the first batch is larger than our budget
                # (possible with old brokers). Ask for more, as seed 002 describes.
                if max_bytes >= MAX_FETCH_BYTES_LIMIT:
                    raise ProtocolError(
                        f"a record batch is larger than {MAX_FETCH_BYTES_LIMIT} bytes",
                        topic=topic, partition=partition, offset=offset, broker=answer.broker,
                    )
                max_bytes = min(max_bytes * 2, MAX_FETCH_BYTES_LIMIT)
                continue
            limit = answer.high_watermark
            if settings.isolation_level == 1 and answer.last_stable_offset >= 0:
                limit = answer.last_stable_offset
            if limit <= offset:
                raise error_for_code(
                    1, topic=topic, partition=partition, offset=offset, broker=answer.broker,
                    message=(
                        f"the partition now ends at offset {limit} but offsets up to {end} "
                        "were planned; the log was truncated or the topic re-created"
                    ),
                )
            empty += 1
            if empty > settings.max_empty_fetches:
                raise ProtocolError(
                    f"{empty} fetches returned no data although the partition ends at {limit}",
                    topic=topic, partition=partition, offset=offset, broker=answer.broker,
                )
            time.sleep(min(0.05 * empty, 1.0))
            continue
        empty = 0
        if decoded.next_offset <= offset:
            raise ProtocolError(
                f"fetch made no progress (next offset {decoded.next_offset})",
                topic=topic, partition=partition, offset=offset, broker=answer.broker,
            )
        offset = decoded.next_offset
        if decoded.num_records:
            yield decoded
