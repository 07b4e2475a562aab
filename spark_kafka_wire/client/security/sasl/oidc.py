"""Tokens from an OAuth 2.0 token endpoint with the client-credentials grant (RFC 6749 section
4.4), as Kafka's KIP-768 login callback handler gets them
(https://cwiki.apache.org/confluence/x/sL2ZCw, https://kafka.apache.org/documentation/#security_sasl_oauthbearer).

The request: ``POST`` of ``grant_type=client_credentials`` (and ``scope=...`` when a scope is
configured) as a form, the client id and secret in an HTTP Basic ``Authorization`` header
(RFC 7617; URL-encoded first only with ``sasl.oauthbearer.header.urlencode=true``, KIP-1025,
like Java whose default is off). The answer's ``access_token`` is the token; its JWT claims
give the expiry (``exp``) and the principal (``sasl.oauthbearer.sub.claim.name``); an opaque
token is used with the answer's ``expires_in``.

Failures are retried as Java's ``Retry`` does: a connection failure or an answer other than the
4xx client errors is tried again after ``sasl.login.retry.backoff.ms``, doubling, until
``sasl.login.retry.backoff.max.ms`` has passed since the first attempt; a 4xx (wrong secret,
unknown client) fails at once: repeating it cannot help and may lock the client out.

A ``file:`` URL names a file holding the token itself (KIP-768 allows it for tokens another
tool refreshes); it is read again at each refresh. https uses the system's trusted CAs.

What a query may make this module do (issue 27): no URL is read, file or http(s), unless the
cluster operator listed it exactly (``spark.kafkawire.sasl.oauthbearer.allowed.urls``, checked
in ``oauth_config.check_url_allowed`` when the options are parsed and again here, in the
process that reads it), so a plain ``http:`` endpoint, which carries the client secret in
clear, is used only when the operator named it. No redirect is followed (see
``_NoRedirect``), and a refusal is reported by its HTTP status and the RFC 6749 ``error`` and
``error_description`` fields only: an endpoint's other text (an HTML page, a proxy's echo of
the request) may hold anything and is never copied into an error or a log.
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
import time
import urllib.error
import urllib.request
from urllib.parse import quote_plus, unquote, urlencode, urlsplit

from spark_kafka_wire.client.errors import OAuthTokenError
from spark_kafka_wire.client.security.sasl.bearer import Token, epoch_ms, token_from
from spark_kafka_wire.client.security.sasl.oauth_config import (
    OAuthConfig,
    check_url_allowed,
    safe_url,
)

log = logging.getLogger(__name__)

# Java's HttpAccessTokenRetriever gives up at once on these client errors; any other status
# (5xx, 429, ...) and connection failures are retried.
UNRETRYABLE = frozenset({400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414,
                         415})
#: The most characters of an endpoint's ``error`` / ``error_description`` shown in a message.
FIELD_SHOWN = 200


class _Unretryable(Exception):
    pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: a 3xx answer is reported as the endpoint's failure.

    urllib follows redirects to any host and scheme and re-sends every header, the Basic
    ``Authorization`` with the client secret included, to wherever a 3xx points; and the
    operator's allow-list names exact URLs, so the target of a redirect is a URL nobody
    allowed. A token endpoint has no reason to redirect a client-credentials POST (RFC 6749
    section 3.2 gives it a fixed URL; urllib would even turn the POST into a GET without its
    body), so refusing them all is simpler and safer than judging each target.
    """

    def redirect_request(self, req: urllib.request.Request, fp: object, code: int, msg: str,
                         headers: object, newurl: str) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


def basic_authorization(client_id: str, secret: str, urlencode_first: bool) -> str:
    """``Basic base64(id:secret)``, each URL-encoded first when asked (KIP-1025)."""
    if urlencode_first:
        client_id, secret = quote_plus(client_id), quote_plus(secret)
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode("ascii")


def request_body(scope: str) -> bytes:
    fields = {"grant_type": "client_credentials"}
    if scope:
        fields["scope"] = scope
    return urlencode(fields).encode()


def _printable(value: object) -> str:
    """At most FIELD_SHOWN printable ASCII characters of ``value`` (others become ``?``): an
    endpoint's words go into messages and logs, where control characters must not."""
    text = str(value)
    shown = "".join(c if " " <= c <= "~" else "?" for c in text[:FIELD_SHOWN])
    return shown + ("..." if len(text) > FIELD_SHOWN else "")


