"""A client of Confluent's Schema Registry REST API (issue 32): schemas by id, a subject's
versions, lookups and registrations, over ``urllib`` like the rest of the project's HTTP.

Records in Confluent's wire format carry a schema id; a reader needs the schema of each id
(``GET /schemas/ids/{id}``), the subject's latest or a pinned version as its reader schema
(``GET /subjects/{s}/versions/latest``), and a writer registers or looks up its schema
(``POST /subjects/{s}/versions``, ``POST /subjects/{s}``). The API and its error codes are
Confluent's (https://docs.confluent.io/platform/current/schema-registry/develop/api.html);
Apicurio Registry serves the same API under ``/apis/ccompat/v7``, which is what the tests run.

Why each choice:

- Ids are immutable (a registry never gives an id to another schema), so ``schema_by_id`` is
  cached per client for the life of the process; ``shared_registry`` gives one client per
  configuration per process, so Spark's reused Python workers ask each id once. Subjects'
  latest versions change, so they are asked every time.
- Several URLs (``schema.registry.url`` takes a comma-separated list) are tried in order,
  and a retriable failure moves on to the next URL at once: another URL is another server,
  which may be up. After a whole round without an answer the client waits and goes round
  again, ``max_retries`` more rounds, the wait as Confluent's clients draw it (full jitter:
  random up to ``retries_wait_ms * 2**round``, at most ``retries_max_wait_ms``). Retriable
  are what Confluent's clients retry: connection failures and timeouts, and the statuses
  408, 429, 500, 502, 503 and 504; any other answer (a 4xx: a missing subject, an
  incompatible schema, refused credentials) is final, since asking again gets the same.
- Security (the project's rule: never trust what a query names, nor what a server answers):
  only ``http``/``https`` URLs are taken, checked when the configuration is built. User info
  in a URL (``https://user:password@host``) is taken as that URL's Basic credentials, as
  Confluent's URL credentials source does, and removed from the URL at once: ``urls``, every
  message, log line and repr show URLs without it. No redirect is followed (``_NoRedirect``):
  urllib would re-send the ``Authorization`` header to whatever host a 3xx names. An answer
  larger than ``max_response_bytes`` is an error and is never read whole. Of a registry's
  error answer only its Confluent ``error_code`` and ``message`` fields are shown, printable
  ASCII and truncated: the rest of a body (a proxy's HTML page, an echoed request) may hold
  anything. ``request_timeout_s`` is the deadline of a whole request (``Deadline``), not of
  each socket read, so an answer dribbled a byte at a time ends in time. A schema's imports
  are fetched within limits of count, bytes and depth (``imports``): a registry's
  references are data, and may go on without end. Credentials sent to an ``http://`` URL
  are warned of, once per process (``warn_plain_http``), never shown.
- https uses ``client/security/tls.py``'s context of the configured ``TlsConfig`` (CA, client
  certificate), or the system's CAs without one; a certificate that is not trusted is
  reported at once with the reason, not retried (every attempt meets the same certificate).

urllib opens a connection per request; with ids cached, requests are few (one per new id per
process, a few per query plan), so keep-alive would save little.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import random
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args
from urllib.parse import quote, unquote, urlencode, urlsplit, urlunsplit

from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    NOT_ALLOWED_BY_OPERATOR,
    UNSUPPORTED_VALUE,
    VALUE_OUT_OF_RANGE,
    ConfigurationError,
    SchemaRegistryError,
)
from spark_kafka_wire.client.operator import operator_list, where_to_set
from spark_kafka_wire.client.security.sasl.oauth_config import OAuthConfig
from spark_kafka_wire.client.security.sasl.tokens import TOKENS
from spark_kafka_wire.client.security.tls import (
    TlsConfig,
    VerifyAdvice,
    context_for,
    explain_verify_failure,
    peer_certificate,
)

log = logging.getLogger(__name__)

SchemaType = Literal["AVRO", "PROTOBUF", "JSON"]
#: The schema types of Confluent's API; a schema without ``schemaType`` is AVRO.
SCHEMA_TYPES: tuple[str, ...] = get_args(SchemaType)
#: Confluent's compatibility levels (PUT /config/{subject}).
COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                        "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")
#: The statuses Confluent's clients retry (with the next URL, then after a wait).
RETRIABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
#: The option the URLs come from, named in configuration errors.
URL_OPTION = "schema.registry.url"
#: The most characters of a registry's ``message`` shown in an error.
FIELD_SHOWN = 200
#: The most bytes of an error answer read (its JSON error_code and message are short).
ERROR_BODY_BYTES = 64 * 1024
DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024
# What one schema's imports may cost (``imports``: its references, theirs, ...), so that a
# registry whose every schema references a new one ends the read with REFERENCE_LIMIT
# instead of drawing requests and memory without end (issue 45). Confluent's Java client
# (AbstractSchemaProvider) follows references with no bound; these are the client's own.
#: The most schemas fetched for one schema's imports: Confluent's serializers keep at most
#: 1000 schemas per subject in their cache (max.schemas.per.subject), and real schemas import
#: tens.
DEFAULT_MAX_IMPORTED_SCHEMAS = 1000
#: The most bytes (UTF-8) of all the schemas one schema imports: four answers of the largest
#: size one answer may have (DEFAULT_MAX_RESPONSE_BYTES).
DEFAULT_MAX_IMPORTED_BYTES = 4 * DEFAULT_MAX_RESPONSE_BYTES
#: The most levels of references (a schema importing one that imports one ...): protobuf's
#: default recursion limit (100), the bound its parsers put on nesting, which the formats
#: layer's MAX_NESTING_DEPTH follows too (not imported: the client does not import formats).
DEFAULT_MAX_REFERENCE_DEPTH = 100
#: The most schemas kept by id, the least recently used going first: the ids asked come from
#: records, which may name ever new ones that a hostile registry answers (issue 45). Confluent's
#: clients keep at most 1000 per subject (max.schemas.per.subject); a process reading more
#: than that many schemas at once asks again for the ones it dropped.
SCHEMAS_KEPT = 1000
DEFAULT_MAX_RETRIES = 3  # Confluent's max.retries
DEFAULT_RETRIES_WAIT_MS = 1000  # Confluent's retries.wait.ms
DEFAULT_RETRIES_MAX_WAIT_MS = 20000  # Confluent's retries.max.wait.ms
ACCEPT = ("application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, "
          "application/json")
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
#: Headers the client sets itself, which ``bearer_headers`` may not replace.
OWN_HEADERS = frozenset({"authorization", "accept", "content-type", "content-length", "host",
                         "user-agent", "connection", "transfer-encoding", "proxy-authorization"})
_TOKEN_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
#: What a failing certificate's explanation names for a registry.
REGISTRY_TLS_ADVICE = VerifyAdvice(
    peer="Schema Registry", reached_by="the host of schema.registry.url",
    no_hostname_check="schema.registry.ssl.endpoint.identification.algorithm=''",
    truststore="schema.registry.ssl.truststore.* or schema.registry.ssl.ca.location")


def printable(value: object, limit: int = FIELD_SHOWN) -> str:
    """At most ``limit`` printable ASCII characters of ``value`` (others become ``?``): a
    registry's words go into messages and logs, where control characters must not."""
    text = str(value)
    shown = "".join(c if " " <= c <= "~" else "?" for c in text[:limit])
    return shown + ("..." if len(text) > limit else "")


