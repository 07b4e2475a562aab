"""A tiny OAuth 2.0 token endpoint (client credentials grant) on loopback.

KIP-768 clients (Java's OAuthBearerLoginCallbackHandler, librdkafka's
``sasl.oauthbearer.method=oidc``, kafkawire) POST ``grant_type=client_credentials`` with a
client id and secret (HTTP Basic or form fields) and get back a signed JWT. The SASL front
verifies those tokens with the endpoint's public key, so a token that did not come from here
(or expired) is refused just as a real broker's JWKS validation would refuse it.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "kafkawire-test-idp"
AUDIENCE = "kafka"
ALGORITHM = "RS256"
REDIRECT_PATH = "/redirect"
#: The endpoint's public key as a JSON Web Key Set (RFC 7517), which Kafka's OIDC validator
#: (OAuthBearerValidatorCallbackHandler, KIP-768) fetches from sasl.oauthbearer.jwks.endpoint.url.
JWKS_PATH = "/jwks"
#: The key id of the signing key: tokens name it in their header ("kid") so that a JWKS
#: validator picks the key by id, as identity providers with several keys require.
KEY_ID = "kafkawire-test-key"
FAILING_PATH = "/failing"
STOP_TIMEOUT_S = 5.0


class TokenEndpoint:
    """Issues RS256 JWTs (``sub`` = client id) to known clients at ``url``."""

    def __init__(self, clients: dict[str, str], lifetime_s: int = 3600) -> None:
        self.clients = dict(clients)
        self.lifetime_s = lifetime_s
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.public_key = self.key.public_key()
        self.issued: list[str] = []  # client ids, one per token issued
        self.refused: list[str] = []  # why requests were refused
        self.requests: list[tuple[str, bool]] = []  # (path, had an Authorization header)
        #: Misbehaviours of a hostile or broken endpoint, by path: REDIRECT_PATH answers 302
        #: to ``redirect_to``; FAILING_PATH answers ``failing_status`` with
        #: ``failing_body`` (which tests fill with a marker that must never be shown).
        self.redirect_to = ""
        self.failing_status = 500
        self.failing_body = b""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.url_of("/token")

    def url_of(self, path: str) -> str:
        assert self._server is not None, "the token endpoint is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    @property
    def jwks_url(self) -> str:
        return self.url_of(JWKS_PATH)

    def jwks(self) -> dict:
        """The public signing key as a JWK Set: what a broker verifies our tokens with."""
        key = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.public_key))
        return {"keys": [{**key, "kid": KEY_ID, "use": "sig", "alg": ALGORITHM}]}

    def issue(self, client_id: str, scope: str | None = None, lifetime_s: int | None = None) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": client_id, "iat": now,
                  "exp": now + (self.lifetime_s if lifetime_s is None else lifetime_s),
                  "jti": uuid.uuid4().hex}
        if scope:
            claims["scope"] = scope
        return jwt.encode(claims, self.key, algorithm=ALGORITHM, headers={"kid": KEY_ID})

    def _handle(self, headers: dict[str, str], body: bytes) -> tuple[int, dict]:
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
        if form.get("grant_type") != "client_credentials":
            self.refused.append(f"grant_type {form.get('grant_type')!r}")
            return 400, {"error": "unsupported_grant_type"}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        auth = headers.get("authorization", "")
        if auth.lower().startswith("basic "):
            try:
                client_id, _, secret = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                return 400, {"error": "invalid_request"}
        if client_id is None or self.clients.get(client_id) != secret:
            self.refused.append(f"bad credentials for client {client_id!r}")
            return 401, {"error": "invalid_client"}
        self.issued.append(client_id)
        return 200, {"access_token": self.issue(client_id, form.get("scope")),
                     "expires_in": self.lifetime_s, "token_type": "Bearer"}

    def start(self) -> TokenEndpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                endpoint.requests.append((self.path, "Authorization" in self.headers))
                if self.path == REDIRECT_PATH:
                    self.send_response(302)
                    self.send_header("Location", endpoint.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path == FAILING_PATH:
                    self.send_response(endpoint.failing_status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(endpoint.failing_body)))
                    self.end_headers()
                    self.wfile.write(endpoint.failing_body)
                    return
                status, payload = endpoint._handle(
                    {k.lower(): v for k, v in self.headers.items()}, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (JWKS, and what urllib turns a redirected POST into)
                if self.path == JWKS_PATH:  # a broker's key fetches, not a client's requests
                    data = json.dumps(endpoint.jwks()).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                endpoint.requests.append((self.path, "Authorization" in self.headers))
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output clean; refusals are recorded in endpoint.refused

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="token-endpoint", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)

    def __enter__(self) -> TokenEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
