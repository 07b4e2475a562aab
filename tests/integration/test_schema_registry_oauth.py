"""The registry's OAuth bearer tokens (Confluent's bearer.auth.credentials.source=OAUTHBEARER):
fetched from the tests' real OAuth token endpoint with the client-credentials grant, sent to
the real registry (Apicurio, behind the recording proxy of tests/support/registry_fault_proxy.py,
which forwards every request and keeps its headers), and the token endpoint read only when the
operator lists it."""

from __future__ import annotations

import json

import jwt
import pytest

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.registry.schema_registry import SchemaRegistryClient
from spark_kafka_wire.client.security.sasl.tokens import TOKENS
from spark_kafka_wire.options.formats import registry_config
from tests.support.errors import raises_condition
from tests.support.registry_fault_proxy import RegistryFaultProxy
from tests.support.security_env import OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET

ALLOWED = "KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS"
SCHEMA = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}


def test_oauth_tokens_authenticate_every_request(schema_registry, token_endpoint,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ALLOWED, token_endpoint.url)
    TOKENS.clear()
    with RegistryFaultProxy(schema_registry) as proxy:
        config = registry_config({
            "schema.registry.url": proxy.url, "bearer.auth.credentials.source": "OAUTHBEARER",
            "bearer.auth.issuer.endpoint.url": token_endpoint.url,
            "bearer.auth.client.id": OAUTH_CLIENT_ID,
            "bearer.auth.client.secret": OAUTH_CLIENT_SECRET,
            "bearer.auth.logical.cluster": "lsrc-test"})
        assert OAUTH_CLIENT_SECRET not in repr(config)
        client = SchemaRegistryClient(config)
        schema_id = client.register("oauth-value", json.dumps(SCHEMA), "AVRO")
        assert client.latest("oauth-value").id == schema_id
        assert len(proxy.seen) == 2
        tokens = set()
        for request in proxy.seen:
            scheme, _, token = request.headers["authorization"].partition(" ")
            assert scheme == "Bearer" and request.headers["target-sr-cluster"] == "lsrc-test"
            tokens.add(token)
        (token,) = tokens  # one token, cached for both requests
        claims = jwt.decode(token, options={"verify_signature": False})
        assert claims["sub"] == OAUTH_CLIENT_ID


def test_the_token_endpoint_must_be_allowed_by_the_operator(
        token_endpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ALLOWED, raising=False)
    options = {"schema.registry.url": "http://127.0.0.1:1",
               "bearer.auth.credentials.source": "OAUTHBEARER",
               "bearer.auth.issuer.endpoint.url": token_endpoint.url,
               "bearer.auth.client.id": OAUTH_CLIENT_ID,
               "bearer.auth.client.secret": OAUTH_CLIENT_SECRET}
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR",
                          "bearer.auth.issuer.endpoint.url") as caught:
        registry_config(options)
    assert OAUTH_CLIENT_SECRET not in str(caught.value)
