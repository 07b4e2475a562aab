"""Every message decoder, fed random, truncated and corrupted bytes: the only exception that
may escape is ProtocolError, nothing hangs, and lying lengths allocate nothing large."""

from __future__ import annotations

import random
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.errors import ProtocolError
from spark_kafka_wire.protocol.messages import ALL_APIS, FETCH, METADATA
from tests.support.spec_values import random_struct

CASES = [
    (spec, v, kind)
    for spec in ALL_APIS.values()
    for v in range(spec.min_version, spec.max_version + 1)
    for kind in ("request", "response")
]


def _decode(spec: ApiSpec, version: int, kind: str, data: bytes) -> None:
    decode = spec.decode_request if kind == "request" else spec.decode_response
    try:
        decode(version, data)
    except ProtocolError:
        pass


def _valid(spec: ApiSpec, version: int, kind: str, rnd: random.Random) -> bytes:
    fields = spec.request if kind == "request" else spec.response
    encode = spec.encode_request if kind == "request" else spec.encode_response
    return encode(version, random_struct(fields, version, rnd))


@pytest.mark.parametrize("spec,version,kind", CASES, ids=lambda x: getattr(x, "name", x))
def test_truncations_and_bit_flips(spec: ApiSpec, version: int, kind: str) -> None:
    rnd = random.Random(f"fuzz-{spec.name}-{version}-{kind}")
    for _ in range(4):
        data = _valid(spec, version, kind, rnd)
        for cut in range(len(data)):
            _decode(spec, version, kind, data[:cut])
        for _ in range(60):
            flipped = bytearray(data)
            if flipped:
                i = rnd.randrange(len(flipped))
                flipped[i] ^= 1 << rnd.randrange(8)
            _decode(spec, version, kind, bytes(flipped))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES), st.binary(max_size=200))
def test_random_bytes(case: tuple[ApiSpec, int, str], data: bytes) -> None:
    _decode(*case, data)


@pytest.mark.parametrize("spec,version", [(FETCH, 11), (METADATA, 12), (METADATA, 0)])
def test_huge_claimed_lengths_do_not_allocate(spec: ApiSpec, version: int) -> None:
    # Every length field set to its maximum in turn: throttle/error prefix then big counts.
    patterns = [b"\x7f\xff\xff\xff" * 8, b"\xff\xff\xff\xff\x0f" * 8, b"\x00" * 4 + b"\x7f\xff\xff\xff" * 6]
    tracemalloc.start()
    try:
        for p in patterns:
            _decode(spec, version, "response", p)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


RESPONSES = [(spec, v) for spec, v, kind in CASES if kind == "response"]
# A length of 2**31-1 as each kind of length field holds it: int32 (bytes, arrays), int16
# (strings), unsigned varint (compact types of flexible versions).
_HUGE = (b"\x7f\xff\xff\xff", b"\x7f\xff", b"\xff\xff\xff\xff\x07")


@pytest.mark.parametrize("spec,version", RESPONSES, ids=lambda x: getattr(x, "name", x))
def test_a_huge_length_anywhere_allocates_nothing(spec: ApiSpec, version: int) -> None:
    """Every response layout at every version: a valid answer with a length of 2**31-1
    written over the bytes at every position decodes or raises ProtocolError,
    and never allocates anywhere near what the length claims."""
    rnd = random.Random(f"huge-{spec.name}-{version}")
    data = _valid(spec, version, "response", rnd)
    tracemalloc.start()
    try:
        for huge in _HUGE:
            for i in range(len(data)):
                _decode(spec, version, "response", data[:i] + huge + data[i + len(huge):])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
