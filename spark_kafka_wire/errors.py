"""Every exception spark-kafka-wire raises on purpose, as one hierarchy.

Catch :class:`KafkaWireError` for all of them, a family (``KafkaError``, ``RetriableError``,
``ProtocolError`` ...) for a kind, a leaf for one case. ``retriable`` and ``invalid_metadata``
on Kafka errors and connection errors tell whether retrying (after a metadata refresh) can
help. Each error's ``condition`` (``KAFKA_DATA_LOSS.PARTITIONS_DELETED``,
``KAFKA_BROKER_ERROR.NOT_CONTROLLER``; the first words of its message) is what to match on;
the error table of docs/errors.md lists them all. Each class is defined in the layer that raises it
(``protocol.errors``, ``protocol.compression``, ``client.errors``, ``formats.errors``) and re-exported here::

    KafkaWireError
    ├── ConfigurationError (also ValueError)  an option is missing, unknown or cannot work
    │   └── StartAfterEndError                a batch read's start is after its end
    ├── DataError (also ValueError)           a row of a written DataFrame cannot be written
    │                                         (a null topic, a partition the topic lacks,
    │                                         a column of the wrong type)
    ├── CheckpointError (also ValueError)     a stream checkpoint's offsets are damaged
    ├── ProtocolError                         bytes that break the Kafka protocol
    │   ├── CorruptRecordError                record data failed its CRC or structure check
    │   │   └── OffsetInsideMessageError      0.7: no message starts at the fetch's byte offset
    │   ├── FetchSizeLimitError               0.7: a message is larger than the fetch size limit
    │   ├── FetchStalledError                 Fetches answered nothing below the partition's
    │   │                                     end for the whole kafka.request.timeout.ms
    │   ├── UnsupportedCodecError             a codec unknown, or not allowed in the format
    │   └── DecompressionBombError            records expand beyond the configured limit
    │       └── DecompressionLimitError       one fetch answer's records (or what a task
    │                                         holds) expand past
    │                                         kafka.fetch.max.decompressed.bytes
    ├── LocalProtocolError (also ValueError)  this side breaks the protocol (a bug in the
    │   │                                     calling code; an API version not implemented),
    │   │                                     not the broker's bytes
    │   └── MessageEncodeError                a request dict that does not fit its layout
    │                                         (unknown key, missing field): API, version
    │                                         and field path
    ├── KafkaError                            an error code answered by a broker (ErrorCode)
    │   ├── RetriableError                    retrying later may succeed
    │   │   ├── InvalidMetadataError          refresh metadata, then retry
    │   │   │   ├── UnknownTopicOrPartitionError
    │   │   │   ├── LeaderNotAvailableError
    │   │   │   ├── NotLeaderOrFollowerError
    │   │   │   ├── NotControllerError        NOT_CONTROLLER (41): not a deleted topic
    │   │   │   └── WrongPartitionError       0.7 WrongPartition (3)
    │   │   ├── BrokerRequestTimedOutError    the broker's REQUEST_TIMED_OUT (7) answer
    │   │   └── CoordinatorMovedError         find the group coordinator again
    │   ├── OffsetOutOfRangeError
    │   │   └── DataLossError                 planned offsets left the log (failOnDataLoss)
    │   ├── RecordTooLargeError
    │   │   └── MessageTooLargeError
    │   ├── AuthorizationError                no ACL allows it; names the ACL to grant
    │   │   ├── TopicAuthorizationError
    │   │   ├── GroupAuthorizationError
    │   │   ├── TransactionalIdAuthorizationError
    │   │   └── ClusterAuthorizationError
    │   ├── AuthenticationError
    │   ├── UnsupportedVersionError
    │   ├── TopicAlreadyExistsError
    │   ├── ProducerStateError
    │   ├── InvalidMessageError               0.7 InvalidMessage (2)
    │   └── InvalidRequestError
    │       └── InvalidFetchSizeError         0.7 InvalidFetchSize (4)
    ├── BrokerConnectionError                 a socket to one broker failed (retriable)
    │   ├── ApiVersionsClosedError            closed on ApiVersions (a broker before 0.10)
    │   ├── RequestTimeoutError               no answer within kafka.request.timeout.ms
    │   │                                     (client side; the broker's code 7 is
    │   │                                     BrokerRequestTimedOutError)
    │   │   └── ApiVersionsTimeoutError       ApiVersions unanswered (a Kafka 0.9 broker)
    │   ├── ConnectionSetupTimeoutError       no connection within
    │   │                                     kafka.socket.connection.setup.timeout.ms
    │   └── NotKafkaError                     the address answered, not in Kafka's protocol
    │                                         (an HTTP server, a TLS port in plaintext)
    ├── TlsHandshakeError                     TLS handshake failed (certificate, hostname)
    ├── SaslAuthenticationError               SASL login refused (password, user, mechanism)
    ├── OAuthTokenError                       no OAUTHBEARER token (endpoint down or refusing)
    ├── NoBrokersAvailableError               no bootstrap server answered (retriable)
    ├── SchemaRegistryError                   a Schema Registry request failed (its kind:
    │                                         unreachable, not found, incompatible, ...)
    ├── UndecodableRecordError                a record its column's format cannot decode
    │                                         (value.format, mode=FAILFAST)
    ├── UnencodableValueError (also ValueError)  a column value its schema cannot take
    ├── SchemaTooComplexError (also ValueError)  a schema whose Spark type would be too
    │                                         large or deep to build (names subject, id)
    ├── DeliveryFailedError                   the producer gave up on a batch after
    │   │                                     kafka.retries attempts failed on its side
    │   │                                     (connections, its timeouts; no broker code)
    │   └── DeliveryTimeoutError              ... once kafka.delivery.timeout.ms passed
    └── ZooKeeperError                        ZooKeeper unreachable or refused an operation
        ├── ZooKeeperTlsError                 TLS to ZooKeeper failed (certificate, host name)
        ├── ZooKeeperAuthError                ZooKeeper refused (or requires) a SASL login
        ├── NoBrokersRegisteredError          zookeeper.connect: no broker (for the protocol)
        └── BrokerRegistrationError           a /brokers node in no layout Kafka wrote
"""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

