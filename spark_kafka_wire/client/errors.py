"""Errors of the I/O layer: brokers that cannot be reached or stop answering, settings that
cannot work, offsets lost from the log, group coordinators, ZooKeeper and Schema Registries.

Each subclasses :class:`~spark_kafka_wire.protocol.errors.KafkaWireError` (or a Kafka error
family when it stands for a broker's answer), so one ``except`` catches all of them;
``spark_kafka_wire.errors`` shows the whole tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from spark_kafka_wire.protocol.conditions import (
    CONDITIONS,
    DATA_LOSS_ADVICE,
    DATA_LOSS_SUMMARY,
    family,
    kinds,
    part,
    worded,
)
from spark_kafka_wire.protocol.errors import (
    ERRORS,
    ErrorCode,
    KafkaWireError,
    OffsetOutOfRangeError,
    ProtocolError,
    RetriableError,
)

#: The condition of a planned range (or partition) gone from the log; an instance narrows it
#: to the kind, named as Spark's KAFKA_DATA_LOSS sub-conditions (DATA_LOSS_KINDS).
DATA_LOSS = "KAFKA_DATA_LOSS"
#: The kinds of data loss (DataLossError.condition): kind -> when (protocol/conditions.py).
DATA_LOSS_KINDS: dict[str, str] = kinds(DATA_LOSS)

#: The condition of a setting that cannot work; an instance may narrow it to one of the kinds
#: below (``ConfigurationError.of(condition, ...)``), the ones a user or a program would
#: tell apart (protocol/conditions.py lists them, each with when it applies). A raise site
#: without a kind keeps the family's condition.
CONFIGURATION = "KAFKAWIRE_CONFIGURATION"
# The kinds' full conditions, which raise sites pass as ``condition=``.
INVALID_VALUE = f"{CONFIGURATION}.INVALID_VALUE"
VALUE_OUT_OF_RANGE = f"{CONFIGURATION}.VALUE_OUT_OF_RANGE"
UNSUPPORTED_VALUE = f"{CONFIGURATION}.UNSUPPORTED_VALUE"
MISSING_OPTION = f"{CONFIGURATION}.MISSING_OPTION"
UNKNOWN_OPTION = f"{CONFIGURATION}.UNKNOWN_OPTION"
REFUSED_OPTION = f"{CONFIGURATION}.REFUSED_OPTION"
CONFLICTING_OPTIONS = f"{CONFIGURATION}.CONFLICTING_OPTIONS"
NOT_ALLOWED_BY_OPERATOR = f"{CONFIGURATION}.NOT_ALLOWED_BY_OPERATOR"
CONFIG_FILE = f"{CONFIGURATION}.CONFIG_FILE"
SECURITY_SETTING = f"{CONFIGURATION}.SECURITY_SETTING"
KAFKA07_UNSUPPORTED = f"{CONFIGURATION}.KAFKA07_UNSUPPORTED"

#: The condition of a Schema Registry request that failed (client/registry/schema_registry.py); an
#: instance always narrows it to one of the kinds below (SchemaRegistryError.condition).
SCHEMA_REGISTRY = "KAFKAWIRE_SCHEMA_REGISTRY"
#: The kinds of Schema Registry failure: kind -> when (protocol/conditions.py).
SCHEMA_REGISTRY_KINDS: dict[str, str] = kinds(SCHEMA_REGISTRY)

_C = TypeVar("_C", bound="ConfigurationError")


class ConfigurationError(KafkaWireError, ValueError):
    """An option is missing, unknown or has a value that cannot work.

    ``condition`` narrows the error to one of its kinds (protocol/conditions.py; as
    ``KAFKAWIRE_CONFIGURATION.INVALID_VALUE``), so that a program tells a bad value from an
    unknown option or an operator's refusal without reading the English; ``except
    ConfigurationError`` (and the CLI's exit status 2) holds for every kind.
    ``ConfigurationError.of(condition, wording, **parameters)`` builds the text from the
    condition's template (protocol/conditions.py) or from one named wording of it
    (protocol/configuration_wordings.py); the parameters stay on the error.
    """

    condition = CONFIGURATION

    def __init__(self, *args: object, condition: str | None = None) -> None:
        super().__init__(*args)
        if condition is not None:
            assert family(condition) == CONFIGURATION and condition in CONDITIONS, condition
            self.condition = condition

    #: the name of the wording its message was built from, one problem of its condition
    #: (protocol/configuration_wordings.py), or None for the condition's own template
    wording: str | None = None

    # the base takes any parameter by keyword; here ``wording`` (a str) is one of its own
    @classmethod
    def of(cls: type[_C], condition: str, wording: str | None = None,  # type: ignore[override]
           **parameters: object) -> _C:
        """The error of ``condition`` (CONFIGURATION or one of its kinds) whose message is
        built from ``parameters`` alone: with the condition's own template when ``wording``
        is None (for a value: ``option`` and ``got``, shown safely, and ``expected``,
        ``bound`` or ``allowed``), else with the wording of that one problem of the kind
        (``"<condition>:<wording>"``, protocol/configuration_wordings.py). The only way the
        package builds one (tests/unit/test_architecture_configuration_errors.py)."""
        if wording is None:
            return super().of(condition, **parameters)
        assert condition == cls.condition or condition.startswith(f"{cls.condition}."), \
            (cls.__name__, condition)
        made = cls.__new__(cls)
        made.condition, made.parameters, made.wording = condition, parameters, wording
        Exception.__init__(made, worded(condition, wording, **parameters))
        return made

    def within(self, where: str) -> ConfigurationError:
        """The same error (condition, wording, parameters) said of ``where``, the flags or
        settings the caller took the value from: ``"<where>: <this error>"``."""
        return self._retold(f"{where}: {self}")

    def renamed(self, names: Mapping[str, str]) -> ConfigurationError:
        """The same error told with the option names the user gave: ``names`` maps each name
        the parser knows (a Kafka TLS option) to the user's (a schema.registry.ssl.* one)."""
        text = str(self.args[0]) if self.args else ""
        for known, theirs in names.items():
            text = text.replace(known, theirs)
        return self._retold(text)

    def _retold(self, text: str) -> ConfigurationError:
        made = ConfigurationError.__new__(ConfigurationError)
        made.condition, made.parameters, made.wording = \
            self.condition, self.parameters, self.wording
        Exception.__init__(made, text)
        return made


class DataError(KafkaWireError, ValueError):
    """A row (or a column) of a written DataFrame that cannot be written: a null topic, a
    partition its topic does not have, a column of the wrong type. The data's fault, not an
    option's (ConfigurationError); a ValueError, as the rows are a bad argument. Its
    condition is one of the KAFKAWIRE_DATA kinds (protocol/conditions.py); build it with
    ``DataError.of(kind, **parameters)``."""

    condition = "KAFKAWIRE_DATA"


class CheckpointError(KafkaWireError, ValueError):
    """A streaming query's checkpointed offsets are not what kafkawire writes (the checkpoint
    was edited, damaged, or belongs to another source)."""

    condition = "KAFKAWIRE_CHECKPOINT"

    def __init__(self, problem: str) -> None:
        self.problem = problem
        self._build(self.condition, problem=problem)


class BrokerConnectionError(KafkaWireError):
    """A socket to one broker failed (refused, reset, closed mid-response).

    Retriable: the client refreshes metadata and tries again, possibly on another broker.
    """

    retriable = True
    invalid_metadata = True
    # A timeout: the broker took the whole time it was given.
    timed_out = False
    # Another attempt would most likely meet the same answer (a timeout, a broker that closes
    # on ApiVersions): retry loops without a deadline of their own (reads, metadata;
    # cluster.py) report it at once; a write retries it until its delivery timeout.
    conclusive = False
    # Nothing takes connections at the address: refused, or a host name that does not resolve.
    # When that is so of every bootstrap server of a client that never reached one, planning
    # fails at once (client/metadata/cluster.py): a wrong kafka.bootstrap.servers, not a restart.
    nothing_listens = False
    condition = "KAFKAWIRE_BROKER_CONNECTION"

    def __init__(self, broker: str, reason: str) -> None:
        self.broker = broker
        self.reason = reason
        self._build(self.condition, broker=broker, reason=reason)

    def _narrowed(self, broker: str, **parameters: object) -> None:
        """Built as the kind ``self.condition`` whose template is this error's ``reason``."""
        self.broker = broker
        self.reason = part(self.condition, broker=broker, **parameters)
        self._build(self.condition, broker=broker, **parameters)


def _timeout_limit(timeout_ms: int, setting: str, deadline: str | None) -> str:
    """How long was waited and which setting ended it: the wait's own, or ``deadline`` (an
    operation's whole budget, e.g. kafka.delivery.timeout.ms) when that ran out first."""
    if deadline is None:
        return f"{timeout_ms} ms ({setting})"
    return f"{timeout_ms} ms, when {deadline} ran out"


class RequestTimeoutError(BrokerConnectionError):
    """A broker did not answer within request.timeout.ms (or within what was left of an
    operation's deadline, ``deadline`` naming its setting)."""

    timed_out = True
    conclusive = True
    condition = "KAFKAWIRE_BROKER_CONNECTION.REQUEST_TIMEOUT"

    def __init__(self, broker: str, request: str, timeout_ms: int,
                 deadline: str | None = None) -> None:
        limit = _timeout_limit(timeout_ms, "kafka.request.timeout.ms", deadline)
        self._narrowed(broker, request=request, limit=limit)


class ApiVersionsTimeoutError(RequestTimeoutError):
    """A broker left the first ApiVersions request unanswered. Kafka 0.9 does that: its
    network thread fails on the API key it does not know and sends nothing back, keeping the
    connection open (0.8 closes it: ApiVersionsClosedError). So the message says how to pin
    the release, as well as that the broker may be overloaded."""

    condition = "KAFKAWIRE_BROKER_CONNECTION.API_VERSIONS_TIMEOUT"

    def __init__(self, timeout: RequestTimeoutError) -> None:
        self._narrowed(timeout.broker, timeout=timeout.reason)


class ApiVersionsClosedError(BrokerConnectionError):
    """A broker closed the connection on every ApiVersions request: brokers before Kafka 0.10
    do that, so the message says how to pin their version."""

    conclusive = True
    condition = "KAFKAWIRE_BROKER_CONNECTION.API_VERSIONS_CLOSED"


class NotKafkaError(BrokerConnectionError):
    """A broker's address answered, but not in Kafka's protocol: an HTTP server (a Schema
    Registry, a REST proxy), a TLS listener reached in plaintext, an SSH server. Recognised
    from the first answer's bytes, or from an HTTP request on a second connection when the
    first request got no answer (an HTTP server waits for a line Kafka's bytes never end),
    and said at once: another attempt meets the same server, so it is conclusive (reads and
    planning report it without retrying). ``evidence`` says what the server looks like and
    what to set."""

    conclusive = True
    condition = "KAFKAWIRE_BROKER_CONNECTION.NOT_KAFKA"

    def __init__(self, broker: str, evidence: str) -> None:
        self.evidence = evidence
        self._narrowed(broker, evidence=evidence)


class ConnectionSetupTimeoutError(BrokerConnectionError):
    """A connection to a broker (TCP connect, TLS handshake) did not complete within
    socket.connection.setup.timeout.ms (or what was left of an operation's deadline)."""

    timed_out = True
    conclusive = True
    condition = "KAFKAWIRE_BROKER_CONNECTION.CONNECTION_SETUP_TIMEOUT"

    def __init__(self, broker: str, step: str, timeout_ms: int,
                 deadline: str | None = None) -> None:
        limit = _timeout_limit(timeout_ms, "kafka.socket.connection.setup.timeout.ms", deadline)
        self._narrowed(broker, step=step, limit=limit)


class TlsHandshakeError(KafkaWireError):
    """A TLS handshake with a broker failed: its certificate is not trusted, is not valid for
    the broker's name or has expired, or the broker refused our client certificate.

    Not retriable and not a BrokerConnectionError: another attempt meets the same certificate,
    so the query fails at once with what to check instead of retrying until a timeout.
    """

    retriable = False
    condition = "KAFKAWIRE_TLS_HANDSHAKE"

    def __init__(self, broker: str, reason: str, security_protocol: str = "SSL") -> None:
        self.broker = broker
        self.reason = reason
        self.security_protocol = security_protocol
        self._build(self.condition, broker=broker, reason=reason,
                    security_protocol=security_protocol)


class SaslAuthenticationError(KafkaWireError):
    """A broker refused our SASL login: wrong password, unknown user, a mechanism it has not
    enabled, or a server that could not prove it knows the SCRAM credentials; with GSSAPI, also
    a Kerberos ticket that could not be obtained (KDC unreachable, unknown principal, stale
    keytab, unknown service principal, clock skew).

    Not retriable: another attempt sends the same credentials, and repeating a wrong password
    may lock the account. The message names the broker, the security protocol, the mechanism
    and the user, never the password.
    """

    retriable = False
    condition = "KAFKAWIRE_SASL_AUTHENTICATION"

    def __init__(self, broker: str, reason: str, security_protocol: str, mechanism: str,
                 user: str, error_code: int | None = None) -> None:
        self.broker = broker
        self.reason = reason
        self.security_protocol = security_protocol
        self.mechanism = mechanism
        self.user = user
        self.error_code = error_code
        self._build(self.condition, broker=broker, reason=reason,
                    security_protocol=security_protocol, mechanism=mechanism, user=user)


class OAuthTokenError(KafkaWireError):
    """No OAUTHBEARER token could be had: the token endpoint could not be reached or refused
    the client, answered no usable token, or a token provider failed.

    Not retriable: the endpoint's own retries (``kafka.sasl.login.retry.backoff.ms`` up to
    ``kafka.sasl.login.retry.backoff.max.ms``, as KIP-768's client retries) have run out, or
    the endpoint refused the credentials, which another attempt would only repeat. The message
    names the endpoint (without query or user info) and the client id, never the secret or a
    token.
    """

    retriable = False
    condition = "KAFKAWIRE_OAUTH_TOKEN"

    def __init__(self, source: str, reason: str, client: str = "") -> None:
        self.source = source
        self.reason = reason
        self.client = client
        self._build(self.condition, source=source, reason=reason,
                    client=f" for client {client!r}" if client else "")


class NoBrokersAvailableError(KafkaWireError):
    """None of the bootstrap servers answered.

    Retriable (a cluster may be restarting); the caller's bounded retries decide when to give up.
    ``setting`` is where the user gave the servers, which the message tells them to check: the
    option of a query, or what the CLI names instead (``naming``).
    """

    retriable = True
    invalid_metadata = True
    # every server refused the connection or has a name that does not resolve (set by the
    # client, which tried them)
    nothing_listens = False
    condition = "KAFKAWIRE_NO_BROKERS_AVAILABLE"

    def __init__(self, servers: list[str], last: Exception | None,
                 setting: str = "kafka.bootstrap.servers") -> None:
        self.servers = servers
        self.last = last
        self.setting = setting
        self.timed_out = bool(getattr(last, "timed_out", False))
        self.conclusive = bool(getattr(last, "conclusive", False))
        self._build(self.condition, servers=", ".join(servers),
                    failed="answered in time" if self.timed_out else "could be reached",
                    last=f" (last error: {last})" if last else "", setting=setting)

    def naming(self, setting: str) -> NoBrokersAvailableError:
        """The same failure, telling the user to check ``setting`` (the CLI's
        ``--bootstrap-server``, which its users give instead of a query's option)."""
        renamed = NoBrokersAvailableError(self.servers, self.last, setting)
        renamed.__cause__, renamed.__traceback__ = self.__cause__, self.__traceback__
        return renamed


def _at_broker(broker: str | None) -> str:
    return f", broker {broker}" if broker else ""


class DeliveryFailedError(KafkaWireError):
    """The producer gave up on a batch after kafka.retries attempts that each failed with an
    error of its own side (a lost connection, its request timeout), not a broker's error code.

    Not a KafkaError: no broker answered a code, so none is reported (a broker's code 7,
    REQUEST_TIMED_OUT, is BrokerRequestTimedOutError). ``last`` is the last attempt's error
    (or what held the batch back), ``broker`` the broker it was sent to when known. Not
    retriable: the producer's own retries have run out and its batches were aborted.
    """

    retriable = False
    condition = "KAFKAWIRE_DELIVERY_FAILED"

    def __init__(self, topic: str, partition: int, records: int, attempts: int,
                 last: BaseException | str, broker: str | None = None, *,
                 retries: int = 0) -> None:
        self.topic = topic
        self.partition = partition
        self.records = records
        self.attempts = attempts
        self.last = last
        self.broker = broker
        self.retries = retries
        self._build(self.condition, **self._parameters())

    def _parameters(self) -> dict[str, object]:
        return dict(records=self.records, topic=self.topic, partition=self.partition,
                    broker=_at_broker(self.broker), attempts=self.attempts,
                    retries=self.retries, last=self.last)

    def __reduce__(self) -> tuple:  # rebuilt from its facts (``last`` as its text)
        return (_rebuild_delivery_error, (type(self), dict(vars(self), last=str(self.last))))


class DeliveryTimeoutError(DeliveryFailedError):
    """The producer gave up on a batch because kafka.delivery.timeout.ms passed since the
    batch was created (Java's producer: a TimeoutException, "Expiring N record(s) ... ms has
    passed since batch creation"), its attempts having failed on its own side (connections,
    its request timeout) or behind an earlier failed batch of the partition. The client's
    deadline, not a broker's REQUEST_TIMED_OUT answer (BrokerRequestTimedOutError)."""

    condition = "KAFKAWIRE_DELIVERY_FAILED.DELIVERY_TIMEOUT"

    def __init__(self, topic: str, partition: int, records: int, attempts: int,
                 last: BaseException | str, broker: str | None = None, *,
                 timeout_ms: int = 0) -> None:
        self.timeout_ms = timeout_ms
        super().__init__(topic, partition, records, attempts, last, broker)

    def _parameters(self) -> dict[str, object]:
        return dict(records=self.records, topic=self.topic, partition=self.partition,
                    broker=_at_broker(self.broker), attempts=self.attempts,
                    timeout_ms=self.timeout_ms, last=self.last)


def _rebuild_delivery_error(cls: type[DeliveryFailedError], facts: dict[str, object]
                            ) -> DeliveryFailedError:
    made = cls.__new__(cls)
    made.__dict__.update(facts)
    made._build(made.condition, **made._parameters())
    return made


class SchemaRegistryError(KafkaWireError):
    """A Schema Registry request failed: the registry could not be reached, refused the
    request, or answered something that is not Confluent's API.

    Its condition is ``KAFKAWIRE_SCHEMA_REGISTRY.<kind>`` (SCHEMA_REGISTRY_KINDS), so a
    program tells a missing subject from an incompatible schema or a registry that is down
    without reading the English. The facts are attributes: ``url`` (the base URL, never with
    credentials), ``request`` (method and path), ``status`` (HTTP status, None without an
    answer), ``error_code`` (the registry's Confluent error code: 40401 subject not found,
    40403 schema not found, 409, 42201, ...; None when it gave none), ``subject``,
    ``schema_id``, ``version``. Of the registry's answer only its ``error_code`` and
    ``message`` fields are shown (printable, truncated by the client): the rest of a body may
    hold anything. Not retriable: the client's own retries (and URL failover) have run out,
    or the answer is one another attempt would repeat.
    """

    retriable = False
    condition = SCHEMA_REGISTRY

    def __init__(self, kind: str, url: str, request: str, *, reason: str = "",
                 answer: str = "", status: int | None = None, error_code: int | None = None,
                 subject: str | None = None, schema_id: int | None = None,
                 version: int | str | None = None) -> None:
        assert f"{SCHEMA_REGISTRY}.{kind}" in CONDITIONS, kind
        self.kind = kind
        self.url = url
        self.request = request
        self.reason = reason
        self.answer = answer
        self.status = status
        self.error_code = error_code
        self.subject = subject
        self.schema_id = schema_id
        self.version = version
        about = []
        if subject is not None:
            about.append(f"subject {subject!r}")
        if version is not None:
            about.append(f"version {version}")
        if schema_id is not None:
            about.append(f"schema id {schema_id}")
        self._build(f"{SCHEMA_REGISTRY}.{kind}", url=url, request=request, reason=reason,
                    answer=answer, about=f" ({', '.join(about)})" if about else "")


class DataLossError(OffsetOutOfRangeError):
    """Planned offsets are no longer in the log (``failOnDataLoss`` is true): a task found them
    gone (``context`` Fetch), or a stream found a partition deleted, its offsets gone back or a
    new partition not starting at 0 when planning a micro-batch (``summary`` says which, in the
    words of Spark's KAFKA_DATA_LOSS conditions).

    Its condition is ``KAFKA_DATA_LOSS.<kind>`` (DATA_LOSS_KINDS): ``kind`` as given, else
    PARTITIONS_DELETED for a vanished topic or partition (``code`` UNKNOWN_TOPIC_OR_PARTITION)
    and COULD_NOT_READ_OFFSET_RANGE for offsets gone from the log."""

    condition = DATA_LOSS

    def __init__(self, topic: str, partition: int, start: int, end: int, reason: str,
                 broker: str | None = None,
                 code: int = ErrorCode.OFFSET_OUT_OF_RANGE, *, context: str = "Fetch",
                 summary: str | None = None, kind: str | None = None) -> None:
        self.start = start
        self.end = end
        self.reason = reason
        spec = ERRORS[code][0]
        self.summary = summary or DATA_LOSS_SUMMARY.format(
            start=start, end=end, topic=topic, partition=partition, reason=reason)
        if kind is None:
            kind = "PARTITIONS_DELETED" if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION \
                else "COULD_NOT_READ_OFFSET_RANGE"
        assert f"{DATA_LOSS}.{kind}" in CONDITIONS, kind
        super().__init__(
            type(spec)(spec.code, spec.name, condition=f"{DATA_LOSS}.{kind}"), topic=topic,
            partition=partition, offset=start, broker=broker, context=context,
            message=f"{self.summary}. {DATA_LOSS_ADVICE}",
        )

    def _parameters(self) -> dict[str, object]:
        """The broker error's, with the loss's summary in place of detail and advice."""
        made = super()._parameters()
        del made["detail"], made["advice"]
        return dict(made, summary=self.summary)


class StartAfterEndError(ConfigurationError):
    """A batch read's start offset for a partition, once resolved, is after its end offset.

    Spark's kafka source fails such a read too (RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET
    in Spark 4.1+; before, "Beginning offset ... is after the ending offset ..."), whatever
    failOnDataLoss says: a start beyond the partition's end is a wrong option (or a damaged
    topic), not data that went away. ``start`` and ``end`` are the resolved offsets;
    ``starting`` and ``ending`` the options they came from.
    """

    condition = "KAFKAWIRE_CONFIGURATION.RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET"

    def __init__(self, topic: str, partition: int, start: int, end: int, starting: str,
                 ending: str) -> None:
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end
        self._build(self.condition, start=start, end=end, topic=topic, partition=partition,
                    starting=starting, ending=ending)


class FetchStalledError(ProtocolError):
    """A broker kept answering Fetches with no data although the partition holds more (its
    high watermark is past the offset asked for, or a 0.7 range's end lies past it) for the
    whole time budget of the read (client/fetching/empty_answers.py): ``waited_s`` seconds, ``answers``
    answers, ``setting`` the option whose budget ran out.

    A ProtocolError, as a broker that never serves what it says it holds breaks the protocol;
    the broker may only have been slow (storage catching up, a leader just elected), so the
    message names the option to raise."""

    condition = "KAFKAWIRE_PROTOCOL.FETCH_STALLED"

    def __init__(self, reason: str, *, waited_s: float, answers: int, setting: str,
                 topic: str, partition: int, offset: int, broker: str) -> None:
        self.waited_s = waited_s
        self.answers = answers
        self.setting = setting
        super().__init__(reason, topic=topic, partition=partition, offset=offset,
                         broker=broker)


class CoordinatorMovedError(RetriableError):
    """The group coordinator changed or is loading; find it again and retry."""


class ZooKeeperError(KafkaWireError):
    """ZooKeeper could not be reached or refused an operation."""

    condition = "KAFKAWIRE_ZOOKEEPER"


class ZooKeeperTlsError(ZooKeeperError):
    """The TLS handshake with a ZooKeeper server failed (``zookeeper.ssl.client.enable``): its
    certificate is not trusted or not valid for the name in ``zookeeper.connect``, or the port
    does not speak TLS. Not retried: every attempt meets the same certificate. The message
    names the server (host:port) and what to check."""

    condition = "KAFKAWIRE_ZOOKEEPER.TLS_HANDSHAKE"

    retriable = False


class ZooKeeperAuthError(ZooKeeperError):
    """ZooKeeper refused our SASL login (wrong password, unknown user), or requires one that
    was not configured (``sessionRequireClientSASLAuth``). The message names the server and
    the user, never the password."""

    condition = "KAFKAWIRE_ZOOKEEPER.AUTHENTICATION"

    retriable = False


class NoBrokersRegisteredError(ZooKeeperError):
    """``zookeeper.connect`` found no broker to bootstrap from: none registered under
    ``/brokers/ids`` (brokers down, or the chroot missing), or none with a listener for the
    configured security protocol."""

    condition = "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED"


class BrokerRegistrationError(ZooKeeperError):
    """A node under ``/brokers`` is not a registration in any layout Kafka wrote (0.7 text,
    0.8+ JSON); the message names the node and shows its first bytes."""

    condition = "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION"
