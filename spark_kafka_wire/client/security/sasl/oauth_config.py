"""What an OAUTHBEARER login needs, read from the Java client's settings on the driver.

Where the token comes from (the Java client picks a callback handler the same way):

* ``unsecured``: an unsigned JWT built here from ``OAuthBearerLoginModule``'s
  ``unsecuredLogin*`` JAAS options, as Java's default ``OAuthBearerUnsecuredLoginCallbackHandler``
  does (KIP-255, https://cwiki.apache.org/confluence/x/Tog8B; for development brokers only).
* ``oidc``: the OAuth 2.0 client-credentials grant against ``sasl.oauthbearer.token.endpoint.url``
  with the JAAS ``clientId``/``clientSecret``/``scope`` (KIP-768,
  https://cwiki.apache.org/confluence/x/sL2ZCw), or a token read from a ``file:`` URL.
* ``aws``: Amazon MSK IAM, a SigV4-presigned URL made by aws-msk-iam-sasl-signer-python, as
  aws-msk-iam-auth's ``IAMOAuthBearerLoginCallbackHandler`` makes it in Java.
* ``provider``: a Python callable named by ``kafka.sasl.oauthbearer.token.provider``.

SASL extensions (KIP-342, https://cwiki.apache.org/confluence/x/-5mgBQ) come from
``unsecuredLoginExtension_<name>`` or ``extension_<name>`` JAAS options.

:class:`OAuthConfig` is frozen, hashable and picklable (it travels inside Spark plans and keys
the client pool), and its repr names where tokens come from but never a secret, a claim or an
extension value.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from spark_kafka_wire.client import defaults
from spark_kafka_wire.client.errors import (
    NOT_ALLOWED_BY_OPERATOR,
    SECURITY_SETTING,
    ConfigurationError,
)
from spark_kafka_wire.client.operator import operator_list, where_to_set
from spark_kafka_wire.protocol.primitives import INT64_MAX

OAUTH_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
#: Kafka 3.4+ and the older ``secured`` package name of the KIP-768 login callback handler.
OIDC_HANDLERS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
                 "org.apache.kafka.common.security.oauthbearer.secured."
                 "OAuthBearerLoginCallbackHandler")
UNSECURED_HANDLER = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                     "OAuthBearerUnsecuredLoginCallbackHandler")
AWS_MODULE = "software.amazon.msk.auth.iam.IAMLoginModule"
AWS_HANDLER = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
SOURCES = ("unsecured", "oidc", "aws", "provider")

# KIP-342 (Kafka's OAuthBearerClientInitialResponse): extension names are letters only, values
# printable ASCII, space and CR/LF/TAB; "auth" is the token's own key.
EXTENSION_NAME = re.compile(r"[A-Za-z]+")
EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
_WHAT = "kafka.sasl.jaas.config"

#: The operator's list of the exact URLs (token endpoints, token files) a query may make
#: kafkawire read: Java's ``org.apache.kafka.sasl.oauthbearer.allowed.urls`` (Kafka 4.0,
#: CVE-2025-27817), whose default, empty, allows none.
ALLOWED_URLS = "spark.kafkawire.sasl.oauthbearer.allowed.urls"
#: The operator's list of the modules whose callables ``kafka.sasl.oauthbearer.token.provider``
#: may name (a module allows its submodules; ``*`` any); unset, none.
ALLOWED_PROVIDER_MODULES = "spark.kafkawire.sasl.oauthbearer.token.provider.allowed.modules"
URL_OPTION = "kafka.sasl.oauthbearer.token.endpoint.url"
PROVIDER_OPTION = "kafka.sasl.oauthbearer.token.provider"
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class RefreshSettings:
    """``sasl.login.refresh.*``: when a cached token is replaced (tokens.refresh_at_ms)."""

    window_factor: float = float(defaults.SASL_LOGIN_REFRESH_WINDOW_FACTOR)
    window_jitter: float = float(defaults.SASL_LOGIN_REFRESH_WINDOW_JITTER)
    min_period_s: int = defaults.SASL_LOGIN_REFRESH_MIN_PERIOD_SECONDS
    buffer_s: int = defaults.SASL_LOGIN_REFRESH_BUFFER_SECONDS


@dataclass(frozen=True)
class HttpSettings:
    """``sasl.login.*`` timeouts and retries of the token endpoint (KIP-768)."""

    connect_timeout_ms: int = defaults.SASL_LOGIN_CONNECT_TIMEOUT_MS
    read_timeout_ms: int = defaults.SASL_LOGIN_READ_TIMEOUT_MS
    retry_backoff_ms: int = defaults.SASL_LOGIN_RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = defaults.SASL_LOGIN_RETRY_BACKOFF_MAX_MS
    # sasl.oauthbearer.header.urlencode (KIP-1025)
    urlencode_header: bool = defaults.SASL_OAUTHBEARER_HEADER_URLENCODE


@dataclass(frozen=True)
class OAuthConfig:
    """Where OAUTHBEARER tokens come from. ``principal`` names who logs in (the unsecured
    token's subject, the OAuth client id, the AWS identity source, the provider) for error
    messages; ``client_secret`` and ``claims_json`` are secrets and never shown."""

    source: str
    principal: str
    extensions: tuple[tuple[str, str], ...] = ()
    refresh: RefreshSettings = RefreshSettings()
    # unsecured: the claims besides iat/exp as JSON text, the lifetime and the subject's claim
    claims_json: str = field(default="{}", repr=False)
    lifetime_s: int = 3600
    principal_claim: str = "sub"
    # oidc
    endpoint_url: str = ""
    client_id: str = ""
    client_secret: str = field(default="", repr=False)
    scope: str = ""
    http: HttpSettings = HttpSettings()
    sub_claim: str = defaults.SASL_OAUTHBEARER_SUB_CLAIM_NAME
    scope_claim: str = defaults.SASL_OAUTHBEARER_SCOPE_CLAIM_NAME
    # aws
    region: str = ""
    aws_profile: str = ""
    aws_role_arn: str = ""
    aws_role_session_name: str = ""
    # provider: ``package.module:callable`` or ``package.module.callable``
    provider: str = ""

    def cache_key(self) -> tuple:
        """Tokens are shared by the configurations with the same key in one process: the
        source and everything that changes the token (a digest of the secret, so a corrected
        secret does not reuse a token fetched with another)."""
        digest = hashlib.sha256(f"{self.client_secret}\0{self.claims_json}".encode()).hexdigest()
        return (self.source, self.endpoint_url, self.client_id, self.scope, digest,
                self.lifetime_s, self.region, self.aws_profile, self.aws_role_arn,
                self.aws_role_session_name, self.provider)

    def __repr__(self) -> str:
        shown = {"unsecured": f"principal={self.principal!r}",
                 "oidc": f"endpoint={safe_url(self.endpoint_url)!r}, "
                         f"client_id={self.client_id!r}, scope={self.scope!r}, "
                         "client_secret=<hidden>",
                 "aws": f"region={self.region!r}, identity={self.principal!r}",
                 "provider": f"provider={self.provider!r}"}[self.source]
        names = ",".join(k for k, _ in self.extensions)
        return f"OAuthConfig(source={self.source}, {shown}, extensions=[{names}])"


def safe_url(url: str) -> str:
    """``url`` without user info, query or fragment, which may hold credentials."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_url_allowed(url: str, option: str = URL_OPTION) -> None:
    """Refuse a URL the operator did not list (exactly, as Java compares them).

    A query's options are not the operator's: a ``file:`` URL would make every process of the
    query read a local file and send it, as a bearer token, to whatever broker the query
    names; an http(s) URL would make them send requests (with the client secret) anywhere
    the cluster can reach. Called where the options are parsed, so a query fails when it is
    defined, and again where the URL is read (executors), whose operator decides there.
    """
    allowed = operator_list(ALLOWED_URLS) or []
    if url.strip() in allowed:
        return
    raise ConfigurationError.of(
        NOT_ALLOWED_BY_OPERATOR, "URL", option=option, url=safe_url(url),
        allowed_urls=where_to_set(ALLOWED_URLS))


def provider_module(name: str) -> tuple[str, str]:
    """(module, attribute) of ``package.module:callable`` or ``package.module.callable``."""
    module, sep, attr = name.partition(":")
    if not sep:
        module, _, attr = name.rpartition(".")
    return module, attr


def check_provider_allowed(name: str) -> None:
    """Refuse, before importing anything, a token provider whose module the operator did not
    allow: importing a module runs its code, and calling a callable runs more, so a query
    naming ``os:abort`` (or any importable module with side effects) would run code of the
    query's choosing in every Python process of the cluster."""
    module, attr = provider_module(name.strip())
    if not _DOTTED.fullmatch(module) or not attr.isidentifier():
        raise ConfigurationError.of(
            SECURITY_SETTING, "TOKEN_PROVIDER_FORM", provider_option=PROVIDER_OPTION)
    allowed = operator_list(ALLOWED_PROVIDER_MODULES) or []
    if "*" in allowed or any(module == m or module.startswith(m + ".") for m in allowed):
        return
    raise ConfigurationError.of(
        NOT_ALLOWED_BY_OPERATOR, "TOKEN_PROVIDER_MODULE", provider_option=PROVIDER_OPTION,
        module=module, allowed_provider_modules=where_to_set(ALLOWED_PROVIDER_MODULES))


def _option(options: dict[str, str], key: str, pattern: str) -> str:
    """How a message names the JAAS option ``key``, whose tail the user chose (an extension
    or claim name): by its place in the entry and its pattern, never by its text, since a
    misplaced quote can put a password there."""
    return f"option {list(options).index(key) + 1} of {_WHAT} ({pattern})"


def extensions_from(options: dict[str, str], prefix: str) -> tuple[tuple[str, str], ...]:
    """The KIP-342 extensions among JAAS ``options`` (keys ``<prefix><name>``), checked as
    Kafka checks them; messages name the option's place, never its name or value."""
    out = []
    for key, value in options.items():
        if not key.startswith(prefix):
            continue
        name = key[len(prefix):]
        where = _option(options, key, f"{prefix}<name>, a SASL extension")
        if not EXTENSION_NAME.fullmatch(name) or name == "auth":
            raise ConfigurationError.of(
                SECURITY_SETTING, "EXTENSION_NAME", where=where)
        if not EXTENSION_VALUE.fullmatch(value):
            raise ConfigurationError.of(SECURITY_SETTING, "EXTENSION_VALUE", where=where)
        out.append((name, value))
    return tuple(out)


# The longest unsecured token lifetime: Java adds it, in ms, to a long.
MAX_LIFETIME_S = INT64_MAX // 1000 // 1000


def _number(where: str, text: str) -> int | float:
    """``text`` as a JSON number; ``where`` names the option (never its text)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ConfigurationError.of(SECURITY_SETTING, "NOT_A_NUMBER", where=where) from None
    if not math.isfinite(value):  # nan, inf, 1e999: JSON has no such number
        raise ConfigurationError.of(SECURITY_SETTING, "NOT_FINITE", where=where)
    return int(value) if value.is_integer() else value


def unsecured_claims(options: dict[str, str]) -> tuple[str, str, str, int]:
    """(claims JSON, principal claim name, principal, lifetime in s) from the ``unsecuredLogin*``
    options of Java's OAuthBearerUnsecuredLoginCallbackHandler (KIP-255): ``StringClaim_<c>``,
    ``NumberClaim_<c>``, ``ListClaim_<c>`` (the value's first character separates the items),
    ``PrincipalClaimName`` (sub), ``LifetimeSeconds`` (3600), ``ScopeClaimName`` (scope).
    ``iat`` and ``exp`` are set when a token is made and cannot be given."""
    claims: dict[str, object] = {}
    for key, value in options.items():
        for kind in ("String", "Number", "List"):
            prefix = f"unsecuredLogin{kind}Claim_"
            if not key.startswith(prefix):
                continue
            name = key[len(prefix):]
            where = _option(options, key, f"{prefix}<claim>")
            if not name or name in ("iat", "exp") or name in claims:
                raise ConfigurationError.of(
                    SECURITY_SETTING, "UNSECURED_CLAIM", where=where)
            if kind == "String":
                claims[name] = value
            elif kind == "Number":
                claims[name] = _number(where, value)
            else:
                claims[name] = [v for v in value[1:].split(value[0]) if v] if value else []
    principal_claim = options.get("unsecuredLoginPrincipalClaimName", "sub").strip() or "sub"
    scope_claim = options.get("unsecuredLoginScopeClaimName", "scope").strip() or "scope"
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        claim = "sub" if principal_claim == "sub" else \
            "<the claim unsecuredLoginPrincipalClaimName names>"
        raise ConfigurationError.of(
            SECURITY_SETTING, "UNSECURED_PRINCIPAL", what=_WHAT, claim=claim,
            oauth_module=OAUTH_MODULE)
    if scope_claim in claims and not isinstance(claims[scope_claim], (str, list)):
        raise ConfigurationError.of(
            SECURITY_SETTING, "UNSECURED_SCOPE", what=_WHAT)
    lifetime = _number(f"{_WHAT}: unsecuredLoginLifetimeSeconds",
                       options.get("unsecuredLoginLifetimeSeconds", "3600"))
    if not 0 < lifetime <= MAX_LIFETIME_S:
        raise ConfigurationError.of(
            SECURITY_SETTING, "UNSECURED_LIFETIME", what=_WHAT,
            max_lifetime_s=MAX_LIFETIME_S)
    return (json.dumps(claims, separators=(",", ":"), sort_keys=True), principal_claim,
            principal, int(lifetime))
