"""The I/O layer: everything that talks to brokers, ZooKeeper and the Schema Registry, no Spark.

Laid out by concern, each folder saying what it holds: ``wire`` (one connection: framing,
pairing, hooks), ``metadata`` (the cluster interface, leaders, topic admin), ``fetching``
(range reads, offsets, timestamps), ``producer`` (batches, idempotence, transactions, the
writer of a task), ``groups`` (assignment, members, committed offsets), ``registry`` (Schema
Registry), ``zookeeper``, ``security`` (TLS, SASL) and ``kafka07`` (Kafka 0.7's own client).
At the top only what every concern shares: settings (``config``) and their ``defaults``,
``errors``, the operator's settings (``operator``) and the per-process ``pool``.
"""
