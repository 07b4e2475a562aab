"""Client settings, named after the Java client's (the ``kafka.`` prefix removed)."""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.sasl.config import SaslConfig
from spark_kafka_wire.client.tls import TlsConfig

DEFAULT_PORT = 9092


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``host:port,host2:port`` (IPv6 as ``[::1]:9092``) into a list of addresses."""
    out: list[tuple[str, int]] = []
    for item in servers.split(","):
        item = item.strip()
        if not item:
            continue
        if "://" in item:  # tolerate PLAINTEXT://host:port as some tools print it
            item = item.split("://", 1)[1]
        if item.startswith("["):
            host, _, rest = item[1:].partition("]")
            port_text = rest.lstrip(":")
        elif item.count(":") == 1:
            host, _, port_text = item.partition(":")
        else:
            host, port_text = item, ""
        try:
            port = int(port_text) if port_text else DEFAULT_PORT
        except ValueError:
            raise ConfigurationError(
                f"kafka.bootstrap.servers: {item!r} is not host:port"
            ) from None
        if not host or not 0 < port < 65536:
            raise ConfigurationError(f"kafka.bootstrap.servers: {item!r} is not host:port")
        out.append((host, port))
    if not out:
        raise ConfigurationError(
            "kafka.bootstrap.servers is empty: give a comma-separated list of host:port"
        )
    return out


@dataclass(frozen=True)
class ClientConfig:
    """Everything a connection needs; small and picklable so it travels inside Spark tasks."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = "spark-kafka-wire"
    request_timeout_ms: int = 30_000
    connect_timeout_ms: int = 10_000
    # retriable failures are retried within a time budget (cluster.py); a count may also bound
    # them (Spark's fetchOffset.numRetries)
    retries: int = 2_147_483_647
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    metadata_max_age_ms: int = 300_000
    # librdkafka's api.version.request / broker.version.fallback: with the first off, send no
    # ApiVersions and use the versions of the named broker release (for 0.8/0.9 brokers).
    api_version_request: bool = True
    broker_version_fallback: str = "0.10.0"
    # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; with SSL/SASL_SSL every connection is
    # wrapped with ``tls``, with SASL_* it logs in with ``sasl`` (never None then). The reprs
    # of TlsConfig and SaslConfig hide the key and the password, so this one is safe to print.
    security_protocol: str = "PLAINTEXT"
    tls: TlsConfig | None = None
    sasl: SaslConfig | None = None

    @classmethod
    def from_servers(cls, servers: str, **kwargs: object) -> ClientConfig:
        return cls(tuple(parse_bootstrap(servers)), **kwargs)  # type: ignore[arg-type]
