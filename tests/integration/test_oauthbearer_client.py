"""kafkawire's client with SASL OAUTHBEARER against Apache Kafka (its unsecured validator on
the SASL listeners, its JWKS validator on the OIDC ones, KIP-768) or, under Tansu and for MSK IAM
and chosen validation rules, the SASL front (tests/support/sasl_front.py), proved by librdkafka
in test_security_front.py: unsecured tokens (KIP-255), tokens from the
client-credentials endpoint (KIP-768), a token file, a Python token provider and Amazon MSK
IAM (tokens the front verifies with its own SigV4 check), over SASL_PLAINTEXT and SASL_SSL;
what kafkawire writes librdkafka reads exactly and the other way round. SASL extensions
(KIP-342) reach the broker; one token serves every connection of the process; a short-lived
token is refreshed and long-lived connections re-authenticate with the new one (KIP-368).
Failures (endpoint down, wrong secret, token refused by the broker) are typed, fast, and never
show a secret or a token.
"""

from __future__ import annotations

import os
import pickle
import socket
import time
import uuid

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import OAuthTokenError, SaslAuthenticationError
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.security.sasl.tokens import TOKENS
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.options import SOURCE, client_config, lower_keys
from spark_kafka_wire.protocol.messages import METADATA
from tests.support import token_provider
from tests.support.errors import raises_condition
from tests.support.kafkawire_io import (
    kafkawire_roundtrip,
    librdkafka_roundtrip,
    read_records,
    write_records,
)
from tests.support.oauth_server import TokenEndpoint
from tests.support.refusals import login_refused
from tests.support.security_env import (
    AWS_KEYS,
    AWS_REGION,
    OAUTH_CLIENT_ID,
    OAUTH_CLIENT_SECRET,
    credentials,
)

pytestmark = pytest.mark.broker

RECORDS = [(f"k{i}".encode(), f"v{i}".encode() * (i + 1)) for i in range(30)] + [
    (None, b"no key"), (b"tombstone", None)]
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
UNSECURED_JAAS = (f'{MODULE} required unsecuredLoginStringClaim_sub="carol" '
                  'unsecuredLoginExtension_traceId="abc123";')
FAIL_FAST_S = 8.0


URLS_ENV = "KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS"


@pytest.fixture(autouse=True)
def operator_allows(monkeypatch: pytest.MonkeyPatch, token_endpoint) -> None:
    """The operator's allow-lists (client/operator.py) name what these tests use: the
    session's token endpoint and token providers from tests.support; a test reading a URL of
    its own lists it too (_allow)."""
    monkeypatch.setenv(URLS_ENV, token_endpoint.url)
    monkeypatch.setenv("KAFKAWIRE_SASL_OAUTHBEARER_TOKEN_PROVIDER_ALLOWED_MODULES",
                       "tests.support")


