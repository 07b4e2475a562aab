"""Spark's write side: ``df.write`` and ``df.writeStream`` with ``format("kafkawire")``.

Each Spark task partitions its Arrow batches, encodes record batches and produces them
(``batch_writer``); a streaming query writes each micro-batch the same way (``stream_writer``).
"""
