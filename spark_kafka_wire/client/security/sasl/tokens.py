"""OAUTHBEARER tokens: made or fetched once per process, shared by its connections, replaced
before they expire.

Every Python process (the driver, each executor's Python worker) keeps one token per
:meth:`OAuthConfig.cache_key`, so a task opening ten connections asks the identity provider
once. A token is replaced when a login needs one after its refresh time, computed with the Java
client's rule (``ExpiringCredentialRefreshingLogin``, ``sasl.login.refresh.*``, KIP-255 and the
Kafka docs: https://kafka.apache.org/documentation/#producerconfigs_sasl.login.refresh.window.factor).
Java refreshes in a background thread; here the next login after the refresh time fetches,
which is the moment a fresh token is needed: KIP-368 re-authentication (client/wire/connection.py)
logs in again before the broker's session, which Kafka caps at the token's expiry, ends.
"""

from __future__ import annotations

import base64
import importlib
import json
import random
import threading
import time
from collections.abc import Callable

from spark_kafka_wire.client.errors import OAuthTokenError
from spark_kafka_wire.client.security.sasl.aws_iam import aws_token
from spark_kafka_wire.client.security.sasl.bearer import Token, epoch_ms, token_from
from spark_kafka_wire.client.security.sasl.oauth_config import (
    OAuthConfig,
    RefreshSettings,
    check_provider_allowed,
    provider_module,
)
from spark_kafka_wire.client.security.sasl.oidc import oidc_token


def refresh_at_ms(now_ms: int, token: Token, settings: RefreshSettings,
                  rand: float | None = None) -> int:
    """When to replace ``token``, by Java's rule: at ``factor + jitter * rand`` of its
    lifetime from its start (``iat``, else now), but not later than ``buffer`` before expiry
    and not sooner than ``min.period`` from now; when those two cannot both hold (a short-lived
    token), at that fraction of the time left. ``rand`` in [0, 1) (random by default)."""
    assert token.expires_ms is not None
    expires = token.expires_ms
    pct = settings.window_factor + settings.window_jitter * (random.random() if rand is None
                                                             else rand)
    if now_ms + 1000 * (settings.min_period_s + settings.buffer_s) > expires:
        return now_ms + int((expires - now_ms) * pct)
    start = token.start_ms if token.start_ms is not None else now_ms
    proposed = start + int((expires - start) * pct)
    end_buffer = expires - 1000 * settings.buffer_s
    if proposed > end_buffer:
        return end_buffer
    return max(proposed, now_ms + 1000 * settings.min_period_s)


def unsecured_token(config: OAuthConfig, now_ms: int | None = None) -> Token:
    """An unsigned JWT (``alg: none``, empty signature) with the configured claims plus
    ``iat`` and ``exp`` in seconds with millisecond fractions, as Java's unsecured login
    handler makes it (KIP-255)."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    claims = {"iat": now_ms / 1000, "exp": now_ms / 1000 + config.lifetime_s,
              **json.loads(config.claims_json)}

    def b64(data: dict) -> str:
        text = json.dumps(data, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(text).rstrip(b"=").decode()

    value = f"{b64({'alg': 'none'})}.{b64(claims)}."
    return Token(value, now_ms + 1000 * config.lifetime_s, now_ms, config.principal)


def provider_token(config: OAuthConfig) -> Token:
    """Call the configured ``module:callable`` (or ``module.callable``), if the operator
    allows its module; it returns a token string or ``(token, expiry in ms since the epoch)``."""
    name = config.provider
    source = f"token provider {name!r} (kafka.sasl.oauthbearer.token.provider)"
    # Before the import, which runs the module's code: the allow-list is this process's
    # operator's (the driver checked its own when the options were parsed).
    check_provider_allowed(name)
    module_name, attr = provider_module(name)
    try:
        fn: Callable[[], object] = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise OAuthTokenError(source, f"cannot import it here ({type(exc).__name__}: {exc}); "
                              "it must be importable in every Python process of the query, "
                              "executors included") from None
    try:
        got = fn()
    except Exception as exc:  # the provider's own failure, whatever it is
        raise OAuthTokenError(source, f"it raised {type(exc).__name__}") from exc
    if isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], str) \
            and isinstance(got[1], (int, float)):
        # an expiry that is no time (nan, inf, beyond a long) counts as unknown
        return token_from(got[0], source, expires_ms=epoch_ms(got[1], 1))
    if isinstance(got, str):
        return token_from(got, source)
    raise OAuthTokenError(source, f"it returned a {type(got).__name__}; return a token string "
                          "or (token, expiry in ms since the epoch)")


def fetch_token(config: OAuthConfig) -> Token:
    """A new token from the configured source (no cache)."""
    if config.source == "unsecured":
        return unsecured_token(config)
    if config.source == "provider":
        return provider_token(config)
    if config.source == "aws":
        return aws_token(config)
    return oidc_token(config)


class TokenCache:
    """The process's tokens by cache key, each with its refresh time; thread-safe."""

    def __init__(self, fetch: Callable[[OAuthConfig], Token] = fetch_token,
                 clock: Callable[[], float] = time.time) -> None:
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[tuple, tuple[Token, int | None]] = {}
        self.fetches = 0  # tokens made or fetched, for tests and logs

    def get(self, config: OAuthConfig) -> Token:
        key = config.cache_key()
        with self._lock:  # one fetch at a time per process: the others then reuse its token
            now = int(self._clock() * 1000)
            cached = self._tokens.get(key)
            if cached is not None and (cached[1] is not None and now < cached[1]):
                return cached[0]
            token = self._fetch(config)
            self.fetches += 1
            refresh = None if token.expires_ms is None else \
                refresh_at_ms(now, token, config.refresh)
            if refresh is not None and token.expires_ms is not None \
                    and token.expires_ms > now:
                self._tokens[key] = (token, refresh)
            else:  # no known expiry (or already expired): not reused
                self._tokens.pop(key, None)
            return token

    def clear(self) -> None:
        with self._lock:
            self._tokens.clear()


#: The tokens of this Python process.
TOKENS = TokenCache()
