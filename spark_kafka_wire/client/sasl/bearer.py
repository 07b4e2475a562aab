"""A bearer token and what can be read from it without verifying it (the broker verifies).

RFC 6750 (https://www.rfc-editor.org/rfc/rfc6750) says what a bearer token may contain; RFC
7519 (JWT) where its expiry (``exp``), start (``iat``) and subject are, when it is a JWT.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field

from spark_kafka_wire.client.errors import OAuthTokenError


@dataclass(frozen=True)
class Token:
    """A bearer token and what is known of its validity (ms since the epoch)."""

    value: str = field(repr=False)
    expires_ms: int | None
    start_ms: int | None = None
    principal: str = ""


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
    except (ValueError, binascii.Error):
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
    exp, iat = claims.get("exp"), claims.get("iat")
    if expires_ms is None and isinstance(exp, (int, float)):
        expires_ms = int(exp * 1000)
    start = int(iat * 1000) if isinstance(iat, (int, float)) else None
    sub = claims.get(sub_claim)
    return Token(value, expires_ms, start, str(sub) if sub is not None else client)
