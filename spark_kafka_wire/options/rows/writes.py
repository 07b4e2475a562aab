"""The option table's rows of writes: the topic, the producer's settings (acks, idempotence,
partitioner, compression, batching, retries), transactions and topic creation."""

from __future__ import annotations

from spark_kafka_wire.client import defaults
from spark_kafka_wire.options.rows.kinds import SINK, SOURCE, Kind, Option
from spark_kafka_wire.protocol.limits import ZSTD_DEFAULT_LEVEL
from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX

WRITES: tuple[Option, ...] = (
    # ------------------------------------------------------------------------------ writes
    Option("topic", SINK,
           doc="the topic of every row; it wins over the `topic` column (whose type is then "
           "not checked, as in Spark)"),
    Option("kafka.acks", SINK, default=defaults.ACKS,
           doc="`all` (or `-1`), `1` or `0` (nothing waits for an answer; answers a broker "
           "sends anyway, as Tansu does, are dropped)"),
    Option("kafka.enable.idempotence", SINK, kind=Kind.BOOL, default=True,
           doc="on by default with `acks=all`, like the Java client: a producer id per task and "
           "per-partition sequences, so retries inside a task never store a batch twice. "
           "Java's rules: `acks` ≠ all or `retries=0` turn a defaulted idempotence off and an "
           "explicit one into an error; more than 5 requests in flight is an error while it is "
           "on; a broker without InitProducerId (before 0.11) turns a defaulted one off and an "
           "explicit one into an error. A re-executed Spark task gets a new producer id: the "
           "sink stays at-least-once, like Spark's"),
    Option("kafka.partitioner", SINK, default=defaults.DEFAULT_PARTITIONER,
           doc="librdkafka's names: `murmur2_random` (the Java client's placement), `murmur2`, "
           "`consistent_random`, `consistent`, `fnv1a_random`, `fnv1a`, `random`; placement "
           "equals librdkafka's for every key it places deterministically (null keys under "
           "`*_random` and every row under `random` are spread over all partitions). "
           "`kafka.partitioner.class` (a JVM class) is refused"),
    Option("kafka.compression.type", SINK, default=defaults.COMPRESSION_TYPE,
           doc="`none`, `gzip`, `snappy`, `lz4` or `zstd` (zstd only where the broker's Produce "
           "version allows it, else a clear error before sending)"),
    # KIP-390's levels, their ranges and defaults as in Java's producer; each applies to its
    # codec only, and all are checked whichever codec is chosen, as Java checks them
    Option("kafka.compression.gzip.level", SINK, kind=Kind.INT, default=-1, minimum=-1,
           maximum=9, doc="gzip's level with `kafka.compression.type=gzip`: `1` (fastest) to "
           "`9` (smallest), or `-1`, zlib's default (6)"),
    Option("kafka.compression.lz4.level", SINK, kind=Kind.INT, minimum=1, maximum=17,
           default_doc="lz4's fast mode (Java's producer: 9)",
           doc="lz4's level with `kafka.compression.type=lz4`: `1` to `17`, as Java's producer "
           "takes (LZ4HC from 3; the lz4 library caps levels at its highest, 12)"),
    Option("kafka.compression.zstd.level", SINK, kind=Kind.INT, default=ZSTD_DEFAULT_LEVEL,
           minimum=-131072,
           maximum=22, doc="zstd's level with `kafka.compression.type=zstd`: `-131072` "
           "(fastest) to `22` (smallest)"),
    Option("kafka.batch.size", SINK, kind=Kind.BYTES, default=defaults.BATCH_SIZE,
           doc="a partition's rows wait in the task until they fill this (Java's default: "
           "16 KiB), until they are `kafka.linger.ms` old or until `kafka.buffer.memory` bytes "
           "wait in all; the task sends everything left when its rows end"),
    Option("kafka.linger.ms", SINK, kind=Kind.INT, default=defaults.LINGER_MS, ignored_in=SOURCE,
           maximum=INT64_MAX,  # a Java long
           doc="how old a partition's waiting rows may get, checked whenever Spark hands over "
           "the next Arrow batch; `0` sends each Arrow batch at once"),
    Option("kafka.buffer.memory", SINK, kind=Kind.BYTES, default=defaults.BUFFER_MEMORY, minimum=1,
           maximum=INT64_MAX,  # a Java long
           ignored_in=SOURCE,
           doc="the most bytes that wait in a task, over all partitions, before they are sent"),
    Option("kafka.max.in.flight.requests.per.connection", SINK, kind=Kind.INT, default=defaults.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
           minimum=1,
           doc="Produce requests pipelined per broker, answers read in order. After a failure "
           "every later batch of the partition waits for the retry, so order holds with "
           "idempotence or with 1 in flight (as in Java)"),
    Option("kafka.max.request.size", SINK, kind=Kind.BYTES, default=defaults.MAX_REQUEST_SIZE, minimum=1,
           doc="a record that can never fit fails before sending, naming its size"),
    Option("kafka.retries", SINK, kind=Kind.INT, default=defaults.RETRIES,
           doc="retriable errors (stale leader, timeouts, dropped connections) are retried "
           "after a metadata refresh, the backoff doubling up to its maximum, until this many "
           "retries or `kafka.delivery.timeout.ms` is spent"),
    Option("kafka.delivery.timeout.ms", SINK, kind=Kind.INT, default=defaults.DELIVERY_TIMEOUT_MS, minimum=1,
           doc="the longest a batch may take to be acknowledged, retries included: no attempt, "
           "reconnect or wait for an answer goes past it (Java's rule that delivery.timeout.ms "
           "≥ linger.ms + request.timeout.ms is not enforced)"),
    Option("kafka.transactional.id", SINK,
           doc="exactly-once writes: the prefix of the transactional ids the write's tasks use "
           "(`<prefix>-<task partition>`), committed by the driver when the whole write "
           "succeeded (see Exactly-once writes); use one prefix per query or job. Unset: "
           "at-least-once, as Spark's kafka sink"),
    Option("kafka.transaction.timeout.ms", SINK, kind=Kind.INT, default=defaults.TRANSACTION_TIMEOUT_MS, minimum=1,
           maximum=INT32_MAX,
           doc="the longest a task's transaction may stay open before a Kafka coordinator "
           "aborts it: from the task's first write until the driver commits the whole write "
           "(Java's default, 60000, is short for a Spark job; at most the broker's "
           "`transaction.max.timeout.ms`, 15 minutes by default)"),
    Option("createTopic", SINK, kind=Kind.BOOL, default=False, kafkawire_only=True,
           doc="create a missing topic with CreateTopics"),
    Option("createTopicPartitions", SINK, kind=Kind.INT, minimum=1, kafkawire_only=True,
           doc="the partitions of a topic `createTopic` creates (the broker's default when "
           "unset; needs Kafka 2.4+); refused without `createTopic=true`"),
    Option("createTopicReplicationFactor", SINK, kind=Kind.INT, minimum=1,
           maximum=2**15 - 1,  # int16 in CreateTopics
           kafkawire_only=True,
           doc="the replication factor of a topic `createTopic` creates (the broker's default "
           "when unset; needs Kafka 2.4+); refused without `createTopic=true`"),
    Option("kafka.allow.auto.create.topics", SINK, kind=Kind.BOOL, default=False,
           doc="let a broker with `auto.create.topics.enable` create a missing topic (Java's "
           "default: true). Otherwise a missing topic fails naming it, before anything is sent "
           "(on the driver for the `topic` option, when a task first meets it in the `topic` "
           "column)"),
)
