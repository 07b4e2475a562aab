"""Produce records to partition leaders, pipelined, with retries and optional idempotence.

- ``settings``: :class:`ProduceSettings`, the producer's options;
- ``partitioner``: the partition of every row of a key column (librdkafka's partitioners);
- ``accumulator``: rows buffered per partition until they make a batch, and batch encoding;
- ``sender``: Produce requests per leader, in flight, answered, retried;
- ``producer``: :class:`Producer`, which decides record format and idempotence per topic and
  joins the accumulator to the sender;
- ``idempotence`` and ``transactions``: producer ids, sequences and epochs; transactions
  through their coordinator (KIP-98, KIP-890);
- ``transaction_states``: transactions as ``kafka-transactions`` lists and describes them;
- ``task_writers``: the writer of a write (the Producer, or a Kafka 0.7 message-set writer),
  chosen here so that the sink and the CLI never ask which Kafka they write to.
"""

from spark_kafka_wire.client.defaults import DEFAULT_PARTITIONER, PARTITIONERS
from spark_kafka_wire.client.producer.accumulator import (
    PendingBatch,
    encode_partitioned,
    headers_from_arrow,
)
from spark_kafka_wire.client.producer.idempotence import next_sequence
from spark_kafka_wire.client.producer.partitioner import assign_partitions
from spark_kafka_wire.client.producer.producer import Producer
from spark_kafka_wire.client.producer.settings import (
    MAX_IN_FLIGHT_FOR_IDEMPOTENCE,
    ProduceSettings,
)

__all__ = [
    "DEFAULT_PARTITIONER",
    "MAX_IN_FLIGHT_FOR_IDEMPOTENCE",
    "PARTITIONERS",
    "PendingBatch",
    "ProduceSettings",
    "Producer",
    "assign_partitions",
    "encode_partitioned",
    "headers_from_arrow",
    "next_sequence",
]
