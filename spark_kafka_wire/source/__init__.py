"""Spark's read side: ``spark.read`` and ``spark.readStream`` with ``format("kafkawire")``.

The driver resolves every partition's ``[start, end)`` offsets once (``planning``), so each
Spark task reads a fixed range (``batch_reader``), and a streaming query's micro-batches are the
same fixed ranges between offsets Spark checkpoints (``stream_reader``, ``rate_limits``).
"""
