"""Authorization against Apache Kafka 4.1 with ACLs (issue 28, item 3): what only a real
authorizer shows.

The session's broker (tests/support/apache_kafka.py) runs StandardAuthorizer with
allow.everyone.if.no.acl.found: a resource without ACLs is open, one with ACLs is governed by
them. Each test gives its own topic, group or transactional id an ACL (admin, over
SASL_PLAINTEXT, tests/support/kafka_acls.py), then acts as the non-super user alice (or bob,
who has none) with kafkawire's client. Every refusal must be the typed error naming the
principal, the operation, the resource and the kafka-acls command that grants it, and must
fail at once: an ACL does not change between retries.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pytest

from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.fetcher import fetch_range
from spark_kafka_wire.client.groups.group_offsets import (
    commit_offsets,
    fetch_committed,
    fetch_group,
)
from spark_kafka_wire.client.metadata.admin import create_topics
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.producer import Producer, ProduceSettings
from spark_kafka_wire.client.producer.transactions import end_transaction, init_transactions
from spark_kafka_wire.options import SINK, SOURCE, client_config
from spark_kafka_wire.protocol.errors import (
    AuthorizationError,
    GroupAuthorizationError,
    TopicAuthorizationError,
    TransactionalIdAuthorizationError,
)
from spark_kafka_wire.sink.exactly_once import task_transactional_id
from tests.cli.conftest import run_cli
from tests.support.kafka_acls import Acl, admin_client, grant, sasl_options
from tests.support.refusals import refused

pytestmark = pytest.mark.broker
E = TypeVar("E", bound=AuthorizationError)
#: An authorization failure is not retried: it must not take the request timeout (30 s).
FAIL_FAST_S = 2.0


@pytest.fixture(scope="module")
def kafka(apache_kafka):
    """The session's Apache Kafka (its fixture skips, saying what to install, where Java or
    Maven is missing)."""
    return apache_kafka


@pytest.fixture
def names() -> Iterator[Callable[[str], str]]:
    run = uuid.uuid4().hex[:8]
    yield lambda what: f"acl-{what}-{run}"


def _client(kafka, user: str, use=SOURCE) -> KafkaClient:
    return KafkaClient(client_config(sasl_options(kafka, user), use))


def _topic(kafka, name: str, rows: int = 0) -> str:
    with admin_client(kafka) as admin:
        create_topics(admin, [(name, 1)])
        if rows:
            _write(admin, name, rows)
    return name


def _write(client: KafkaClient, topic: str, rows: int, **settings: object) -> Producer:
    producer = Producer(client, ProduceSettings(linger_ms=0, **settings))  # type: ignore[arg-type]
    producer.append(topic, None, pa.array([b"v%d" % i for i in range(rows)], pa.binary()),
                    np.zeros(rows, np.int32), 1_700_000_000_000)
    producer.flush()
    return producer


def _refused(kind: type[E], action: Callable[[], object]) -> E:
    """The error ``action`` raises, checked to be ``kind``, to come at once, not retriable."""
    return refused(kind, action, FAIL_FAST_S)


def _says(exc: AuthorizationError, *parts: str) -> None:
    text = str(exc)
    for part in parts:
        assert part in text, f"{part!r} not in {text!r}"


def test_a_read_without_read_on_the_topic_names_the_acl(kafka, names):
    """alice may describe the topic (metadata, offsets) but not read it: the Fetch is refused."""
    topic = _topic(kafka, names("read"), rows=3)
    grant(kafka, Acl("User:alice", "Describe", "Topic", topic))
    with _client(kafka, "alice") as alice:
        assert alice.topic(topic).num_partitions == 1  # Describe is enough for metadata
        exc = _refused(TopicAuthorizationError,
                       lambda: list(fetch_range(alice, topic, 0, 0, 3, FetchSettings())))
    assert exc.topic == topic and exc.principal == "User:alice" and exc.operation == "Read"
    _says(exc, "TOPIC_AUTHORIZATION_FAILED (29) in Fetch",
          f"User:alice is not authorized to READ topic '{topic}'",
          f"grant User:alice READ on topic '{topic}' (kafka-acls --add --allow-principal "
          f"User:alice --operation Read --topic {topic})")


def test_granting_read_lets_the_read_through(kafka, names):
    topic = _topic(kafka, names("readable"), rows=3)
    grant(kafka, Acl("User:alice", "Read", "Topic", topic))
    with _client(kafka, "alice") as alice:
        rows = [v for chunk in fetch_range(alice, topic, 0, 0, 3, FetchSettings())
                for v in chunk.values.to_pylist()]
    assert rows == [b"v0", b"v1", b"v2"]


def test_a_write_without_write_on_the_topic_names_the_acl(kafka, names):
    """The idempotent producer (the default) is refused at its Produce, not at InitProducerId:
    Kafka 3.0+ (KIP-679) no longer asks for IDEMPOTENT_WRITE on the cluster."""
    topic = _topic(kafka, names("write"))
    grant(kafka, Acl("User:alice", "Describe", "Topic", topic))
    with _client(kafka, "alice", SINK) as alice:
        exc = _refused(TopicAuthorizationError, lambda: _write(alice, topic, 2))
    assert exc.operation == "Write" and exc.topic == topic
    _says(exc, "TOPIC_AUTHORIZATION_FAILED (29) in Produce",
          f"User:alice is not authorized to WRITE topic '{topic}'",
          f"(kafka-acls --add --allow-principal User:alice --operation Write --topic {topic})")


def test_an_idempotent_writer_needs_no_cluster_acl(kafka, names):
    """WRITE on the topic is all an idempotent producer needs (no IdempotentWrite on the
    cluster: Kafka 3.0+)."""
    topic = _topic(kafka, names("idempotent"))
    grant(kafka, Acl("User:alice", "Write", "Topic", topic))
    with _client(kafka, "alice", SINK) as alice:
        producer = _write(alice, topic, 2, enable_idempotence=True)
    assert producer.producer_id >= 0 and producer.records_sent == 2


def test_metadata_without_describe_on_the_topic_names_the_acl(kafka, names):
    """bob has no ACL on a topic that has ACLs: Metadata answers TOPIC_AUTHORIZATION_FAILED
    for it, which is final (not retried as an unknown topic would be)."""
    topic = _topic(kafka, names("describe"))
    grant(kafka, Acl("User:alice", "Read", "Topic", topic))
    with _client(kafka, "bob") as bob:
        exc = _refused(TopicAuthorizationError, lambda: bob.topic(topic))
    assert exc.operation == "Describe" and exc.principal == "User:bob"
    _says(exc, "TOPIC_AUTHORIZATION_FAILED (29) in Metadata",
          f"grant User:bob DESCRIBE on topic '{topic}' (kafka-acls --add --allow-principal "
          f"User:bob --operation Describe --topic {topic}); a reader needs Read and a writer "
          "Write")


def test_the_cli_names_the_describe_acl_not_a_missing_topic(kafka, names, tmp_path):
    """Issue 46 item 15: ``kafkawire tail`` (and every command that looks a topic up) of a
    topic bob may not describe says so with the grant, not "no such topic"."""
    topic = _topic(kafka, names("cli"), rows=1)
    grant(kafka, Acl("User:alice", "Read", "Topic", topic))
    props = tmp_path / "bob.properties"
    props.write_text("".join(f"{k.removeprefix('kafka.')}={v}\n"
                             for k, v in sasl_options(kafka, "bob").items()))
    started = time.monotonic()
    result = run_cli("--command-config", str(props), "tail", topic, "-n", "1")
    assert time.monotonic() - started < FAIL_FAST_S * 5  # the process's own start included
    assert result.exit_code != 0
    assert "TOPIC_AUTHORIZATION_FAILED (29) in Metadata" in result.stderr
    assert (f"User:bob is not authorized to DESCRIBE topic '{topic}': grant User:bob "
            f"DESCRIBE on topic '{topic}' (kafka-acls --add --allow-principal User:bob "
            f"--operation Describe --topic {topic})") in result.stderr
    assert "no such topic" not in result.stderr and "does not exist" not in result.stderr


def test_an_offset_commit_without_read_on_the_group_names_the_acl(kafka, names):
    """commitOffsets=kafka: OffsetCommit needs READ on the group; alice has only DESCRIBE,
    enough for OffsetFetch. bob, with nothing, is refused at FindCoordinator (DESCRIBE)."""
    topic, group = _topic(kafka, names("commit"), rows=1), names("group")
    grant(kafka, Acl("User:alice", "Describe", "Group", group))
    with _client(kafka, "alice") as alice:
        exc = _refused(GroupAuthorizationError,
                       lambda: commit_offsets(alice, group, {(topic, 0): 1}))
        assert fetch_committed(alice, group, [(topic, 0)]) == {(topic, 0): -1}
    assert exc.group == group and exc.operation == "Read"
    _says(exc, "GROUP_AUTHORIZATION_FAILED (30) in OffsetCommit",
          f"User:alice is not authorized to READ group '{group}'",
          f"(kafka-acls --add --allow-principal User:alice --operation Read --group {group})")
    with _client(kafka, "bob") as bob:
        denied = _refused(GroupAuthorizationError,
                          lambda: fetch_committed(bob, group, [(topic, 0)]))
    assert denied.operation == "Describe"
    _says(denied, "GROUP_AUTHORIZATION_FAILED (30) in FindCoordinator",
          f"grant User:bob DESCRIBE on group '{group}' (kafka-acls --add --allow-principal "
          f"User:bob --operation Describe --group {group}); committing offsets needs Read")


def test_a_transactional_id_without_write_names_the_acl(kafka, names):
    """The exactly-once sink's InitProducerId: TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    tid = names("txn")
    grant(kafka, Acl("User:alice", "Describe", "TransactionalId", tid))
    with _client(kafka, "alice", SINK) as alice:
        exc = _refused(TransactionalIdAuthorizationError,
                       lambda: init_transactions(alice, tid, 60_000))
    assert exc.transactional_id == tid and exc.operation == "Write"
    _says(exc, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53) in InitProducerId",
          f"User:alice is not authorized to WRITE transactional id '{tid}'",
          f"(kafka-acls --add --allow-principal User:alice --operation Write "
          f"--transactional-id {tid})")


