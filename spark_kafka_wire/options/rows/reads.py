"""The option table's rows of batch and stream reads: what is read (subscribe, assign, offsets,
timestamps), how it is split into tasks, fetched and decoded, and micro-batch limits."""

from __future__ import annotations

from spark_kafka_wire.client import defaults
from spark_kafka_wire.options.rows.kinds import NOWHERE, SINK, SOURCE, Kind, Option, Use
from spark_kafka_wire.protocol.limits import (
    DECOMPRESSION_RATIO,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    MAX_DECOMPRESSED_OPTION,
)
from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX

READS: tuple[Option, ...] = (
    # ------------------------------------------------------------------------------- reads
    Option("subscribe", SOURCE,
           doc="comma-separated topics, each of which must exist; internal topics "
           "(Metadata's `is_internal`) are never read. Exactly one of `subscribe`, "
           "`subscribePattern` and `assign` is required"),
    Option("subscribePattern", SOURCE,
           doc="a regular expression found anywhere in a topic name (`re.search`, like "
           "Java's `find`; Python's regex dialect); internal topics (Metadata's `is_internal`, "
           "and Kafka's own `__consumer_offsets`, `__transaction_state`, "
           "`__share_group_state`) are never read; other topics named `__...` are, as in "
           "Spark. Exactly one of `subscribe`, `subscribePattern` and `assign`"),
    Option("assign", SOURCE,
           doc='JSON `{"t":[0,1]}`; assigned partitions that do not exist are left out, a '
           "missing topic is an error, as in Spark; internal topics (Metadata's "
           "`is_internal`) are never read. Exactly one of `subscribe`, `subscribePattern` and "
           "`assign`"),
    Option("startingOffsets", SOURCE, default="earliest", stream_default="latest",
           doc='`earliest` or Spark\'s JSON `{"t":{"0":23,"1":-2}}` (-2 earliest) naming '
           'exactly the partitions read, where a topic may map to `"earliest"` for all its '
           "partitions (SPARK-58774, after Spark 4.2); `latest` is refused for batch, as in Spark",
           stream_doc="`earliest`, `latest`, JSON (a topic may map to `\"earliest\"` or "
           "`\"latest\"`), or (kafkawire only) `group`: the committed "
           "offsets of `kafka.group.id`, earliest for partitions without a commit. Used only "
           "when the query has no checkpoint. `endingOffsets` and `endingOffsetsByTimestamp` "
           "are refused and `endingTimestamp` ignored with a warning, as in Spark"),
    Option("endingOffsets", Use.READ, default="latest",
           doc='`latest` or JSON (-1 latest; a topic may map to `"latest"`); `earliest` is '
           "refused, as in Spark"),
    Option("startingTimestamp", SOURCE,
           doc="one ms timestamp for every partition: the first offset whose record timestamp "
           "is at or after it. Wins over `startingOffsetsByTimestamp`, which wins over "
           "`startingOffsets` (the losers are ignored, as in Spark)"),
    Option("endingTimestamp", Use.READ, ignored_in=Use.STREAM_READ,
           doc="one ms timestamp for every partition: the first offset whose record timestamp "
           "is at or after it, latest where none is. Wins over `endingOffsetsByTimestamp`, "
           "which wins over `endingOffsets` (the losers are ignored, as in Spark)"),
    Option("startingOffsetsByTimestamp", SOURCE,
           doc='JSON `{"t":{"0":1700000000000}}` naming exactly the partitions read; '
           "`startingTimestamp` wins over it, it wins over `startingOffsets` (the losers are "
           "ignored, as in Spark)"),
    Option("endingOffsetsByTimestamp", Use.READ,
           doc='JSON `{"t":{"0":1700000000000}}` naming exactly the partitions read, latest '
           "where no record is at or after a timestamp; `endingTimestamp` wins over it, it "
           "wins over `endingOffsets` (the losers are ignored, as in Spark)"),
    Option("startingOffsetsByTimestampStrategy", SOURCE, default="error",
           doc="a partition with no record at or after the starting timestamp fails the read "
           "(`error`) or starts at latest (`latest`)"),
    Option("failOnDataLoss", SOURCE, kind=Kind.BOOL, default=True,
           doc="planned offsets gone when a task reads them (retention moved the log start, "
           "the partition now ends earlier, the topic was deleted), and in streams, when a "
           "micro-batch is planned, partitions deleted, a partition's offsets gone back below "
           "where the batch begins, partitions added that do not start at 0 (Spark's checks): "
           "fail naming topic, partition and offsets, or (`false`) log a warning saying what is "
           "skipped and read what exists. Compaction gaps and transaction markers are not "
           "loss. A batch read whose start is beyond a partition's end fails either way, as in "
           "Spark"),
    Option("minPartitions", SOURCE, kind=Kind.COUNT, maximum=INT32_MAX,  # Spark's Int
           doc="split topic-partitions into more Spark partitions: while there are fewer "
           "pieces than this, large pieces are cut in proportion to their size (Spark's "
           "KafkaOffsetRangeCalculator). Every piece is a fixed offset range. Small ranges "
           "packed together (see `maxOffsetRangesPerPartition`) aim at this many Spark "
           "partitions and never leave fewer"),
    Option("maxRecordsPerPartition", SOURCE, kind=Kind.COUNT,
           doc="split topic-partitions into pieces of at most this many offsets, before "
           "`minPartitions` applies. Every piece is a fixed offset range. Also the most "
           "offsets small ranges packed into one Spark partition may hold together (see "
           "`maxOffsetRangesPerPartition`)"),
    Option("maxOffsetRangesPerPartition", SOURCE, kind=Kind.COUNT, kafkawire_only=True,
           default_doc="no limit",
           doc="the most offset ranges (topic-partitions, or pieces of one) one Spark "
           "partition reads, one after another; `1` turns packing off: one Spark partition per "
           "range, as Spark plans. Packing: after splitting, small ranges share a task, taken "
           "in topic, partition and offset order, aiming at `minPartitions` tasks when given "
           "(never fewer), else at twice the CPUs of the process that plans the read (fewer "
           "when the packed ranges hold under 20,000 offsets per task: a micro-batch of a few "
           "hundred records is one task); a task "
           "holds at most the offsets divided by that number, and at most "
           "`maxRecordsPerPartition` (100,000 when unset); a range that large is read alone. "
           "Same rows, in the same order"),
    Option("includeHeaders", SOURCE, kind=Kind.BOOL, default=False,
           doc="adds `headers` `array<struct<key: string, value: binary>>`: null for a record "
           "without headers, order and duplicate keys kept"),
    Option("kafka.isolation.level", SOURCE, default=defaults.ISOLATION_LEVEL,
           doc="`read_committed` reads up to the last stable offset and returns a "
           "transaction's records only if its producer's next marker commits it (KIP-98): "
           "transactions the broker lists as aborted are dropped at once, the others are held "
           "until their marker is read, past the range end if need be, so the read is exact "
           "on brokers that list none (Tansu)"),
    # Two contexts, two defaults: Spark's 3 attempts 1000 ms apart are what a stream uses when
    # it asks again for latest offsets below where its batch begins (stream_reader.py); the
    # driver's offset lookups, unless the option is given, keep the client's own retry rule
    # (a time budget), which covers more than Spark's count.
    Option("fetchOffset.numRetries", SOURCE, kind=Kind.INT, default=3, minimum=1,
           default_doc="`3` for a stream's second look at latest offsets; unset, offset "
           "lookups use the client's retries",
           doc="driver-side offset lookups: number of attempts. Unset, the client's own retries "
           "apply (for up to `kafka.request.timeout.ms`, backoff `kafka.retry.backoff.ms` "
           "doubling up to `kafka.retry.backoff.max.ms`); a stream asks again this many times "
           "for latest offsets below where its batch begins (Spark's rule and default)"),
    Option("fetchOffset.retryIntervalMs", SOURCE, kind=Kind.INT, default=1000,
           default_doc="`1000` for a stream's second look at latest offsets; unset, offset "
           "lookups use the client's backoff",
           doc="driver-side offset lookups: a fixed pause between attempts, in ms. Unset, the "
           "client's backoff applies; a stream's second look at latest offsets waits this long "
           "between attempts (Spark's default)"),
    Option("groupIdPrefix", SOURCE, default="spark-kafka-relation",
           doc="accepted for Spark's kafka format, where it names the consumer group Spark "
           "generates; kafkawire joins no group and commits offsets only for `kafka.group.id` "
           "(`commitOffsets`), so it has no effect. Ignored, with a warning, when "
           "`kafka.group.id` is set"),
    Option("kafka.group.id", SOURCE, ignored_in=SINK,
           doc="the group `commitOffsets` commits for and `startingOffsets=group` starts from; "
           "a read never joins it (a batch read warns: queries sharing a group id interfere "
           "once offsets are committed)"),
    Option("maxRecordsPerBatch", SOURCE, kind=Kind.INT, default=10_000, minimum=1,
           kafkawire_only=True, doc="rows per Arrow batch handed to Spark"),
    Option("kafka.max.partition.fetch.bytes", SOURCE, kind=Kind.BYTES, default=defaults.MAX_PARTITION_FETCH_BYTES,
           minimum=1,
           doc="each Fetch asks for the smaller of this and `kafka.fetch.max.bytes` (grown only "
           "for a batch larger than that), and a task holds at most two answers, so its memory "
           "is about twice that plus one output batch"),
    Option("kafka.fetch.max.bytes", SOURCE, kind=Kind.BYTES, default=defaults.FETCH_MAX_BYTES, minimum=1,
           doc="the request's byte budget; see `kafka.max.partition.fetch.bytes`"),
    Option(MAX_DECOMPRESSED_OPTION, SOURCE, kind=Kind.BYTES, minimum=1, kafkawire_only=True,
           default_doc=f"{DECOMPRESSION_RATIO} × the Fetch size, at least "
           f"{DEFAULT_MAX_DECOMPRESSED_SIZE >> 20} MiB, at most 2 GiB",
           doc="the most bytes the compressed records of one Fetch answer may decompress to, "
           "all batches and wrappers together, and the most a task holds decompressed at "
           "once: past it the read fails with `DecompressionLimitError` naming topic, "
           "partition, offset and broker instead of running out of memory on a decompression "
           "bomb. The default lets the default 1 MiB Fetch expand 256x and larger ones "
           f"{DECOMPRESSION_RATIO}x (typical topics compress 3-10x, logs and JSON up to "
           "20-50x); a task needs about three times this in memory at the worst"),
    Option("kafka.fetch.max.wait.ms", SOURCE, kind=Kind.INT, default=defaults.FETCH_MAX_WAIT_MS,
           doc="how long a broker may hold a Fetch waiting for `kafka.fetch.min.bytes`; after "
           "an answer with no data below the partition's end the next Fetch allows twice as "
           "long (at least 500 ms, within `kafka.request.timeout.ms`), for a broker whose "
           "storage read is bounded by it (Tansu on S3)"),
    Option("kafka.fetch.min.bytes", SOURCE, kind=Kind.BYTES, default=defaults.FETCH_MIN_BYTES,
           doc="the bytes a broker waits for before answering a Fetch"),
    Option("kafka.check.crcs", SOURCE, kind=Kind.BOOL, default=defaults.CHECK_CRCS,
           doc="check the CRC of every record batch or message; a mismatch names topic, "
           "partition, offset and broker and fails the read (not retried, as by Java's "
           "consumer: Spark's task retry fetches again)"),
    Option("kafka.default.api.timeout.ms", SOURCE, kind=Kind.INT, default=60_000,
           doc="accepted and has no effect (each request is bounded by "
           "`kafka.request.timeout.ms` and the retries)"),
    # read as a long by Spark, which refuses a value that is not one: so does kafkawire
    Option("kafkaConsumer.pollTimeoutMs", NOWHERE, ignored_in=SOURCE, kind=Kind.INT,
           maximum=INT64_MAX, doc="every request is bounded by `kafka.request.timeout.ms`"),
    # ------------------------------------------------------------------------ stream reads
    Option("maxOffsetsPerTrigger", Use.STREAM_READ, kind=Kind.COUNT,
           doc="cap per micro-batch, prorated over partitions by backlog; small partitions are "
           "rounded up, never starved (Spark's rule). Respected by `Trigger.AvailableNow`, "
           "which fixes its end offsets when the run starts"),
    Option("minOffsetsPerTrigger", Use.STREAM_READ, kind=Kind.COUNT,
           doc="hold a micro-batch back until that many new offsets exist, unless "
           "`maxTriggerDelay` has passed since a trigger last went through (a query's first "
           "trigger always does, as in Spark). Must not exceed `maxOffsetsPerTrigger`"),
    Option("maxTriggerDelay", Use.STREAM_READ, default="15m",
           doc="how long `minOffsetsPerTrigger` may hold micro-batches back; `15m`, `30s`, "
           "`500ms`, `1h`, or ms"),
    Option("commitOffsets", Use.STREAM_READ, default="none", kafkawire_only=True,
           doc="`kafka`, `zookeeper` or `both` commit the end of every completed micro-batch "
           "for `kafka.group.id`, so lag tools (kafka-consumer-groups, Burrow, librdkafka's "
           "`committed()`) show the query's progress. Kafka commits are standalone (the query "
           "never joins the group); `zookeeper` writes "
           "`/consumers/<group>/offsets/<topic>/<partition>` on `zookeeper.connect` (on a Kafka "
           "0.7 cluster `<broker id>-<partition>`, 0.7's layout; only `zookeeper` there). "
           "Spark tells a "
           "source that a micro-batch is complete when it plans the next one, so after an "
           "availableNow run or `processAllAvailable()` the committed offsets are the end of "
           "the last micro-batch, while a query stopped just after a batch may leave that batch "
           "uncommitted (lag tools then show it one micro-batch behind). Commits never change "
           "what is read: the checkpoint stays the source of truth"),
)
