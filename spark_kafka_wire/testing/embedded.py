"""A real Kafka-compatible broker on loopback for tests and the demo: Tansu in memory, as
``kafkawire broker`` runs it (``cli/local_broker.py``, where the process is managed)."""

from __future__ import annotations

from spark_kafka_wire.cli.local_broker import PORT_ATTEMPTS, LocalBroker, free_port

__all__ = ["PORT_ATTEMPTS", "EmbeddedBroker", "free_port"]


class EmbeddedBroker(LocalBroker):
    """Tansu on a loopback port with in-memory storage."""