#: A URL scheme as RFC 3986 spells it (what may stand before ``://`` in a shown URL).
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
#: What a shown URL holds in place of a host:port whose port is not a number.
HIDDEN_AUTHORITY = "<host:port hidden>"
#: How to write a password a URL's syntax would cut (the advice of the invalid-URL errors).
ENCODE_USER_INFO = ("percent-encode '/', '?', '#', '@' and ',' in the user info as %2F, %3F, "
                    "%23, %40 and %2C, or give the credentials in basic.auth.user.info")


def shown_url(url: str) -> str:
    """``url`` as it may be shown: without user info, query or fragment, printable.

    Parsed conservatively, not with ``urlsplit``: a password with ``/``, ``?`` or ``#``
    (base64 API secrets hold ``/``) ends urlsplit's netloc inside the password, so the
    user info it strips is only the part before, and the rest is shown (issue 45). Here
    everything up to the last ``@`` after the scheme is user info, wherever it stands (an
    ``@`` in a path hides a little more than needed, never less). A ``user:password``
    without ``@`` (cut at a comma of the option, or given without the host) reads as
    host:port, so a host:port whose port is not a number is not shown either."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        scheme, rest = "", text
    rest = rest.rpartition("@")[2]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, path = rest[:end], rest[end:].split("?")[0].split("#")[0]
    if authority.startswith("["):  # an IPv6 address: its colons are not the port's
        port = authority.partition("]")[2]
    else:
        _, colon, number = authority.partition(":")
        port = colon + number
    if port not in ("", ":") and not (port[0] == ":" and port[1:].isascii()
                                      and port[1:].isdigit()):
        authority = HIDDEN_AUTHORITY
    shown = f"{authority}{path}"
    return printable(f"{scheme.lower()}://{shown}" if scheme else shown)


def _bad_url(url: str, expected: str) -> ConfigurationError:
    return ConfigurationError.of(INVALID_VALUE, option=URL_OPTION, expected=expected,
                                 got=repr(shown_url(url)))


def split_url(url: str) -> tuple[str, str | None]:
    """``(url without user info, "user:password" or None)`` of one registry URL, checked:
    http or https, a host, a valid port, no query or fragment; the path kept (Apicurio's
    ``/apis/ccompat/v7``), its trailing ``/`` dropped. User info is percent-decoded, as
    Confluent's Python client does. ConfigurationError (INVALID_VALUE) otherwise, showing the
    URL without its user info."""
    text = url.strip()
    if not text or any(not " " < c <= "~" for c in text):
        raise _bad_url(url, "a URL of printable ASCII characters without spaces")
    try:
        parts = urlsplit(text)
    except ValueError:
        raise _bad_url(url, "an http:// or https:// URL") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _bad_url(url, "an http:// or https:// URL (no other scheme is used)")
    if "@" in parts.path + parts.query + parts.fragment:
        # user info with a '/', '?' or '#', where the URL's syntax ends the host: as parsed,
        # the host would be the user's name and the password part of the path (issue 45)
        raise _bad_url(url, f"a URL with '@' only after its user info ({ENCODE_USER_INFO})")
    try:
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number in range)
    except ValueError:
        raise _bad_url(url, "an http:// or https:// URL whose port is a number up to 65535 "
                            f"(with user info: {ENCODE_USER_INFO})") from None
    if not parts.hostname:
        raise _bad_url(url, "a URL with a host")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise _bad_url(url, "a URL without a query or fragment")
    user_info, at, host = parts.netloc.rpartition("@")
    credentials = None
    if at:
        user, colon, password = user_info.partition(":")
        if not colon or not user:
            raise _bad_url(url, "a URL whose user info is user:password")
        credentials = f"{unquote(user)}:{unquote(password)}"
    clean = urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), "", ""))
    return clean, credentials


#: The operator's list of registries queries may use (client/operator.py): unset, any.
ALLOWED_URLS = "spark.kafkawire.schema.registry.allowed.urls"


def check_registry_url(url: str) -> None:
    """Refuse a registry URL the operator's ``spark.kafkawire.schema.registry.allowed.urls``
    does not list, when that is set (by its URL without user info, exactly or as the start of
    the path: ``https://registry.example.com`` allows its ``/apis/ccompat/v7``).

    Unset, a query may name any http(s) registry, as it may name any bootstrap server: it
    receives only the query's own credentials and answers what the query asked. An operator
    who does not want queries to make workers send HTTP requests to hosts inside the cluster's
    network (a cloud metadata service, an internal API) lists the registries allowed. Checked
    in every process that builds a client (the driver when the query is defined, each
    executor before its first request)."""
    allowed = operator_list(ALLOWED_URLS)
    if allowed is None:
        return
    clean = split_url(url)[0]
    for entry in allowed:
        prefix = entry.rstrip("/")
        if clean == prefix or clean.startswith(prefix + "/"):
            return
    raise ConfigurationError.of(
        NOT_ALLOWED_BY_OPERATOR, "REGISTRY_URL", url_option=URL_OPTION,
        url=shown_url(url), allowed_urls=where_to_set(ALLOWED_URLS))


def _header_checked(name: str, value: str) -> None:
    if not name or not set(name) <= _TOKEN_CHARS or name.lower() in OWN_HEADERS:
        raise ConfigurationError.of(
            INVALID_VALUE, option="bearer header", got=repr(printable(name)),
            expected="an HTTP header name the client does not set itself (such as "
                     "target-sr-cluster or Confluent-Identity-Pool-Id)")
    if any(not " " <= c <= "~" for c in value):
        raise ConfigurationError.of(INVALID_VALUE, option=f"bearer header {name}",
                                    expected="printable ASCII", got="a value with others")


@dataclass(frozen=True)
class RegistryConfig:
    """Where the registry is and how to talk to it: picklable, hashable, secrets hidden.

    ``urls`` are tried in order (see the module docstring); user info in one is taken out
    into ``url_user_info`` (that URL's Basic credentials) when the config is built, so
    ``urls`` never holds a secret. ``user_info`` ("user:password", Confluent's
    ``basic.auth.user.info``) or ``bearer_token`` (a static token, Confluent's
    ``bearer.auth.token``) authenticate every request, with ``bearer_headers`` such as
    Confluent Cloud's ``target-sr-cluster`` and ``Confluent-Identity-Pool-Id``. The repr
    shows which kind of credentials is set, never them.
    """

    urls: tuple[str, ...]
    user_info: str | None = field(default=None, repr=False)
    bearer_token: str | None = field(default=None, repr=False)
    bearer_headers: tuple[tuple[str, str], ...] = ()
    #: bearer tokens from an OAuth source (Confluent's bearer.auth.credentials.source=
    #: OAUTHBEARER, or the Kafka login's with SASL_OAUTHBEARER_INHERIT), fetched and refreshed
    #: through the process's token cache like the Kafka logins' (its repr hides the secret)
    oauth: OAuthConfig | None = None
    tls: TlsConfig | None = None
    request_timeout_s: float = 30.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_retries: int = DEFAULT_MAX_RETRIES
    retries_wait_ms: int = DEFAULT_RETRIES_WAIT_MS
    retries_max_wait_ms: int = DEFAULT_RETRIES_MAX_WAIT_MS
    #: what one schema's imports may cost (``SchemaRegistryClient.imports``)
    max_imported_schemas: int = DEFAULT_MAX_IMPORTED_SCHEMAS
    max_imported_bytes: int = DEFAULT_MAX_IMPORTED_BYTES
    max_reference_depth: int = DEFAULT_MAX_REFERENCE_DEPTH
    #: Basic credentials taken from each URL's user info (None: the URL had none); filled
    #: when the config is built, kept when a built config is copied (dataclasses.replace).
    url_user_info: tuple[str | None, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        raw = self.urls
        given = tuple(raw.split(",")) if isinstance(raw, str) else tuple(raw)
        if not given or not all(isinstance(u, str) and u.strip() for u in given):
            raise ConfigurationError.of(INVALID_VALUE, option=URL_OPTION,
                                        expected="one or more http(s) URLs",
                                        got=f"{len(given)} URL(s), some empty")
        known = self.url_user_info or (None,) * len(given)
        if len(known) != len(given):
            raise ConfigurationError.of(INVALID_VALUE, option="url_user_info",
                                        expected=f"{len(given)} entries, one per URL",
                                        got=str(len(known)))
        urls, infos = [], []
        for url, before in zip(given, known, strict=True):
            clean, info = split_url(url)
            urls.append(clean)
            infos.append(info if info is not None else before)
        object.__setattr__(self, "urls", tuple(urls))
        object.__setattr__(self, "url_user_info", tuple(infos))
        from_urls = any(i is not None for i in infos)
        if self.user_info is not None and from_urls:
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "USER_INFO_TWICE")
        if self.user_info is not None and (":" not in self.user_info
                                           or not self.user_info.partition(":")[0]):
            raise ConfigurationError.of(INVALID_VALUE, option="basic.auth.user.info",
                                        expected="user:password", got="<hidden>")
        if self.oauth is not None and (self.bearer_token is not None or
                                       self.user_info is not None or from_urls):
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "OAUTH_AND_OTHER_CREDENTIAL")
        if self.bearer_token is not None and (self.user_info is not None or from_urls):
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "BEARER_AND_BASIC")
        if self.bearer_token is not None and (
                not self.bearer_token or any(not " " < c <= "~" for c in self.bearer_token)):
            raise ConfigurationError.of(INVALID_VALUE, option="bearer.auth.token",
                                        expected="printable ASCII without spaces",
                                        got="<hidden>")
        if self.bearer_headers and self.bearer_token is None and self.oauth is None:
            raise ConfigurationError.of(CONFLICTING_OPTIONS, "BEARER_HEADERS_WITHOUT_TOKEN")
        headers = tuple((str(n), str(v)) for n, v in self.bearer_headers)
        for name, value in headers:
            _header_checked(name, value)
        object.__setattr__(self, "bearer_headers", headers)
        bounds: tuple[tuple[str, object, float], ...] = (
            ("request_timeout_s", self.request_timeout_s, 0.001),
            ("max_response_bytes", self.max_response_bytes, 1),
            ("max_retries", self.max_retries, 0),
            ("retries_wait_ms", self.retries_wait_ms, 0),
            ("retries_max_wait_ms", self.retries_max_wait_ms, 0),
            ("max_imported_schemas", self.max_imported_schemas, 1),
            ("max_imported_bytes", self.max_imported_bytes, 1),
            ("max_reference_depth", self.max_reference_depth, 1))
        for option, number, low in bounds:
            if isinstance(number, bool) or not isinstance(number, (int, float)) or number < low:
                raise ConfigurationError.of(VALUE_OUT_OF_RANGE, option=option,
                                            bound=f">= {low:g}", got=repr(number))

    def __repr__(self) -> str:
        if self.oauth is not None:
            auth = f"OAuth bearer tokens ({self.oauth!r})"
        elif self.bearer_token is not None:
            auth = "bearer token <hidden>"
        elif self.user_info is not None:
            auth = "basic.auth.user.info <hidden>"
        elif any(i is not None for i in self.url_user_info):
            auth = "user info from the URL <hidden>"
        else:
            auth = "none"
        return (f"RegistryConfig(urls={self.urls!r}, auth={auth}, "
                f"bearer_headers={self.bearer_headers!r}, tls={self.tls!r}, "
                f"request_timeout_s={self.request_timeout_s}, "
                f"max_response_bytes={self.max_response_bytes}, "
                f"max_retries={self.max_retries}, retries_wait_ms={self.retries_wait_ms}, "
                f"retries_max_wait_ms={self.retries_max_wait_ms})")

    __str__ = __repr__

    def credentials_kind(self, index: int) -> str | None:
        """What credentials a request to ``urls[index]`` carries, in words (None: none);
        never the credentials themselves."""
        if self.oauth is not None:
            return "OAuth bearer tokens"
        if self.bearer_token is not None:
            return "a bearer token (bearer.auth.token)"
        if self.user_info is not None:
            return "Basic credentials (basic.auth.user.info)"
        if self.url_user_info[index] is not None:
            return "Basic credentials (the URL's user info)"
        return None

    def authorization(self, index: int) -> dict[str, str]:
        """The authentication headers of a request to ``urls[index]``."""
        if self.oauth is not None:
            token = TOKENS.get(self.oauth).value  # cached per process, refreshed before expiry
            return {"Authorization": f"Bearer {token}", **dict(self.bearer_headers)}
        if self.bearer_token is not None:
            return {"Authorization": f"Bearer {self.bearer_token}", **dict(self.bearer_headers)}
        info = self.user_info if self.user_info is not None else self.url_user_info[index]
        if info is None:
            return {}
        return {"Authorization": "Basic " + base64.b64encode(info.encode()).decode("ascii")}


@dataclass(frozen=True)
class SchemaReference:
    """A schema another one imports (Protobuf ``import``, an Avro named type, a JSON
    ``$ref``): ``name`` as the importing schema writes it, the subject and version holding it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it. ``subject`` and ``version`` are None where the
    answer does not say them (a schema fetched by id belongs to every subject registering
    it). A schema without ``schemaType`` in the answer is AVRO (Confluent's rule)."""

    id: int
    schema_type: SchemaType
    schema: str
    references: tuple[SchemaReference, ...] = ()
    subject: str | None = None
    version: int | None = None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follow no redirect: a 3xx is reported (REDIRECTED). urllib follows redirects to any
    host and scheme and re-sends every header, the Basic or Bearer ``Authorization``
    included; a registry's API has no reason to redirect, so refusing them all is simpler
    and safer than judging each target."""

    def redirect_request(self, req: urllib.request.Request, fp: object, code: int, msg: str,
                         headers: object, newurl: str) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


class Deadline:
    """The end of one request's time: when it comes, the request's socket is shut down, so
    a read blocked on it returns at once, whatever the server sends (or does not).

    urllib's ``timeout`` bounds each socket operation, not the request: a registry sending
    a byte every second would hold a 2-second-timeout request forever (issue 45). A timer
    thread is simpler than re-arming each read's timeout, and covers what urllib reads in
    its own code (the status line and headers) too. ``stop`` says whether the deadline came
    first; a request is then a timeout, whatever its reads returned (an answer read to its
    end by a closed connection may have been cut short). Name resolution, before there is a
    socket, is bounded by the resolver's own timeouts."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._expired = self._stopped = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down at the deadline (at once when it has passed)."""
        with self._lock:
            self._sockets.append(sock)
            expired = self._expired
        if expired:
            _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def stop(self) -> bool:
        """End the watch; True when the deadline had come."""
        self._timer.cancel()
        with self._lock:
            self._stopped = True
            return self._expired


def _shut(sock: socket.socket) -> None:
    try:
        # socket's own shutdown, also for a TLS socket (whose shutdown would first drop its
        # TLS state under a read in progress): wakes a read blocked in another thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass  # closed already: the request has ended


class _TimedRequest(urllib.request.Request):
    """A request with the Deadline its connection's socket is given to."""

    deadline: Deadline | None = None


class _WatchedConnection(http.client.HTTPConnection):
    """An HTTP connection whose socket its request's Deadline watches (for https, the TCP
    socket under TLS, so the handshake is within the deadline too)."""

    def __init__(self, *args: Any, deadline: Deadline | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline

    def connect(self) -> None:
        super().connect()
        if self._deadline is not None:
            self._deadline.watch(self.sock)


class _WatchedHTTPSConnection(http.client.HTTPSConnection, _WatchedConnection):
    """An https connection whose TLS socket the Deadline watches from before the handshake
    (wrapping detaches the TCP socket object, so watching that one would not do): connect
    is HTTPSConnection's, with the handshake after the watch."""

    def __init__(self, *args: Any, deadline: Deadline | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # HTTPSConnection's, which takes no deadline
        self._deadline = deadline

    def connect(self) -> None:
        _WatchedConnection.connect(self)  # TCP (and a proxy's CONNECT), watched
        context: ssl.SSLContext = getattr(self, "_context")  # noqa: B009 (HTTPSConnection's)
        host = getattr(self, "_tunnel_host", None) or self.host
        tls = context.wrap_socket(self.sock, server_hostname=host,
                                  do_handshake_on_connect=False)
        self.sock = tls
        if self._deadline is not None:
            self._deadline.watch(tls)
        tls.do_handshake()


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedConnection, req,
                            deadline=getattr(req, "deadline", None))


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(context=context)
        self._tls = context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_WatchedHTTPSConnection, req,
                            context=self._tls, deadline=getattr(req, "deadline", None))


_warned_lock = threading.Lock()
_warned_plain_http: set[tuple[str, str]] = set()


def warn_plain_http(url: str, kind: str) -> None:
    """Warn, once per process, URL and kind of credentials, that credentials go to ``url``
    over plain http (readable by anyone on the network path). A warning, not a refusal:
    Confluent's clients send them without a word, and a registry on a private network or
    behind a TLS-terminating sidecar is a deliberate setup; the operator who wants to forbid
    it lists the registries allowed (spark.kafkawire.schema.registry.allowed.urls). The
    message names the kind of credentials and the URL without user info, never a secret."""
    with _warned_lock:
        if (url, kind) in _warned_plain_http:
            return
        _warned_plain_http.add((url, kind))
    log.warning("Schema Registry %s: %s sent over plain http, readable by anyone on the "
                "network path; use an https:// URL", shown_url(url), kind)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def explain_answer(status: int, body: bytes) -> tuple[int | None, str]:
    """``(error_code, text)`` of an error answer: the status and the registry's Confluent
    ``error_code`` and ``message`` fields; nothing else of the body."""
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):
        answer = None
    code = None
    said = "no Confluent error in the answer"
    if isinstance(answer, dict):
        if _is_int(answer.get("error_code")):
            code = answer["error_code"]
        message = answer.get("message")
        if code is not None or isinstance(message, str):
            said = f"error code {code}" if code is not None else "no error code"
            if isinstance(message, str) and message.strip():
                said += f": {printable(message.strip().rstrip('.'))}"
    return code, f"HTTP {status}, {said}"


def kind_of(status: int, error_code: int | None) -> str:
    """The SchemaRegistryError kind of an error answer."""
    if 300 <= status < 400:
        return "REDIRECTED"
    if status in RETRIABLE_STATUSES or status >= 500:
        return "SERVER_ERROR"
    if status in (401, 403):
        return "UNAUTHORIZED"
    if status == 404:
        return "NOT_FOUND"
    if status == 409:
        return "INCOMPATIBLE"
    if status == 422 and error_code == 42201:
        return "INVALID_SCHEMA"
    return "INVALID_REQUEST"


class _Failure(Exception):
    """One attempt's failure: ``kind``, what to say, the answer's status and error code;
    ``retriable`` says whether the next URL (and round) may be tried."""

    def __init__(self, kind: str, text: str, *, status: int | None = None,
                 error_code: int | None = None, retriable: bool = False) -> None:
        super().__init__(text)
        self.kind = kind
        self.text = text
        self.status = status
        self.error_code = error_code
        self.retriable = retriable

    def error(self, url: str, request: str, attempts: str, *, subject: str | None,
              schema_id: int | None, version: int | str | None) -> SchemaRegistryError:
        """The SchemaRegistryError of this failure at ``url``; ``attempts`` says what was
        tried when retries ran out. An answer's text is its ``answer``, anything else (no
        answer, a bad one) its ``reason``."""
        if self.status is None:
            reason = f"{self.text}; {attempts}" if attempts else self.text
            return SchemaRegistryError(self.kind, url, request, reason=reason,
                                       subject=subject, schema_id=schema_id, version=version)
        return SchemaRegistryError(self.kind, url, request, answer=self.text, reason=attempts,
                                   status=self.status, error_code=self.error_code,
                                   subject=subject, schema_id=schema_id, version=version)


@dataclass(frozen=True)
class _Answer:
    """A parsed JSON answer (None for an empty body) and the base URL that gave it."""

    body: object
    url: str


def full_jitter_s(round_done: int, wait_ms: int, max_wait_ms: int) -> float:
    """The wait before the next round, as Confluent's clients draw it: uniformly random up to
    ``wait_ms * 2**round_done``, capped at ``max_wait_ms``."""
    return random.random() * min(wait_ms * 2.0 ** round_done, max_wait_ms) / 1000


def _schema_type(value: object) -> SchemaType:
    if value is None:
        return "AVRO"
    if value not in SCHEMA_TYPES:
        raise ValueError(f"an unknown schemaType {printable(value, 40)!r} (kafkawire reads "
                         f"{', '.join(SCHEMA_TYPES)})")
    return cast(SchemaType, value)


def _references(value: object) -> tuple[SchemaReference, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError("references is not a list")
    out = []
    for ref in value:
        if not (isinstance(ref, dict) and isinstance(ref.get("name"), str)
                and isinstance(ref.get("subject"), str) and _is_int(ref.get("version"))):
            raise ValueError("a reference without a name, subject and version")
        out.append(SchemaReference(ref["name"], ref["subject"], ref["version"]))
    return tuple(out)


def schema_from_answer(answer: object, *, schema_id: int | None = None,
                       subject: str | None = None, version: int | None = None,
                       sent: str | None = None) -> RegisteredSchema:
    """The RegisteredSchema of an answer of Confluent's API (``/schemas/ids/{id}``,
    ``/subjects/{s}/versions/{v}``, ``POST /subjects/{s}``); ValueError naming what is wrong.
    Fields the caller knows (``schema_id``, ``subject``, ``version``; ``sent``, the schema a
    lookup sent) fill in what the answer leaves out; what the answer says comes first."""
    if not isinstance(answer, dict):
        raise ValueError("the answer is not a JSON object")
    schema = answer.get("schema", sent)
    if not isinstance(schema, str):
        raise ValueError("the answer has no schema string")
    found_id = answer.get("id", schema_id)
    if not _is_int(found_id):
        raise ValueError("the answer has no integer id")
    found_version = answer.get("version", version)
    if found_version is not None and not _is_int(found_version):
        raise ValueError("the answer's version is not an integer")
    found_subject = answer.get("subject", subject)
    if found_subject is not None and not isinstance(found_subject, str):
        raise ValueError("the answer's subject is not a string")
    return RegisteredSchema(id=cast(int, found_id), schema_type=_schema_type(answer.get("schemaType")),
                            schema=schema, references=_references(answer.get("references")),
                            subject=found_subject, version=found_version)


def _version_checked(version: int) -> int:
    if not _is_int(version) or version < 1:
        raise ConfigurationError.of(INVALID_VALUE, option="subject version",
                                    expected="an integer >= 1", got=repr(version))
    return version


def _subject_checked(subject: str) -> str:
    if not isinstance(subject, str) or not subject:
        raise ConfigurationError.of(INVALID_VALUE, option="subject",
                                    expected="a non-empty string", got=repr(subject))
    return subject


def schema_body(schema: str, schema_type: str,
                 references: Sequence[SchemaReference]) -> dict[str, object]:
    """The body of a registration or lookup: ``schemaType`` left out for AVRO, as Confluent's
    Java serializers send it (registries older than 5.5 know no other field)."""
    if schema_type not in SCHEMA_TYPES:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option="schema type",
                                    allowed=", ".join(SCHEMA_TYPES), got=repr(schema_type))
    if not isinstance(schema, str):
        raise ConfigurationError.of(INVALID_VALUE, option="schema", expected="a string",
                                    got=type(schema).__name__)
    body: dict[str, object] = {"schema": schema}
    if schema_type != "AVRO":
        body["schemaType"] = schema_type
    if references:
        body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                              for r in references]
    return body


class SchemaRegistryClient:
    """Confluent's Schema Registry API for one ``RegistryConfig`` (see the module docstring).

    Thread-safe. ``requests_sent`` counts HTTP requests sent (each attempt), so tests and
    benchmarks can see what the cache saves. Every failure is a SchemaRegistryError whose
    kind says what happened; ``lookup`` answers None for a schema the subject lacks.
    """

    def __init__(self, config: RegistryConfig) -> None:
        for url in config.urls:
            check_registry_url(url)
        self.config = config
        self.requests_sent = 0
        self._lock = threading.Lock()
        self._by_id: OrderedDict[tuple[int, str | None], RegisteredSchema] = OrderedDict()
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect(), _DeadlineHTTPHandler()]
        if any(url.startswith("https:") for url in config.urls):
            context = context_for(config.tls) if config.tls is not None \
                else ssl.create_default_context()
            handlers.append(_DeadlineHTTPSHandler(context=context))
        self._opener = urllib.request.build_opener(*handlers)
        for index, url in enumerate(config.urls):
            kind = config.credentials_kind(index)
            if kind is not None and url.startswith("http:"):
                warn_plain_http(url, kind)

    def __repr__(self) -> str:
        return f"SchemaRegistryClient({self.config!r})"

    # ------------------------------------------------------------------ the API

    def schema_by_id(self, schema_id: int, subject: str | None = None) -> RegisteredSchema:
        """The schema of ``schema_id`` (``GET /schemas/ids/{id}``), cached (the SCHEMAS_KEPT
        most recently used): ids are immutable. ``subject`` is passed as Confluent's ``subject`` query
        parameter (which finds the id in the subject's context) and is part of the cache key.
        NOT_FOUND (40403) for an id the registry does not have."""
        if not _is_int(schema_id) or schema_id < 0:
            raise ConfigurationError.of(INVALID_VALUE, option="schema id",
                                        expected="a non-negative integer", got=repr(schema_id))
        key = (schema_id, subject)
        with self._lock:
            known = self._by_id.get(key)
            if known is not None:
                self._by_id.move_to_end(key)
        if known is not None:
            return known
        query = {"subject": _subject_checked(subject)} if subject is not None else None
        answer = self._call("GET", f"/schemas/ids/{schema_id}", query=query,
                            schema_id=schema_id, subject=subject)
        found = self._parsed(answer, f"GET /schemas/ids/{schema_id}", schema_id=schema_id,
                             subject=subject, keep=(schema_id, None, None))
        with self._lock:
            kept = self._by_id.setdefault(key, found)
            while len(self._by_id) > SCHEMAS_KEPT:  # ids come from records: data
                self._by_id.popitem(last=False)
            return kept

    def latest(self, subject: str) -> RegisteredSchema:
        """The subject's latest version (``GET /subjects/{s}/versions/latest``), asked every
        time. NOT_FOUND (40401) for an unknown subject."""
        return self._version(subject, "latest")

    def version(self, subject: str, version: int) -> RegisteredSchema:
        """Version ``version`` (1, 2, ...) of the subject. NOT_FOUND (40401 subject, 40402
        version) when either does not exist."""
        return self._version(subject, _version_checked(version))

    def imports(self, schema: RegisteredSchema) -> dict[str, str]:
        """The schemas ``schema`` imports (its ``references``: Protobuf ``import``, JSON Schema
        ``$ref`` to another subject), by import name, their own imports included, each
        fetched once (a reference cycle ends where a name is already known).

        Within the config's limits (``max_imported_schemas`` fetched, ``max_imported_bytes``
        of them, ``max_reference_depth`` levels): references are the registry's data, and a
        registry whose every schema imports a new one (or a huge one) would otherwise draw
        requests and memory until the worker dies. Beyond one, SchemaRegistryError
        (REFERENCE_LIMIT) naming ``schema``, the reference where it stopped and the limit."""
        config = self.config
        found: dict[str, str] = {}
        fetched = size = 0
        url = config.urls[0]
        # depth first, each reference with its level (``schema``'s own references: 1)
        pending = [(ref, 1) for ref in reversed(schema.references)]
        while pending:
            ref, depth = pending.pop()
            if ref.name in found:
                continue
            if depth > config.max_reference_depth:
                raise self._beyond(schema, ref, url, f"more than {config.max_reference_depth} "
                                   "levels of references (max_reference_depth)")
            if fetched >= config.max_imported_schemas:
                raise self._beyond(schema, ref, url, f"more than {config.max_imported_schemas}"
                                   " schemas imported (max_imported_schemas)")
            imported, url = self._version_answer(ref.subject, _version_checked(ref.version))
            fetched += 1
            size += len(imported.schema.encode("utf-8", "surrogatepass"))
            if size > config.max_imported_bytes:
                raise self._beyond(schema, ref, url, f"more than {config.max_imported_bytes} "
                                   "bytes of imported schemas (max_imported_bytes)")
            found[ref.name] = imported.schema
            pending.extend((r, depth + 1) for r in reversed(imported.references))
        return found

    def _beyond(self, schema: RegisteredSchema, ref: SchemaReference, url: str,
                limit: str) -> SchemaRegistryError:
        """The REFERENCE_LIMIT error of ``schema``'s imports, stopped at ``ref``."""
        request = (f"GET /subjects/{quote(ref.subject, safe='')}/versions/{ref.version}")
        return SchemaRegistryError(
            "REFERENCE_LIMIT", url, request, subject=schema.subject, schema_id=schema.id,
            version=schema.version,
            reason=f"{limit}, at the import {printable(ref.name, 100)!r} (subject "
                   f"{printable(ref.subject, 100)!r}, version {ref.version})")

    def versions(self, subject: str) -> list[int]:
        """The subject's version numbers, ascending (``GET /subjects/{s}/versions``)."""
        path = f"/subjects/{quote(_subject_checked(subject), safe='')}/versions"
        answer = self._call("GET", path, subject=subject)
        if not isinstance(answer.body, list) or not all(_is_int(v) for v in answer.body):
            raise SchemaRegistryError("BAD_ANSWER", answer.url, f"GET {path}", subject=subject,
                                      reason="the answer is not a list of version numbers")
        return sorted(answer.body)

    def lookup(self, subject: str, schema: str, schema_type: SchemaType = "AVRO",
               references: Sequence[SchemaReference] = ()) -> RegisteredSchema | None:
        """The subject's registration of ``schema`` (``POST /subjects/{s}``: id and version),
        or None when the subject does not have it or does not exist (40403, 40401)."""
        path = f"/subjects/{quote(_subject_checked(subject), safe='')}"
        body = schema_body(schema, schema_type, references)
        try:
            answer = self._call("POST", path, body=body, subject=subject)
        except SchemaRegistryError as error:
            if error.kind == "NOT_FOUND" and error.error_code in (40401, 40403):
                return None
            raise
        return self._parsed(answer, f"POST {path}", subject=subject,
                            keep=(None, subject, None), sent=schema)

    def register(self, subject: str, schema: str, schema_type: SchemaType = "AVRO",
                 references: Sequence[SchemaReference] = ()) -> int:
        """Register ``schema`` under ``subject`` (``POST /subjects/{s}/versions``) and return
        its id; the same schema again returns the same id. INCOMPATIBLE (409) when the
        subject's compatibility level refuses it, INVALID_SCHEMA (42201) for a schema the
        registry cannot parse."""
        path = f"/subjects/{quote(_subject_checked(subject), safe='')}/versions"
        answer = self._call("POST", path, body=schema_body(schema, schema_type, references),
                            subject=subject)
        if not isinstance(answer.body, dict) or not _is_int(answer.body.get("id")):
            raise SchemaRegistryError("BAD_ANSWER", answer.url, f"POST {path}",
                                      subject=subject, reason="the answer has no integer id")
        return cast(int, answer.body["id"])

    def compatibility(self, subject: str) -> str:
        """The subject's compatibility level, or the registry's global one when the subject
        has none (``GET /config/{s}?defaultToGlobal=true``)."""
        path = f"/config/{quote(_subject_checked(subject), safe='')}"
        answer = self._call("GET", path, query={"defaultToGlobal": "true"}, subject=subject)
        level = answer.body.get("compatibilityLevel") if isinstance(answer.body, dict) else None
        if not isinstance(level, str):
            raise SchemaRegistryError("BAD_ANSWER", answer.url, f"GET {path}", subject=subject,
                                      reason="the answer has no compatibilityLevel")
        return level

    def set_compatibility(self, subject: str, level: str) -> None:
        """Set the subject's compatibility level (``PUT /config/{s}``)."""
        if level not in COMPATIBILITY_LEVELS:
            raise ConfigurationError.of(UNSUPPORTED_VALUE, option="compatibility level",
                                        allowed=", ".join(COMPATIBILITY_LEVELS),
                                        got=repr(level))
        path = f"/config/{quote(_subject_checked(subject), safe='')}"
        self._call("PUT", path, body={"compatibility": level}, subject=subject)

    # ------------------------------------------------------------------ internals

    def _version(self, subject: str, version: int | str) -> RegisteredSchema:
        return self._version_answer(subject, version)[0]

    def _version_answer(self, subject: str, version: int | str
                        ) -> tuple[RegisteredSchema, str]:
        """The subject's version and the base URL that answered."""
        path = f"/subjects/{quote(_subject_checked(subject), safe='')}/versions/{version}"
        answer = self._call("GET", path, subject=subject, version=version)
        return self._parsed(answer, f"GET {path}", subject=subject, version=version,
                            keep=(None, subject, version if isinstance(version, int) else None)
                            ), answer.url

    def _parsed(self, answer: _Answer, request: str, *,
                keep: tuple[int | None, str | None, int | None], sent: str | None = None,
                subject: str | None = None, schema_id: int | None = None,
                version: int | str | None = None) -> RegisteredSchema:
        try:
            return schema_from_answer(answer.body, schema_id=keep[0], subject=keep[1],
                                      version=keep[2], sent=sent)
        except ValueError as exc:
            raise SchemaRegistryError("BAD_ANSWER", answer.url, request, reason=str(exc),
                                      subject=subject, schema_id=schema_id,
                                      version=version) from None

    def _call(self, method: str, path: str, *, body: object = None,
              query: dict[str, str] | None = None, subject: str | None = None,
              schema_id: int | None = None, version: int | str | None = None) -> _Answer:
        """The parsed JSON answer of ``method path`` and the URL that gave it, with failover
        and retries (see the module docstring); SchemaRegistryError when they run out or an
        answer is final."""
        config = self.config
        target = path + (f"?{urlencode(query)}" if query else "")
        request = f"{method} {target}"
        data = None if body is None else json.dumps(body).encode()
        rounds = config.max_retries + 1
        attempts = 0
        last: dict[str, _Failure] = {}
        for done in range(rounds):
            for index, base in enumerate(config.urls):
                attempts += 1
                try:
                    return _Answer(self._once(index, base + target, method, data), base)
                except _Failure as failure:
                    if not failure.retriable:
                        raise failure.error(base, request, "not retried", subject=subject,
                                            schema_id=schema_id, version=version) from None
                    last[base] = failure
                    log.warning("Schema Registry %s: %s failed (attempt %d of at most %d): %s",
                                base, request, attempts, rounds * len(config.urls),
                                failure.text)
            if done + 1 < rounds:
                time.sleep(full_jitter_s(done, config.retries_wait_ms,
                                         config.retries_max_wait_ms))
        # every attempt failed retriably; the last one was on the last URL
        final_url = config.urls[-1]
        tried = (f"{attempts} attempt{'s' * (attempts > 1)} on {len(config.urls)} "
                 f"URL{'s' * (len(config.urls) > 1)}, max_retries={config.max_retries}")
        others = "; ".join(f"{url}: {failure.text}" for url, failure in last.items()
                           if url != final_url)
        raise last[final_url].error(final_url, request,
                                    tried + (f"; other URLs: {others}" if others else ""),
                                    subject=subject, schema_id=schema_id, version=version)

    def _once(self, index: int, url: str, method: str, data: bytes | None) -> object:
        """One attempt on one URL: the parsed answer, or a _Failure."""
        config = self.config
        headers = {"Accept": ACCEPT, "User-Agent": "spark-kafka-wire",
                   **config.authorization(index)}
        if data is not None:
            headers["Content-Type"] = CONTENT_TYPE
        req = _TimedRequest(url, data=data, method=method, headers=headers)
        with self._lock:
            self.requests_sent += 1
        # request_timeout_s bounds the whole request, not each socket read: a registry that
        # dribbles its answer a byte at a time would hold a worker without end otherwise
        deadline = req.deadline = Deadline(config.request_timeout_s)
        try:
            raw = self._exchange(req)
        except _Failure:
            if deadline.stop():
                raise self._timed_out() from None
            raise
        if deadline.stop():  # the answer ended at the deadline: perhaps cut short
            raise self._timed_out()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than json takes
            raise _Failure("BAD_ANSWER", "the answer is not JSON") from None

    def _exchange(self, req: _TimedRequest) -> bytes:
        """The answer's bytes (connect, send, read all of it), or a _Failure."""
        config = self.config
        try:
            with self._opener.open(req, timeout=config.request_timeout_s) as answer:
                length = answer.headers.get("Content-Length", "")
                if length.isdigit() and int(length) > config.max_response_bytes:
                    raise _Failure("BAD_ANSWER", self._too_large(f"{int(length)} bytes"))
                raw = answer.read(config.max_response_bytes + 1)
                if len(raw) > config.max_response_bytes:
                    raise _Failure("BAD_ANSWER", self._too_large("larger"))
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read(ERROR_BODY_BYTES) if exc.fp is not None else b""
            except (OSError, http.client.HTTPException):
                body = b""
            finally:
                exc.close()
            code, text = explain_answer(exc.code, body)
            raise _Failure(kind_of(exc.code, code), text, status=exc.code, error_code=code,
                           retriable=exc.code in RETRIABLE_STATUSES) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, ssl.SSLError):
                raise _Failure("TLS_HANDSHAKE",
                               self._tls_reason(reason, req.full_url)) from None
            raise _Failure("UNREACHABLE", self._os_reason(reason), retriable=True) from None
        except (OSError, http.client.HTTPException) as exc:  # a timeout or reset mid-answer
            raise _Failure("UNREACHABLE", self._os_reason(exc), retriable=True) from None
        return raw

    def _timed_out(self) -> _Failure:
        return _Failure("UNREACHABLE", self._os_reason(TimeoutError()), retriable=True)

    def _too_large(self, size: str) -> str:
        return (f"the answer is {size}, more than the client's limit of "
                f"{self.config.max_response_bytes} bytes (max_response_bytes); it was not "
                "read whole")

    def _os_reason(self, reason: object) -> str:
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return (f"no answer within {self.config.request_timeout_s:g} s "
                    "(request_timeout_s), the time a whole request may take: connecting, "
                    "sending and reading all of the answer")
        if isinstance(reason, OSError) and reason.strerror:
            return printable(reason.strerror)
        return printable(reason or type(reason).__name__)

    def _tls_reason(self, reason: ssl.SSLError, url: str) -> str:
        if isinstance(reason, ssl.SSLCertVerificationError):
            parts = urlsplit(url)
            host, port = parts.hostname or "", parts.port or 443
            cert = peer_certificate(host, port, min(self.config.request_timeout_s, 10.0))
            return explain_verify_failure(reason, host, cert, REGISTRY_TLS_ADVICE)
        return (f"{printable(getattr(reason, 'reason', None) or reason)}; check that the URL's "
                "port serves https, and the TLS settings")


_lock = threading.Lock()
_registries: dict[tuple[int, RegistryConfig], SchemaRegistryClient] = {}


def shared_registry(config: RegistryConfig) -> SchemaRegistryClient:
    """One client per configuration per Python process (like ``client/pool.py``): Spark
    reuses its Python workers between tasks, so the id cache serves every task of the
    worker. Keyed by the process id too, so a forked worker does not share its parent's."""
    key = (os.getpid(), config)
    with _lock:
        client = _registries.get(key)
        if client is None:
            client = _registries[key] = SchemaRegistryClient(config)
        return client
