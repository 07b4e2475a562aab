"""spark-kafka-wire: Kafka topics as Spark DataFrames over the Kafka wire protocol, in Python.

    from spark_kafka_wire import KafkaWireDataSource
    spark.dataSource.register(KafkaWireDataSource)
    spark.read.format("kafkawire").option("kafka.bootstrap.servers", ...).option("subscribe", ...)

The Spark face is loaded on first use (PEP 562), so ``spark_kafka_wire.protocol`` and
``spark_kafka_wire.client`` import and work in a Python without pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_kafka_wire.datasource import KafkaWireDataSource
    from spark_kafka_wire.options import options_from_properties

__all__ = ["KafkaWireDataSource", "options_from_properties"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "KafkaWireDataSource":
        # Imported here, not at the top: the Spark face needs pyspark, the layers below do not.
        from spark_kafka_wire.datasource import KafkaWireDataSource  # noqa: PLC0415

        globals()[name] = KafkaWireDataSource  # later lookups skip this function
        return KafkaWireDataSource
    if name == "options_from_properties":
        from spark_kafka_wire.options import options_from_properties  # noqa: PLC0415

        globals()[name] = options_from_properties
        return options_from_properties
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
