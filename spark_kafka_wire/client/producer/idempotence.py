"""The idempotent producer's identity and sequence numbers (KIP-98), and the epoch bump that
lets it carry on when a broker lost its state (KIP-360).

A producer id and epoch come from InitProducerId; every batch carries them and a base sequence
per partition that starts at 0, advances by the record count and wraps after 2^31-1. The broker
stores a batch only if its sequence is the next one it expects for the producer, so a batch
re-sent after a lost answer is recognised and not stored twice.

When a broker answers UNKNOWN_PRODUCER_ID, or OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that no
earlier failure of its partition explains, it has no (or another) state for the producer: it
restarted without it, or its log was truncated. Like the Java producer since Kafka 2.5, the
sender then bumps the epoch: InitProducerId v3+ with the current id and epoch gives the same id
and epoch + 1 (a broker before Kafka 2.5, or one that answers the bump with any error, as
Tansu does, is asked for a new id), and every
batch not yet acknowledged is re-numbered from sequence 0 under it. A batch the broker had
stored before losing the state is then stored again: no client can tell that case apart, and
the Java producer makes the same choice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.protocol.bodies import InitProducerIdRequest
from spark_kafka_wire.protocol.errors import ErrorCode, error_for_code
from spark_kafka_wire.protocol.messages import INIT_PRODUCER_ID

log = logging.getLogger(__name__)

SEQUENCE_MODULUS = 1 << 31  # sequences are non-negative int32 and wrap at 2^31-1
# Epochs are int16; at the last one a bump asks for a new producer id instead.
MAX_EPOCH = 32_767
# InitProducerId v3 (Kafka 2.5, KIP-360) takes the current producer id and epoch and bumps it.
BUMP_MIN_VERSION = 3


def next_sequence(sequence: int, records: int) -> int:
    """The base sequence after a batch of ``records`` starting at ``sequence`` (wraps to 0
    after 2^31-1, as Java's ``DefaultRecordBatch.incrementSequence``)."""
    return (sequence + records) % SEQUENCE_MODULUS


@dataclass(frozen=True)
class ProducerIdentity:
    producer_id: int
    epoch: int


def init_producer_id(client: KafkaClient, current: ProducerIdentity | None = None
                     ) -> ProducerIdentity:
    """A producer id and epoch for an idempotent (non-transactional) producer; with
    ``current``, that identity with its epoch bumped where the broker can (see above)."""
    bump = current is not None and current.producer_id >= 0 and current.epoch < MAX_EPOCH

    def attempt() -> ProducerIdentity:
        conn = client.any_connection()
        body: InitProducerIdRequest = {"transactional_id": None, "transaction_timeout_ms": 60_000}
        asking_bump = bump and conn.version(INIT_PRODUCER_ID) >= BUMP_MIN_VERSION
        if asking_bump:
            assert current is not None
            body["producer_id"], body["producer_epoch"] = current.producer_id, current.epoch
        resp = conn.request(INIT_PRODUCER_ID, body)
        if resp["error_code"] and asking_bump:
            log.info("broker %s refused to bump the epoch of producer id %d (%s); asking for "
                     "a new producer id", conn.name, current.producer_id if current else -1,
                     ErrorCode(resp["error_code"]).name)
            fresh: InitProducerIdRequest = {"transactional_id": None,
                                            "transaction_timeout_ms": 60_000}
            resp = conn.request(INIT_PRODUCER_ID, fresh)
        if resp["error_code"]:
            raise error_for_code(resp["error_code"], context="InitProducerId",
                                 broker=conn.name, principal=conn.config.principal)
        return ProducerIdentity(resp["producer_id"], resp["producer_epoch"])

    return client.retry(attempt, "InitProducerId")
