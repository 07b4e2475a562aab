"""Kafka transactions (KIP-98) as requests to the transaction coordinator, so that one process
can write a transaction and another can end it.

A transactional id names a producer across restarts. InitProducerId with it (sent to the
coordinator that FindCoordinator names for the id) returns a producer id and an epoch; it also
aborts whatever transaction an earlier holder of the id left open and fences that holder: its
requests are refused with PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before Kafka 2.7) from then
on. Every partition must be added (AddPartitionsToTxn) before the first record is written to it
(a broker that does not check it, like Tansu, otherwise accepts the write and never marks it);
offsets join with AddOffsetsToTxn and TxnOffsetCommit. EndTxn ends the transaction: the
coordinator writes a COMMIT or ABORT marker to each partition. EndTxn carries the transactional
id, producer id and epoch and nothing tied to the connection, so the Spark driver can end a
transaction a task wrote (``end_transaction`` with an ``OpenTransaction`` from the task's commit
message): this is the two-phase commit of the exactly-once sink.

A transaction open longer than ``transaction.timeout.ms`` is aborted by a Kafka coordinator,
which also bumps the epoch; EndTxn(commit) is then refused as fenced. (Tansu never enforces the
timeout: there a transaction stays open until ended or fenced.)

The transaction protocol v2 (KIP-890 part 2, Kafka 4.0+) is used where the cluster finalized
``transaction.version`` 2 (``uses_transaction_v2``): Produce v12 adds each partition to the
transaction itself (no AddPartitionsToTxn), TxnOffsetCommit v5 adds the group (no
AddOffsetsToTxn), and EndTxn v5 bumps the producer epoch at every end and answers the producer
id and epoch the producer's next transaction uses (a request of the ended transaction that
reaches a partition after its marker is then fenced; measured on Kafka 4.1.1: one that arrives
before the marker, which EndTxn's answer does not wait for, is still appended to the ended
transaction and committed with it). Which protocol a transaction was written with travels with it
(``OpenTransaction.v2``), so whoever ends it sends the matching EndTxn. Elsewhere (Kafka before
4.0, a cluster left at level 1, Tansu) the classic requests and versions are sent
(``CLASSIC_MAX_VERSION``).

References: Kafka's protocol guide (https://kafka.apache.org/protocol), KIP-98, KIP-890.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.fetching.offsets import by_topic
from spark_kafka_wire.client.groups.group_offsets import (
    TRANSACTION_KEY_TYPE,
    check_coordinated,
    coordinated,
    find_coordinator,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.producer.idempotence import ProducerIdentity
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.bodies import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.errors import (
    AuthorizationError,
    ErrorCode,
    KafkaError,
    ProtocolError,
    TransactionalIdAuthorizationError,
    error_for_code,
)
from spark_kafka_wire.protocol.messages import (
    ADD_OFFSETS_TO_TXN,
    ADD_PARTITIONS_TO_TXN,
    CLASSIC_MAX_VERSION,
    END_TXN,
    INIT_PRODUCER_ID,
    TRANSACTION_V2_FROM,
    TRANSACTION_V2_LEVEL,
    TRANSACTION_VERSION_FEATURE,
    TXN_OFFSET_COMMIT,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

TRANSACTIONAL_ID = "kafka.transactional.id"
TRANSACTION_TIMEOUT = "kafka.transaction.timeout.ms"
_FENCED = (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH,
           ErrorCode.TRANSACTION_COORDINATOR_FENCED)


@dataclass(frozen=True)
class OpenTransaction:
    """A transaction written and flushed but not ended: what the driver needs to end it."""

    transactional_id: str
    producer_id: int
    epoch: int
    partitions: tuple[TopicPartition, ...] = ()
    # written with the transaction protocol v2 (KIP-890): ended with EndTxn v5
    v2: bool = False


def transaction_v2_level(conn: BrokerConnection) -> bool:
    """Whether the cluster, as ``conn``'s broker reports it, finalized ``transaction.version``
    2 or higher (the transaction protocol v2 may be used)."""
    return conn.finalized_features.get(TRANSACTION_VERSION_FEATURE, 0) >= TRANSACTION_V2_LEVEL


def offers_v2(conn: BrokerConnection, spec: ApiSpec) -> bool:
    """Whether ``conn``'s broker speaks the v2 version of ``spec`` (both sides do)."""
    return conn.version(spec) >= TRANSACTION_V2_FROM[spec.key]


def request_version(conn: BrokerConnection, spec: ApiSpec, v2: bool) -> int:
    """The version of ``spec`` (Produce, EndTxn or TxnOffsetCommit) to send: its v2 version
    or higher in a transaction of the v2 protocol, the classic maximum otherwise (a v2 version
    would make a Kafka 4 broker apply the v2 rules to a classic transaction)."""
    version = conn.version(spec)
    if v2:
        if version < TRANSACTION_V2_FROM[spec.key]:
            raise ConfigurationError.of(
                CONFIGURATION, "BROKER_WITHOUT_TRANSACTION_V2", conn=conn.name, spec=spec.name,
                version=version, transaction_v2_from=TRANSACTION_V2_FROM[spec.key],
                transaction_version_feature=TRANSACTION_VERSION_FEATURE,
                transaction_v2_level=TRANSACTION_V2_LEVEL)
        return version
    return min(version, CLASSIC_MAX_VERSION[spec.key])


