"""The Spark face: ``format("kafkawire")`` for batch reads and writes.

Planner processes build readers and writers and plan partitions; executor processes run
``read``/``write`` on pickled copies. So everything a task needs travels inside its
InputPartition or the pickled writer, and connections are opened inside ``read``/``write``.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from .protocol.errors import ConfigurationError
from .reader import KafkaWireBatchReader
from .schema import KAFKA_SCHEMA
from .sink_options import parse_sink_options
from .source_options import parse_source_options
from .writer import KafkaWireBatchWriter


class KafkaWireDataSource(DataSource):
    """Kafka topics as DataFrames, over the Kafka wire protocol spoken in Python."""

    @classmethod
    def name(cls) -> str:
        return "kafkawire"

    def schema(self) -> StructType:
        return KAFKA_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        if schema != KAFKA_SCHEMA:
            raise ConfigurationError(
                "kafkawire has a fixed schema (key, value, topic, partition, offset, "
                "timestamp, timestampType); do not pass a schema to the reader"
            )
        return KafkaWireBatchReader(parse_source_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> KafkaWireBatchWriter:
        if overwrite:
            raise ConfigurationError(
                "kafkawire appends to topics; save mode overwrite is not allowed "
                "(use mode('append'))"
            )
        return KafkaWireBatchWriter(parse_sink_options(self.options), schema)