def _allow(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv(URLS_ENV, f"{os.environ.get(URLS_ENV, '')},{url}")


def _oidc_jaas(secret: str = OAUTH_CLIENT_SECRET) -> str:
    return (f'{MODULE} required clientId="{OAUTH_CLIENT_ID}" clientSecret="{secret}" '
            'scope="kafka" extension_traceId="abc123";')


def _options(broker, pki=None, **extra: str) -> dict[str, str]:
    opts = {"kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "kafka.sasl.mechanism": "OAUTHBEARER", "kafka.request.timeout.ms": "10000"}
    if pki is not None:
        opts["kafka.ssl.truststore.location"] = pki.ca_pem
    opts.update(extra)
    return opts


def _unsecured(broker, pki=None) -> dict[str, str]:
    return _options(broker, pki, **{"kafka.sasl.jaas.config": UNSECURED_JAAS})


def _oidc(broker, endpoint, pki=None, secret: str = OAUTH_CLIENT_SECRET, **extra) -> dict:
    return _options(broker, pki, **{
        "kafka.sasl.jaas.config": _oidc_jaas(secret),
        "kafka.sasl.login.callback.handler.class": HANDLER,
        "kafka.sasl.oauthbearer.token.endpoint.url": endpoint.url, **extra})


def _config(opts: dict[str, str]) -> ClientConfig:
    return pickle.loads(pickle.dumps(client_config(lower_keys(opts), SOURCE)))


def _librdkafka(broker, pki=None) -> dict:
    """librdkafka's own OAUTHBEARER OIDC login through the same front."""
    conf = {"bootstrap.servers": broker.bootstrap_servers, "log_level": 0,
            "socket.timeout.ms": 5000, "sasl.mechanism": "OAUTHBEARER",
            "security.protocol": "SASL_SSL" if pki else "SASL_PLAINTEXT",
            "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.client.id": OAUTH_CLIENT_ID,
            "sasl.oauthbearer.client.secret": OAUTH_CLIENT_SECRET,
            "sasl.oauthbearer.scope": "kafka",
            "sasl.oauthbearer.token.endpoint.url": broker.token_url}
    if pki is not None:
        conf["ssl.ca.location"] = pki.ca_pem
    return conf


def _roundtrip(broker, config: ClientConfig, pki, token_endpoint) -> list:
    """kafkawire writes and librdkafka reads, librdkafka writes and kafkawire reads, group
    offsets through the coordinator; the broker's authentications of kafkawire's part.
    librdkafka logs in with the token endpoint's signed tokens, on the listener that takes
    them (Apache Kafka validates signed and unsecured tokens on different listeners)."""
    TOKENS.clear()
    before = len(broker.stats.authentications)
    client = KafkaClient(config)
    try:
        topic = kafkawire_roundtrip(client, "oauth", RECORDS)
        ours = broker.stats.authentications[before:]

        signed = broker.signed_tokens
        signed.token_url = token_endpoint.url
        librdkafka_roundtrip(client, _librdkafka(signed, pki), topic, RECORDS)
    finally:
        client.close()
    assert ours and {e.mechanism for e in ours} == {"OAUTHBEARER"}
    return ours


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
def test_unsecured_token_roundtrip(request, pki, token_endpoint, tls: bool) -> None:
    broker = request.getfixturevalue("sasl_ssl_broker" if tls else "sasl_broker")
    config = _config(_unsecured(broker, pki if tls else None))
    ours = _roundtrip(broker, config, pki if tls else None, token_endpoint)
    assert {e.principal for e in ours} == {"carol"}
    assert all(e.extensions == {"traceId": "abc123"} for e in ours)  # KIP-342


@pytest.mark.parametrize("tls", [False, True], ids=["SASL_PLAINTEXT", "SASL_SSL"])
def test_oidc_token_roundtrip(request, pki, token_endpoint, tls: bool) -> None:
    broker = request.getfixturevalue("sasl_ssl_broker" if tls else "sasl_broker").signed_tokens
    config = _config(_oidc(broker, token_endpoint, pki if tls else None))
    issued = len(token_endpoint.issued)
    ours = _roundtrip(broker, config, pki if tls else None, token_endpoint)
    assert {e.principal for e in ours} == {OAUTH_CLIENT_ID}
    assert all(e.extensions == {"traceId": "abc123"} for e in ours)
    assert len(token_endpoint.issued) - issued >= 1
    # the process's token serves new connections too: no other request to the endpoint
    fetches, issued, logins = TOKENS.fetches, len(token_endpoint.issued), len(
        broker.stats.authentications)
    for _ in range(2):
        with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
            conn.request(METADATA, {"topics": []})
    assert TOKENS.fetches == fetches and len(token_endpoint.issued) == issued
    assert len(broker.stats.authentications) == logins + 2


def test_token_file(sasl_broker, token_endpoint, tmp_path, monkeypatch) -> None:
    """A file: URL names a file holding the token (KIP-768), once the operator lists it."""
    sasl_broker = sasl_broker.signed_tokens
    path = tmp_path / "token.jwt"
    path.write_text(token_endpoint.issue(OAUTH_CLIENT_ID) + "\n")
    _allow(monkeypatch, path.as_uri())
    config = _config(_options(sasl_broker, **{
        "kafka.sasl.jaas.config": f"{MODULE} required;",
        "kafka.sasl.oauthbearer.token.endpoint.url": path.as_uri()}))
    TOKENS.clear()
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        conn.request(METADATA, {"topics": []})
    assert sasl_broker.stats.authentications[-1].principal == OAUTH_CLIENT_ID


def test_python_token_provider(sasl_broker) -> None:
    config = _config(_options(sasl_broker, **{
        "kafka.sasl.oauthbearer.token.provider":
            "tests.support.token_provider:token_with_expiry"}))
    TOKENS.clear()
    calls = token_provider.calls
    for _ in range(2):
        with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
            conn.request(METADATA, {"topics": []})
        assert sasl_broker.stats.authentications[-1].principal == token_provider.PRINCIPAL
    assert token_provider.calls == calls + 1  # cached until its refresh time


@pytest.mark.parametrize(("provider", "message"), [
    ("tests.support.token_provider:not_a_token", "returned a int"),
    ("tests.support.token_provider.failing", "raised RuntimeError"),
    ("tests.support.no_such_module:f", "cannot import it here"),
])
def test_python_token_provider_failures(sasl_broker, provider: str, message: str) -> None:
    config = _config(_options(sasl_broker, **{"kafka.sasl.oauthbearer.token.provider": provider}))
    TOKENS.clear()
    client = KafkaClient(config)
    try:
        with raises_condition(OAuthTokenError, "KAFKAWIRE_OAUTH_TOKEN", message) as info:
            client.fetch_metadata()
    finally:
        client.close()
    assert provider in str(info.value) and not info.value.retriable


def test_aws_msk_iam(sasl_front_broker, monkeypatch) -> None:
    """The token aws-msk-iam-sasl-signer-python makes from the environment's AWS keys; the
    front checks its SigV4 signature itself (tests/support/msk_iam.py): the front on every
    test broker, since Apache Kafka needs AWS's own plugin to validate these tokens."""
    sasl_broker = sasl_front_broker
    pytest.importorskip("aws_msk_iam_sasl_signer")
    (key, secret), = AWS_KEYS.items()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    config = _config(_options(sasl_broker, **{
        "kafka.sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "kafka.sasl.login.callback.handler.class":
            "software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler",
        "kafka.sasl.aws.region": AWS_REGION}))
    TOKENS.clear()
    client = KafkaClient(config)
    try:
        topic = f"iam-{uuid.uuid4().hex[:10]}"
        create_topics(client, [(topic, 1)])
        write_records(client, topic, RECORDS)
        assert read_records(client, topic, 0, len(RECORDS)) == RECORDS
    finally:
        client.close()
    assert sasl_broker.stats.authentications[-1].principal == key
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    TOKENS.clear()
    err = _refused(config)
    assert "invalid_token" in str(err) and "kafka-cluster:Connect" in str(err)
    assert "not-the-secret" not in str(err)


def _refused(config: ClientConfig, caplog: pytest.LogCaptureFixture | None = None,
             kind: type[Exception] = SaslAuthenticationError) -> Exception:
    """login_refused: at once, not retriable, no client secret, password or token shown."""
    return login_refused(config, FAIL_FAST_S, kind=kind, caplog=caplog,
                         secrets=(OAUTH_CLIENT_SECRET, "hunter2", "eyJ"))  # eyJ: any JWT's start


def test_token_endpoint_down_fails_fast_naming_the_url(sasl_broker,
                                                       caplog: pytest.LogCaptureFixture,
                                                       monkeypatch) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/oauth2/token"
    _allow(monkeypatch, url + "?tenant=x")
    config = _config(_options(sasl_broker, **{
        "kafka.sasl.jaas.config": _oidc_jaas("hunter2-secret"),
        "kafka.sasl.oauthbearer.token.endpoint.url": url + "?tenant=x",
        "kafka.sasl.login.retry.backoff.max.ms": "1500"}))
    TOKENS.clear()
    err = _refused(config, caplog, OAuthTokenError)
    text = str(err)
    assert url in text and "tenant" not in text and OAUTH_CLIENT_ID in text
    assert "could not be reached" in text and "attempts" in text
    assert "hunter2" not in caplog.text


def test_wrong_client_secret_is_not_retried(sasl_broker, token_endpoint,
                                            caplog: pytest.LogCaptureFixture) -> None:
    refused = len(token_endpoint.refused)
    config = _config(_oidc(sasl_broker, token_endpoint, secret="hunter2-wrong"))
    TOKENS.clear()
    err = _refused(config, caplog, OAuthTokenError)
    assert "HTTP 401 (invalid_client)" in str(err) and "clientSecret" in str(err)
    assert token_endpoint.url in str(err)
    assert len(token_endpoint.refused) == refused + 1


def test_token_refused_by_the_broker(sasl_broker_factory, token_endpoint,
                                     caplog: pytest.LogCaptureFixture) -> None:
    """RFC 7628: the broker answers a bad token with its JSON status, the client sends the
    %x01 dummy, the broker then fails the exchange (error 58)."""
    broker = sasl_broker_factory(creds=credentials(token_endpoint, allow_unsecured=False))
    TOKENS.clear()
    err = _refused(_config(_unsecured(broker)), caplog)
    text = str(err)
    assert isinstance(err, SaslAuthenticationError) and err.error_code == 58
    assert "'carol'" in text and "OAUTHBEARER" in text and "SASL_PLAINTEXT" in text
    assert '{"status": "invalid_token"}' in text and "unsecured token refused" in text
    # the front got the dummy message: it failed the exchange on the second step
    assert broker.stats.failures == ["Authentication failed: unsecured token refused"]


def test_refreshed_token_on_reauthentication(sasl_broker_factory, monkeypatch) -> None:
    """Tokens live 5 s; the front caps each session at its token's expiry (Kafka's rule) and
    closes connections that outlive it. One connection used for ~14 s re-authenticates before
    each session ends, with a fresh token from the endpoint each time the old one reached its
    refresh time."""
    with TokenEndpoint({OAUTH_CLIENT_ID: OAUTH_CLIENT_SECRET}, lifetime_s=5) as endpoint:
        _allow(monkeypatch, endpoint.url)
        broker = sasl_broker_factory(creds=credentials(endpoint), session_lifetime_ms=60_000)
        config = _config(_oidc(broker, endpoint))
        TOKENS.clear()
        with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
            deadline = time.monotonic() + 14
            while time.monotonic() < deadline:
                conn.request(METADATA, {"topics": []})
                time.sleep(0.2)
            assert conn.connected
        issued = len(endpoint.issued)
    assert issued >= 3
    assert len(broker.stats.reauthentications) >= 2
    assert broker.stats.expired_closes == 0 and not broker.stats.failures
    assert {e.principal for e in broker.stats.authentications} == {OAUTH_CLIENT_ID}


def test_kafka_reauthentication_with_signed_tokens(reauth_broker, token_endpoint) -> None:
    """KIP-368 with OAUTHBEARER against Apache Kafka's REAUTH listener, whose JWKS validator
    checks every token: for four session lifetimes the client logs in again (with the token
    it holds, valid for an hour) before each session ends, on the same connections, while
    writes and reads go on."""
    from tests.integration.test_sasl_client import busy_for_sessions

    TOKENS.clear()
    seen = busy_for_sessions(reauth_broker, _config(_oidc(reauth_broker, token_endpoint)))
    assert seen.rounds > 10
    assert seen.reauthentications >= 3
    assert seen.logins == 0 and seen.expired == 0 and seen.failures == 0
    assert seen.principals == {OAUTH_CLIENT_ID}


def test_kafka_refuses_an_unsecured_token_on_its_oidc_listener(sasl_broker,
                                                               caplog: pytest.LogCaptureFixture
                                                               ) -> None:
    """Apache Kafka's JWKS validator (the OIDC listener) refuses an unsigned token: it
    answers with its RFC 7628 JSON status, kafkawire sends the %x01 dummy, Kafka fails the
    exchange with error 58, and the client says so without the token. (The front's version
    of this exchange is test_token_refused_by_the_broker.)"""
    if not hasattr(sasl_broker, "kafka"):
        pytest.skip("Apache Kafka's OIDC listener (KAFKAWIRE_TEST_BROKER=kafka); the front's "
                    "refusal is test_token_refused_by_the_broker")
    oidc = sasl_broker.signed_tokens
    before = len(oidc.stats.failures)
    TOKENS.clear()
    err = _refused(_config(_unsecured(oidc)), caplog)
    text = str(err)
    assert isinstance(err, SaslAuthenticationError) and err.error_code == 58
    assert "'carol'" in text and "OAUTHBEARER" in text and "SASL_PLAINTEXT" in text
    assert '"status":"invalid_token"' in text.replace(" ", "")
    _eventually(lambda: len(oidc.stats.failures) == before + 1)


def _eventually(check, timeout_s: float = 5.0) -> None:
    """Kafka logs a refused login as it closes the connection, which can be just after the
    client read the refusal."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "the broker's log did not show it in time"
        time.sleep(0.05)


def test_kafka_refreshed_token_on_reauthentication(reauth_broker, token_endpoint,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens that live 4 s on Apache Kafka's REAUTH listener (3 s sessions, each capped by its
    token's expiry, KIP-368): one connection used for ~12 s logs in again before each session
    ends, with a fresh token from the endpoint whenever the one it holds reached its refresh
    time; Kafka's JWKS validator accepts each, finds no session expired, refuses nothing."""
    monkeypatch.setattr(token_endpoint, "lifetime_s", 4)
    config = _config(_oidc(reauth_broker, token_endpoint))
    TOKENS.clear()
    issued, before = len(token_endpoint.issued), reauth_broker.stats
    with BrokerConnection(*config.bootstrap_servers[0], config) as conn:
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            conn.request(METADATA, {"topics": []})
            time.sleep(0.2)
        assert conn.connected
    after = reauth_broker.stats
    assert len(token_endpoint.issued) - issued >= 3
    assert len(after.reauthentications) - len(before.reauthentications) >= 3
    assert after.expired_closes == before.expired_closes
    assert len(after.failures) == len(before.failures)
    assert {e.principal for e in after.authentications[len(before.authentications):]} == {
        OAUTH_CLIENT_ID}
