"""spark-kafka-wire: Kafka topics as Spark DataFrames over the Kafka wire protocol, in Python.

    from spark_kafka_wire import KafkaWireDataSource
    spark.dataSource.register(KafkaWireDataSource)
    spark.read.format("kafkawire").option("kafka.bootstrap.servers", ...).option("subscribe", ...)
"""

from .datasource import KafkaWireDataSource

__all__ = ["KafkaWireDataSource"]
__version__ = "0.1.0"
