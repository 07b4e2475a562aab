"""Records per second decoding Avro values into Arrow and encoding them back (formats/).

Run: ``python -m bench.avro_formats [--records 50000] [--rounds 5]``. Data: a 10-field record
(long, timestamp-millis, int, double, boolean, an enum and four strings) of about 200 bytes
Avro-encoded, Confluent-framed with one schema id. Rows, each the best of ``--rounds`` on one
core: fastavro's schemaless_reader alone over every payload (the most a per-record decode can
reach), ``AvroDecoder.decode`` by the vectorized path and by fastavro per record, a nested
schema (which only fastavro decodes), the Arrow build from decoded dicts column by column and
by one ``pa.array`` call, ``split_frames``, ``decode_framed`` (split + decode + order) and
``AvroEncoder.encode`` both ways.
"""

from __future__ import annotations

import argparse
import io
import json
import time
from collections.abc import Callable
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from spark_kafka_wire.formats.avro_codec import (
    AvroDecoder,
    AvroEncoder,
    decode_framed,
    plain_schema,
    to_arrow,
)
from spark_kafka_wire.formats.avro_types import parse_schema, to_spark
from spark_kafka_wire.formats.confluent import frame, split_frames

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "user", "type": "string"},
    {"name": "email", "type": "string"},
    {"name": "amount", "type": "double"},
    {"name": "quantity", "type": "int"},
    {"name": "country", "type": {"type": "enum", "name": "Country",
                                 "symbols": ["DE", "FR", "US", "JP"]}},
    {"name": "paid", "type": "boolean"},
    {"name": "address", "type": "string"},
    {"name": "note", "type": ["null", "string"]},
]}


#: the same record one level down, beside an array: not flat, so fastavro decodes it
NESTED = {"type": "record", "name": "Wrapper", "namespace": "bench", "fields": [
    {"name": "order", "type": SCHEMA}, {"name": "tags", "type": {"type": "array",
                                                              "items": "string"}}]}


def fastavro_bytes(schema: Any, record: Any) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), record)
    return buf.getvalue()


def make_payloads(n: int, seed: int = 0) -> list[bytes]:
    parsed = fastavro.parse_schema(SCHEMA)
    out = []
    for record in make_records(n, seed):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, record)
        out.append(buf.getvalue())
    return out


def make_records(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        record = {
            "id": 10_000_000 + i, "ts": 1_700_000_000_000 + int(rng.integers(10**9)),
            "user": f"user-{int(rng.integers(10**6)):06d}",
            "email": f"someone.{int(rng.integers(10**6)):06d}@example.com",
            "amount": float(rng.random() * 1000), "quantity": int(rng.integers(100)),
            "country": ["DE", "FR", "US", "JP"][int(rng.integers(4))],
            "paid": bool(rng.integers(2)),
            "address": f"{int(rng.integers(999))} Long Street Name, Apartment {i % 97:02d}, "
                       f"Some Rather Long City Name, Some Region, Some Country",
            "note": None if rng.integers(3) == 0
            else "leave at the door, ring twice please, the dog does not bite",
        }
        out.append(record)
    return out


def best(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.records
    payload_list = make_payloads(n)
    payloads = pa.array(payload_list, pa.binary())
    text = json.dumps(SCHEMA)
    decoder = AvroDecoder(text)
    framed = frame(1, payloads)
    decoded = decoder.decode(payloads, text)
    assert not decoded.failed.any()
    # as the decoder reads them: without logical types (ts stays an int of millis)
    parsed = fastavro.parse_schema(plain_schema(parse_schema(text)))
    values = [fastavro.schemaless_reader(io.BytesIO(p), parsed) for p in payload_list]
    mapped = to_spark(text)
    plain = values
    index = mapped.arrow.get_field_index("ts")
    raw_type = pa.struct([pa.field("ts", pa.int64(), False) if i == index else f
                          for i, f in enumerate(mapped.arrow)])
    encoder = AvroEncoder(text)

    def fastavro_only() -> None:
        read = fastavro.schemaless_reader
        for p in payload_list:
            read(io.BytesIO(p), parsed)

    per_record = AvroDecoder(text, vectorized=False)
    per_row = AvroEncoder(text, vectorized=False)
    nested_text = json.dumps(NESTED)
    nested_payloads = pa.array([fastavro_bytes(NESTED, {"order": v, "tags": ["a", "b"]})
                                for v in make_records(n)], pa.binary())
    nested = AvroDecoder(nested_text)
    rows = [
        ("fastavro schemaless_reader alone", lambda: fastavro_only()),
        ("AvroDecoder.decode, vectorized (flat)", lambda: decoder.decode(payloads, text)),
        ("AvroDecoder.decode, fastavro per record",
         lambda: per_record.decode(payloads, text)),
        ("AvroDecoder.decode, nested record (fastavro)",
         lambda: nested.decode(nested_payloads, nested_text)),
        ("Arrow build alone, column-wise", lambda: to_arrow(plain, mapped)),
        # the same struct with ts left as int64 (pa.array cannot scale millis)
        ("Arrow build alone, pa.array(dicts)", lambda: pa.array(plain, raw_type)),
        ("split_frames (payloads copied out)", lambda: split_frames(framed).payloads),
        ("decode_framed", lambda: decode_framed(framed, decoder, lambda i: text)),
        ("AvroEncoder.encode, vectorized (flat)", lambda: encoder.encode(decoded.array)),
        ("AvroEncoder.encode, fastavro per row", lambda: per_row.encode(decoded.array)),
    ]
    size = sum(len(p) for p in payload_list) / n
    print(f"{n} records, {size:.0f} B Avro each, best of {args.rounds}, one core")
    for name, fn in rows:
        seconds = best(fn, args.rounds)
        print(f"{name:42s} {n / seconds:12,.0f} records/s")


if __name__ == "__main__":
    main()
