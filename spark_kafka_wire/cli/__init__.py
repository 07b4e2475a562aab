"""The ``kafkawire`` command line: topics, offsets, produce, tail, lag and check, on the client
layer alone, so it answers without starting Spark (and works where pyspark is not installed).

- ``app``: the command group, global options, errors as one line and an exit status;
- ``settings``: global options turned into client settings exactly as a query's options;
- ``topics`` (``topics``, ``describe``), ``offsets``, ``produce``, ``tail``, ``lag``, ``check``:
  one module per command (``topics`` holds the lookups the others share);
- ``records``: records as JSON lines, CSV and table cells; ``times``: ``--at`` and timestamps;
- ``output``: tables for terminals, TSV for pipes.
"""

from spark_kafka_wire.cli.app import cli, main

__all__ = ["cli", "main"]