def uses_transaction_v2(client: KafkaClient, transactional_id: str) -> bool:
    """Whether transactions of ``transactional_id`` are written with the v2 protocol: the
    cluster finalized it and the id's coordinator speaks EndTxn v5 and TxnOffsetCommit v5
    (as Java's producer decides, from the finalized feature level)."""
    conn = _coordinator(client, transactional_id)
    return (transaction_v2_level(conn) and offers_v2(conn, END_TXN)
            and offers_v2(conn, TXN_OFFSET_COMMIT))


def explain_transaction_error(exc: KafkaError, transactional_id: str) -> KafkaError:
    """The error with what it means for a transactional writer and what to do."""
    code = exc.code
    if isinstance(exc, AuthorizationError):  # it names the ACL to grant (protocol/errors.py)
        if isinstance(exc, TransactionalIdAuthorizationError) and exc.transactional_id is None:
            return exc.with_details(transactional_id=transactional_id)
        return exc
    if code in _FENCED:
        hint = (f"transactional id {transactional_id!r} was taken over by a newer producer "
                "epoch: another task attempt or query uses the same kafka.transactional.id "
                "prefix, or the transaction outlived kafka.transaction.timeout.ms and the "
                "coordinator aborted it")
    elif code == ErrorCode.INVALID_TRANSACTION_TIMEOUT:
        hint = (f"{TRANSACTION_TIMEOUT} is above the broker's transaction.max.timeout.ms "
                "(15 minutes unless changed): lower it, or raise the broker's limit")
    elif code == ErrorCode.INVALID_TXN_STATE:
        hint = (f"the transaction of {transactional_id!r} is not in a state that allows this: "
                "it already ended, or the coordinator aborted it because it outlived "
                f"{TRANSACTION_TIMEOUT} (under the transaction protocol v2 of Kafka 4, a "
                "commit that comes after that abort is answered so, not as fenced); the "
                "write is not committed")
    else:
        return exc
    return error_for_code(code, topic=exc.topic, partition=exc.partition, broker=exc.broker,
                          context=exc.context, message=hint)


def _coordinator(client: KafkaClient, transactional_id: str) -> BrokerConnection:
    return find_coordinator(client, transactional_id, TRANSACTION_KEY_TYPE)


def _check(code: int, transactional_id: str, conn: BrokerConnection, context: str,
           topic: str | None = None, partition: int | None = None, **ids: str) -> None:
    try:
        check_coordinated(code, coordinated(transactional_id, TRANSACTION_KEY_TYPE), topic,
                          partition, conn, context, transactional_id=transactional_id, **ids)
    except KafkaError as exc:
        raise explain_transaction_error(exc, transactional_id) from None


def _retried(client: KafkaClient, transactional_id: str, what: str, attempt: Callable[[], T]
             ) -> T:
    """``client.retry`` for a coordinator request: retriable errors (CONCURRENT_TRANSACTIONS
    while an earlier end completes, a moved or loading coordinator, lost connections) are
    tried again; the message names the transactional id."""
    return client.retry(attempt, f"{what} for transactional id {transactional_id!r}")


def init_transactions(client: KafkaClient, transactional_id: str, timeout_ms: int
                      ) -> ProducerIdentity:
    """A producer id and epoch for ``transactional_id``. Aborts the transaction an earlier
    holder of the id left open and fences that holder (see the module docstring)."""
    probe = client.any_connection()
    if INIT_PRODUCER_ID.key not in probe.api_versions:
        raise transactions_unsupported(probe.name)

    def attempt() -> ProducerIdentity:
        conn = _coordinator(client, transactional_id)
        body: InitProducerIdRequest = {"transactional_id": transactional_id,
                                       "transaction_timeout_ms": timeout_ms}
        resp = conn.request(INIT_PRODUCER_ID, body)
        _check(resp["error_code"], transactional_id, conn, "InitProducerId")
        return ProducerIdentity(resp["producer_id"], resp["producer_epoch"])

    identity = _retried(client, transactional_id, "InitProducerId", attempt)
    log.info("transactional id %r: producer id %d epoch %d", transactional_id,
             identity.producer_id, identity.epoch)
    return identity


def transactions_unsupported(broker: str) -> ConfigurationError:
    return ConfigurationError.of(
        CONFIGURATION, "BROKER_WITHOUT_TRANSACTIONS", broker=broker,
        transactional_id=TRANSACTIONAL_ID)