from spark_kafka_wire.client.errors import (
    ApiVersionsClosedError,
    ApiVersionsTimeoutError,
    BrokerConnectionError,
    BrokerRegistrationError,
    CheckpointError,
    ConfigurationError,
    ConnectionSetupTimeoutError,
    CoordinatorMovedError,
    DataError,
    DataLossError,
    DeliveryFailedError,
    DeliveryTimeoutError,
    FetchStalledError,
    NoBrokersAvailableError,
    NoBrokersRegisteredError,
    NotKafkaError,
    OAuthTokenError,
    RequestTimeoutError,
    SaslAuthenticationError,
    SchemaRegistryError,
    StartAfterEndError,
    TlsHandshakeError,
    ZooKeeperAuthError,
    ZooKeeperError,
    ZooKeeperTlsError,
)
from spark_kafka_wire.formats.errors import (
    SchemaTooComplexError,
    UndecodableRecordError,
    UnencodableValueError,
)
from spark_kafka_wire.protocol.compression import (
    DecompressionBombError,
    DecompressionLimitError,
    UnsupportedCodecError,
)
from spark_kafka_wire.protocol.errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerRequestTimedOutError,
    ClusterAuthorizationError,
    CorruptRecordError,
    ErrorCode,
    FetchSizeLimitError,
    GroupAuthorizationError,
    InvalidFetchSizeError,
    InvalidMessageError,
    InvalidMetadataError,
    InvalidRequestError,
    KafkaError,
    KafkaWireError,
    LeaderNotAvailableError,
    LocalProtocolError,
    MessageEncodeError,
    MessageTooLargeError,
    NotControllerError,
    NotLeaderOrFollowerError,
    OffsetInsideMessageError,
    OffsetOutOfRangeError,
    ProducerStateError,
    ProtocolError,
    RecordTooLargeError,
    RetriableError,
    TopicAlreadyExistsError,
    TopicAuthorizationError,
    TransactionalIdAuthorizationError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    WrongPartitionError,
)