def test_prefixed_acls_let_a_non_super_user_write_exactly_once(kafka, names):
    """What the exactly-once sink does in a task, as alice: a transaction under the task's id
    (prefix-partition), its batch marker committed to the group of that id, EndTxn from
    another client (the driver), the marker read back. PREFIXED ACLs on the prefix (WRITE on
    TransactionalId, READ on Group) and WRITE and READ on the topic are all it takes: the
    marker is an offset of the output topic, and TxnOffsetCommit wants READ on it (found
    here: without it the marker's commit is refused, naming that ACL). bob, without them, is
    refused with the same typed error as for a literal id."""
    topic, prefix = _topic(kafka, names("eos")), names("eos-job")
    grant(kafka, Acl("User:alice", "Write", "Topic", topic),
          Acl("User:alice", "Write", "TransactionalId", prefix, prefixed=True),
          Acl("User:alice", "Read", "Group", prefix, prefixed=True))
    tid = task_transactional_id(prefix, 0)
    with _client(kafka, "alice", SINK) as task:
        producer = _write(task, topic, 4, transactional_id=tid)
        exc = _refused(TopicAuthorizationError, lambda: producer.commit_offsets(
            tid, {(topic, 0): (7, "batch 0")}))
        producer.abort_transaction()
    _says(exc, "in TxnOffsetCommit", f"grant User:alice READ on topic '{topic}'")
    grant(kafka, Acl("User:alice", "Read", "Topic", topic))
    with _client(kafka, "alice", SINK) as task, _client(kafka, "alice", SINK) as driver:
        producer = _write(task, topic, 4, transactional_id=tid)
        producer.commit_offsets(tid, {(topic, 0): (7, "batch 0")})
        txn = producer.open_transaction()
        assert txn is not None
        end_transaction(driver, txn, commit=True)
        # EndTxn returns before the markers are written; the offsets appear moments later
        deadline = time.monotonic() + 10
        while not fetch_group(driver, tid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fetch_group(driver, tid) == {(topic, 0): (7, "batch 0")}
    with _client(kafka, "bob", SINK) as bob:
        exc = _refused(TransactionalIdAuthorizationError,
                       lambda: init_transactions(bob, task_transactional_id(prefix, 1), 60_000))
    assert exc.principal == "User:bob"
    _says(exc.with_details(prefix=prefix),
          f"grant User:bob DESCRIBE on every transactional id starting with '{prefix}' "
          f"(kafka-acls --add --allow-principal User:bob --operation Describe "
          f"--resource-pattern-type prefixed --transactional-id {prefix})")
