"""Exactly-once writes: each task writes in a Kafka transaction the driver commits.

With ``kafka.transactional.id`` = P, task ``i`` of a write (Spark's partition id, the same for
every attempt of the task) uses transactional id ``P-i``:

1. In the task: InitProducerId for ``P-i`` aborts whatever an earlier attempt of the task (or
   an earlier write with the same prefix) left open and fences it; the rows are written in a
   transaction, flushed, and left open. The commit message carries (transactional id, producer
   id, epoch, partitions).
2. On the driver, once every task succeeded, ``commit`` sends EndTxn(commit) for each task's
   transaction; ``abort`` (a failed write) sends EndTxn(abort) for the tasks that reported one,
   and re-initialises the transactional id of each task that did not (so whatever it wrote
   before dying is aborted now, not when the transaction times out, which Tansu never does).

A read_committed reader sees either nothing of a failed write or every row of a successful one
exactly once; read_uncommitted readers see aborted rows too, as with any transactional writer.

On a Kafka 4 cluster that finalized ``transaction.version`` 2 the tasks write with KIP-890's
transaction protocol v2 (client/producer/transactions.py); the commit message's
``OpenTransaction`` says so, and the driver ends such a transaction with EndTxn v5. A
transaction left open by a dead task and driver is aborted by the coordinator once it
outlives ``kafka.transaction.timeout.ms`` (Kafka; Tansu never times one out), so readers are
blocked that long at most; the replay's InitProducerId aborts it sooner.

Streaming adds a marker (``marker_offset``): each micro-batch's transaction also commits, for
group ``P-i`` (TxnOffsetCommit), an offset that encodes the query and the batch id, visible only
if the transaction commits. When Spark replays batch B after a failure (B has no entry in the
checkpoint's commit log), a task whose marker shows B committed writes nothing; the others
abort their open transaction (step 1) and write B again. This relies on what every Spark sink
that claims exactly-once relies on: the replayed batch has the same input, split into the same
tasks (a deterministic query over a replayable source, such as Kafka). It also closes the
window between the driver's EndTxn calls: if the driver dies after committing some tasks'
transactions, the replay skips those tasks and rewrites the rest.

The task's look at its marker can miss a committed one, so the driver looks again before it
commits (``split_replayed``) and aborts, instead of committing, the transaction of a task whose
batch turns out to be committed already. Tansu shows the offsets a transaction committed only
once every transaction that was open on the same partitions before that commit has ended; in
a replay after the driver died between EndTxn calls, the other tasks' transactions of the dead
run stay open until their own replayed tasks fence them, which can be after this task started
(two cores, four tasks: tasks 2 and 3 start when 0 and 1 are done). When the driver commits,
every task of the replay has run, so none of those is open any more. (A Kafka coordinator
answers EndTxn once the commit is decided and writes the markers and the offsets after, so a
look right after a commit can miss it there too.) The task's look saves rewriting; the
driver's decides.

The marker is an offset because brokers may drop commit metadata (Tansu does): the top 24 bits
are a fingerprint of the query id, the low 39 bits the batch id; the metadata says the same in
words where the broker keeps it. Kafka only stores offsets of existing partitions, so the key is
partition 0 of the first topic the task wrote to; the group is the transactional id, so each
task's marker is its own.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyspark import TaskContext

from spark_kafka_wire.client.errors import CONFIGURATION, ConfigurationError
from spark_kafka_wire.client.groups.group_offsets import fetch_group
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.producer.transactions import (
    OpenTransaction,
    end_transaction,
    init_transactions,
)
from spark_kafka_wire.protocol.errors import KafkaWireError

log = logging.getLogger(__name__)

# Local properties Spark's MicroBatchExecution sets for the tasks of a micro-batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_BITS = 39
FINGERPRINT_BITS = 24
MARKER_PREFIX = "kafkawire exactly-once"


def task_transactional_id(prefix: str, partition_id: int) -> str:
    return f"{prefix}-{partition_id}"


@dataclass(frozen=True)
class TaskBatch:
    """The micro-batch a streaming write task belongs to."""

    query_id: str
    batch_id: int


def current_partition() -> int:
    """Spark's partition id of the running write task (the same for each of its attempts)."""
    context = TaskContext.get()
    if context is None:
        raise ConfigurationError.of(CONFIGURATION, "TRANSACTIONS_WITHOUT_TASK")
    return context.partitionId()


def current_batch() -> TaskBatch:
    """The query id and batch id of the micro-batch this task writes."""
    context = TaskContext.get()
    batch = context.getLocalProperty(BATCH_ID_PROPERTY) if context else None
    query = context.getLocalProperty(QUERY_ID_PROPERTY) if context else None
    if batch is None or query is None:
        raise ConfigurationError.of(
            CONFIGURATION, "TRANSACTIONS_WITHOUT_BATCH_ID", batch_id_property=BATCH_ID_PROPERTY,
            query_id_property=QUERY_ID_PROPERTY)
    return TaskBatch(query, int(batch))


