"""Typed errors shared by every layer.

Kafka reports failures as int16 codes. Callers need two facts about each code (retry it?
refresh metadata first?) and users need a message that says what happened and where, so each
code maps to a class in a family and every instance carries topic, partition, offset and
broker when known. Bytes that cannot be parsed raise ProtocolError, never IndexError or
struct.error.
"""

from __future__ import annotations

from dataclasses import dataclass


class KafkaWireError(Exception):
    """Base of every error spark-kafka-wire raises on purpose."""


class ConfigurationError(KafkaWireError, ValueError):
    """An option is missing, unknown or has a value that cannot work."""


def _where(topic: str | None, partition: int | None, offset: int | None, broker: str | None) -> str:
    parts = []
    if topic is not None:
        parts.append(f"topic {topic!r}")
    if partition is not None and partition >= 0:
        parts.append(f"partition {partition}")
    if offset is not None:
        parts.append(f"offset {offset}")
    if broker:
        parts.append(f"broker {broker}")
    return ", ".join(parts)


class ProtocolError(KafkaWireError):
    """Bytes that do not follow the Kafka protocol (truncated, impossible lengths, bad magic)."""

    def __init__(
        self,
        reason: str,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        broker: str | None = None,
    ) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.broker = broker
        where = _where(topic, partition, offset, broker)
        super().__init__(f"{reason} ({where})" if where else reason)


