"""One KafkaClient per configuration per Python process, reused across tasks.

Spark reuses Python workers between tasks, so keeping connections open saves a TCP handshake
and an ApiVersions exchange per broker per task. Connections reconnect lazily after a failure.
"""

from __future__ import annotations

import atexit
import os
import threading

from spark_kafka_wire.client.cluster import KafkaClient
from spark_kafka_wire.client.config import ClientConfig

_lock = threading.Lock()
_clients: dict[tuple[int, ClientConfig], KafkaClient] = {}


def shared_client(config: ClientConfig) -> KafkaClient:
    key = (os.getpid(), config)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = KafkaClient(config)
            _clients[key] = client
        return client


def close_all() -> None:
    with _lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


atexit.register(close_all)
