"""Typed errors of the protocol layer: Kafka's error codes, and bytes that break the protocol.

Kafka reports failures as int16 codes. Callers need two facts about each code (retry it?
refresh metadata first?) and users need a message that says what happened and where, so each
code maps to a class in a family and every instance carries topic, partition, offset and
broker when known. Bytes that cannot be parsed raise ProtocolError, never IndexError or
struct.error.

:class:`KafkaWireError`, the base of every exception the package raises on purpose, lives here
because the protocol is the lowest layer; ``spark_kafka_wire.errors`` shows the whole tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, SupportsIndex, TypeVar

from spark_kafka_wire.protocol.conditions import (
    BROKER_CONDITION,
    KAFKA07_BROKER_CONDITION,
    message,
)


class ErrorCode(IntEnum):
    """Kafka's error codes by their names in Kafka's protocol guide
    (https://kafka.apache.org/protocol#protocol_error_codes), for the codes this package knows.

    A code compares and hashes as the int16 on the wire, so ``code == ErrorCode.X`` works on a
    decoded response field.
    """

    NONE = 0
    UNKNOWN_SERVER_ERROR = -1
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    UNKNOWN_TOPIC_ID = 100
    INCONSISTENT_TOPIC_ID = 103
    TRANSACTIONAL_ID_NOT_FOUND = 105
    TRANSACTION_ABORTABLE = 120


@dataclass(frozen=True)
class ErrorSpec:
    """What callers need to know about one code: its number and name, whether retrying can
    help, whether metadata must be refreshed first, and advice for the user."""

    code: int
    name: str
    retriable: bool = False
    invalid_metadata: bool = False
    hint: str = ""
    #: the condition of the code's errors (KafkaWireError.condition); a code no table holds
    #: gets UNKNOWN_CODE_CONDITION
    condition: str = ""

    @classmethod
    def of(cls, code: ErrorCode, retriable: bool = False, invalid_metadata: bool = False,
           hint: str = "") -> ErrorSpec:
        return cls(int(code), code.name, retriable, invalid_metadata, hint,
                   f"{BROKER_CONDITION}.{code.name}")


class FromPlaceholder(str):
    """A config value that came from config-provider placeholders (``${file:PATH:KEY}``,
    ``${env:NAME}``): the resolved text itself, marked so that no message ever shows it.

    Such values are secrets by intent (that is why they live outside the config), so their
    ``repr``, and therefore :func:`shown` and every ``{value!r}`` in a message, names the
    placeholders instead: ``the value from ${file:secrets.properties:db.password}``. ``str()``
    and string operations give the real text (what is sent or parsed); a derived string
    (``value.strip()``) is a plain str, so a message must show the option's value as given.
    """

    placeholders: tuple[str, ...]
    #: where in this text the placeholders' resolved texts are ([start, end) pairs), so that a
    #: value cut out of it (a JAAS option, a slice) is marked only where it holds a piece of
    #: them; None where positions are unknown (after strip, upper, ...): then every piece is
    spans: tuple[tuple[int, int], ...] | None

    def __new__(cls, text: str, placeholders: tuple[str, ...],
                spans: tuple[tuple[int, int], ...] | None = None) -> FromPlaceholder:
        made = super().__new__(cls, text)
        made.placeholders = placeholders
        made.spans = spans
        return made

    def __reduce__(self) -> tuple[object, ...]:  # pickled with the plan as what it is
        return (FromPlaceholder, (str(self), self.placeholders, self.spans))

    def cut(self, start: int, stop: int, text: str | None = None) -> str:
        """The characters ``[start, stop)`` of this value (or ``text`` built from them, such
        as a quoted string without its escapes), marked if they overlap a resolved piece."""
        piece = str.__getitem__(self, slice(start, stop)) if text is None else text
        if self.spans is None:
            return FromPlaceholder(piece, self.placeholders)
        inside = tuple((max(a, start) - start, min(b, stop) - start) for a, b in self.spans
                       if a < stop and b > start)
        if not inside:
            return piece
        return FromPlaceholder(piece, self.placeholders, inside if text is None else None)

    def __repr__(self) -> str:
        return "the value from " + ", ".join(self.placeholders)

    # What parsers do to a value before checking it stays marked, so that a message showing
    # the normalised value (``protocol.strip().upper()``) or a piece of it (one host of a
    # list) still shows the placeholders. Pieces cut by regular expressions or JSON are plain
    # str: their parsers name the value's option instead (``shown(piece, within=value)``).
    def _same(self, text: str) -> FromPlaceholder:
        return FromPlaceholder(text, self.placeholders)

    def strip(self, chars: str | None = None) -> FromPlaceholder:
        return self._same(str.strip(self, chars))

    def lstrip(self, chars: str | None = None) -> FromPlaceholder:
        return self._same(str.lstrip(self, chars))

    def rstrip(self, chars: str | None = None) -> FromPlaceholder:
        return self._same(str.rstrip(self, chars))

    def lower(self) -> FromPlaceholder:
        return self._same(str.lower(self))

    def upper(self) -> FromPlaceholder:
        return self._same(str.upper(self))

    def casefold(self) -> FromPlaceholder:
        return self._same(str.casefold(self))

    def removeprefix(self, prefix: str) -> FromPlaceholder:
        return self._same(str.removeprefix(self, prefix))

    def removesuffix(self, suffix: str) -> FromPlaceholder:
        return self._same(str.removesuffix(self, suffix))

    def __getitem__(self, index: SupportsIndex | slice) -> str:
        if isinstance(index, slice) and index.step in (None, 1):
            start, stop, _ = index.indices(len(self))
            return self.cut(start, max(start, stop))
        return self._same(str.__getitem__(self, index))

    def split(self, sep: str | None = None, maxsplit: SupportsIndex = -1  # type: ignore[override]
              ) -> list[FromPlaceholder]:
        return [self._same(p) for p in str.split(self, sep, maxsplit)]

    def rsplit(self, sep: str | None = None, maxsplit: SupportsIndex = -1  # type: ignore[override]
               ) -> list[FromPlaceholder]:
        return [self._same(p) for p in str.rsplit(self, sep, maxsplit)]

    def partition(self, sep: str) -> tuple[FromPlaceholder, FromPlaceholder, FromPlaceholder]:
        a, b, c = str.partition(self, sep)
        return self._same(a), self._same(b), self._same(c)

    def rpartition(self, sep: str) -> tuple[FromPlaceholder, FromPlaceholder, FromPlaceholder]:
        a, b, c = str.rpartition(self, sep)
        return self._same(a), self._same(b), self._same(c)


def same_origin(source: str, text: str, start: int = 0, stop: int | None = None) -> str:
    """``text`` built from the characters ``[start, stop)`` of ``source`` (one by one, which
    string operations cannot mark: a quoted JAAS value without its escapes), marked as
    coming from ``source``'s placeholders where those characters hold a resolved piece:
    ``username="alice" password="${env:PW}"`` marks the password, not the literal user name."""
    if isinstance(source, FromPlaceholder):
        return source.cut(start, len(source) if stop is None else stop, text)
    return text


def shown(value: object, limit: int = 80, within: object = None) -> str:
    """A value quoted for an error message, cut short after ``limit`` characters: a mistaken
    option or a damaged field may be megabytes long. A value from placeholders (or a part of
    one: ``within`` is the whole it was cut from) is named by its placeholders, never shown."""
    for whole in (within, value):
        if isinstance(whole, FromPlaceholder):
            text = repr(whole)
            return text if len(text) <= limit else text[:limit] + "..."
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + "..."
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


#: The sub-condition of a code this package has no entry for (the message gives the number).
UNKNOWN_CODE = "UNKNOWN_ERROR_CODE"

_E = TypeVar("_E", bound="KafkaWireError")


class KafkaWireError(Exception):
    """Base of every error spark-kafka-wire raises on purpose.

    Each carries a stable ``condition``, an UPPER_SNAKE name with dotted sub-conditions like
    Spark's error classes (``KAFKA_DATA_LOSS.PARTITIONS_DELETED``,
    ``KAFKA_BROKER_ERROR.NOT_CONTROLLER``): a class attribute, which an instance may narrow
    (a broker error to its code, a data loss to its kind). Programs and tests match on it
    rather than on the English of the message, which may improve; ``str(error)`` begins with
    ``[CONDITION] `` so that logs show it too. The error table of docs/errors.md lists every one.

    Its message is its condition's template (protocol/conditions.py, the one table) filled with
    its ``parameters``, which stay on it for callers (most classes keep the facts as
    attributes too: ``topic``, ``partition`` ...). ``SomeError.of(condition, **parameters)``
    builds one from those alone; a class's own constructor takes its facts and does the same.
    """

    condition: str = "KAFKAWIRE_ERROR"
    #: the values its message was built from, by the template's field names (empty for an
    #: error built from a free text)
    parameters: dict[str, object]

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.parameters = {}

    def _build(self, condition: str, **parameters: object) -> None:
        """Carry ``condition`` and ``parameters``, with the message rendered from them."""
        self.condition = condition
        self.parameters = parameters
        Exception.__init__(self, message(condition, **parameters))

    @classmethod
    def of(cls: type[_E], condition: str, **parameters: object) -> _E:
        """The error of ``condition`` (this class's condition or one of its kinds) whose
        message is the condition's template filled with ``parameters``."""
        assert condition == cls.condition or condition.startswith(f"{cls.condition}."), \
            (cls.__name__, condition)
        made = cls.__new__(cls)
        made._build(condition, **parameters)
        return made

    def __str__(self) -> str:
        return f"[{self.condition}] {super().__str__()}"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its message and its attributes (condition, parameters, the facts), not
        through its constructor: Spark ships a task's error to the driver."""
        return (_unpickled, (type(self), self.args), dict(vars(self)))


def _unpickled(cls: type[_E], args: tuple[object, ...]) -> _E:
    made = cls.__new__(cls)
    Exception.__init__(made, *args)
    return made


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

    condition = "KAFKAWIRE_PROTOCOL"

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
        self._build(self.condition, reason=reason, where=f" ({where})" if where else "")


class LocalProtocolError(KafkaWireError, ValueError):
    """This side's mistake in speaking the protocol, caught before anything is sent: a request
    dict that does not fit its layout, an API version the engine does not implement, a layout
    naming a type it does not know. A bug in the code calling the protocol layer (kafkawire's
    or a user's), never the broker's bytes: so not a ProtocolError, which a reader handles as
    a damaged answer (closing the connection, retrying), as h11 separates its
    LocalProtocolError from RemoteProtocolError. Also a ValueError: it is a bad argument."""

    condition = "KAFKAWIRE_LOCAL_PROTOCOL"


class MessageEncodeError(LocalProtocolError):
    """A request (or, in the test brokers, a response) whose dict does not fit its layout:
    an unknown key, a missing field without default, a null or a value of the wrong type.

    Raised before anything is sent, naming the API, the version and the field's path (such as
    ``topics[0].partitions[2].fetch_offset``) so that the caller's mistake is found where it
    was made instead of as a broker's puzzling answer.
    """

    condition = "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE"

    def __init__(self, api: str, version: int, kind: str, path: str, problem: str) -> None:
        self.api = api
        self.version = version
        self.kind = kind
        self.path = path
        self.problem = problem
        at = f" at {path}" if path else ""
        self.reason = f"{api} v{version} {kind}{at}: {problem}"
        self._build(self.condition, reason=self.reason)


class CorruptRecordError(ProtocolError):
    """Record data failed its CRC or its structure is inconsistent."""

    condition = "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD"

    def __init__(self, reason: str, **where: object) -> None:
        super().__init__(reason, **where)  # type: ignore[arg-type]


class OffsetInsideMessageError(CorruptRecordError):
    """Kafka 0.7: no valid message starts at the byte offset a fetch began at.

    0.7 addresses messages by byte position and its broker does not check that a fetch offset
    is a message boundary ("Writing a Driver for Kafka": "What happens when you ask for an
    offset that's in the middle of a message? It just sends you the chunk without checking"),
    so the reader recognises the answer as garbage by its length, magic and CRC instead.
    """

    condition = "KAFKAWIRE_PROTOCOL.OFFSET_INSIDE_MESSAGE"


class FetchSizeLimitError(ProtocolError):
    """Kafka 0.7: a message does not fit the largest fetch size allowed.

    A 0.7 fetch answer is a byte range of the log, cut anywhere; when it holds no complete
    message the message is longer than the fetch size, which the reader doubles (the Kafka
    design document's "each time doubling the buffer size") up to a limit.
    """

    condition = "KAFKAWIRE_PROTOCOL.FETCH_SIZE_LIMIT"


class KafkaError(KafkaWireError):
    """An error code returned by a broker. Its condition is the code's
    (``KAFKA_BROKER_ERROR.NOT_LEADER_OR_FOLLOWER``; a 0.7 broker's ``KAFKA07_BROKER_ERROR.*``),
    whatever family class it is raised as; the class attribute is the family's prefix, or the
    code's where a class stands for one code."""

    condition = BROKER_CONDITION
    spec: ErrorSpec = ErrorSpec.of(ErrorCode.UNKNOWN_SERVER_ERROR)

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
        self.context = context
        self.message = message
        self._build(self.spec.condition or f"{BROKER_CONDITION}.{UNKNOWN_CODE}",
                    **self._parameters())

    def _parameters(self) -> dict[str, object]:
        where = _where(self.topic, self.partition, self.offset, self.broker)
        hint = self.advice()
        return dict(name=self.spec.name, code=self.spec.code,
                    context=f" in {self.context}" if self.context else "",
                    where=f" for {where}" if where else "",
                    detail=f": {self.message}" if self.message else "",
                    advice=f". {hint}" if hint else "")

    def advice(self) -> str:
        """What to do about it (the code's hint)."""
        return self.spec.hint

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

    condition = f"{BROKER_CONDITION}.OFFSET_OUT_OF_RANGE"


class RecordTooLargeError(KafkaError):
    """A record or request exceeds a broker size limit; retrying cannot help."""


#: The ACL operation each request needs on each kind of resource, by the request's name (the
#: error's ``context``) and the resource kind (Kafka's authorization checks per API:
#: https://kafka.apache.org/documentation/#operations_resources_and_protocols). READ, WRITE,
#: DELETE and ALTER each include DESCRIBE.
ACL_OPERATIONS: dict[tuple[str, str], str] = {
    ("Metadata", "Topic"): "Describe",
    ("ListOffsets", "Topic"): "Describe",
    ("Fetch", "Topic"): "Read",
    ("Produce", "Topic"): "Write",
    ("CreateTopics", "Topic"): "Create",
    ("DeleteTopics", "Topic"): "Delete",
    ("DeleteRecords", "Topic"): "Delete",
    ("FindCoordinator", "Group"): "Describe",
    ("OffsetFetch", "Group"): "Describe",
    ("OffsetFetch", "Topic"): "Describe",
    ("OffsetCommit", "Group"): "Read",
    ("OffsetCommit", "Topic"): "Read",
    ("FindCoordinator", "TransactionalId"): "Describe",
    ("InitProducerId", "TransactionalId"): "Write",
    ("InitProducerId", "Cluster"): "IdempotentWrite",
    ("AddPartitionsToTxn", "TransactionalId"): "Write",
    ("AddPartitionsToTxn", "Topic"): "Write",
    ("AddOffsetsToTxn", "TransactionalId"): "Write",
    ("AddOffsetsToTxn", "Group"): "Read",
    ("TxnOffsetCommit", "TransactionalId"): "Write",
    ("TxnOffsetCommit", "Group"): "Read",
    ("TxnOffsetCommit", "Topic"): "Read",
    ("EndTxn", "TransactionalId"): "Write",
}
#: What DESCRIBE alone does not give, where a user granting it would fail at the next step.
_DESCRIBE_IS_NOT_ENOUGH = {
    "Topic": "a reader needs Read and a writer Write, each of which includes Describe",
    "Group": "committing offsets needs Read, which includes Describe",
    "TransactionalId": "a transactional writer needs Write, which includes Describe",
}
#: kafka-acls' option naming a resource of each kind.
_ACL_OPTIONS = {"Topic": "--topic", "Group": "--group", "TransactionalId": "--transactional-id",
                "Cluster": "--cluster"}
_ACL_NAMES = {"Topic": "topic", "Group": "group", "TransactionalId": "transactional id",
              "Cluster": "the cluster"}


def acl_grant(resource_type: str, name: str | None, operation: str, principal: str | None,
              prefix: str | None = None) -> str:
    """The one wording of "grant this ACL": who (``principal``, User:alice; None when the
    client cannot know it) needs ``operation`` (Read) on the resource of ``resource_type``
    (Topic, Group, TransactionalId, Cluster) named ``name``, as a kafka-acls command.
    ``prefix``: the names to cover start with it (a PREFIXED ACL, e.g. every task's
    transactional id of the exactly-once sink)."""
    who = principal or "the client's principal"
    flag = principal or "User:<principal>"
    kind = _ACL_NAMES[resource_type]
    if resource_type == "Cluster":
        target, option = kind, _ACL_OPTIONS["Cluster"]
    elif prefix is not None:
        target = f"every {kind} starting with {prefix!r}"
        option = f"--resource-pattern-type prefixed {_ACL_OPTIONS[resource_type]} {prefix}"
    else:
        target = f"{kind} {name!r}" if name is not None else kind
        option = f"{_ACL_OPTIONS[resource_type]} {name if name is not None else '<name>'}"
    text = (f"grant {who} {operation.upper()} on {target} (kafka-acls --add "
            f"--allow-principal {flag} --operation {operation} {option})")
    if operation == "Describe" and resource_type in _DESCRIBE_IS_NOT_ENOUGH:
        text += f"; {_DESCRIBE_IS_NOT_ENOUGH[resource_type]}"
    return text


class AuthorizationError(KafkaError):
    """The principal lacks an ACL for the operation. The message names the resource, the
    principal (when the client knows it: the SASL user, ANONYMOUS without authentication),
    the operation the request needs and the ACL to grant (``acl_grant``).

    Not retriable: another attempt meets the same ACLs, so it fails at once."""

    #: the kind of resource the error code is about (Kafka's ResourceType name)
    resource_type = "Topic"

    def __init__(self, spec: ErrorSpec | None = None, *, group: str | None = None,
                 transactional_id: str | None = None, principal: str | None = None,
                 prefix: str | None = None, **where: object) -> None:
        self.group = group
        self.transactional_id = transactional_id
        self.principal = principal
        self.prefix = prefix
        super().__init__(spec, **where)  # type: ignore[arg-type]

    @property
    def resource_name(self) -> str | None:
        return {"Topic": self.topic, "Group": self.group,
                "TransactionalId": self.transactional_id}.get(self.resource_type)

    @property
    def operation(self) -> str | None:
        """The ACL operation the failed request needs (None for a request not in
        ACL_OPERATIONS)."""
        request = re.match(r"[A-Za-z]*", self.context).group()  # type: ignore[union-attr]
        return ACL_OPERATIONS.get((request, self.resource_type))

    def with_details(self, **changes: str | None) -> AuthorizationError:
        """The same error with ``changes`` (group, transactional_id, principal, prefix): e.g.
        ``prefix`` advises a PREFIXED ACL on every name starting with it (the exactly-once
        sink's transactional ids and their marker groups)."""
        details: dict[str, object] = dict(
            topic=self.topic, partition=self.partition, offset=self.offset, broker=self.broker,
            context=self.context, message=self.message, group=self.group,
            transactional_id=self.transactional_id, principal=self.principal,
            prefix=self.prefix)
        details.update(changes)
        return type(self)(self.spec, **details)  # type: ignore[arg-type]

    def advice(self) -> str:
        name = self.resource_name
        kind = _ACL_NAMES[self.resource_type]
        shown_name = kind if self.resource_type == "Cluster" else \
            f"{kind} {name!r}" if name is not None else kind
        who = self.principal or "the client's principal"
        operation = self.operation
        if operation is None:
            return (f"{who} lacks an ACL on {shown_name} for this request: grant the "
                    "operation it needs (kafka-acls --add --allow-principal ...)")
        return (f"{who} is not authorized to {operation.upper()} {shown_name}: "
                + acl_grant(self.resource_type, name, operation, self.principal, self.prefix))


class TopicAuthorizationError(AuthorizationError):
    """TOPIC_AUTHORIZATION_FAILED: no ACL lets the principal read, write or describe a topic."""

    condition = f"{BROKER_CONDITION}.TOPIC_AUTHORIZATION_FAILED"

    resource_type = "Topic"


class GroupAuthorizationError(AuthorizationError):
    """GROUP_AUTHORIZATION_FAILED: no ACL lets the principal use a consumer group (commit or
    fetch its offsets, find its coordinator)."""

    condition = f"{BROKER_CONDITION}.GROUP_AUTHORIZATION_FAILED"

    resource_type = "Group"


class TransactionalIdAuthorizationError(AuthorizationError):
    """TRANSACTIONAL_ID_AUTHORIZATION_FAILED: no ACL lets the principal use a transactional
    id (the exactly-once sink's ``kafka.transactional.id`` plus the task's partition)."""

    condition = f"{BROKER_CONDITION}.TRANSACTIONAL_ID_AUTHORIZATION_FAILED"

    resource_type = "TransactionalId"


class ClusterAuthorizationError(AuthorizationError):
    """CLUSTER_AUTHORIZATION_FAILED: an operation on the cluster itself is refused (an
    idempotent producer's InitProducerId on brokers before Kafka 3.0, which need
    IDEMPOTENT_WRITE on the cluster)."""

    condition = f"{BROKER_CONDITION}.CLUSTER_AUTHORIZATION_FAILED"

    resource_type = "Cluster"


#: Keywords only an AuthorizationError takes; error_for_code drops them for other codes, so
#: that a call site passes them whatever code the broker answered.
_AUTHORIZATION_DETAILS = ("group", "transactional_id", "principal", "prefix")


class AuthenticationError(KafkaError):
    """SASL authentication failed or the mechanism is not enabled."""


class UnsupportedVersionError(KafkaError):
    """The broker does not serve the requested API version."""


class TopicAlreadyExistsError(KafkaError):
    """CreateTopics for a topic that exists."""

    condition = f"{BROKER_CONDITION}.TOPIC_ALREADY_EXISTS"


class ProducerStateError(KafkaError):
    """Idempotent or transactional producer state was rejected (fenced, out of sequence)."""


class InvalidRequestError(KafkaError):
    """The broker judged the request itself invalid (bad config, topic name, acks ...)."""


# Codes callers catch by name.
class UnknownTopicOrPartitionError(InvalidMetadataError):
    """The topic or partition does not exist (or is not visible to this principal)."""

    condition = f"{BROKER_CONDITION}.UNKNOWN_TOPIC_OR_PARTITION"


class LeaderNotAvailableError(InvalidMetadataError):
    """A leader election is in progress."""

    condition = f"{BROKER_CONDITION}.LEADER_NOT_AVAILABLE"


class NotLeaderOrFollowerError(InvalidMetadataError):
    """The request went to a broker that no longer leads the partition."""

    condition = f"{BROKER_CONDITION}.NOT_LEADER_OR_FOLLOWER"


class NotControllerError(InvalidMetadataError):
    """NOT_CONTROLLER (41): an admin request (CreateTopics, DeleteTopics, ...) went to a
    broker that is not the controller (any more).

    Its own class, not an UnknownTopicOrPartitionError: a reader takes that one for a deleted
    topic (data loss), while this only means the client's idea of the controller is stale, so
    it is retried after a metadata refresh like any InvalidMetadataError."""

    condition = f"{BROKER_CONDITION}.NOT_CONTROLLER"


class BrokerRequestTimedOutError(RetriableError):
    """REQUEST_TIMED_OUT (7): the broker answered that it gave up waiting (for replicas, for a
    long poll). Not the client's own timeout: that is ``RequestTimeoutError`` (a
    BrokerConnectionError), raised when no answer came within kafka.request.timeout.ms.

    Named ``RequestTimedOutError`` before; ``spark_kafka_wire.errors`` still gives that name
    (deprecated, with a DeprecationWarning)."""

    condition = f"{BROKER_CONDITION}.REQUEST_TIMED_OUT"


class MessageTooLargeError(RecordTooLargeError):
    """A batch exceeds the topic's max.message.bytes (the broker's message.max.bytes by
    default). The producer splits a refused batch of several records and sends the halves
    (as the Java producer does); a single record too large fails with this error."""

    condition = f"{BROKER_CONDITION}.MESSAGE_TOO_LARGE"


class WrongPartitionError(InvalidMetadataError):
    """Kafka 0.7 WrongPartition (3): the broker has no such partition of the topic."""

    condition = f"{KAFKA07_BROKER_CONDITION}.WRONG_PARTITION"


class InvalidMessageError(KafkaError):
    """Kafka 0.7 InvalidMessage (2): a message failed its checksum on the broker."""

    condition = f"{KAFKA07_BROKER_CONDITION}.INVALID_MESSAGE"


class InvalidFetchSizeError(InvalidRequestError):
    """Kafka 0.7 InvalidFetchSize (4): the fetch size is smaller than the message."""

    condition = f"{KAFKA07_BROKER_CONDITION}.INVALID_FETCH_SIZE"


_R, _M = True, True
_REFRESH = "Metadata will be refreshed and the request retried"
_SPECS: list[tuple[ErrorSpec, type[KafkaError]]] = [
    (ErrorSpec.of(ErrorCode.UNKNOWN_SERVER_ERROR, hint="See the broker log"), KafkaError),
    (ErrorSpec.of(ErrorCode.OFFSET_OUT_OF_RANGE, hint="The data was deleted by retention or the offset "
                  "was never written; set failOnDataLoss=false to skip it"), OffsetOutOfRangeError),
    (ErrorSpec.of(ErrorCode.CORRUPT_MESSAGE, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _R, _M, hint="Check the topic name; it may not "
                  "exist yet"), UnknownTopicOrPartitionError),
    (ErrorSpec.of(ErrorCode.INVALID_FETCH_SIZE), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.LEADER_NOT_AVAILABLE, _R, _M, hint=_REFRESH), LeaderNotAvailableError),
    (ErrorSpec.of(ErrorCode.NOT_LEADER_OR_FOLLOWER, _R, _M, hint=_REFRESH), NotLeaderOrFollowerError),
    (ErrorSpec.of(ErrorCode.REQUEST_TIMED_OUT, _R), BrokerRequestTimedOutError),
    (ErrorSpec.of(ErrorCode.BROKER_NOT_AVAILABLE, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.REPLICA_NOT_AVAILABLE, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.MESSAGE_TOO_LARGE, hint="Raise the topic's max.message.bytes (or the "
                  "broker's message.max.bytes, its default) or send smaller records"),
     MessageTooLargeError),
    (ErrorSpec.of(ErrorCode.STALE_CONTROLLER_EPOCH), KafkaError),
    (ErrorSpec.of(ErrorCode.OFFSET_METADATA_TOO_LARGE), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.NETWORK_EXCEPTION, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.COORDINATOR_NOT_AVAILABLE, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.NOT_COORDINATOR, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.INVALID_TOPIC_EXCEPTION, hint="Topic names use [a-zA-Z0-9._-], at most "
                  "249 characters"), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.RECORD_LIST_TOO_LARGE), RecordTooLargeError),
    (ErrorSpec.of(ErrorCode.NOT_ENOUGH_REPLICAS, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.INVALID_REQUIRED_ACKS), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.ILLEGAL_GENERATION), KafkaError),
    (ErrorSpec.of(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, hint="The group's members run another "
                  "protocol type or no assignor in common (consumers in one group need the "
                  "same partition.assignment.strategy)"), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.INVALID_GROUP_ID), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.UNKNOWN_MEMBER_ID), KafkaError),
    (ErrorSpec.of(ErrorCode.INVALID_SESSION_TIMEOUT, hint="Use a session timeout within the "
                  "broker's group.min.session.timeout.ms and group.max.session.timeout.ms"),
     InvalidRequestError),
    (ErrorSpec.of(ErrorCode.REBALANCE_IN_PROGRESS, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.INVALID_COMMIT_OFFSET_SIZE), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.TOPIC_AUTHORIZATION_FAILED), TopicAuthorizationError),
    (ErrorSpec.of(ErrorCode.GROUP_AUTHORIZATION_FAILED), GroupAuthorizationError),
    (ErrorSpec.of(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ClusterAuthorizationError),
    (ErrorSpec.of(ErrorCode.INVALID_TIMESTAMP), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.UNSUPPORTED_SASL_MECHANISM), AuthenticationError),
    (ErrorSpec.of(ErrorCode.ILLEGAL_SASL_STATE), AuthenticationError),
    (ErrorSpec.of(ErrorCode.UNSUPPORTED_VERSION), UnsupportedVersionError),
    (ErrorSpec.of(ErrorCode.TOPIC_ALREADY_EXISTS), TopicAlreadyExistsError),
    (ErrorSpec.of(ErrorCode.INVALID_PARTITIONS), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.INVALID_REPLICATION_FACTOR, hint="Use a replication factor no larger "
                  "than the number of brokers"), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.INVALID_REPLICA_ASSIGNMENT), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.INVALID_CONFIG), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.NOT_CONTROLLER, _R, _M, hint=_REFRESH), NotControllerError),
    (ErrorSpec.of(ErrorCode.INVALID_REQUEST), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT), UnsupportedVersionError),
    (ErrorSpec.of(ErrorCode.POLICY_VIOLATION), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER), ProducerStateError),
    (ErrorSpec.of(ErrorCode.DUPLICATE_SEQUENCE_NUMBER), ProducerStateError),
    (ErrorSpec.of(ErrorCode.INVALID_PRODUCER_EPOCH), ProducerStateError),
    (ErrorSpec.of(ErrorCode.INVALID_TXN_STATE), ProducerStateError),
    (ErrorSpec.of(ErrorCode.INVALID_PRODUCER_ID_MAPPING), ProducerStateError),
    (ErrorSpec.of(ErrorCode.INVALID_TRANSACTION_TIMEOUT), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.CONCURRENT_TRANSACTIONS, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.TRANSACTION_COORDINATOR_FENCED), ProducerStateError),
    (ErrorSpec.of(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), TransactionalIdAuthorizationError),
    (ErrorSpec.of(ErrorCode.SECURITY_DISABLED), AuthenticationError),
    (ErrorSpec.of(ErrorCode.KAFKA_STORAGE_ERROR, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.SASL_AUTHENTICATION_FAILED, hint="Check the SASL mechanism and "
                  "credentials"), AuthenticationError),
    (ErrorSpec.of(ErrorCode.UNKNOWN_PRODUCER_ID), ProducerStateError),
    (ErrorSpec.of(ErrorCode.NON_EMPTY_GROUP, hint="Stop the group's members first (a group with "
                  "members cannot be deleted)"), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.GROUP_ID_NOT_FOUND, hint="Check the group name (kafkawire groups "
                  "lists them)"), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.INVALID_FETCH_SESSION_EPOCH, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.LISTENER_NOT_FOUND, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.FENCED_LEADER_EPOCH, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.UNKNOWN_LEADER_EPOCH, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, hint="The broker's Produce/Fetch version "
                  "does not allow this codec"), UnsupportedVersionError),
    (ErrorSpec.of(ErrorCode.OFFSET_NOT_AVAILABLE, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, _R, _M), InvalidMetadataError),
    # KIP-394: a first JoinGroup (v4+) is answered with the member id to join again with
    (ErrorSpec.of(ErrorCode.MEMBER_ID_REQUIRED, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.GROUP_MAX_SIZE_REACHED, hint="The group has the broker's "
                  "group.max.size members already"), KafkaError),
    (ErrorSpec.of(ErrorCode.FENCED_INSTANCE_ID, hint="Another member joined with the same "
                  "group.instance.id"), KafkaError),
    (ErrorSpec.of(ErrorCode.INVALID_RECORD), InvalidRequestError),
    (ErrorSpec.of(ErrorCode.UNSTABLE_OFFSET_COMMIT, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.THROTTLING_QUOTA_EXCEEDED, _R), RetriableError),
    (ErrorSpec.of(ErrorCode.PRODUCER_FENCED), ProducerStateError),
    (ErrorSpec.of(ErrorCode.OPERATION_NOT_ATTEMPTED, hint="Another part of the same request "
                  "failed"), KafkaError),
    (ErrorSpec.of(ErrorCode.UNKNOWN_TOPIC_ID, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.INCONSISTENT_TOPIC_ID, _R, _M), InvalidMetadataError),
    (ErrorSpec.of(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, hint="Check the transactional id "
                  "(kafkawire transactions lists them)"), InvalidRequestError),
    # KIP-890: the transaction can only be aborted now (e.g. the broker could not verify that
    # a partition is in it); the write fails and the driver aborts every task's transaction
    (ErrorSpec.of(ErrorCode.TRANSACTION_ABORTABLE, hint="The transaction can only be aborted; "
                  "the write is retried as a whole"), ProducerStateError),
]
ERRORS: dict[int, tuple[ErrorSpec, type[KafkaError]]] = {s.code: (s, c) for s, c in _SPECS}


