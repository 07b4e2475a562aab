"""Python token providers for ``kafka.sasl.oauthbearer.token.provider`` in the tests: what a
user's module for another cloud would be (it takes nothing and returns a token)."""

from __future__ import annotations

import time

from tests.support.sasl_mechanisms import unsecured_token

PRINCIPAL = "dave"
calls = 0
imported: list[str] = []  # modules with an import side effect that were imported (tests)


def token_with_expiry() -> tuple[str, int]:
    """An unsecured JWT for PRINCIPAL and its expiry in ms since the epoch."""
    global calls
    calls += 1
    return unsecured_token(PRINCIPAL, 600), int((time.time() + 600) * 1000)


def not_a_token() -> int:
    return 42


def failing() -> str:
    raise RuntimeError("the cloud's metadata service is down")
