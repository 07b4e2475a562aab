"""The Spark face: ``format("kafkawire")`` for batch reads and writes.

Planner processes build readers and writers and plan partitions; executor processes run
``read``/``write`` on pickled copies. So everything a task needs travels inside its
InputPartition or the pickled writer, and connections are opened inside ``read``/``write``.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.sink.batch_writer import KafkaWireBatchWriter
from spark_kafka_wire.sink.options import parse_sink_options
from spark_kafka_wire.sink.stream_writer import KafkaWireStreamWriter
from spark_kafka_wire.source.batch_reader import KafkaWireBatchReader
from spark_kafka_wire.source.options import (
    include_headers,
    parse_source_options,
    parse_stream_options,
)
from spark_kafka_wire.source.schema import kafka_schema
from spark_kafka_wire.source.stream_reader import KafkaWireStreamReader


class KafkaWireDataSource(DataSource):
    """Kafka topics as DataFrames, over the Kafka wire protocol spoken in Python."""

    @classmethod
    def name(cls) -> str:
        return "kafkawire"

    def schema(self) -> StructType:
        return kafka_schema(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_source_options(self.options)
        expected = kafka_schema(options.include_headers)
        if schema != expected:
            columns = ", ".join(f.name for f in expected.fields)
            raise ConfigurationError(
                f"kafkawire has a fixed schema ({columns}); do not pass a schema to the reader"
            )
        return KafkaWireBatchReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWireBatchWriter:
        if overwrite:
            raise ConfigurationError(
                "kafkawire appends to topics; save mode overwrite is not allowed "
                "(use mode('append'))"
            )
        return KafkaWireBatchWriter(parse_sink_options(self.options), schema)

    def streamReader(self, schema: StructType) -> KafkaWireStreamReader:
        options = parse_stream_options(self.options)
        expected = kafka_schema(options.source.include_headers)
        if schema != expected:
            raise ConfigurationError(
                "kafkawire has a fixed schema; do not pass a schema to the stream reader")
        return KafkaWireStreamReader(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaWireStreamWriter:
        # Complete mode arrives as overwrite=True; Kafka can only append, as Spark's kafka
        # sink does in every output mode.
        return KafkaWireStreamWriter(parse_sink_options(self.options), schema)