def error_for_code(code: int, **where: object) -> KafkaError:
    """The typed exception for a non-zero Kafka error code."""
    spec, cls = ERRORS.get(code, (ErrorSpec(code, f"UNKNOWN_ERROR_CODE_{code}"), KafkaError))
    if not issubclass(cls, AuthorizationError):
        where = {k: v for k, v in where.items() if k not in _AUTHORIZATION_DETAILS}
    return cls(spec, **where)  # type: ignore[arg-type]


def check_error(code: int, **where: object) -> None:
    """Raise the typed exception for ``code`` unless it is 0."""
    if code:
        raise error_for_code(code, **where)


class Kafka07ErrorCode(IntEnum):
    """The error codes of Kafka 0.7 brokers ("Writing a Driver for Kafka": Response Header).

    Their own table, apart from :class:`ErrorCode`: 0.7's codes 2-4 (InvalidMessage,
    WrongPartition, InvalidFetchSize) mean other things than 0.8's codes of the same numbers,
    and a 0.7 answer never carries a 0.8 code. Names are the page's own.
    """

    Unknown = -1
    NoError = 0
    OffsetOutOfRange = 1
    InvalidMessage = 2
    WrongPartition = 3
    InvalidFetchSize = 4


def _spec07(code: Kafka07ErrorCode, retriable: bool = False, invalid_metadata: bool = False,
            hint: str = "") -> ErrorSpec:
    snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", code.name).upper()
    return ErrorSpec(int(code), code.name, retriable, invalid_metadata, hint,
                     f"{KAFKA07_BROKER_CONDITION}.{snake}")


