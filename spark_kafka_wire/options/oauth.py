"""OAUTHBEARER's token source from a query's options (``kafka.sasl.jaas.config``'s
OAuthBearerLoginModule, the callback handler, the token endpoint, a Python provider, Amazon
MSK IAM) into the client layer's picklable :class:`OAuthConfig`.

Apart from ``security.py`` (which calls :func:`oauth_config` for ``kafka.sasl.mechanism``
OAUTHBEARER) because token sources are a concern of their own: five of them, each with its
settings and refusals. Checked here, on the driver, so an unusable setting fails before any
task runs; messages name options, never their values.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

from spark_kafka_wire.client.config import parse_bootstrap
from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    INVALID_VALUE,
    MISSING_OPTION,
    SECURITY_SETTING,
    UNSUPPORTED_VALUE,
    VALUE_OUT_OF_RANGE,
    ConfigurationError,
)
from spark_kafka_wire.client.security.sasl.aws_iam import check_signer, region_from_host
from spark_kafka_wire.client.security.sasl.jaas import parse_jaas, shown_module
from spark_kafka_wire.client.security.sasl.oauth_config import (
    AWS_HANDLER,
    AWS_MODULE,
    OAUTH_MODULE,
    OIDC_HANDLERS,
    UNSECURED_HANDLER,
    HttpSettings,
    OAuthConfig,
    RefreshSettings,
    check_provider_allowed,
    check_url_allowed,
    extensions_from,
    unsecured_claims,
)
from spark_kafka_wire.options.table import Option, option
from spark_kafka_wire.options.values import bool_value, given, int_value, text_value
from spark_kafka_wire.protocol.errors import FromPlaceholder, shown


def _fraction(opts: Mapping[str, str], opt: Option, low: float, high: float) -> float:
    raw, name = text_value(opts, opt), opt.name
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfigurationError.of(INVALID_VALUE, option=name, expected="a number", got=repr(raw)) from None
    if not low <= value <= high:
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, option=name, bound=f"between {low} and {high}",
            got=shown(value, within=raw))
    return value


def _bounded(opts: Mapping[str, str], opt: Option, high: int) -> int:
    value = int_value(opts, opt)
    if value > high:
        raise ConfigurationError.of(
            VALUE_OUT_OF_RANGE, option=opt.name, bound=f"at most {high}",
            got=shown(value, within=given(opts, opt)))
    return value


def _refresh_settings(opts: Mapping[str, str]) -> RefreshSettings:
    """``sasl.login.refresh.*`` within the bounds Java's SaslConfigs enforces."""
    return RefreshSettings(
        window_factor=_fraction(opts, option("kafka.sasl.login.refresh.window.factor"), 0.5, 1.0),
        window_jitter=_fraction(opts, option("kafka.sasl.login.refresh.window.jitter"), 0.0, 0.25),
        min_period_s=_bounded(opts, option("kafka.sasl.login.refresh.min.period.seconds"), 900),
        buffer_s=_bounded(opts, option("kafka.sasl.login.refresh.buffer.seconds"), 3600))


def _aws_region(opts: Mapping[str, str]) -> str:
    region = (given(opts, "kafka.sasl.aws.region") or "").strip()
    if not region:
        hosts = [h for h, _ in parse_bootstrap(given(opts, "kafka.bootstrap.servers") or "")]
        region = next((r for r in map(region_from_host, hosts) if r), "")
    if not region:
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
    if not region:
        raise ConfigurationError.of(MISSING_OPTION, "AWS_REGION")
    return region


