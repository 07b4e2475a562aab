"""Errors of the I/O layer: brokers that cannot be reached or stop answering."""

from __future__ import annotations

from ..protocol.errors import KafkaWireError


class BrokerConnectionError(KafkaWireError):
    """A socket to one broker failed (refused, reset, closed mid-response).

    Retriable: the client refreshes metadata and tries again, possibly on another broker.
    """

    retriable = True
    invalid_metadata = True

    def __init__(self, broker: str, reason: str) -> None:
        self.broker = broker
        self.reason = reason
        super().__init__(f"connection to broker {broker} failed: {reason}")


class RequestTimeoutError(BrokerConnectionError):
    """A broker did not answer within request.timeout.ms."""

    def __init__(self, broker: str, what: str, timeout_ms: int) -> None:
        super().__init__(
            broker,
            f"no response to {what} within {timeout_ms} ms (kafka.request.timeout.ms); "
            "the broker is overloaded or unreachable",
        )


class NoBrokersAvailableError(KafkaWireError):
    """None of the bootstrap servers answered.

    Retriable (a cluster may be restarting); the caller's bounded retries decide when to give up.
    """

    retriable = True
    invalid_metadata = True

    def __init__(self, servers: list[str], last: Exception | None) -> None:
        self.servers = servers
        detail = f" (last error: {last})" if last else ""
        super().__init__(
            f"none of the bootstrap servers {', '.join(servers)} could be reached{detail}. "
            "Check kafka.bootstrap.servers, that the brokers are running and that this "
            "machine can reach them"
        )