def _fingerprint(query_id: str) -> int:
    digest = hashlib.sha256(query_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:3], "big")  # FINGERPRINT_BITS


def marker_offset(batch: TaskBatch) -> int:
    """The committed offset that records ``batch``: query fingerprint, then batch id."""
    if not 0 <= batch.batch_id < 1 << BATCH_BITS:
        raise ConfigurationError.of(
            CONFIGURATION, "BATCH_ID_TOO_LARGE", batch_id=batch.batch_id, batch_bits=BATCH_BITS)
    return _fingerprint(batch.query_id) << BATCH_BITS | batch.batch_id


def marker_metadata(batch: TaskBatch) -> str:
    return f"{MARKER_PREFIX} query {batch.query_id} batch {batch.batch_id}"


def committed_batch(markers: Mapping[TopicPartition, tuple[int, str]], query_id: str
                    ) -> int | None:
    """The latest batch of ``query_id`` the markers say was committed, or None. A marker whose
    metadata names another query is not this query's, whatever its fingerprint."""
    fingerprint = _fingerprint(query_id)
    found: int | None = None
    for offset, metadata in markers.values():
        if offset < 0 or offset >> BATCH_BITS != fingerprint:
            continue
        if metadata.startswith(MARKER_PREFIX) and f" query {query_id} " not in metadata:
            continue
        batch_id = offset & ((1 << BATCH_BITS) - 1)
        found = batch_id if found is None else max(found, batch_id)
    return found


def already_committed(client: KafkaClient, transactional_id: str, batch: TaskBatch) -> bool:
    """Whether this task's transaction for ``batch`` (or a later one) committed: a replay."""
    done = committed_batch(fetch_group(client, transactional_id), batch.query_id)
    return done is not None and done >= batch.batch_id


def split_replayed(client: KafkaClient,
                   pending: Sequence[tuple[OpenTransaction, TaskBatch | None]],
                   ) -> tuple[list[OpenTransaction], list[OpenTransaction]]:
    """(to commit, to abort) of the tasks' transactions: a streaming task's transaction whose
    marker shows its batch committed already (a replay the task could not tell when it
    started; see the module docstring) would write the batch's rows a second time, so it is
    aborted. Transactions of batch writes (no batch) are all committed."""
    commit: list[OpenTransaction] = []
    duplicate: list[OpenTransaction] = []
    for txn, batch in pending:
        replay = batch is not None and already_committed(client, txn.transactional_id, batch)
        (duplicate if replay else commit).append(txn)
    return commit, duplicate


def commit_transactions(client: KafkaClient, transactions: Sequence[OpenTransaction]) -> None:
    """EndTxn(commit) for every task's transaction, in partition order. A failure names the
    transactions already committed (they stay committed) and those still open."""
    for i, txn in enumerate(transactions):
        try:
            end_transaction(client, txn, commit=True)
        except KafkaWireError as exc:
            done = ", ".join(t.transactional_id for t in transactions[:i]) or "none"
            left = ", ".join(t.transactional_id for t in transactions[i:])
            exc.args = (f"{exc.args[0]}. Committing the write's transactions failed at "
                        f"{txn.transactional_id!r}: committed {done}; not committed {left}",)
            raise
    log.info("committed %d transactions", len(transactions))


# Spark kills the Python worker of a cancelled task at most spark.python.task.killTimeout
# (2 s by default) after cancelling it; the abort's second pass comes after that.
ZOMBIE_GRACE_S = 3.0


def abort_transactions(client: KafkaClient, prefix: str, reported: Sequence[OpenTransaction],
                       silent_partitions: Iterable[int], timeout_ms: int,
                       grace_s: float = ZOMBIE_GRACE_S) -> None:
    """End a failed write: EndTxn(abort) for the transactions tasks reported, and a fresh
    InitProducerId (which aborts anything open) for the tasks that reported nothing. Best
    effort: every transaction is tried and failures are logged.

    Spark calls the driver's abort as soon as one task fails, while it is still cancelling the
    others: a cancelled task can still be running and, if it had not begun its transaction
    yet, begin one after the first pass. So the ids of the silent tasks are initialised again
    once Spark has killed their workers (``grace_s``), leaving no transaction open."""
    for txn in reported:
        try:
            end_transaction(client, txn, commit=False)
        except KafkaWireError as exc:
            log.warning("could not abort the transaction of %r (it is aborted when the "
                        "transactional id is next used, or at its timeout): %s",
                        txn.transactional_id, exc)
    silent = list(silent_partitions)
    for attempt in range(2 if silent else 0):
        if attempt:
            time.sleep(grace_s)
        for partition in silent:
            tid = task_transactional_id(prefix, partition)
            try:
                init_transactions(client, tid, timeout_ms)
            except KafkaWireError as exc:
                log.warning("could not end what task %d left open under %r: %s", partition,
                            tid, exc)