def oauth_config(opts: Mapping[str, str]) -> OAuthConfig:
    """Where OAUTHBEARER tokens come from, chosen as the Java client chooses its login callback
    handler (see client/security/sasl/oauth_config.py): MSK IAM, a Python token provider, a token
    endpoint, else unsecured tokens. Messages name options, never their values."""
    if given(opts, "kafka.sasl.username") is not None or \
            given(opts, "kafka.sasl.password") is not None:
        raise ConfigurationError.of(CONFLICTING_OPTIONS, "OAUTHBEARER_USERNAME")
    handler = (given(opts, "kafka.sasl.login.callback.handler.class") or "").strip()
    url = (given(opts, "kafka.sasl.oauthbearer.token.endpoint.url") or "").strip()
    provider = (given(opts, "kafka.sasl.oauthbearer.token.provider") or "").strip()
    jaas = given(opts, "kafka.sasl.jaas.config")
    module, jopts = parse_jaas(jaas) if jaas is not None else ("", {})
    known = (*OIDC_HANDLERS, UNSECURED_HANDLER, AWS_HANDLER)
    if handler and handler not in known:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "LOGIN_CALLBACK_HANDLER", known=', '.join(known))
    aws = handler == AWS_HANDLER or module == AWS_MODULE
    if sum((aws, bool(url), bool(provider))) > 1:
        raise ConfigurationError.of(SECURITY_SETTING, "TOKEN_SOURCES")
    if module and module not in (OAUTH_MODULE, AWS_MODULE):
        raise ConfigurationError.of(
            SECURITY_SETTING, "OAUTHBEARER_JAAS_MODULE", module=shown_module(module),
            oauth_module=OAUTH_MODULE, aws_module=AWS_MODULE)
    if module == AWS_MODULE and not aws or module == OAUTH_MODULE and aws:
        raise ConfigurationError.of(
            SECURITY_SETTING, "AWS_JAAS_AND_HANDLER", aws_module=AWS_MODULE,
            aws_handler=AWS_HANDLER)
    refresh = _refresh_settings(opts)
    if aws:
        check_signer()
        profile, role = jopts.get("awsProfileName", ""), jopts.get("awsRoleArn", "")
        who = f"awsRoleArn {role}" if role else \
            f"awsProfileName {profile}" if profile else "the default AWS credentials"
        return OAuthConfig(source="aws", principal=who, refresh=refresh,
                           region=_aws_region(opts), aws_profile=profile, aws_role_arn=role,
                           aws_role_session_name=jopts.get("awsRoleSessionName", ""))
    if provider:
        check_provider_allowed(provider)  # refused here, before any import, not only on executors
        return OAuthConfig(source="provider", principal=provider, provider=provider,
                           extensions=extensions_from(jopts, "extension_"), refresh=refresh)
    if jaas is None:
        raise ConfigurationError.of(
            MISSING_OPTION, "OAUTHBEARER_JAAS_CONFIG", oauth_module=OAUTH_MODULE)
    if url or handler in OIDC_HANDLERS:
        if not url:
            raise ConfigurationError.of(
                SECURITY_SETTING, "HANDLER_NEEDS_ENDPOINT", handler=handler)
        scheme = url.partition(":")[0].lower()
        if scheme not in ("http", "https", "file"):
            raise ConfigurationError.of(INVALID_VALUE, "TOKEN_ENDPOINT_SCHEME")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
        except ValueError as exc:
            # exc quotes a piece of the URL
            why = f" ({shown(url)})" if isinstance(url, FromPlaceholder) else f" ({exc})"
            raise ConfigurationError.of(INVALID_VALUE, "TOKEN_ENDPOINT_NOT_URL", why=why) from None
        if scheme != "file" and not parts.hostname or any(c in url for c in " \x00\r\n"):
            raise ConfigurationError.of(INVALID_VALUE, "TOKEN_ENDPOINT_NO_HOST")
        client_id, secret = jopts.get("clientId", ""), jopts.get("clientSecret", "")
        if scheme != "file" and (not client_id or not secret):
            raise ConfigurationError.of(
                SECURITY_SETTING, "ENDPOINT_CLIENT_CREDENTIALS", oauth_module=OAUTH_MODULE)
        check_url_allowed(url)  # where the query is defined; oidc.py checks again where read
        return OAuthConfig(
            source="oidc", principal=client_id or "token file", endpoint_url=url,
            client_id=client_id, client_secret=secret, scope=jopts.get("scope", ""),
            extensions=extensions_from(jopts, "extension_"), refresh=refresh,
            sub_claim=text_value(opts, "kafka.sasl.oauthbearer.sub.claim.name").strip(),
            scope_claim=text_value(opts, "kafka.sasl.oauthbearer.scope.claim.name").strip(),
            http=HttpSettings(
                connect_timeout_ms=int_value(opts, "kafka.sasl.login.connect.timeout.ms"),
                read_timeout_ms=int_value(opts, "kafka.sasl.login.read.timeout.ms"),
                retry_backoff_ms=int_value(opts, "kafka.sasl.login.retry.backoff.ms"),
                retry_backoff_max_ms=int_value(opts, "kafka.sasl.login.retry.backoff.max.ms"),
                urlencode_header=bool_value(opts, "kafka.sasl.oauthbearer.header.urlencode")))
    claims, principal_claim, principal, lifetime = unsecured_claims(jopts)
    return OAuthConfig(source="unsecured", principal=principal, claims_json=claims,
                       lifetime_s=lifetime, principal_claim=principal_claim,
                       extensions=extensions_from(jopts, "unsecuredLoginExtension_"),
                       refresh=refresh)