def _explain(status: int, body: bytes) -> str:
    """The status and the endpoint's RFC 6749 section 5.2 ``error`` and ``error_description``;
    nothing else of the body, which may hold anything (an HTML page, an echoed request)."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        said = _printable(answer["error"])
        if isinstance(answer.get("error_description"), str) and answer["error_description"]:
            said += f": {_printable(answer['error_description'])}"
    else:
        said = "no OAuth error in the answer"
    if 300 <= status < 400:
        said += "; a redirect, which kafkawire does not follow: configure the final URL"
    return f"HTTP {status} ({said})"


def _post(config: OAuthConfig) -> bytes:
    http = config.http
    req = urllib.request.Request(
        config.endpoint_url, data=request_body(config.scope), method="POST",
        headers={"Authorization": basic_authorization(config.client_id, config.client_secret,
                                                      http.urlencode_header),
                 "Content-Type": "application/x-www-form-urlencoded",
                 "Accept": "application/json", "Cache-Control": "no-cache"})
    # urllib applies one timeout to connecting and to each read.
    timeout = max(http.connect_timeout_ms, http.read_timeout_ms) / 1000
    handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
    if config.endpoint_url.lower().startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context()))
    opener = urllib.request.build_opener(*handlers)
    try:
        with opener.open(req, timeout=timeout) as answer:
            return answer.read()
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read() if exc.fp is not None else b""
        except OSError:
            body = b""
        finally:
            exc.close()
        reason = _explain(exc.code, body)
        if exc.code in UNRETRYABLE or 300 <= exc.code < 400:
            raise _Unretryable(reason) from None
        raise OSError(reason) from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ssl.SSLCertVerificationError):
            raise _Unretryable(f"TLS: {exc.reason.verify_message or exc.reason}; the token "
                               "endpoint's certificate must be trusted by this machine's "
                               "system CAs") from None
        raise OSError(str(exc.reason)) from None


def _with_retries(config: OAuthConfig) -> bytes:
    """Java's Retry: attempts until ``retry.backoff.max.ms`` after the first, doubling the
    pause from ``retry.backoff.ms``."""
    http = config.http
    end = time.monotonic() + http.retry_backoff_max_ms / 1000
    attempt = 0
    while True:
        attempt += 1
        try:
            return _post(config)
        except OSError as exc:
            left = end - time.monotonic()
            wait = min(http.retry_backoff_ms * 2 ** (attempt - 1) / 1000, left)
            log.warning("token endpoint %s: attempt %d failed: %s", safe_url(config.endpoint_url),
                        attempt, exc)
            if wait <= 0:
                raise OSError(f"{exc} (after {attempt} attempt{'s' * (attempt > 1)} within "
                              f"kafka.sasl.login.retry.backoff.max.ms="
                              f"{http.retry_backoff_max_ms})") from None
            time.sleep(wait)


def _from_file(config: OAuthConfig, source: str) -> Token:
    path = unquote(urlsplit(config.endpoint_url).path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError) as exc:  # ValueError: not UTF-8, or a NUL in the path
        raise OAuthTokenError(source, "cannot read the token file: "
                              f"{getattr(exc, 'strerror', None) or exc}. Check "
                              "kafka.sasl.oauthbearer.token.endpoint.url") from None
    return _checked(token_from(text, source, config.sub_claim, config.client_id), source, config)


def _checked(token: Token, source: str, config: OAuthConfig) -> Token:
    if token.expires_ms is None:
        raise OAuthTokenError(source, "the token says nor when it expires (no JWT 'exp' claim "
                              "and no expires_in)", config.client_id)
    return token


def oidc_token(config: OAuthConfig) -> Token:
    """A token for ``config``'s client from its endpoint (or token file)."""
    source = f"token endpoint {safe_url(config.endpoint_url)}"
    # Again here, in the process that reads it: the allow-list is this machine's operator's.
    check_url_allowed(config.endpoint_url)
    if config.endpoint_url.lower().startswith("file:"):
        return _from_file(config, source)
    try:
        body = _with_retries(config)
    except _Unretryable as exc:
        raise OAuthTokenError(source, f"the endpoint refused the request: {exc}. Check clientId "
                              "and clientSecret in kafka.sasl.jaas.config, the scope, "
                              "that the client may use the client_credentials grant, and "
                              "that kafka.sasl.oauthbearer.token.endpoint.url is the "
                              "endpoint's own URL",
                              config.client_id) from None
    except OSError as exc:
        raise OAuthTokenError(source, f"the endpoint could not be reached or failed: {exc}. "
                              "Check kafka.sasl.oauthbearer.token.endpoint.url, that the "
                              "identity provider is up and that this machine (executors "
                              "included) can reach it", config.client_id) from None
    return _checked(token_from_answer(body, source, config), source, config)


def token_from_answer(body: bytes, source: str, config: OAuthConfig) -> Token:
    """The token of a token endpoint's answer (RFC 6749 section 5.1: JSON with access_token
    and, for an opaque token, expires_in); OAuthTokenError for anything else."""
    try:
        answer = json.loads(body)
        value = answer["access_token"]
        if not isinstance(value, str):
            raise TypeError
    except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: deep nesting
        raise OAuthTokenError(source, "the answer holds no access_token (expected JSON with "
                              "access_token, RFC 6749 section 5.1)", config.client_id) from None
    lifetime_ms = epoch_ms(answer.get("expires_in"))  # None: absent or not a usable number
    expires_ms = None
    if lifetime_ms is not None and "." not in value:  # opaque token
        expires_ms = epoch_ms(time.time() * 1000 + lifetime_ms, 1)
    return token_from(value, source, config.sub_claim, config.client_id, expires_ms)
