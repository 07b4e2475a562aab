"""Client settings, named after the Java client's (the ``kafka.`` prefix removed).

Their defaults are ``defaults.py``'s, which the option table (``options/table.py``) reads
too, so a ClientConfig built here connects as a query given no such option does, and the
option reference (docs/reference/options.md) says what the code does.
"""

from __future__ import annotations

from dataclasses import dataclass

from spark_kafka_wire.client import defaults
from spark_kafka_wire.client.errors import INVALID_VALUE, MISSING_OPTION, ConfigurationError
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity
from spark_kafka_wire.protocol.errors import shown
from spark_kafka_wire.protocol.primitives import INT32_MAX
from spark_kafka_wire.protocol.versions import is_kafka07

DEFAULT_PORT = 9092


def registry_only(release: str) -> bool:
    """Whether brokers of ``release`` (kafka.broker.version.fallback) are found through
    ZooKeeper only: they have no Metadata request (see ``ClientConfig.registry_only``)."""
    return is_kafka07(release)


def format_address(host: str, port: int) -> str:
    """``host:port`` as kafka.bootstrap.servers takes it back: an IPv6 host in brackets
    (``[::1]:9092``; unbracketed, ``::1:9092`` reads as a host without a port). Brokers found
    in ZooKeeper or Metadata carry bare IPv6 hosts (Kafka registers ``"host": "::1"``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _bad_address(item: str, why: str) -> ConfigurationError:
    return ConfigurationError.of(
        INVALID_VALUE, "BOOTSTRAP_SERVER_NOT_HOST_PORT", item=shown(item), why=why)


def check_host(host: str, item: str) -> None:
    """A host name a socket can look up: printable, no white space, and IDNA-encodable (labels
    of 1 to 63 characters) unless it is an IPv6 address."""
    if not host:
        raise _bad_address(item, "no host")
    if not host.isprintable() or any(c.isspace() for c in host):
        raise _bad_address(item, "the host holds white space or control characters")
    if ":" in host:  # an IPv6 literal; the socket layer checks the rest
        return
    try:
        host.encode("idna")
    except UnicodeError:
        raise _bad_address(item, "a part of the host name is empty or longer than 63 "
                           "characters") from None


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """``host:port,host2:port`` (IPv6 as ``[::1]:9092``) into a list of addresses."""
    out: list[tuple[str, int]] = []
    for item in servers.split(","):
        item = item.strip()
        if not item:
            continue
        address = item.split("://", 1)[1] if "://" in item else item  # PLAINTEXT://host:port
        if address.startswith("["):
            host, bracket, rest = address[1:].partition("]")
            if not bracket or (rest and not rest.startswith(":")):
                raise _bad_address(item, "an IPv6 address is written [address]:port")
            port_text = rest[1:]
        elif address.count(":") == 1:
            host, _, port_text = address.partition(":")
        else:
            host, port_text = address, ""
        if port_text and not (port_text.isascii() and port_text.isdigit()
                              and len(port_text) <= 5):
            raise _bad_address(item, "the port is not a number")
        port = int(port_text) if port_text else DEFAULT_PORT
        if not 0 < port < 65536:
            raise _bad_address(item, "the port is not between 1 and 65535")
        check_host(host, item)
        out.append((host, port))
    if not out:
        raise ConfigurationError.of(MISSING_OPTION, "BOOTSTRAP_SERVERS_EMPTY")
    return out


@dataclass(frozen=True)
class ClientConfig:
    """Everything a connection needs; small and picklable so it travels inside Spark tasks."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = defaults.CLIENT_ID
    request_timeout_ms: int = defaults.REQUEST_TIMEOUT_MS
    connect_timeout_ms: int = defaults.SOCKET_CONNECTION_SETUP_TIMEOUT_MS
    # retriable failures are retried within a time budget (cluster.py); a count may also bound
    # them (Spark's fetchOffset.numRetries, given: driver-side lookups only); by default none
    retries: int = INT32_MAX
    retry_backoff_ms: int = defaults.RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = defaults.RETRY_BACKOFF_MAX_MS
    metadata_max_age_ms: int = defaults.METADATA_MAX_AGE_MS
    # librdkafka's api.version.request / broker.version.fallback: with the first off, send no
    # ApiVersions and use the versions of the named broker release (for 0.8/0.9 brokers).
    api_version_request: bool = defaults.API_VERSION_REQUEST
    broker_version_fallback: str = defaults.BROKER_VERSION_FALLBACK
    # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; with SSL/SASL_SSL every connection is
    # wrapped with ``tls``, with SASL_* it logs in with ``sasl`` (never None then). The reprs
    # of TlsConfig and SaslConfig hide the key and the password, so this one is safe to print.
    security_protocol: str = defaults.SECURITY_PROTOCOL
    tls: TlsConfig | None = None
    sasl: SaslConfig | None = None
    # Kafka 0.7 only (broker_version_fallback 0.7.x): the ZooKeeper the driver reads the
    # brokers and topic layouts from (client/kafka07/cluster.py); tasks never use it.
    zookeeper_connect: str | None = None
    # ... and how to reach it (zookeeper.ssl.*, zookeeper.sasl.jaas.config); its repr hides
    # the password and the key.
    zookeeper_security: ZooKeeperSecurity | None = None

    @property
    def kafka07(self) -> bool:
        """Whether the brokers are Kafka 0.7 brokers (their own protocol, byte offsets)."""
        return is_kafka07(self.broker_version_fallback)

    # What a cluster of these settings can do, known before connecting, for the code above
    # the client layer, which never names a protocol generation
    # (tests/unit/test_architecture.py): each says what it means to a reader or a writer.

    @property
    def registry_only(self) -> bool:
        """Whether the brokers have no Metadata request (nor any request of Kafka's versioned
        API): ZooKeeper alone says where they and their topics' partitions are, and only the
        ``Cluster`` interface (``client/metadata/cluster_api.py``) and ``client/producer/task_writers.py``
        speak to them."""
        return registry_only(self.broker_version_fallback)

    @property
    def has_group_coordinator(self) -> bool:
        """Whether the brokers keep consumer groups' offsets (else only ZooKeeper does)."""
        return not self.kafka07

    @property
    def plain_messages(self) -> bool:
        """Whether records written are plain messages: a value only (a key only picks the
        partition; no headers, timestamps or null values), without idempotence,
        transactions or CreateTopics, compressed by none, gzip or snappy only."""
        return self.kafka07

    @property
    def principal(self) -> str | None:
        """The principal a broker's authorizer sees for this client, as ACLs name it, when
        the settings tell it: the SASL user (User:alice; a Kerberos principal's first
        component, what Kafka's default principal-to-local rule keeps), User:ANONYMOUS with
        no authentication. None where the broker decides it from what the client cannot
        read: a client certificate's subject, mapped by ssl.principal.mapping.rules."""
        if self.sasl is not None:
            user = self.sasl.username
            if self.sasl.mechanism == "GSSAPI":
                user = user.split("@", 1)[0].split("/", 1)[0]
            return f"User:{user}" if user else None
        if self.security_protocol == "SSL" and self.tls is not None and self.tls.cert_chain:
            return None
        return "User:ANONYMOUS"

    @classmethod
    def from_servers(cls, servers: str, **kwargs: object) -> ClientConfig:
        return cls(tuple(parse_bootstrap(servers)), **kwargs)  # type: ignore[arg-type]
