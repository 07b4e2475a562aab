"""Authorization errors name the resource, the principal, the operation and the ACL to grant
(one wording, ``acl_grant``), and are never retried. What a real broker answers is checked
against Apache Kafka in tests/integration/test_kafka_acls.py."""

from __future__ import annotations

import dataclasses

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.protocol.errors import (
    AuthorizationError,
    ClusterAuthorizationError,
    ErrorCode,
    GroupAuthorizationError,
    TopicAuthorizationError,
    TransactionalIdAuthorizationError,
    acl_grant,
    error_for_code,
)


@pytest.mark.parametrize(("code", "cls", "resource_type"), [
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, TopicAuthorizationError, "Topic"),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, GroupAuthorizationError, "Group"),
    (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ClusterAuthorizationError, "Cluster"),
    (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TransactionalIdAuthorizationError,
     "TransactionalId"),
])
def test_each_code_is_a_typed_error_that_is_not_retried(code, cls, resource_type) -> None:
    exc = error_for_code(code)
    assert type(exc) is cls and isinstance(exc, AuthorizationError)
    assert exc.resource_type == resource_type
    assert not exc.retriable and not exc.invalid_metadata


@pytest.mark.parametrize(("code", "where", "says"), [
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, {"topic": "t", "context": "Fetch"},
     "User:alice is not authorized to READ topic 't': grant User:alice READ on topic 't' "
     "(kafka-acls --add --allow-principal User:alice --operation Read --topic t)"),
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, {"topic": "t", "context": "Produce"},
     "grant User:alice WRITE on topic 't' (kafka-acls --add --allow-principal User:alice "
     "--operation Write --topic t)"),
    (ErrorCode.TOPIC_AUTHORIZATION_FAILED, {"topic": "t", "context": "Metadata"},
     "grant User:alice DESCRIBE on topic 't' (kafka-acls --add --allow-principal User:alice "
     "--operation Describe --topic t); a reader needs Read and a writer Write"),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, {"group": "g", "context": "OffsetCommit"},
     "grant User:alice READ on group 'g' (kafka-acls --add --allow-principal User:alice "
     "--operation Read --group g)"),
    (ErrorCode.GROUP_AUTHORIZATION_FAILED, {"group": "g", "context": "OffsetFetch"},
     "--operation Describe --group g); committing offsets needs Read"),
    (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
     {"transactional_id": "x-1", "context": "InitProducerId"},
     "grant User:alice WRITE on transactional id 'x-1' (kafka-acls --add --allow-principal "
     "User:alice --operation Write --transactional-id x-1)"),
    (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
     {"transactional_id": "x-1", "context": "EndTxn(commit)"}, "--operation Write"),
    (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {"context": "InitProducerId"},
     "grant User:alice IDEMPOTENTWRITE on the cluster (kafka-acls --add --allow-principal "
     "User:alice --operation IdempotentWrite --cluster)"),
])
def test_the_message_names_the_acl_to_grant(code, where, says) -> None:
    text = str(error_for_code(code, principal="User:alice", broker="b:9092", **where))
    assert says in text
    assert f"({int(code)}) in {where['context']}" in text


def test_a_prefix_asks_for_a_prefixed_acl() -> None:
    exc = error_for_code(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, principal="User:bob",
                         transactional_id="orders-copy-3", context="InitProducerId")
    assert isinstance(exc, AuthorizationError)
    text = str(exc.with_details(prefix="orders-copy"))
    assert ("grant User:bob WRITE on every transactional id starting with 'orders-copy' "
            "(kafka-acls --add --allow-principal User:bob --operation Write "
            "--resource-pattern-type prefixed --transactional-id orders-copy)") in text


def test_an_unknown_principal_or_request_still_says_what_to_grant() -> None:
    text = str(error_for_code(ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic="t", context="Fetch"))
    assert "grant the client's principal READ on topic 't'" in text
    assert "--allow-principal User:<principal>" in text
    other = str(error_for_code(ErrorCode.TOPIC_AUTHORIZATION_FAILED, topic="t",
                               context="AlterConfigs"))
    assert "lacks an ACL on topic 't'" in other


def test_other_codes_ignore_the_authorization_details() -> None:
    exc = error_for_code(ErrorCode.NOT_LEADER_OR_FOLLOWER, topic="t", principal="User:a",
                         group="g", transactional_id="x", prefix="p")
    assert "User:a" not in str(exc) and "'g'" not in str(exc)


def test_one_wording() -> None:
    assert acl_grant("Group", "g", "Read", "User:a") == (
        "grant User:a READ on group 'g' (kafka-acls --add --allow-principal User:a "
        "--operation Read --group g)")


def _config(**kw: object) -> ClientConfig:
    return ClientConfig.from_servers("b:9092", **kw)


@pytest.mark.parametrize(("config", "principal"), [
    (_config(), "User:ANONYMOUS"),
    (_config(security_protocol="SSL", tls=TlsConfig()), "User:ANONYMOUS"),
    (_config(security_protocol="SSL", tls=TlsConfig(cert_chain=b"PEM", key=b"k")), None),
    (_config(security_protocol="SASL_PLAINTEXT", sasl=SaslConfig("SCRAM-SHA-256", "alice", "x")),
     "User:alice"),
    (_config(security_protocol="SASL_SSL", sasl=SaslConfig("GSSAPI", "svc/host@EXAMPLE.COM", "")),
     "User:svc"),
])
def test_the_principal_a_broker_sees(config: ClientConfig, principal: str | None) -> None:
    assert config.principal == principal


def test_the_principal_is_not_a_secret() -> None:
    config = _config(security_protocol="SASL_PLAINTEXT", sasl=SaslConfig("PLAIN", "u", "pw"))
    assert "pw" not in (config.principal or "")
    assert dataclasses.replace(config).principal == "User:u"
