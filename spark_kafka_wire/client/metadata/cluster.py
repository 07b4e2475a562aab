"""Cluster view: bootstrap, metadata cache, leader routing and the retry rule.

The recipe of Kafka's protocol guide (https://kafka.apache.org/protocol#protocol_partitioning):
cycle through the bootstrap list until one broker answers, fetch metadata, send each request to
the partition's leader, and on a stale-metadata error or a socket error refresh the metadata
and try again, with backoff, as the Java client's retry.backoff.ms and retry.backoff.max.ms do.

How long to keep trying is a time budget, not a count: an operation retries retriable failures
until ``request.timeout.ms`` has passed since it began, and a timeout (no answer within
``request.timeout.ms``, no connection within ``socket.connection.setup.timeout.ms``) is not
waited for twice. So a broker restarting for a few seconds, which refuses connections, is
waited for; and a broker that accepts and never answers, or a connection that hangs, fails
the operation after one timeout, naming the broker and the timeout. A cap set with
``KafkaClient.deadline`` replaces that budget and retries timeouts too: a write's
``delivery.timeout.ms``, as the Java producer. The cap also bounds each wait of the
connections (connect, send, answer), so an attempt begun just before it does not overrun it
by another request timeout. A count (``retries``; Spark's ``fetchOffset.numRetries``) may
stop it sooner.

One exception, for planning (``first_contact_fails_fast``, set on the driver's clients): a
client that has never reached a broker, whose every bootstrap server refuses the connection or
has a name that does not resolve, fails at once. A
wrong ``kafka.bootstrap.servers`` (a typo, the wrong port) looks like that, and the retries
would only make it wait the whole ``request.timeout.ms`` to say so; a cluster that was reached
before and now refuses is restarting, and is waited for as above.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar, cast

from spark_kafka_wire.client.config import ClientConfig, format_address
from spark_kafka_wire.client.errors import (
    INVALID_VALUE,
    BrokerConnectionError,
    ConfigurationError,
    NoBrokersAvailableError,
)
from spark_kafka_wire.client.wire.connection import BrokerConnection, Deadline
from spark_kafka_wire.client.wire.hooks import CloseReason, HookRegistry
from spark_kafka_wire.protocol.bodies import (
    MetadataRequest,
    MetadataRequestTopics,
    MetadataResponse,
)
from spark_kafka_wire.protocol.errors import (
    ErrorCode,
    InvalidMetadataError,
    KafkaError,
    ProtocolError,
    error_for_code,
    shown,
)
from spark_kafka_wire.protocol.messages import METADATA

log = logging.getLogger(__name__)
T = TypeVar("T")

# A partition of a topic, as requests and offset maps name it: (topic, partition).
TopicPartition = tuple[str, int]

# Kafka's rule for topic names (org.apache.kafka.common.internals.Topic.validate): 1 to 249
# characters from [a-zA-Z0-9._-], neither "." nor "..". A broker never holds another name.
MAX_TOPIC_LENGTH = 249
_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def check_topic_name(name: str, what: str) -> str:
    """``name`` when Kafka allows it as a topic name; ConfigurationError naming ``what`` (the
    option or column it came from) otherwise."""
    if not name or name in (".", "..") or len(name) > MAX_TOPIC_LENGTH \
            or not _TOPIC_CHARS.issuperset(name):
        raise ConfigurationError.of(
            INVALID_VALUE, "TOPIC_NAME", what=what, name=shown(name, 60),
            max_topic_length=MAX_TOPIC_LENGTH)
    return name


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


@dataclass(frozen=True)
class TopicInfo:
    name: str
    error_code: int
    is_internal: bool
    partitions: dict[int, PartitionInfo]

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


@dataclass(frozen=True)
class ClusterMetadata:
    brokers: dict[int, tuple[str, int]]
    topics: dict[str, TopicInfo]
    controller_id: int
    cluster_id: str | None


def topic_error(topic: str, info: TopicInfo | None, principal: str | None,
                missing: str | None = None) -> KafkaError:
    """The error of a topic a Metadata answer did not give (``info`` None: not listed), one
    wording for the source, the CLI and the client. ``missing`` (what the caller makes of an
    unknown topic: "the subscribed topic does not exist") is said only where the broker
    answered that the topic is unknown; an authorization failure says only that, naming
    ``principal`` and the kafka-acls grant (a broker refuses a principal without DESCRIBE
    this way whether or not the topic exists, so "does not exist" would be a guess)."""
    code = info.error_code if info is not None and info.error_code else \
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return error_for_code(
        code, topic=topic, context="Metadata", principal=principal,
        message=missing if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else None)


def is_retriable(exc: BaseException) -> bool:
    return isinstance(exc, (BrokerConnectionError, NoBrokersAvailableError)) or (
        isinstance(exc, KafkaError) and exc.retriable
    )


class KafkaClient:
    """Connections to a cluster, shared by every request of one process."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        # what observes every connection of this client (client/wire/hooks.py)
        self.hooks = HookRegistry()
        self._brokers: dict[int, tuple[str, int]] = {}
        self._topics: dict[str, TopicInfo] = {}
        self._metadata_time = 0.0
        self._deadline: Deadline | None = None  # cap on every retry loop and wait, if set
        self._closed_counts: Counter[str] = Counter()  # requests_sent of connections dropped
        self._closed_bytes: Counter[str] = Counter()  # bytes_received of connections dropped
        self._reached = False  # a connection to a broker has been made once
        # A planner's client (pool.planner_client): the rule for a wrong address applies
        # until a broker has been reached (see the module docstring).
        self.first_contact_fails_fast = False

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close(CloseReason.CLIENT_CLOSED)
            self._closed_counts.update(conn.requests_sent)
            self._closed_bytes.update(conn.bytes_received)
        self._connections.clear()

    def request_counts(self) -> dict[str, int]:
        """Requests this client has sent, by API name ("Fetch", "ListOffsets", "Metadata",
        ...), over all its connections since it was made: what an operation cost in round
        trips. Take it before and after an operation to see what the operation sent; a
        request counts once it is written to the socket, retries included. ApiVersions and
        SASL requests of each connection's set-up count too."""
        total = Counter(self._closed_counts)
        for conn in self._connections.values():
            total.update(conn.requests_sent)
        return dict(total)

    def bytes_received(self) -> dict[str, int]:
        """Bytes of the answers this client has read, by API name, as ``request_counts``
        counts requests: what an operation cost on the wire (a Fetch's records included)."""
        total = Counter(self._closed_bytes)
        for conn in self._connections.values():
            total.update(conn.bytes_received)
        return dict(total)

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connections -------------------------------------------------------------------------
    def _connection(self, host: str, port: int, node_id: int | None = None) -> BrokerConnection:
        conn = self._connections.get((host, port))
        if conn is None:
            conn = BrokerConnection(host, port, self.config, node_id,
                                    deadline=self.current_deadline, hooks=self.hooks)
            self._connections[(host, port)] = conn
        conn.connect()
        self._reached = True
        return conn

    def broker(self, node_id: int) -> BrokerConnection:
        """Connection to broker ``node_id`` as advertised in metadata."""
        addr = self._brokers.get(node_id)
        if addr is None:
            self.refresh_metadata()
            addr = self._brokers.get(node_id)
            if addr is None:
                raise error_for_code(
                    ErrorCode.BROKER_NOT_AVAILABLE,
                    message=f"broker {node_id} is not in the cluster metadata",
                )
        return self._connection(addr[0], addr[1], node_id)

    def any_connection(self) -> BrokerConnection:
        """A live connection: an open one, else the bootstrap list cycled until one answers."""
        for conn in self._connections.values():
            if conn.connected:
                return conn
        candidates = list(self.config.bootstrap_servers)
        random.shuffle(candidates)
        candidates += [a for a in self._brokers.values() if a not in candidates]
        last: Exception | None = None
        nothing_listens = True
        for host, port in candidates:
            try:
                return self._connection(host, port)
            except BrokerConnectionError as exc:
                log.info("bootstrap server %s unavailable: %s", format_address(host, port),
                         exc.reason)
                last = exc
                nothing_listens = nothing_listens and exc.nothing_listens
        error = NoBrokersAvailableError([format_address(h, p) for h, p in candidates], last)
        error.nothing_listens = nothing_listens and last is not None
        if error.nothing_listens and self.first_contact_fails_fast and not self._reached:
            error.conclusive = True  # no retry: see the module docstring
        raise error

    # -- metadata ----------------------------------------------------------------------------
    def fetch_metadata(
        self, topics: Iterable[str] | None = None, allow_auto_create: bool = False
    ) -> ClusterMetadata:
        """One Metadata request (``topics`` None = all topics); updates the cache."""
        wanted = None if topics is None else sorted(set(topics))

        def attempt() -> ClusterMetadata:
            conn = self.any_connection()
            version = conn.version(METADATA)
            req_topics: list[MetadataRequestTopics] | None
            if wanted is None:
                req_topics = [] if version == 0 else None
            else:
                req_topics = [{"name": t} for t in wanted]
            body: MetadataRequest = {
                "topics": req_topics, "allow_auto_topic_creation": allow_auto_create}
            resp = conn.request(METADATA, body)
            return self._apply_metadata(resp, conn.name)

        return self.retry(attempt, "Metadata request")

    def _apply_metadata(self, resp: MetadataResponse, broker: str) -> ClusterMetadata:
        brokers = {b["node_id"]: (b["host"], b["port"]) for b in resp["brokers"]}
        topics: dict[str, TopicInfo] = {}
        for t in resp["topics"]:
            name = cast(str, t["name"])  # null only for topics asked by id (v12+), never here
            indexes = sorted(p["partition_index"] for p in t["partitions"])
            if t["error_code"] == ErrorCode.NONE and indexes != list(range(len(indexes))):
                # A topic's partitions are numbered 0..n-1 and Metadata lists them all; other
                # numbers are damaged bytes, which would make a read skip a partition.
                raise ProtocolError(
                    f"the Metadata answer numbers the topic's {len(indexes)} partitions "
                    f"{indexes[:8]}{'...' if len(indexes) > 8 else ''} instead of 0 to "
                    f"{len(indexes) - 1}: it is damaged", topic=name, broker=broker)
            parts = {
                p["partition_index"]: PartitionInfo(
                    name,
                    p["partition_index"],
                    p["leader_id"],
                    p["leader_epoch"],
                    tuple(p["replica_nodes"]),
                    tuple(p["isr_nodes"]),
                    p["error_code"],
                )
                for p in t["partitions"]
            }
            topics[name] = TopicInfo(name, t["error_code"], t["is_internal"], parts)
        self._brokers.update(brokers)
        for name, info in topics.items():
            if info.error_code == ErrorCode.NONE:
                self._topics[name] = info
            else:
                self._topics.pop(name, None)
        self._metadata_time = time.monotonic()
        return ClusterMetadata(brokers, topics, resp["controller_id"], resp["cluster_id"])

    def refresh_metadata(self, topics: Iterable[str] | None = None) -> None:
        known = list(self._topics) if topics is None else list(topics)
        self.fetch_metadata(known if known else None)

    def topic(self, name: str, refresh: bool = False) -> TopicInfo:
        """Metadata of one existing topic; UnknownTopicOrPartition (naming it) otherwise."""
        stale = time.monotonic() - self._metadata_time > self.config.metadata_max_age_ms / 1000
        info = None if (refresh or stale) else self._topics.get(name)
        if info is None:
            md = self.fetch_metadata([name])
            t = md.topics.get(name)
            if t is None or t.error_code:
                raise topic_error(name, t, self.config.principal)
            info = t
        return info

    def leader(self, topic: str, partition: int) -> int:
        info = self.topic(topic)
        p = info.partitions.get(partition)
        if p is None:
            raise error_for_code(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topic=topic, partition=partition,
                message=f"the topic has {info.num_partitions} partitions",
            )
        if p.leader < 0:
            raise error_for_code(ErrorCode.LEADER_NOT_AVAILABLE, topic=topic, partition=partition)
        return p.leader

    def leader_connection(self, topic: str, partition: int) -> BrokerConnection:
        return self.broker(self.leader(topic, partition))

    # -- retry rule --------------------------------------------------------------------------
    @contextmanager
    def deadline(self, at: float | None, setting: str) -> Iterator[None]:
        """Within the block, retry loops stop at monotonic time ``at`` instead of after
        ``request.timeout.ms``, and no wait of a connection lasts beyond it (None: no change).
        ``setting`` names what set it (kafka.delivery.timeout.ms) for the timeout errors. The
        earlier of nested deadlines wins."""
        outer = self._deadline
        if at is not None and (outer is None or at < outer.at):
            self._deadline = Deadline(at, setting)
        try:
            yield
        finally:
            self._deadline = outer

    def current_deadline(self) -> Deadline | None:
        """The deadline of the block being run (see ``deadline``), if any."""
        return self._deadline

    def retry(self, attempt: Callable[[], T], what: str, retries: int | None = None) -> T:
        """Run ``attempt``; on a retriable error refresh metadata, back off and run it again,
        until the time budget (see the module docstring) or ``retries`` runs out."""
        retries = self.config.retries if retries is None else retries
        backoff = self.config.retry_backoff_ms / 1000
        start = time.monotonic()
        budget_ends = self._deadline.at if self._deadline is not None \
            else start + self.config.request_timeout_ms / 1000
        n = 0
        while True:
            try:
                return attempt()
            except (KafkaError, BrokerConnectionError, NoBrokersAvailableError) as exc:
                if not is_retriable(exc) or n >= retries or (
                        getattr(exc, "conclusive", False) and self._deadline is None):
                    raise
                pause = backoff * (0.8 + 0.4 * random.random())
                if time.monotonic() + pause >= budget_ends:
                    log.info("%s failed after %d attempts in %.1f s; giving up: %s", what, n + 1,
                             time.monotonic() - start, exc)
                    raise
                n += 1
                log.info("%s failed (%s); retry %d", what, exc, n)
                time.sleep(pause)
                backoff = min(backoff * 2, self.config.retry_backoff_max_ms / 1000)
                if getattr(exc, "invalid_metadata", False) or isinstance(exc, InvalidMetadataError):
                    self._topics.clear()
                    self._metadata_time = 0.0
