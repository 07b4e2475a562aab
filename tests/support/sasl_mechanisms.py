"""Server-side SASL mechanisms for the test SASL front, independent of kafkawire's client.

Each mechanism is a small state machine: ``step(client_token) -> server_token`` until
``done``; a refused exchange raises ``AuthenticationFailed`` with the message a Kafka broker
would send. PLAIN checks a username/password table; SCRAM-SHA-256/512 use ``scramp``'s server
(which verifies the client proof and produces the server signature); OAUTHBEARER parses the
RFC 7628 client message and verifies the JWT with PyJWT (RS256 from the test token endpoint,
or unsigned ``alg=none`` tokens when unsecured tokens are enabled, as Kafka's unsecured
validator does). GSSAPI (``gssapi`` against a real KDC) lives in ``sasl_gssapi.py``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import jwt
import scramp

SCRAM_ITERATIONS = 4096
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


class AuthenticationFailed(Exception):
    """The client failed to authenticate; ``str()`` is the message sent to it (error 58)."""


class ServerMechanism(Protocol):
    name: str
    done: bool
    principal: str | None
    #: seconds since the epoch after which the credential is no longer valid (OAUTHBEARER)
    credential_expiry: float | None
    extensions: dict[str, str]

    def step(self, token: bytes) -> bytes | None:
        """The next challenge; None (GSSAPI's last step) when the server has nothing to send,
        which under SaslHandshake v0 means no raw token at all (Java's SaslServer contract)."""
        ...


@dataclass
class OAuthSettings:
    """How OAUTHBEARER tokens are validated."""

    public_key: Any | None = None  # the token endpoint's RSA public key; None: no signed tokens
    issuer: str | None = None
    audience: str | None = None
    allow_unsecured: bool = False  # accept alg=none tokens (Kafka's unsecured validator)
    # Amazon MSK IAM tokens (SigV4-presigned URLs, tests/support/msk_iam.py): access key ->
    # secret key, and the cluster's region; the principal is the access key id
    aws_keys: dict[str, str] = field(default_factory=dict)
    aws_region: str = "us-east-1"


@dataclass
class Credentials:
    """Who may log in: one user table for PLAIN and SCRAM, OAUTHBEARER validation."""

    users: dict[str, str] = field(default_factory=dict)
    oauth: OAuthSettings = field(default_factory=OAuthSettings)
    #: What the SCRAM server-first-message asks for (a hostile broker asks for more).
    scram_iterations: int = SCRAM_ITERATIONS
    _scram: dict[str, dict[str, tuple]] = field(default_factory=dict, repr=False)

    def scram_auth_info(self, mechanism: str, username: str) -> tuple:
        """(salt, stored_key, server_key, iterations) as a SCRAM server stores them."""
        per_mech = self._scram.setdefault(mechanism, {})
        if username not in per_mech:
            per_mech[username] = scramp.ScramMechanism(mechanism).make_auth_info(
                self.users[username], iteration_count=self.scram_iterations)
        return per_mech[username]


class Plain:
    name = "PLAIN"

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials
        self.done = False
        self.principal: str | None = None
        self.credential_expiry: float | None = None
        self.extensions: dict[str, str] = {}

    def step(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if self.credentials.users.get(user) != password or (authzid and authzid != user):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.principal, self.done = user, True
        return b""


class Scram:
    def __init__(self, name: str, credentials: Credentials) -> None:
        self.name = name
        self.credentials = credentials
        self.done = False
        self.principal: str | None = None
        self.credential_expiry: float | None = None
        self.extensions: dict[str, str] = {}
        self._server = scramp.ScramMechanism(name).make_server(self._auth_info)
        self._user: str | None = None

    def _auth_info(self, username: str) -> tuple:
        if username not in self.credentials.users:
            raise AuthenticationFailed(self._failure())
        self._user = username
        return self.credentials.scram_auth_info(self.name, username)

    def _failure(self) -> str:
        return ("Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.name}")

    def step(self, token: bytes) -> bytes:
        try:
            if self._user is None:
                self._server.set_client_first(token.decode("utf-8"))
                return self._server.get_server_first().encode()
            self._server.set_client_final(token.decode("utf-8"))
            final = self._server.get_server_final().encode()
        except scramp.ScramException:
            raise AuthenticationFailed(self._failure()) from None
        except UnicodeDecodeError:
            raise AuthenticationFailed(f"Invalid {self.name} message: not UTF-8") from None
        self.principal, self.done = self._user, True
        return final


class OAuthBearer:
    name = "OAUTHBEARER"

    def __init__(self, credentials: Credentials) -> None:
        self.settings = credentials.oauth
        self.done = False
        self.principal: str | None = None
        self.credential_expiry: float | None = None
        self.extensions: dict[str, str] = {}
        self._failed: str | None = None

    def step(self, token: bytes) -> bytes:
        if self._failed is not None:
            # RFC 7628 3.2.3: after the error challenge the client answers with a lone %x01.
            raise AuthenticationFailed(self._failed)
        try:
            claims = self._validate(token)
        except AuthenticationFailed as e:
            # Kafka's OAuthBearerSaslServer: the error goes out as a JSON challenge first.
            self._failed = str(e)
            return json.dumps({"status": "invalid_token"}).encode()
        self.principal = str(claims["sub"])
        self.credential_expiry = float(claims["exp"])
        self.done = True
        return b""

    def _validate(self, token: bytes) -> dict:
        text = token.decode("utf-8", "replace")
        gs2, sep, rest = text.partition(",\x01") if text.startswith("n,") else ("", "", "")
        if not sep or not rest.endswith("\x01\x01"):
            raise AuthenticationFailed("Invalid OAUTHBEARER client first message")
        pairs = {}
        for kv in rest[:-2].split("\x01"):
            key, eq, value = kv.partition("=")
            if not eq:
                raise AuthenticationFailed(f"Invalid OAUTHBEARER key/value: {key!r}")
            pairs[key] = value
        auth = pairs.pop("auth", "")
        if not auth.startswith("Bearer "):
            raise AuthenticationFailed("Invalid OAUTHBEARER message: no 'auth=Bearer' value")
        self.extensions = pairs
        compact = auth[len("Bearer "):].strip()
        if self.settings.aws_keys and "." not in compact:
            return self._verify_iam(compact)
        return self._verify_jwt(compact)

    def _verify_iam(self, token: str) -> dict:
        from tests.support.msk_iam import InvalidIamToken, verify

        try:
            who = verify(token, self.settings.aws_keys, self.settings.aws_region)
        except (InvalidIamToken, KeyError, ValueError) as e:
            raise AuthenticationFailed(f"Authentication failed: invalid IAM token: {e}") from None
        return {"sub": who.access_key, "exp": who.expires_at}

    def _verify_jwt(self, compact: str) -> dict:
        try:
            header = jwt.get_unverified_header(compact)
        except jwt.PyJWTError as e:
            raise AuthenticationFailed(f"Authentication failed: malformed token: {e}") from None
        try:
            if header.get("alg") == "none":
                if not self.settings.allow_unsecured:
                    raise AuthenticationFailed("Authentication failed: unsecured token refused")
                claims = jwt.decode(compact, options={"verify_signature": False,
                                                      "require": ["sub", "exp"]})
                if claims["exp"] < time.time():
                    raise AuthenticationFailed("Authentication failed: token expired")
                return claims
            if self.settings.public_key is None:
                raise AuthenticationFailed("Authentication failed: no key to verify signed tokens")
            return jwt.decode(compact, self.settings.public_key, algorithms=["RS256"],
                              audience=self.settings.audience, issuer=self.settings.issuer,
                              options={"require": ["sub", "exp"]})
        except jwt.PyJWTError as e:
            raise AuthenticationFailed(f"Authentication failed: invalid token: {e}") from None


def make_mechanism(name: str, credentials: Credentials,
                   gssapi_factory: Any = None) -> ServerMechanism:
    """A fresh server-side state machine for one (re)authentication."""
    if name == "PLAIN":
        return Plain(credentials)
    if name in SCRAM_MECHANISMS:
        return Scram(name, credentials)
    if name == "OAUTHBEARER":
        return OAuthBearer(credentials)
    if name == "GSSAPI" and gssapi_factory is not None:
        return gssapi_factory()
    raise ValueError(f"no server implementation of SASL mechanism {name}")


def unsecured_token(sub: str, lifetime_s: int = 3600) -> str:
    """An unsigned JWT (alg=none) as Kafka's unsecured login module makes them."""
    now = int(time.time())
    return jwt.encode({"sub": sub, "iat": now, "exp": now + lifetime_s}, key=None,
                      algorithm="none")
