"""What a query's OAUTHBEARER options may make kafkawire read, send and run (issue 27): token
URLs (file and http) only when the operator lists them, no redirect followed, no endpoint text
beyond the OAuth error fields, token providers only from modules the operator allows, checked
where the options are parsed and again where the URL is read or the provider imported.

The token endpoint is the local test server (tests/support/oauth_server.py); no broker."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from spark_kafka_wire.client.errors import ConfigurationError, OAuthTokenError
from spark_kafka_wire.client.operator import env_name, forget_cached_settings
from spark_kafka_wire.client.security.sasl.oauth_config import (
    ALLOWED_PROVIDER_MODULES,
    ALLOWED_URLS,
    HttpSettings,
    OAuthConfig,
)
from spark_kafka_wire.client.security.sasl.oidc import oidc_token
from spark_kafka_wire.client.security.sasl.tokens import provider_token
from spark_kafka_wire.options import SOURCE, client_config, lower_keys
from tests.support import token_provider
from tests.support.errors import raises_condition
from tests.support.oauth_server import FAILING_PATH, REDIRECT_PATH, TokenEndpoint

MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
CLIENT, SECRET = "app", "hunter2-client-secret"
MARKER = "MARKER-7f3a-do-not-show"
SIDE_EFFECT = "tests.support.provider_side_effect"
URLS_ENV, MODULES_ENV = env_name(ALLOWED_URLS), env_name(ALLOWED_PROVIDER_MODULES)


@pytest.fixture(autouse=True)
def operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No operator setting: an empty SPARK_CONF_DIR and neither environment variable."""
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf))
    monkeypatch.delenv(URLS_ENV, raising=False)
    monkeypatch.delenv(MODULES_ENV, raising=False)
    forget_cached_settings()
    yield conf
    forget_cached_settings()


@pytest.fixture(scope="module")
def endpoint() -> Iterator[TokenEndpoint]:
    with TokenEndpoint({CLIENT: SECRET}) as server:
        yield server


def _options(**extra: str) -> dict[str, str]:
    return lower_keys({"kafka.bootstrap.servers": "b:9092",
                       "kafka.security.protocol": "SASL_SSL",
                       "kafka.sasl.mechanism": "OAUTHBEARER", **extra})


def _parse(**extra: str) -> OAuthConfig:
    config = client_config(_options(**extra), SOURCE)
    assert config.sasl is not None and config.sasl.oauth is not None
    return config.sasl.oauth


def _oidc(url: str, **http: int) -> OAuthConfig:
    """What the driver ships to executors (built directly: the executor's own check)."""
    return OAuthConfig(source="oidc", principal=CLIENT, endpoint_url=url, client_id=CLIENT,
                       client_secret=SECRET, http=HttpSettings(**http))


def _token_file(tmp_path: Path, endpoint: TokenEndpoint) -> Path:
    path = tmp_path / "token.jwt"
    path.write_text(endpoint.issue(CLIENT) + "\n")
    return path


def _refused_for(err: BaseException, option: str, setting: str) -> None:
    text = str(err)
    assert option in text and setting in text and env_name(setting) in text
    assert SECRET not in text and "eyJ" not in text  # eyJ: any JWT's first bytes


# ------------------------------------------------------------------------------ token URLs


def test_file_url_refused_by_default(tmp_path: Path, endpoint: TokenEndpoint) -> None:
    url = _token_file(tmp_path, endpoint).as_uri()
    with pytest.raises(ConfigurationError) as info:
        _parse(**{"kafka.sasl.jaas.config": f"{MODULE} required;",
                  "kafka.sasl.oauthbearer.token.endpoint.url": url})
    _refused_for(info.value, "kafka.sasl.oauthbearer.token.endpoint.url", ALLOWED_URLS)
    # an executor whose operator did not list it refuses it too, without reading the file
    with pytest.raises(ConfigurationError) as info:
        oidc_token(_oidc(url))
    _refused_for(info.value, "kafka.sasl.oauthbearer.token.endpoint.url", ALLOWED_URLS)


