"""Verifies Amazon MSK IAM tokens as the MSK broker would, independently of the signer that
made them: the token is a base64url SigV4-presigned GET of ``https://kafka.<region>.amazonaws.com/
?Action=kafka-cluster:Connect`` (AWS's query-string signing,
https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html), recomputed here
with hashlib/hmac from the secret key the test gave the client.
"""

from __future__ import annotations

import base64
import calendar
import hashlib
import hmac
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlsplit

SERVICE = "kafka-cluster"
# The empty body's SHA-256: a presigned GET signs an empty payload.
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class InvalidIamToken(Exception):
    pass


@dataclass
class IamIdentity:
    access_key: str
    expires_at: float  # seconds since the epoch


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def verify(token: str, keys: dict[str, str], region: str) -> IamIdentity:
    """The identity of a valid token; InvalidIamToken saying why otherwise."""
    try:
        url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except ValueError:
        raise InvalidIamToken("not base64url") from None
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.netloc != f"kafka.{region}.amazonaws.com":
        raise InvalidIamToken(f"wrong host {parts.netloc!r}")
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    if params.get("Action") != "kafka-cluster:Connect" \
            or params.get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" \
            or params.get("X-Amz-SignedHeaders") != "host":
        raise InvalidIamToken("not a kafka-cluster:Connect SigV4 query signature")
    access_key, day, scope_region, service, terminal = params["X-Amz-Credential"].split("/")
    if (scope_region, service, terminal) != (region, SERVICE, "aws4_request"):
        raise InvalidIamToken("wrong credential scope")
    if access_key not in keys:
        raise InvalidIamToken(f"unknown access key {access_key}")
    stamp = params["X-Amz-Date"]
    signed_at = calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ"))
    expires_at = signed_at + int(params["X-Amz-Expires"])
    if expires_at < time.time():
        raise InvalidIamToken("expired")
    # The canonical request: every query parameter but the signature (and the User-Agent the
    # signer appends after signing), sorted, RFC 3986-encoded.
    signed = sorted((k, v) for k, v in params.items()
                    if k not in ("X-Amz-Signature", "User-Agent"))
    query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in signed)
    canonical = "\n".join(["GET", parts.path or "/", query, f"host:{parts.netloc}\n", "host",
                           EMPTY_SHA256])
    scope = f"{day}/{region}/{SERVICE}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    key = _hmac(f"AWS4{keys[access_key]}".encode(), day)
    for part in (region, SERVICE, "aws4_request"):
        key = _hmac(key, part)
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, params.get("X-Amz-Signature", "")):
        raise InvalidIamToken("signature does not match")
    return IamIdentity(access_key, expires_at)
