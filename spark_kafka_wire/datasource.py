"""kafkawire: Kafka topics as Spark DataFrames, over the Kafka wire protocol spoken in Python.

Batch read (every record between two offsets of each partition, fixed when the query is
planned)::

    df = (spark.read.format("kafkawire")
          .option("kafka.bootstrap.servers", "broker1:9092,broker2:9092")
          .option("subscribe", "orders")                 # or subscribePattern / assign
          .option("startingOffsets", "earliest")         # or JSON, or startingTimestamp
          .option("endingOffsets", "latest")
          .load())
    # columns: key, value (binary), topic, partition, offset, timestamp, timestampType
    # (+ headers with includeHeaders=true), the schema of Spark's kafka source

Batch write (``value`` required; ``key``, ``topic``, ``partition``, ``headers``, ``timestamp``
optional)::

    (df.selectExpr("key", "value").write.format("kafkawire")
       .option("kafka.bootstrap.servers", "broker1:9092")
       .option("topic", "orders-copy")
       .mode("append").save())

Streaming read and write, each micro-batch a fixed offset range recorded in the checkpoint::

    stream = (spark.readStream.format("kafkawire")
              .option("kafka.bootstrap.servers", "broker1:9092")
              .option("subscribe", "orders")           # starts at latest unless told
              .option("maxOffsetsPerTrigger", "100000")
              .load())
    (stream.writeStream.format("kafkawire")
           .option("kafka.bootstrap.servers", "broker1:9092")
           .option("topic", "orders-copy")
           .option("checkpointLocation", "/checkpoints/orders-copy")
           .start())

Option names and meanings are Spark's kafka format's (keys are case-insensitive;
``kafka.``-prefixed keys are the Java client's settings), so switching from
``format("kafka")`` means changing one string. ``help(KafkaWireDataSource)`` lists every
option by group, generated from the option table (``spark_kafka_wire.options``) like the
option reference (docs/reference/options.md). Errors derive from ``spark_kafka_wire.errors.KafkaWireError`` and name the
topic, partition, offset or broker concerned.

How it runs: planner processes build readers and writers and plan partitions; executor
processes run ``read``/``write`` on pickled copies. So everything a task needs travels inside
its InputPartition or the pickled writer, and connections are opened inside ``read``/``write``.
"""

from __future__ import annotations

import inspect
from dataclasses import replace

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from spark_kafka_wire.client.errors import REFUSED_OPTION, UNSUPPORTED_VALUE, ConfigurationError
from spark_kafka_wire.client.pool import planner_cluster
from spark_kafka_wire.errors import brief_traceback
from spark_kafka_wire.options.formats import PERMISSIVE
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.options.reference import manual
from spark_kafka_wire.sink.batch_writer import KafkaWireBatchWriter
from spark_kafka_wire.sink.stream_writer import KafkaWireStreamWriter
from spark_kafka_wire.source.batch_reader import KafkaWireBatchReader
from spark_kafka_wire.source.formats import resolve_columns, typed_schema
from spark_kafka_wire.source.options import (
    include_headers,
    parse_source_options,
    parse_stream_options,
    read_formats,
    with_decoding,
)
from spark_kafka_wire.source.planning import default_task_count, subscribed_topics
from spark_kafka_wire.source.schema import kafka_schema
from spark_kafka_wire.source.stream_reader import KafkaWireStreamReader


class KafkaWireDataSource(DataSource):
    """Kafka topics as DataFrames, over the Kafka wire protocol spoken in Python:
    ``format("kafkawire")`` for ``spark.read``, ``spark.readStream``, ``df.write`` and
    ``df.writeStream``. The options follow, by group (see the module docstring for examples).
    """

    @classmethod
    def name(cls) -> str:
        return "kafkawire"

    @brief_traceback
    def schema(self) -> StructType:
        base = kafka_schema(include_headers(self.options))
        formats = read_formats(self.options)
        if not formats.columns:
            return base
        # value.format / key.format: the columns get the registry's reader schemas, found by
        # the subjects of the topics read unless a subject or a schema id is given
        options = parse_source_options(self.options, batch=False)
        needs_topics = any(c.schema_id is None and c.subject is None for c in formats.columns)
        topics = subscribed_topics(planner_cluster(options.planner_client or options.client),
                                   options) if needs_topics else ()
        return typed_schema(base, resolve_columns(options.formats, topics),
                            options.formats.mode == PERMISSIVE)

    @brief_traceback
    def reader(self, schema: StructType) -> DataSourceReader:
        options = with_decoding(parse_source_options(self.options), schema)
        expected = typed_schema(kafka_schema(options.include_headers),
                                options.decoding.columns if options.decoding else (),
                                options.formats.mode == PERMISSIVE)
        if schema != expected:
            columns = ", ".join(f.name for f in expected.fields)
            raise ConfigurationError.of(
                REFUSED_OPTION, "USER_SCHEMA", columns=columns)
        return KafkaWireBatchReader(options, default_task_count())

    @brief_traceback
    def writer(self, schema: StructType, overwrite: bool) -> KafkaWireBatchWriter:
        if overwrite:
            raise ConfigurationError.of(UNSUPPORTED_VALUE, "SAVE_MODE_OVERWRITE")
        return KafkaWireBatchWriter(parse_sink_options(self.options), schema)

    @brief_traceback
    def streamReader(self, schema: StructType) -> KafkaWireStreamReader:
        options = parse_stream_options(self.options)
        source = with_decoding(options.source, schema)
        options = replace(options, source=source)
        expected = typed_schema(kafka_schema(source.include_headers),
                                source.decoding.columns if source.decoding else (),
                                source.formats.mode == PERMISSIVE)
        if schema != expected:
            raise ConfigurationError.of(REFUSED_OPTION, "USER_SCHEMA_STREAM")
        return KafkaWireStreamReader(options, default_task_count())

    @brief_traceback
    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaWireStreamWriter:
        # Complete mode arrives as overwrite=True; Kafka can only append, as Spark's kafka
        # sink does in every output mode.
        return KafkaWireStreamWriter(parse_sink_options(self.options), schema)


KafkaWireDataSource.__doc__ = f"{inspect.cleandoc(KafkaWireDataSource.__doc__ or '')}\n\n{manual()}"
