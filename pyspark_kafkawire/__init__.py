"""Lets Spark find the ``kafkawire`` format by itself once the package is installed.

Spark scans for top-level modules named ``pyspark_*`` that expose ``DefaultSource``.
"""

from spark_kafka_wire.datasource import KafkaWireDataSource as DefaultSource

__all__ = ["DefaultSource"]
