"""A token provider module whose import has a side effect, so a test can tell that a refused
``kafka.sasl.oauthbearer.token.provider`` was never imported (importing runs code)."""

from __future__ import annotations

from tests.support import token_provider
from tests.support.sasl_mechanisms import unsecured_token

token_provider.imported.append(__name__)


def token() -> str:
    return unsecured_token(token_provider.PRINCIPAL, 600)