def add_partitions(client: KafkaClient, transactional_id: str, identity: ProducerIdentity,
                   partitions: Iterable[TopicPartition]) -> None:
    """Add partitions to the open transaction before anything is written to them."""
    wanted = sorted(set(partitions))
    if not wanted:
        return

    def attempt() -> None:
        conn = _coordinator(client, transactional_id)
        body: AddPartitionsToTxnRequest = {
            "v3_and_below_transactional_id": transactional_id,
            "v3_and_below_producer_id": identity.producer_id,
            "v3_and_below_producer_epoch": identity.epoch,
            "v3_and_below_topics": [{"name": t, "partitions": parts}
                                    for t, parts in by_topic(wanted).items()],
        }
        resp = conn.request(ADD_PARTITIONS_TO_TXN, body)
        errors = [(t["name"], p["partition_index"], p["partition_error_code"])
                  for t in resp["results_by_topic_v3_and_below"]
                  for p in t["results_by_partition"] if p["partition_error_code"]]
        # OPERATION_NOT_ATTEMPTED marks the partitions skipped because another one failed.
        errors.sort(key=lambda e: e[2] == ErrorCode.OPERATION_NOT_ATTEMPTED)
        for topic, partition, code in errors:
            _check(code, transactional_id, conn, "AddPartitionsToTxn", topic, partition)

    _retried(client, transactional_id, "AddPartitionsToTxn", attempt)


def commit_offsets_in_transaction(
    client: KafkaClient, transactional_id: str, identity: ProducerIdentity, group: str,
    offsets: Mapping[TopicPartition, tuple[int, str]], v2: bool = False,
) -> None:
    """Commit ``offsets`` (offset, metadata) for ``group`` as part of the transaction: hidden
    until it commits, discarded if it aborts (AddOffsetsToTxn, then TxnOffsetCommit to the
    group's coordinator; under the v2 protocol TxnOffsetCommit v5 alone, which adds the group
    to the transaction itself)."""

    def add() -> None:
        conn = _coordinator(client, transactional_id)
        body: AddOffsetsToTxnRequest = {
            "transactional_id": transactional_id, "producer_id": identity.producer_id,
            "producer_epoch": identity.epoch, "group_id": group}
        resp = conn.request(ADD_OFFSETS_TO_TXN, body)
        _check(resp["error_code"], transactional_id, conn, "AddOffsetsToTxn", group=group)

    def commit() -> None:
        conn = find_coordinator(client, group)
        body: TxnOffsetCommitRequest = {
            "transactional_id": transactional_id, "group_id": group,
            "producer_id": identity.producer_id, "producer_epoch": identity.epoch,
            "topics": [{"name": t, "partitions": [
                {"partition_index": p, "committed_offset": offsets[(t, p)][0],
                 "committed_metadata": offsets[(t, p)][1]} for p in parts]}
                for t, parts in by_topic(offsets).items()],
        }
        resp = conn.request(TXN_OFFSET_COMMIT, body,
                            version=request_version(conn, TXN_OFFSET_COMMIT, v2))
        for t in resp["topics"]:
            for p in t["partitions"]:
                if p["error_code"]:
                    try:
                        check_coordinated(p["error_code"], coordinated(group), t["name"],
                                          p["partition_index"], conn, "TxnOffsetCommit",
                                          group=group, transactional_id=transactional_id)
                    except KafkaError as exc:
                        raise explain_transaction_error(exc, transactional_id) from None

    if not v2:
        _retried(client, transactional_id, "AddOffsetsToTxn", add)
    _retried(client, transactional_id, f"TxnOffsetCommit for group {group!r}", commit)


def end_transaction(client: KafkaClient, txn: OpenTransaction, commit: bool
                    ) -> ProducerIdentity:
    """EndTxn: commit or abort ``txn``, from any process. A retry after a lost answer is
    answered as success by Kafka when the same end already completed (under the v2 protocol
    too, where the retry carries the epoch before the bump). Returns the producer id and
    epoch of the id's next transaction: under the v2 protocol the ones EndTxn v5 answered
    (the epoch bumped, or a new producer id when the epoch ran out), else ``txn``'s own."""

    def attempt() -> ProducerIdentity:
        conn = _coordinator(client, txn.transactional_id)
        body: EndTxnRequest = {
            "transactional_id": txn.transactional_id, "producer_id": txn.producer_id,
            "producer_epoch": txn.epoch, "committed": commit}
        resp = conn.request(END_TXN, body, version=request_version(conn, END_TXN, txn.v2))
        _check(resp["error_code"], txn.transactional_id, conn,
               "EndTxn(commit)" if commit else "EndTxn(abort)")
        if txn.v2:
            if resp["producer_id"] < 0 or resp["producer_epoch"] < 0:
                raise ProtocolError(
                    f"EndTxn v5 for transactional id {txn.transactional_id!r} answered no "
                    f"producer id and epoch (got {resp['producer_id']}, "
                    f"{resp['producer_epoch']}); KIP-890 requires them", broker=conn.name)
            return ProducerIdentity(resp["producer_id"], resp["producer_epoch"])
        return ProducerIdentity(txn.producer_id, txn.epoch)

    return _retried(client, txn.transactional_id, "EndTxn", attempt)