def test_file_url_allowed_when_listed(tmp_path: Path, endpoint: TokenEndpoint,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    url = _token_file(tmp_path, endpoint).as_uri()
    monkeypatch.setenv(URLS_ENV, f"https://other.example/token, {url}")
    oauth = _parse(**{"kafka.sasl.jaas.config": f"{MODULE} required;",
                      "kafka.sasl.oauthbearer.token.endpoint.url": url})
    assert oidc_token(oauth).principal == CLIENT
    # exact URLs only: the same file by another spelling is not listed
    with pytest.raises(ConfigurationError):
        oidc_token(_oidc(url.replace("file:///", "file:/")))


def test_file_url_allowed_in_spark_defaults(tmp_path: Path, endpoint: TokenEndpoint,
                                            operator: Path) -> None:
    url = _token_file(tmp_path, endpoint).as_uri()
    (operator / "spark-defaults.conf").write_text(f"{ALLOWED_URLS}  {url}\n")
    forget_cached_settings()
    assert oidc_token(_oidc(url)).principal == CLIENT


def test_http_url_refused_by_default(endpoint: TokenEndpoint) -> None:
    jaas = f'{MODULE} required clientId="{CLIENT}" clientSecret="{SECRET}";'
    before = len(endpoint.requests)
    with pytest.raises(ConfigurationError) as info:
        _parse(**{"kafka.sasl.jaas.config": jaas,
                  "kafka.sasl.oauthbearer.token.endpoint.url": endpoint.url})
    _refused_for(info.value, "kafka.sasl.oauthbearer.token.endpoint.url", ALLOWED_URLS)
    with pytest.raises(ConfigurationError):
        oidc_token(_oidc(endpoint.url))
    assert len(endpoint.requests) == before  # nothing was sent, the secret least of all


def test_http_url_allowed_when_listed(endpoint: TokenEndpoint,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URLS_ENV, endpoint.url)
    jaas = f'{MODULE} required clientId="{CLIENT}" clientSecret="{SECRET}";'
    oauth = _parse(**{"kafka.sasl.jaas.config": jaas,
                      "kafka.sasl.oauthbearer.token.endpoint.url": endpoint.url})
    issued = len(endpoint.issued)
    assert oidc_token(oauth).principal == CLIENT
    assert len(endpoint.issued) == issued + 1


# ------------------------------------------------------------- the token endpoint's answers


def test_redirect_to_another_port_is_not_followed(endpoint: TokenEndpoint,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A 302 to another host or port would carry the Basic authorization (the client secret)
    to a URL the operator never listed: it is reported, not followed."""
    with TokenEndpoint({CLIENT: SECRET}) as elsewhere:
        endpoint.redirect_to = elsewhere.url
        url = endpoint.url_of(REDIRECT_PATH)
        monkeypatch.setenv(URLS_ENV, url)
        with pytest.raises(OAuthTokenError) as info:
            oidc_token(_oidc(url, retry_backoff_max_ms=2000))
        assert elsewhere.requests == []
    text = str(info.value)
    assert "HTTP 302" in text and "redirect" in text and SECRET not in text
    assert endpoint.requests.count((REDIRECT_PATH, True)) == 1  # refused at once, not retried


@pytest.mark.parametrize("status", [500, 400])
def test_non_oauth_error_body_is_not_shown(endpoint: TokenEndpoint, status: int,
                                           monkeypatch: pytest.MonkeyPatch,
                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    endpoint.failing_status = status
    endpoint.failing_body = f"<html>proxy error {MARKER} Authorization: Basic xyz</html>".encode()
    url = endpoint.url_of(FAILING_PATH)
    monkeypatch.setenv(URLS_ENV, url)
    with pytest.raises(OAuthTokenError) as info:
        oidc_token(_oidc(url, retry_backoff_ms=10, retry_backoff_max_ms=50))
    text = str(info.value)
    assert f"HTTP {status} (no OAuth error in the answer)" in text
    assert MARKER not in text and "proxy" not in text and MARKER not in caplog.text


def test_only_oauth_error_fields_are_shown(endpoint: TokenEndpoint,
                                           monkeypatch: pytest.MonkeyPatch,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """RFC 6749 5.2's error and error_description, printable and truncated; no other field."""
    caplog.set_level(logging.DEBUG)
    endpoint.failing_status = 401
    description = "client\x1b[31m unknown\r\n" + "x" * 500
    endpoint.failing_body = json.dumps({"error": "invalid_client", "trace": MARKER,
                                        "error_description": description}).encode()
    url = endpoint.url_of(FAILING_PATH)
    monkeypatch.setenv(URLS_ENV, url)
    with pytest.raises(OAuthTokenError) as info:
        oidc_token(_oidc(url))
    text = str(info.value)
    assert "HTTP 401 (invalid_client: client?[31m unknown??xxx" in text
    assert "x" * 201 not in text and "\x1b" not in text and "\r" not in text
    assert MARKER not in text and MARKER not in caplog.text


# ---------------------------------------------------------------------- token providers


def test_provider_refused_by_default_without_import() -> None:
    name = f"{SIDE_EFFECT}:token"
    sys.modules.pop(SIDE_EFFECT, None)
    token_provider.imported.clear()
    with pytest.raises(ConfigurationError) as info:
        _parse(**{"kafka.sasl.oauthbearer.token.provider": name})
    _refused_for(info.value, "kafka.sasl.oauthbearer.token.provider", ALLOWED_PROVIDER_MODULES)
    # the executor's own check, before its import
    with pytest.raises(ConfigurationError):
        provider_token(OAuthConfig(source="provider", principal=name, provider=name))
    assert SIDE_EFFECT not in sys.modules and SIDE_EFFECT not in token_provider.imported


@pytest.mark.parametrize("allowed", [SIDE_EFFECT, "tests.support", "tests", "*",
                                     f"os, {SIDE_EFFECT}"])
def test_provider_allowed_when_listed(allowed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODULES_ENV, allowed)
    oauth = _parse(**{"kafka.sasl.oauthbearer.token.provider": f"{SIDE_EFFECT}.token"})
    assert provider_token(oauth).principal == token_provider.PRINCIPAL
    assert SIDE_EFFECT in token_provider.imported


@pytest.mark.parametrize(("allowed", "name"), [
    ("tests.support.token", f"{SIDE_EFFECT}:token"),  # a prefix that is not a parent module
    ("os.path", "os:abort"),  # a submodule does not allow its parent
    ("", "os:abort"),  # set but empty: none
    ("tests", ".support.provider_side_effect:token"),  # relative names are never allowed
])
def test_provider_not_allowed(allowed: str, name: str,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODULES_ENV, allowed)
    sys.modules.pop(SIDE_EFFECT, None)
    refusal = ("KAFKAWIRE_CONFIGURATION.SECURITY_SETTING" if name.startswith(".")  # relative
               else "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR")
    with raises_condition(ConfigurationError, refusal, "kafka.sasl.oauthbearer.token.provider"):
        _parse(**{"kafka.sasl.oauthbearer.token.provider": name})
    assert SIDE_EFFECT not in sys.modules