__all__ = [
    "WrongPartitionError",
    "OffsetInsideMessageError",
    "InvalidMessageError",
    "InvalidFetchSizeError",
    "FetchSizeLimitError",
    "FetchStalledError",
    "ApiVersionsClosedError",
    "ApiVersionsTimeoutError",
    "AuthenticationError",
    "AuthorizationError",
    "TopicAuthorizationError",
    "GroupAuthorizationError",
    "TransactionalIdAuthorizationError",
    "ClusterAuthorizationError",
    "BrokerConnectionError",
    "BrokerRegistrationError",
    "CheckpointError",
    "ConnectionSetupTimeoutError",
    "ConfigurationError",
    "CoordinatorMovedError",
    "CorruptRecordError",
    "DataError",
    "DataLossError",
    "DeliveryFailedError",
    "DeliveryTimeoutError",
    "DecompressionBombError",
    "DecompressionLimitError",
    "ErrorCode",
    "InvalidMetadataError",
    "InvalidRequestError",
    "KafkaError",
    "KafkaWireError",
    "LeaderNotAvailableError",
    "LocalProtocolError",
    "MessageEncodeError",
    "MessageTooLargeError",
    "NoBrokersAvailableError",
    "NoBrokersRegisteredError",
    "NotKafkaError",
    "NotLeaderOrFollowerError",
    "OAuthTokenError",
    "OffsetOutOfRangeError",
    "ProducerStateError",
    "ProtocolError",
    "RecordTooLargeError",
    "RequestTimeoutError",
    "BrokerRequestTimedOutError",
    "NotControllerError",
    "RetriableError",
    "SaslAuthenticationError",
    "SchemaRegistryError",
    "SchemaTooComplexError",
    "StartAfterEndError",
    "TlsHandshakeError",
    "TopicAlreadyExistsError",
    "UndecodableRecordError",
    "UnencodableValueError",
    "UnknownTopicOrPartitionError",
    "UnsupportedCodecError",
    "UnsupportedVersionError",
    "ZooKeeperAuthError",
    "ZooKeeperError",
    "ZooKeeperTlsError",
]


#: Deprecated names, still importable (with a DeprecationWarning) so that code written with
#: them keeps working: deprecated name -> the class's name.
DEPRECATED_NAMES = {
    # The broker's REQUEST_TIMED_OUT (7) answer, named so that it does not read like
    # RequestTimeoutError, the client's own timeout.
    "RequestTimedOutError": "BrokerRequestTimedOutError",
}


def __getattr__(name: str) -> object:
    """Deprecated names (PEP 562): the class under its new name, with a warning saying it."""
    if name in DEPRECATED_NAMES:
        new = DEPRECATED_NAMES[name]
        warnings.warn(f"spark_kafka_wire.errors.{name} is deprecated; use {new}",
                      DeprecationWarning, stacklevel=2)
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


F = TypeVar("F", bound=Callable[..., Any])
_log = logging.getLogger(__name__)


def brief_traceback(method: F) -> F:
    """``method``, a call Spark makes into kafkawire (planning a read, a stream's offsets,
    a writer), with the traceback of the KafkaWireError it raises cut to this call.

    Spark shows a Python data source's exception as its whole traceback under its own
    condition (``[PYTHON_DATA_SOURCE_ERROR] Failed to ...: Traceback ...``), kafkawire's
    frames first and the error's line last: a wrong kafka.bootstrap.servers took 28 lines to
    say so. A KafkaWireError's message says what happened, where and what to do, so its
    frames are left out and the message follows Spark's first line within a few lines; the
    whole traceback is logged at debug level. Other exceptions (bugs) keep theirs."""

    @functools.wraps(method)
    def called_by_spark(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except KafkaWireError as error:
            _log.debug("%s failed", method.__qualname__, exc_info=True)
            # kafkawire's frames cut (its cause kept): the message says what and where
            raise error.with_traceback(None) from error.__cause__

    return cast(F, called_by_spark)
