"""Transactions as ``kafka-transactions`` shows them: which transactional ids a cluster knows,
the state of one, and ending one a dead producer left open (``kafkawire transactions``).

ListTransactions and DescribeTransactions (KIP-664) exist from Kafka 3.0. Aborting needs
neither: InitProducerId with the transactional id makes its coordinator abort the open
transaction and fence its producer (``producer.transactions.init_transactions``, what every
transactional producer does when it starts), on any Kafka 0.11+, so an open transaction that
holds back read_committed readers (their last stable offset) ends without waiting for
``transaction.timeout.ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.client.groups.group_offsets import (
    TRANSACTION_KEY_TYPE,
    check_coordinated,
    coordinated,
    find_coordinator,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.protocol.bodies import DescribeTransactionsRequest, ListTransactionsRequest
from spark_kafka_wire.protocol.errors import check_error
from spark_kafka_wire.protocol.messages import DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS

#: DescribeTransactions' state of a transaction that holds partitions open.
ONGOING = "Ongoing"


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str
    coordinator: int


@dataclass(frozen=True)
class TransactionState:
    transactional_id: str
    state: str  # Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, ...
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int  # -1 unless a transaction is open
    partitions: tuple[TopicPartition, ...]
    coordinator: str


def list_transactions(client: KafkaClient, states: list[str] | None = None
                      ) -> list[TransactionListing]:
    """Every transactional id of the cluster (in ``states`` only, when given), sorted:
    ListTransactions at every broker (each answers for the ids it coordinates)."""
    brokers = client.fetch_metadata([]).brokers
    found: dict[str, TransactionListing] = {}
    for node_id in sorted(brokers):
        conn = client.broker(node_id)
        body: ListTransactionsRequest = {"state_filters": states or [],
                                         "producer_id_filters": [], "duration_filter": -1,
                                         "transactional_id_pattern": None}
        resp = conn.request(LIST_TRANSACTIONS, body)
        check_error(resp["error_code"], broker=conn.name, context="ListTransactions")
        for t in resp["transaction_states"]:
            found[t["transactional_id"]] = TransactionListing(
                t["transactional_id"], t["producer_id"], t["transaction_state"], node_id)
    return [found[k] for k in sorted(found)]


def describe_transaction(client: KafkaClient, transactional_id: str) -> TransactionState:
    """The state of ``transactional_id`` at its coordinator (TRANSACTIONAL_ID_NOT_FOUND for
    an id it does not know)."""
    what = coordinated(transactional_id, TRANSACTION_KEY_TYPE)

    def attempt() -> TransactionState:
        conn = find_coordinator(client, transactional_id, TRANSACTION_KEY_TYPE)
        body: DescribeTransactionsRequest = {"transactional_ids": [transactional_id]}
        resp = conn.request(DESCRIBE_TRANSACTIONS, body)
        [t] = [t for t in resp["transaction_states"]
               if t["transactional_id"] == transactional_id]
        check_coordinated(t["error_code"], what, None, None, conn, "DescribeTransactions",
                          transactional_id=transactional_id)
        return TransactionState(
            transactional_id, t["transaction_state"], t["producer_id"], t["producer_epoch"],
            t["transaction_timeout_ms"], t["transaction_start_time_ms"],
            tuple(sorted((x["topic"], p) for x in t["topics"] for p in x["partitions"])),
            conn.name)

    return client.retry(attempt, f"DescribeTransactions for {what}")