KAFKA07_ERRORS: dict[int, tuple[ErrorSpec, type[KafkaError]]] = {s.code: (s, c) for s, c in [
    (_spec07(Kafka07ErrorCode.Unknown, hint="See the 0.7 broker's log"), KafkaError),
    (_spec07(Kafka07ErrorCode.OffsetOutOfRange, hint="The byte offset is below the first "
             "segment (deleted by retention) or past the log end; ask OFFSETS for the "
             "earliest and latest offsets"), OffsetOutOfRangeError),
    (_spec07(Kafka07ErrorCode.InvalidMessage, hint="A message failed its CRC on the broker; "
             "send it again"), InvalidMessageError),
    (_spec07(Kafka07ErrorCode.WrongPartition, _R, _M, hint="The broker has fewer partitions "
             "of this topic; read the broker's partition count again from ZooKeeper "
             "(/brokers/topics/<topic>/<broker id>)"), WrongPartitionError),
    (_spec07(Kafka07ErrorCode.InvalidFetchSize, hint="Raise the fetch size above the largest "
             "message"), InvalidFetchSizeError),
]}


def kafka07_error_for_code(code: int, **where: object) -> KafkaError:
    """The typed exception for a non-zero Kafka 0.7 error code."""
    spec, cls = KAFKA07_ERRORS.get(
        code, (ErrorSpec(code, f"UnknownKafka07ErrorCode{code}",
                      condition=f"{KAFKA07_BROKER_CONDITION}.{UNKNOWN_CODE}"), KafkaError))
    return cls(spec, **where)  # type: ignore[arg-type]


def check_kafka07_error(code: int, **where: object) -> None:
    """Raise the typed exception for a Kafka 0.7 ``code`` unless it is NoError (0)."""
    if code:
        raise kafka07_error_for_code(code, **where)
