"""protocol/bodies.py is what gen_bodies writes from today's layouts, and its types agree
with what the engine requires and decodes."""

from __future__ import annotations

from typing import get_type_hints

from spark_kafka_wire.protocol import bodies, gen_bodies
from spark_kafka_wire.protocol.messages import FETCH, METADATA


def test_the_committed_bodies_are_what_the_generator_writes() -> None:
    assert gen_bodies.TARGET.read_text() == gen_bodies.generate(), (
        f"protocol/bodies.py is stale: run `{gen_bodies.COMMAND}` and commit the result")


def test_every_api_has_a_request_and_a_response_type() -> None:
    for spec in gen_bodies.specs():
        for kind in ("Request", "Response"):
            assert isinstance(getattr(bodies, spec.name + kind), type), spec.name + kind


def test_required_request_keys_are_what_the_engine_refuses_to_go_without() -> None:
    # Fetch: max_wait_ms, min_bytes, topics in every version without default; isolation_level
    # only from v4 (so optional for the type, required by the engine at v4+)
    assert bodies.FetchRequest.__required_keys__ == {"max_wait_ms", "min_bytes", "topics"}
    assert "isolation_level" in bodies.FetchRequest.__optional_keys__
    assert bodies.MetadataRequest.__required_keys__ == {"topics"}
    # every key of the type is a field of the layout, and the other way round
    assert set(get_type_hints(bodies.FetchRequest)) == {f.name for f in FETCH.request}
    assert set(get_type_hints(bodies.MetadataResponse)) == {f.name for f in METADATA.response}


def test_decoded_responses_carry_every_key_of_their_type() -> None:
    body = {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "partitions": [{"partition_index": 0, "error_code": 0,
                                       "high_watermark": 1, "records": b""}]}]}
    decoded = FETCH.decode_response(0, FETCH.encode_response(0, body))
    assert set(decoded) == bodies.FetchResponse.__required_keys__
    partition = decoded["responses"][0]["partitions"][0]
    assert set(partition) == bodies.FetchResponseResponsesPartitions.__required_keys__
