"""Record value formats: bytes <-> values, no I/O and no Spark.

Confluent's wire framing (``confluent``), Avro schemas as Spark and Arrow types
(``avro_types``), and Avro values decoded into Arrow and encoded from it (``avro_codec``).
Kept below the Spark face and beside the protocol layer so a task decodes a whole column of
record values in the worker without pyspark, and the same code can be tested without Spark.
"""