class CorruptRecordError(ProtocolError):
    """Record data failed its CRC or its structure is inconsistent."""

    def __init__(self, reason: str, **where: object) -> None:
        super().__init__(
            f"corrupt record data: {reason}; the broker returned damaged bytes, retry the "
            "read or check the topic with another client",
            **where,  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class ErrorSpec:
    code: int
    name: str
    retriable: bool = False
    invalid_metadata: bool = False
    hint: str = ""


class KafkaError(KafkaWireError):
    """An error code returned by a broker."""

    spec: ErrorSpec = ErrorSpec(-1, "UNKNOWN_SERVER_ERROR")

    def __init__(
        self,
        spec: ErrorSpec | None = None,
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        broker: str | None = None,
        context: str = "",
        message: str | None = None,
    ) -> None:
        if spec is not None:
            self.spec = spec
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.broker = broker
        text = f"Kafka error {self.spec.name} ({self.spec.code})"
        if context:
            text += f" in {context}"
        where = _where(topic, partition, offset, broker)
        if where:
            text += f" for {where}"
        if message:
            text += f": {message}"
        if self.spec.hint:
            text += f". {self.spec.hint}"
        super().__init__(text)

    @property
    def code(self) -> int:
        return self.spec.code

    @property
    def retriable(self) -> bool:
        return self.spec.retriable

    @property
    def invalid_metadata(self) -> bool:
        return self.spec.invalid_metadata


# Families: catch these, not individual codes.
class RetriableError(KafkaError):
    """Transient: retrying the same request later may succeed."""


class InvalidMetadataError(RetriableError):
    """The client's view of leaders or topics is stale: refresh metadata, then retry."""


class OffsetOutOfRangeError(KafkaError):
    """The requested offset is not in the log (deleted by retention, or not yet written)."""


class RecordTooLargeError(KafkaError):
    """A record or request exceeds a broker size limit; retrying cannot help."""


class AuthorizationError(KafkaError):
    """The principal lacks an ACL for the operation."""


class AuthenticationError(KafkaError):
    """SASL authentication failed or the mechanism is not enabled."""


class UnsupportedVersionError(KafkaError):
    """The broker does not serve the requested API version."""


class TopicAlreadyExistsError(KafkaError):
    """CreateTopics for a topic that exists."""


class ProducerStateError(KafkaError):
    """Idempotent or transactional producer state was rejected (fenced, out of sequence)."""


class InvalidRequestError(KafkaError):
    """The broker judged the request itself invalid (bad config, topic name, acks ...)."""


# Codes callers catch by name.
class UnknownTopicOrPartitionError(InvalidMetadataError):
    """The topic or partition does not exist (or is not visible to this principal)."""


class LeaderNotAvailableError(InvalidMetadataError):
    """A leader election is in progress."""


class NotLeaderOrFollowerError(InvalidMetadataError):
    """The request went to a broker that no longer leads the partition."""


class RequestTimedOutError(RetriableError):
    """The broker gave up waiting (for replicas, for a long poll)."""


class MessageTooLargeError(RecordTooLargeError):
    """A batch exceeds the broker's or topic's message.max.bytes."""


_R, _M = True, True
_REFRESH = "Metadata will be refreshed and the request retried"
_SPECS: list[tuple[ErrorSpec, type[KafkaError]]] = [
    (ErrorSpec(-1, "UNKNOWN_SERVER_ERROR", hint="See the broker log"), KafkaError),
    (ErrorSpec(1, "OFFSET_OUT_OF_RANGE", hint="The data was deleted by retention or the offset "
               "was never written; set failOnDataLoss=false to skip it"), OffsetOutOfRangeError),
    (ErrorSpec(2, "CORRUPT_MESSAGE", _R), RetriableError),
    (ErrorSpec(3, "UNKNOWN_TOPIC_OR_PARTITION", _R, _M, hint="Check the topic name; it may not "
               "exist yet"), UnknownTopicOrPartitionError),
    (ErrorSpec(4, "INVALID_FETCH_SIZE"), InvalidRequestError),
    (ErrorSpec(5, "LEADER_NOT_AVAILABLE", _R, _M, hint=_REFRESH), LeaderNotAvailableError),
    (ErrorSpec(6, "NOT_LEADER_OR_FOLLOWER", _R, _M, hint=_REFRESH), NotLeaderOrFollowerError),
    (ErrorSpec(7, "REQUEST_TIMED_OUT", _R), RequestTimedOutError),
    (ErrorSpec(8, "BROKER_NOT_AVAILABLE", _R, _M), InvalidMetadataError),
    (ErrorSpec(9, "REPLICA_NOT_AVAILABLE", _R, _M), InvalidMetadataError),
    (ErrorSpec(10, "MESSAGE_TOO_LARGE", hint="Raise the broker's message.max.bytes or send "
               "smaller records"), MessageTooLargeError),
    (ErrorSpec(11, "STALE_CONTROLLER_EPOCH"), KafkaError),
    (ErrorSpec(12, "OFFSET_METADATA_TOO_LARGE"), InvalidRequestError),
    (ErrorSpec(13, "NETWORK_EXCEPTION", _R, _M), InvalidMetadataError),
    (ErrorSpec(14, "COORDINATOR_LOAD_IN_PROGRESS", _R), RetriableError),
    (ErrorSpec(15, "COORDINATOR_NOT_AVAILABLE", _R), RetriableError),
    (ErrorSpec(16, "NOT_COORDINATOR", _R), RetriableError),
    (ErrorSpec(17, "INVALID_TOPIC_EXCEPTION", hint="Topic names use [a-zA-Z0-9._-], at most "
               "249 characters"), InvalidRequestError),
    (ErrorSpec(18, "RECORD_LIST_TOO_LARGE"), RecordTooLargeError),
    (ErrorSpec(19, "NOT_ENOUGH_REPLICAS", _R), RetriableError),
    (ErrorSpec(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", _R), RetriableError),
    (ErrorSpec(21, "INVALID_REQUIRED_ACKS"), InvalidRequestError),
    (ErrorSpec(22, "ILLEGAL_GENERATION"), KafkaError),
    (ErrorSpec(24, "INVALID_GROUP_ID"), InvalidRequestError),
    (ErrorSpec(25, "UNKNOWN_MEMBER_ID"), KafkaError),
    (ErrorSpec(27, "REBALANCE_IN_PROGRESS", _R), RetriableError),
    (ErrorSpec(28, "INVALID_COMMIT_OFFSET_SIZE"), InvalidRequestError),
    (ErrorSpec(29, "TOPIC_AUTHORIZATION_FAILED", hint="Grant the principal access to the "
               "topic"), AuthorizationError),
    (ErrorSpec(30, "GROUP_AUTHORIZATION_FAILED"), AuthorizationError),
    (ErrorSpec(31, "CLUSTER_AUTHORIZATION_FAILED"), AuthorizationError),
    (ErrorSpec(32, "INVALID_TIMESTAMP"), InvalidRequestError),
    (ErrorSpec(33, "UNSUPPORTED_SASL_MECHANISM"), AuthenticationError),
    (ErrorSpec(34, "ILLEGAL_SASL_STATE"), AuthenticationError),
    (ErrorSpec(35, "UNSUPPORTED_VERSION"), UnsupportedVersionError),
    (ErrorSpec(36, "TOPIC_ALREADY_EXISTS"), TopicAlreadyExistsError),
    (ErrorSpec(37, "INVALID_PARTITIONS"), InvalidRequestError),
    (ErrorSpec(38, "INVALID_REPLICATION_FACTOR", hint="Use a replication factor no larger "
               "than the number of brokers"), InvalidRequestError),
    (ErrorSpec(39, "INVALID_REPLICA_ASSIGNMENT"), InvalidRequestError),
    (ErrorSpec(40, "INVALID_CONFIG"), InvalidRequestError),
    (ErrorSpec(41, "NOT_CONTROLLER", _R, _M), UnknownTopicOrPartitionError),
    (ErrorSpec(42, "INVALID_REQUEST"), InvalidRequestError),
    (ErrorSpec(43, "UNSUPPORTED_FOR_MESSAGE_FORMAT"), UnsupportedVersionError),
    (ErrorSpec(44, "POLICY_VIOLATION"), InvalidRequestError),
    (ErrorSpec(45, "OUT_OF_ORDER_SEQUENCE_NUMBER"), ProducerStateError),
    (ErrorSpec(46, "DUPLICATE_SEQUENCE_NUMBER"), ProducerStateError),
    (ErrorSpec(47, "INVALID_PRODUCER_EPOCH"), ProducerStateError),
    (ErrorSpec(48, "INVALID_TXN_STATE"), ProducerStateError),
    (ErrorSpec(49, "INVALID_PRODUCER_ID_MAPPING"), ProducerStateError),
    (ErrorSpec(50, "INVALID_TRANSACTION_TIMEOUT"), InvalidRequestError),
    (ErrorSpec(51, "CONCURRENT_TRANSACTIONS", _R), RetriableError),
    (ErrorSpec(52, "TRANSACTION_COORDINATOR_FENCED"), ProducerStateError),
    (ErrorSpec(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"), AuthorizationError),
    (ErrorSpec(54, "SECURITY_DISABLED"), AuthenticationError),
    (ErrorSpec(56, "KAFKA_STORAGE_ERROR", _R, _M), InvalidMetadataError),
    (ErrorSpec(58, "SASL_AUTHENTICATION_FAILED", hint="Check the SASL mechanism and "
               "credentials"), AuthenticationError),
    (ErrorSpec(59, "UNKNOWN_PRODUCER_ID"), ProducerStateError),
    (ErrorSpec(70, "FETCH_SESSION_ID_NOT_FOUND", _R), RetriableError),
    (ErrorSpec(71, "INVALID_FETCH_SESSION_EPOCH", _R), RetriableError),
    (ErrorSpec(72, "LISTENER_NOT_FOUND", _R, _M), InvalidMetadataError),
    (ErrorSpec(74, "FENCED_LEADER_EPOCH", _R, _M), InvalidMetadataError),
    (ErrorSpec(75, "UNKNOWN_LEADER_EPOCH", _R), RetriableError),
    (ErrorSpec(76, "UNSUPPORTED_COMPRESSION_TYPE", hint="The broker's Produce/Fetch version "
               "does not allow this codec"), UnsupportedVersionError),
    (ErrorSpec(78, "OFFSET_NOT_AVAILABLE", _R, _M), InvalidMetadataError),
    (ErrorSpec(80, "PREFERRED_LEADER_NOT_AVAILABLE", _R, _M), InvalidMetadataError),
    (ErrorSpec(87, "INVALID_RECORD"), InvalidRequestError),
    (ErrorSpec(88, "UNSTABLE_OFFSET_COMMIT", _R), RetriableError),
    (ErrorSpec(89, "THROTTLING_QUOTA_EXCEEDED", _R), RetriableError),
    (ErrorSpec(90, "PRODUCER_FENCED"), ProducerStateError),
    (ErrorSpec(100, "UNKNOWN_TOPIC_ID", _R, _M), InvalidMetadataError),
    (ErrorSpec(103, "INCONSISTENT_TOPIC_ID", _R, _M), InvalidMetadataError),
]
ERRORS: dict[int, tuple[ErrorSpec, type[KafkaError]]] = {s.code: (s, c) for s, c in _SPECS}


def error_for_code(code: int, **where: object) -> KafkaError:
    """The typed exception for a non-zero Kafka error code."""
    spec, cls = ERRORS.get(code, (ErrorSpec(code, f"UNKNOWN_ERROR_CODE_{code}"), KafkaError))
    return cls(spec, **where)  # type: ignore[arg-type]


def check_error(code: int, **where: object) -> None:
    """Raise the typed exception for ``code`` unless it is 0."""
    if code:
        raise error_for_code(code, **where)
