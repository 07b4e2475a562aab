"""Random values for any message layout at any version, to drive round trips and oracles."""

from __future__ import annotations

import random
import string
import uuid
from typing import Any

from spark_kafka_wire.protocol.engine import Field

_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
}


def _scalar(t: str, rnd: random.Random, nullable: bool) -> Any:
    if nullable and rnd.random() < 0.2:
        return None
    if t in _RANGES:
        lo, hi = _RANGES[t]
        return rnd.choice([lo, hi, 0, -1, rnd.randint(lo, hi)]) if lo < 0 else rnd.randint(lo, hi)
    if t == "bool":
        return rnd.random() < 0.5
    if t == "float64":
        return rnd.uniform(-1e9, 1e9)
    if t == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128))
    if t == "string":
        alphabet = string.ascii_letters + "._-é€"
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12)))
    if t in ("bytes", "records"):
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 20)))
    raise ValueError(t)


def random_struct(fields: tuple[Field, ...], version: int, rnd: random.Random, depth: int = 0) -> dict:
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f._v:
            continue
        nullable = version in f._nv
        if f.type == "struct":
            # None (absent) only where the struct is a tagged field; a plain struct is always
            # written (ConsumerGroupDescribe's member assignments)
            absent = version in f._tv and rnd.random() < 0.3
            out[f.name] = None if absent else random_struct(f.fields, version, rnd, depth + 1)
        elif f.type.startswith("[]"):
            if nullable and rnd.random() < 0.2:
                out[f.name] = None
                continue
            n = rnd.randint(0, 3 if depth < 2 else 1)
            if f.type == "[]":
                out[f.name] = [random_struct(f.fields, version, rnd, depth + 1) for _ in range(n)]
            else:
                out[f.name] = [_scalar(f.type[2:], rnd, False) for _ in range(n)]
        else:
            out[f.name] = _scalar(f.type, rnd, nullable)
    return out
