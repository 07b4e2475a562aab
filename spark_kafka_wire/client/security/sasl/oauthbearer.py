"""The client side of SASL OAUTHBEARER (RFC 7628, https://www.rfc-editor.org/rfc/rfc7628) as
Kafka uses it (KIP-255, https://cwiki.apache.org/confluence/x/Tog8B; extensions: KIP-342,
https://cwiki.apache.org/confluence/x/-5mgBQ).

The client speaks first and once (RFC 7628 section 3.1): a GS2 header without channel binding
or authorization id, ``n,,``, then ``\\x01``-separated key/value pairs, ``auth=Bearer <token>``
followed by the SASL extensions, and a closing ``\\x01\\x01``. An empty server answer is success.
Anything else is the server's error (section 3.2.2, a JSON object with ``status`` and maybe
``scope`` and ``openid-configuration``), to which the client must answer with a lone ``\\x01``
(section 3.2.3) before the server fails the exchange; Kafka's broker then answers
SASL_AUTHENTICATION_FAILED. The token comes from the process's token cache (tokens.py), so a
re-authentication sends a fresh token once the old one has reached its refresh time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.oauth_config import EXTENSION_NAME, EXTENSION_VALUE
from spark_kafka_wire.client.security.sasl.tokens import TOKENS

SEPARATOR = b"\x01"


def client_first_message(token: str, extensions: Sequence[tuple[str, str]] = ()) -> bytes:
    """RFC 7628 section 3.1's initial client response, with KIP-342 extensions."""
    pairs = [f"auth=Bearer {token}"]
    for name, value in extensions:
        if not EXTENSION_NAME.fullmatch(name) or name == "auth" \
                or not EXTENSION_VALUE.fullmatch(value):
            raise ValueError(f"invalid SASL extension {name!r}")
        pairs.append(f"{name}={value}")
    return b"n,," + SEPARATOR + SEPARATOR.join(p.encode() for p in pairs) + SEPARATOR * 2


def server_error(answer: bytes) -> dict:
    """The server's RFC 7628 error JSON (``status`` etc.), or its bytes as ``status``."""
    text = answer.decode("utf-8", "replace")
    try:
        found = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the stack
        found = None
    return found if isinstance(found, dict) else {"status": text[:200]}


class OAuthBearer:
    """The mechanism for ``authenticate``: one message, then success or the error dance."""

    def __init__(self, config: SaslConfig) -> None:
        assert config.oauth is not None, "OAUTHBEARER needs SaslConfig.oauth"
        self._oauth = config.oauth
        self.done = False
        self.error: dict | None = None  # the server's RFC 7628 error, once it sent one

    def first(self) -> bytes:
        token = TOKENS.get(self._oauth)
        return client_first_message(token.value, self._oauth.extensions)

    def step(self, token: bytes) -> bytes | None:
        if self.error is not None:
            raise ValueError(f"the broker refused the token: {self.status()}")
        if not token:
            self.done = True
            return None
        self.error = server_error(token)
        return SEPARATOR  # RFC 7628 3.2.3: acknowledge the error, the server then fails

    def status(self) -> str:
        """The server's error JSON, as text (a status, maybe a scope: never our token)."""
        return json.dumps(self.error, sort_keys=True) if self.error else "no error status"

    def what_to_check(self) -> str:
        """Advice for a refused login (used by authenticate)."""
        said = f"; the broker's OAUTHBEARER status: {self.status()}" if self.error else ""
        what = {"unsecured": "the broker accepts unsecured tokens only on development "
                             "listeners (unsecuredLoginStringClaim_sub in kafka.sasl.jaas.config)",
                "oidc": "the token's issuer, audience and scope are the ones the broker "
                        "validates (clientId, scope in kafka.sasl.jaas.config, "
                        "kafka.sasl.oauthbearer.token.endpoint.url)",
                "aws": "the IAM identity may kafka-cluster:Connect to this cluster and the "
                       "region is the cluster's",
                "provider": "the token provider returns tokens the broker accepts"}
        return f"Check that {what[self._oauth.source]}{said}"
