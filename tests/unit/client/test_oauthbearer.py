"""OAUTHBEARER without a broker: the RFC 7628 messages, Java's unsecured tokens (KIP-255),
OAuthBearerLoginModule/IAMLoginModule settings, the refresh schedule of sasl.login.refresh.*,
the token cache, and no secret in any repr or message."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from spark_kafka_wire.client.errors import ConfigurationError, OAuthTokenError
from spark_kafka_wire.client.security.sasl.aws_iam import region_from_host
from spark_kafka_wire.client.security.sasl.bearer import Token, jwt_claims, token_from
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.oauth_config import (
    OAuthConfig,
    RefreshSettings,
    safe_url,
)
from spark_kafka_wire.client.security.sasl.oauthbearer import OAuthBearer, client_first_message
from spark_kafka_wire.client.security.sasl.oidc import basic_authorization, request_body
from spark_kafka_wire.client.security.sasl.tokens import TokenCache, refresh_at_ms, unsecured_token
from spark_kafka_wire.options import SINK, SOURCE, client_config, lower_keys
from tests.support.errors import raises_condition

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SECRET = "s3cr\"et;=x"
ESCAPED = SECRET.replace('"', '\\"')


def _config(**options: str):
    opts = {"kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "OAUTHBEARER", **options}
    return client_config(lower_keys(opts), SOURCE)


def _oauth(**options: str) -> OAuthConfig:
    config = _config(**options)
    assert config.sasl is not None and config.sasl.oauth is not None
    return config.sasl.oauth


# ------------------------------------------------------------------------------ RFC 7628


def test_client_first_message() -> None:
    assert client_first_message("abc.def.") == b"n,,\x01auth=Bearer abc.def.\x01\x01"
    assert client_first_message("t", [("traceId", "x y"), ("logicalCluster", "lkc-1")]) == \
        b"n,,\x01auth=Bearer t\x01traceId=x y\x01logicalCluster=lkc-1\x01\x01"


@pytest.mark.parametrize("extension", [("auth", "x"), ("trace_id", "x"), ("a", ""),
                                       ("a", "caf\u00e9")])
def test_invalid_extensions_are_refused(extension: tuple[str, str]) -> None:
    with pytest.raises(ValueError):
        client_first_message("t", [extension])


def test_server_error_gets_the_dummy_then_fails() -> None:
    """RFC 7628 3.2.3: a JSON error answer is acknowledged with %x01; a later answer, even an
    empty one, is a failure that quotes the status, never the token."""
    oauth = _oauth(**{"kafka.sasl.jaas.config":
                      f'{MODULE} required unsecuredLoginStringClaim_sub="carol";'})
    mech = OAuthBearer(SaslConfig("OAUTHBEARER", "carol", "", oauth))
    first = mech.first()
    assert first.startswith(b"n,,\x01auth=Bearer ey") and first.endswith(b"\x01\x01")
    status = b'{"status":"invalid_token","scope":"kafka"}'
    assert mech.step(status) == b"\x01" and not mech.done
    with pytest.raises(ValueError, match="invalid_token") as info:
        mech.step(b"")
    assert "ey" not in str(info.value) and '"scope": "kafka"' in mech.what_to_check()
    ok = OAuthBearer(SaslConfig("OAUTHBEARER", "carol", "", oauth))
    ok.first()
    assert ok.step(b"") is None and ok.done


# ----------------------------------------------------------------- unsecured tokens (KIP-255)


def _segments(value: str) -> list[dict]:
    head, body, signature = value.split(".")
    assert signature == ""
    return [json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))) for p in (head, body)]


def test_unsecured_token_as_java_builds_it() -> None:
    oauth = _oauth(**{"kafka.sasl.jaas.config": (
        f'{MODULE} required unsecuredLoginStringClaim_sub="carol" '
        'unsecuredLoginListClaim_scope=",read,write" unsecuredLoginNumberClaim_level="3" '
        'unsecuredLoginLifetimeSeconds="120" unsecuredLoginExtension_traceId="abc";')})
    assert oauth.source == "unsecured" and oauth.principal == "carol"
    assert oauth.extensions == (("traceId", "abc"),)
    token = unsecured_token(oauth, now_ms=1_700_000_000_123)
    header, claims = _segments(token.value)
    assert header == {"alg": "none"}
    assert claims == {"sub": "carol", "scope": ["read", "write"], "level": 3,
                      "iat": 1_700_000_000.123, "exp": 1_700_000_120.123}
    assert token.expires_ms == 1_700_000_120_123 and token.start_ms == 1_700_000_000_123


def test_unsecured_principal_claim_name() -> None:
    oauth = _oauth(**{"kafka.sasl.jaas.config": (
        f'{MODULE} required unsecuredLoginPrincipalClaimName="user" '
        'unsecuredLoginStringClaim_user="erin";')})
    assert oauth.principal == "erin"


@pytest.mark.parametrize(("jaas", "message"), [
    (f"{MODULE} required;", "needs its principal"),
    (f'{MODULE} required unsecuredLoginStringClaim_sub="a" unsecuredLoginNumberClaim_exp="1";',
     "cannot be set"),
    (f'{MODULE} required unsecuredLoginStringClaim_sub="a" unsecuredLoginLifetimeSeconds="x";',
     "must be a number"),
    (f'{MODULE} required unsecuredLoginStringClaim_sub="a" '
     f'unsecuredLoginExtension_auth="{ESCAPED}";', "letters only and not 'auth'"),
    (f'{MODULE} required unsecuredLoginStringClaim_sub="a" '
     f'unsecuredLoginExtension_bad_name="{ESCAPED}";', "letters only"),
    ('org.apache.kafka.common.security.plain.PlainLoginModule required username="a" '
     f'password="{ESCAPED}";', "does not fit kafka.sasl.mechanism=OAUTHBEARER"),
])
def test_unsecured_refusals(jaas: str, message: str) -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "kafka.sasl.jaas.config", message) as info:
        _config(**{"kafka.sasl.jaas.config": jaas})
    assert "s3cr" not in str(info.value)


# ------------------------------------------------------------------------ OIDC (KIP-768)


def _oidc_options(**extra: str) -> dict[str, str]:
    return {"kafka.sasl.jaas.config": f'{MODULE} required clientId="app" '
                                      f'clientSecret="{ESCAPED}" scope="kafka api" '
                                      'extension_logicalCluster="lkc-1";',
            "kafka.sasl.oauthbearer.token.endpoint.url":
                "https://user:pw@idp.example.com/oauth2/token?tenant=t#x", **extra}


@pytest.fixture
def operator_allows(monkeypatch: pytest.MonkeyPatch):
    """The operator's allow-lists (client/operator.py) holding what these tests name: the
    token URL of _oidc_options and the provider module of test_provider_settings."""
    monkeypatch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS",
                       _oidc_options()["kafka.sasl.oauthbearer.token.endpoint.url"])
    monkeypatch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_TOKEN_PROVIDER_ALLOWED_MODULES", "mypkg")


@pytest.mark.parametrize("handler", [
    None, "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"])
def test_oidc_settings(handler: str | None, operator_allows: None) -> None:
    extra = {"kafka.sasl.login.callback.handler.class": handler} if handler else {}
    for use in (SOURCE, SINK):
        config = client_config(lower_keys({
            "kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "oauthbearer", "kafka.sasl.login.retry.backoff.ms": "5",
            "kafka.sasl.login.refresh.window.factor": "0.9", **_oidc_options(**extra)}), use)
        assert config.sasl is not None and config.sasl.username == "app"
        oauth = config.sasl.oauth
        assert oauth is not None and oauth.source == "oidc"
        assert (oauth.client_id, oauth.client_secret, oauth.scope) == ("app", SECRET, "kafka api")
        assert oauth.extensions == (("logicalCluster", "lkc-1"),)
        assert oauth.http.retry_backoff_ms == 5 and oauth.refresh.window_factor == 0.9
        assert pickle.loads(pickle.dumps(config)) == config and hash(config)
        text = repr(config) + str(config) + repr(pickle.loads(pickle.dumps(config)))
        assert "s3cr" not in text and "pw" not in text and "tenant" not in text
        assert "https://idp.example.com/oauth2/token" in text and "lkc-1" not in text


@pytest.mark.parametrize(("options", "kind", "message"), [
    ({"kafka.sasl.jaas.config": f'{MODULE} required clientId="app";',
      "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp/token"}, "SECURITY_SETTING", "needs clientId and"),
    ({**_oidc_options(), "kafka.sasl.oauthbearer.token.endpoint.url": "ftp://idp/token"},
     "INVALID_VALUE", "http, https or file URL"),
    ({"kafka.sasl.jaas.config": f'{MODULE} required clientId="a" clientSecret="{ESCAPED}";',
      "kafka.sasl.login.callback.handler.class":
          "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"},
     "SECURITY_SETTING", "needs kafka.sasl.oauthbearer.token.endpoint.url"),
    ({**_oidc_options(), "kafka.sasl.login.callback.handler.class": "com.acme.MyHandler"},
     "UNSUPPORTED_VALUE", "JVM class kafkawire cannot run"),
    ({**_oidc_options(), "kafka.sasl.oauthbearer.token.provider": "m:f"}, "SECURITY_SETTING", "give one"),
    ({**_oidc_options(), "kafka.sasl.login.refresh.window.factor": "0.2"}, "VALUE_OUT_OF_RANGE", "between 0.5 and 1"),
    ({**_oidc_options(), "kafka.sasl.login.refresh.buffer.seconds": "4000"}, "VALUE_OUT_OF_RANGE", "at most 3600"),
    ({**_oidc_options(), "kafka.sasl.username": "a", "kafka.sasl.password": SECRET},
     "CONFLICTING_OPTIONS", "do not apply to OAUTHBEARER"),
])
def test_oidc_refusals(options: dict, kind: str, message: str) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}",
                          message) as info:
        _config(**options)
    assert "s3cr" not in str(info.value)


def test_token_request_as_java_sends_it() -> None:
    """HTTP Basic of id:secret (RFC 7617), URL-encoded first only when asked (KIP-1025)."""
    raw = base64.b64decode(basic_authorization("app", "a:b c", False)[6:])
    assert raw == b"app:a:b c"
    encoded = base64.b64decode(basic_authorization("app", "a:b c", True)[6:])
    assert encoded == b"app:a%3Ab+c"
    assert request_body("kafka api") == b"grant_type=client_credentials&scope=kafka+api"
    assert request_body("") == b"grant_type=client_credentials"


def test_safe_url() -> None:
    assert safe_url("https://u:p@h:8443/t?secret=1#f") == "https://h:8443/t"


# ------------------------------------------------------------------ MSK IAM and providers


@pytest.mark.parametrize(("host", "region"), [
    ("b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com", "us-east-1"),
    ("boot-abc.c1.kafka-serverless.eu-west-2.amazonaws.com", "eu-west-2"),
    ("b-2.x.y.c3.kafka.ap-southeast-1.amazonaws.com", "ap-southeast-1"),
    ("broker.example.com", None),
])
def test_region_from_host(host: str, region: str | None) -> None:
    assert region_from_host(host) == region


def test_aws_settings() -> None:
    pytest.importorskip("aws_msk_iam_sasl_signer")
    handler = "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler"
    config = client_config(lower_keys({
        "kafka.bootstrap.servers": "b-1.c.x.c2.kafka.eu-central-1.amazonaws.com:9098",
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "OAUTHBEARER",
        "kafka.sasl.login.callback.handler.class": handler,
        "kafka.sasl.jaas.config": 'software.amazon.msk.auth.iam.IAMLoginModule required '
                                  'awsRoleArn="arn:aws:iam::1:role/r";'}), SOURCE)
    oauth = config.sasl.oauth if config.sasl else None
    assert oauth is not None and oauth.source == "aws" and oauth.region == "eu-central-1"
    assert oauth.aws_role_arn == "arn:aws:iam::1:role/r"
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.MISSING_OPTION",
                          "kafka.sasl.aws.region"):
        client_config(lower_keys({
            "kafka.bootstrap.servers": "127.0.0.1:9098", "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "OAUTHBEARER",
            "kafka.sasl.login.callback.handler.class": handler}), SOURCE)


def test_provider_settings(operator_allows: None) -> None:
    oauth = _oauth(**{"kafka.sasl.oauthbearer.token.provider": "mypkg.tokens:azure_token"})
    assert oauth.source == "provider" and oauth.principal == "mypkg.tokens:azure_token"


def test_oauth_only_options_need_oauthbearer() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS",
                          "applies to kafka.sasl.mechanism=OAUTHBEARER"):
        client_config(lower_keys({
            "kafka.bootstrap.servers": "b:9092", "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "a",
            "kafka.sasl.password": "b",
            "kafka.sasl.oauthbearer.token.endpoint.url": "https://idp/token"}), SOURCE)


# ---------------------------------------------------------------------- tokens and refresh


def test_token_from_reads_jwt_claims_and_checks_characters() -> None:
    head = base64.urlsafe_b64encode(b'{"alg":"RS256"}').rstrip(b"=").decode()
    body = base64.urlsafe_b64encode(b'{"sub":"app","exp":1700000300,"iat":1700000000}') \
        .rstrip(b"=").decode()
    token = token_from(f"{head}.{body}.c2ln\n", "endpoint")
    assert (token.expires_ms, token.start_ms, token.principal) == \
        (1_700_000_300_000, 1_700_000_000_000, "app")
    assert jwt_claims("opaque-token") is None
    with raises_condition(OAuthTokenError, "KAFKAWIRE_OAUTH_TOKEN",
                          "RFC 6750") as info:
        token_from("bad token with spaces", "endpoint")
    assert "spaces" not in str(info.value)


DEFAULTS = RefreshSettings()


@pytest.mark.parametrize(("now", "start", "expires", "rand", "expected"), [
    # an hour-long token: at 80% (+ up to 5% jitter) of its lifetime from iat
    (0, 0, 3_600_000, 0.0, 2_880_000),
    (0, 0, 3_600_000, 1.0, 3_060_000),
    # no iat: from now
    (1_000, None, 3_601_000, 0.0, 2_881_000),
    # 80% would be inside the 300 s buffer before expiry: at the buffer's start
    (0, 0, 1_000_000, 0.0, 700_000),
    # min period: fetched late in its life, not replaced sooner than 60 s from now
    (2_000_000, 0, 3_600_000, 0.0, 2_880_000),
    (2_870_000, 0, 3_600_000, 0.0, 2_930_000),
    # too short for both buffers (min period + buffer > time left): 80% of the time left
    (0, 0, 5_000, 0.0, 4_000),
    (10_000, 0, 20_000, 0.5, 18_250),
])
def test_refresh_schedule(now: int, start: int | None, expires: int, rand: float,
                          expected: int) -> None:
    token = Token("t", expires, start)
    assert refresh_at_ms(now, token, DEFAULTS, rand) == expected


def test_cache_shares_and_refreshes() -> None:
    now = [1_000.0]
    made: list[int] = []

    def fetch(config: OAuthConfig) -> Token:
        made.append(1)
        return Token(f"t{len(made)}", int(now[0] * 1000) + 10_000, int(now[0] * 1000))

    cache = TokenCache(fetch, clock=lambda: now[0])
    a = OAuthConfig("provider", "p", provider="m:f")
    assert cache.get(a).value == "t1" and cache.get(a).value == "t1"
    assert cache.get(OAuthConfig("provider", "q", provider="m:g")).value == "t2"
    now[0] += 7.9  # before 80% of 10 s
    assert cache.get(a).value == "t1"
    now[0] += 1.0  # past 85%
    assert cache.get(a).value == "t3"


def test_cache_key_tells_secrets_apart() -> None:
    a = OAuthConfig("oidc", "app", endpoint_url="u", client_id="app", client_secret="one")
    b = OAuthConfig("oidc", "app", endpoint_url="u", client_id="app", client_secret="two")
    assert a.cache_key() != b.cache_key() and "one" not in repr(a.cache_key())


def test_token_error_pickles() -> None:
    err = OAuthTokenError("token endpoint http://idp/t", "down", "app")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and not back.retriable
