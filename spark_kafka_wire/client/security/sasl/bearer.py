"""A bearer token and what can be read from it without verifying it (the broker verifies).

RFC 6750 (https://www.rfc-editor.org/rfc/rfc6750) says what a bearer token may contain; RFC
7519 (JWT) where its expiry (``exp``), start (``iat``) and subject are, when it is a JWT.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from dataclasses import dataclass, field

from spark_kafka_wire.client.errors import OAuthTokenError
from spark_kafka_wire.protocol.primitives import INT64_MAX


@dataclass(frozen=True)
class Token:
    """A bearer token and what is known of its validity (ms since the epoch)."""

    value: str = field(repr=False)
    expires_ms: int | None
    start_ms: int | None = None
    principal: str = ""


MAX_MS = INT64_MAX  # times are Java longs of ms since the epoch


def epoch_ms(value: object, per_unit: int = 1000) -> int | None:
    """``value`` (seconds by default, as JWT's ``exp``/``iat`` and OAuth's ``expires_in``
    count; ``per_unit=1`` for ms) as whole ms, or None when it is no finite number from 0 to
    MAX_MS: JSON from an endpoint may hold ``true``, ``1e999`` or a 5000-digit number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    ms = value * per_unit
    return int(ms) if 0 <= ms <= MAX_MS else None


# RFC 6750 section 2.1 (b64token): what may follow "Bearer ".
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def jwt_claims(value: str) -> dict | None:
    """The payload of a compact JWT (not verified: the broker verifies), None if ``value`` is
    not one."""
    parts = value.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except (ValueError, binascii.Error, RecursionError):  # RecursionError: deep nesting
        return None
    return claims if isinstance(claims, dict) else None


def token_from(value: str, source: str, sub_claim: str = "sub", client: str = "",
               expires_ms: int | None = None) -> Token:
    """A token string checked as a bearer token, with the expiry and subject of its JWT
    claims (``expires_ms`` when the caller knows it); errors never quote the token."""
    value = value.strip()
    if not value or not _B64TOKEN.fullmatch(value):
        raise OAuthTokenError(source, "the token is empty or holds characters a bearer token "
                              "cannot have (RFC 6750)", client)
    claims = jwt_claims(value) or {}
    expires_ms = epoch_ms(expires_ms, 1) if expires_ms is not None else \
        epoch_ms(claims.get("exp"))  # an unusable time counts as unknown
    start = epoch_ms(claims.get("iat"))
    sub = claims.get(sub_claim)
    return Token(value, expires_ms, start, str(sub) if sub is not None else client)
