"""What the clients a test watches write on the wire, through their connection hooks
(client/wire/hooks.py): a list of what ``record`` makes of each request written (None:
not kept), for fixtures that count requests without patching the connection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.wire.hooks import ConnectionHooks, RequestEvent

T = TypeVar("T")


class RequestLog(list[T], Generic[T]):
    def __init__(self, record: Callable[[RequestEvent], T | None]) -> None:
        super().__init__()
        self._record = record
        self._watched: list[tuple[KafkaClient, ConnectionHooks]] = []

    def _written(self, event: RequestEvent) -> None:
        kept = self._record(event)
        if kept is not None:
            self.append(kept)

    def watch(self, client: KafkaClient) -> KafkaClient:
        """Log the requests every connection of ``client`` writes from now on."""
        self._watched.append((client, client.hooks.add(ConnectionHooks(on_request=self._written))))
        return client

    def close(self) -> None:
        """Stop watching (a fixture's teardown: the clients may outlive the test)."""
        for client, hooks in self._watched:
            client.hooks.remove(hooks)
        self._watched.clear()
