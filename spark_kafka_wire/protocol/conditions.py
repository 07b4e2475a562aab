"""The one table of error conditions: each condition's message template and when it applies.

As Spark keeps every error class in one error-conditions.json, every error spark-kafka-wire
raises names a condition of CONDITIONS and builds its message from that condition's template
(``str.format`` fields: the error's parameters, which stay on it as ``error.parameters``).
The wording of a message lives here once; programs and tests match the condition, never the
sentence. docs/errors.md's error table is checked against this one
(tests/unit/test_error_conditions.py), and a rule test keeps this the only table
(tests/unit/test_architecture_errors.py).

It is in the protocol layer, the lowest, so that every layer's errors render from it. A
sub-condition (``KAFKA_DATA_LOSS.PARTITIONS_DELETED``) without a template of its own takes its
family's; a broker's error code (``KAFKA_BROKER_ERROR.<name>``) is a sub-condition of an open
family (OPEN_FAMILIES): the codes' own table (protocol/errors.py ERRORS) names them.

To add a condition: an entry ``"FAMILY.KIND": Condition(template, when)`` below, a row in
docs/errors.md, and ``SomeError.of("FAMILY.KIND", **parameters)`` where it is raised (the
parameters are the template's fields; a rule test checks each call gives them).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter

from spark_kafka_wire.protocol.configuration_wordings import WORDINGS

#: The condition prefix of a broker's error code (Kafka 0.8+): ``KAFKA_BROKER_ERROR.<name>``,
#: the name as in Kafka's protocol guide.
BROKER_CONDITION = "KAFKA_BROKER_ERROR"
#: The same for a Kafka 0.7 broker's own codes (their names in upper snake case).
KAFKA07_BROKER_CONDITION = "KAFKA07_BROKER_ERROR"
#: Families whose sub-conditions are not listed here: a broker's codes (protocol/errors.py's
#: ERRORS and KAFKA07_ERRORS name them), each rendered with the family's template.
OPEN_FAMILIES = (BROKER_CONDITION, KAFKA07_BROKER_CONDITION)


@dataclass(frozen=True)
class Condition:
    """One condition: its message ``template`` (None: its family's) and ``when`` it applies
    (a kind's meaning, for a program telling the kinds of one family apart).

    ``fills``: the template is not a whole message but the family's parameter of that name
    (a broker connection's ``reason``), so the message is the family's, with this part in it:
    the kinds keep the family's first words and their own parameters."""

    template: str | None
    when: str = ""
    fills: str | None = None


def template_parameters(template: str) -> frozenset[str]:
    """The ``str.format`` fields of ``template`` (``{topic!r}`` is ``topic``)."""
    return frozenset(field.split(".")[0].split("[")[0]
                     for _, field, _, _ in Formatter().parse(template) if field)


# Templates that several conditions share: a class narrowing its family's condition keeps
# the family's wording.
_PROTOCOL = "{reason}{where}"
_CORRUPT_RECORD = (
    "corrupt record data: {reason}; the broker returned damaged bytes, retry the read or "
    "check the topic with another client{where}")
# a broker's error code; context, where, detail and advice are empty or lead with their
# own separator (" in Fetch", " for topic 't'", ": ...", ". Check ...")
_BROKER = "Kafka error {name} ({code}){context}{where}{detail}{advice}"
_DELIVERY_FAILED = (
    "delivery of a batch of {records} records to topic {topic!r}, partition {partition}"
    "{broker} failed after {attempts} attempts (kafka.retries={retries}): {last}. Check "
    "the broker; raise kafka.retries to try longer")
#: What a data loss error says to do (the words of Spark's KAFKA_DATA_LOSS message).
DATA_LOSS_ADVICE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you want the read to skip lost data instead of failing, set the "
    "source option failOnDataLoss to false"
)

#: Every condition: name -> Condition. Families first, each followed by its kinds.
CONDITIONS: dict[str, Condition] = {
    "KAFKAWIRE_ERROR": Condition("{reason}", "the base of every error; never raised itself"),

    # -- configuration: a setting that cannot work (ConfigurationError). An error narrows
    # the family to one of its kinds, the ones a user or a program would tell apart.
    "KAFKAWIRE_CONFIGURATION": Condition(
        "{reason}", "an option is missing, unknown or has a value that cannot work"),
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE": Condition(
        "{option} must be {expected}, got {got}",
        "an option's value is not of its type or form (not an integer, not true/false, not "
        "JSON, not host:port, not a regular expression, ...)"),
    "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE": Condition(
        "{option} must be {bound}, got {got}",
        "an option's number (or size) is below its minimum or above its maximum"),
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE": Condition(
        "{option} must be one of {allowed}, got {got}",
        "an option's value is not one of those it takes"),
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION": Condition(
        None, "an option that is required (alone, or with another one) is not set or is empty"),
    "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION": Condition(
        None, "a kafka.* option that is no Kafka client setting (a typo: Java clients' "
        "settings kafkawire does not use are accepted with a warning), or a misspelt security "
        "setting (also in a config file)"),
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION": Condition(
        None, "an option kafkawire knows and refuses (Spark's kafka source refuses it too, or "
        "kafkawire cannot honour it yet)"),
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS": Condition(
        "{subject}: give only one of {options}",
        "options that contradict each other, or one that takes effect only with another"),
    "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR": Condition(
        None, "something the cluster operator has not allowed (spark.kafkawire.* settings): a "
        "config provider, a directory, a URL, a module"),
    # one message whatever the reason, so that query options cannot probe the driver's files
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE": Condition(
        "{source}: cannot use {path} (missing, unreadable or not a properties file)",
        "a config file (kafkaConfigFile, --command-config, a config provider's file) or a "
        "placeholder in it cannot be used"),
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING": Condition(
        None, "a TLS store or certificate, a JAAS config, Kerberos or OAUTHBEARER settings "
        "that cannot work"),
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED": Condition(
        None, "a setting a Kafka 0.7 cluster cannot honour"),
    "KAFKAWIRE_CONFIGURATION.UNREADABLE_SCHEMA": Condition(
        "the {column} column's {format} schema {schema_id} cannot be read: {reason}",
        "a registered reader schema the column's format cannot read"),
    "KAFKAWIRE_CONFIGURATION.RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET": Condition(
        "Beginning offset {start} ({starting}) is after the ending offset {end} ({ending}) for "
        "topic {topic} partition {partition}: the resolved start offset is greater than the "
        "resolved end offset. Either the start is set too high (beyond the partition's end, or "
        "a start timestamp later than the end), or the Kafka topic has been damaged (deleted "
        "and re-created, or truncated). Check {starting} and {ending}",
        "a batch read's resolved start offset is after its end"),

    # -- a row the sink cannot write (DataError): the DataFrame's data, not an option
    "KAFKAWIRE_DATA": Condition("{reason}", "a row (or column) of the written DataFrame cannot "
                                "be written"),
    "KAFKAWIRE_DATA.MISSING_VALUE_COLUMN": Condition(
        "the DataFrame needs a 'value' column (the record value, string or binary); found "
        "columns: {columns}", "the written DataFrame has no 'value' column"),
    "KAFKAWIRE_DATA.COLUMN_TYPE": Condition(
        "column '{column}' must be {expected}, got {got}",
        "a column of the written DataFrame is not of the type the sink takes"),
    "KAFKAWIRE_DATA.NULL_TOPIC": Condition(
        "the 'topic' column is null in row {row} of a partition and no 'topic' option is set: "
        "every row needs a topic (set the 'topic' option for a default)",
        "a row's topic is null and no topic option gives a default"),
    # ``numbering``: how the topic's partitions are numbered, or that null lets the
    # partitioner choose (with its leading space)
    "KAFKAWIRE_DATA.PARTITION_OUT_OF_RANGE": Condition(
        "column 'partition' holds {partition}, but topic {topic!r} has partitions "
        "0..{last}{numbering}", "a row's partition is not one of its topic's"),

    "KAFKAWIRE_CHECKPOINT": Condition(
        'stream checkpoint offsets: {problem}. kafkawire writes {{"topic": {{"partition": '
        "offset}}}}; the checkpoint was edited, damaged or written by another source: restore "
        "it, or start the query with a new checkpointLocation",
        "a streaming query's checkpointed offsets are not what kafkawire writes"),

    # -- the broker's bytes break the protocol (ProtocolError); ``where`` is
    # " (topic 't', partition 0, ...)" or empty
    "KAFKAWIRE_PROTOCOL": Condition(_PROTOCOL, "bytes that break the Kafka protocol"),
    "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD": Condition(
        _CORRUPT_RECORD, "record data failed its CRC or its structure check"),
    "KAFKAWIRE_PROTOCOL.OFFSET_INSIDE_MESSAGE": Condition(
        _CORRUPT_RECORD, "Kafka 0.7: no message starts at the byte offset a fetch began at"),
    "KAFKAWIRE_PROTOCOL.FETCH_SIZE_LIMIT": Condition(
        None, "Kafka 0.7: a message is larger than the largest fetch size allowed"),
    "KAFKAWIRE_PROTOCOL.FETCH_STALLED": Condition(
        None, "Fetches answered no data below the partition's end for the whole time budget"),
    "KAFKAWIRE_PROTOCOL.UNSUPPORTED_CODEC": Condition(
        None, "a compression codec unknown to Kafka, or not allowed in the data's format"),
    "KAFKAWIRE_PROTOCOL.DECOMPRESSION_BOMB": Condition(
        None, "records would decompress past the caller's limit"),
    "KAFKAWIRE_PROTOCOL.DECOMPRESSION_LIMIT": Condition(
        None, "one Fetch answer's records decompress past kafka.fetch.max.decompressed.bytes"),

    # -- this side's mistake in speaking the protocol (LocalProtocolError), before sending
    "KAFKAWIRE_LOCAL_PROTOCOL": Condition(
        "{reason}", "this side's request breaks the protocol (a bug in the calling code)"),
    "KAFKAWIRE_LOCAL_PROTOCOL.MESSAGE_ENCODE": Condition(
        "cannot encode {reason}; fix the dict passed to the encoder "
        "(spark_kafka_wire.protocol.messages has every field of every version)",
        "a request dict that does not fit its API's layout"),
    "KAFKAWIRE_LOCAL_PROTOCOL.VERSION_NOT_IMPLEMENTED": Condition(
        "{api} v{version} is not implemented (versions {low}-{high})",
        "a request or response of an API version the engine has no layout for"),
    "KAFKAWIRE_LOCAL_PROTOCOL.UNKNOWN_FIELD_TYPE": Condition(
        "unknown type {type!r} for field {field!r}",
        "an API's layout names a field type the engine does not know"),

    # -- a broker's error code (KafkaError); its codes are the open family's sub-conditions
    BROKER_CONDITION: Condition(_BROKER, "a broker answered an error code"),
    KAFKA07_BROKER_CONDITION: Condition(_BROKER, "a Kafka 0.7 broker answered an error code"),

    # -- planned offsets gone from the log (DataLossError): Spark's KAFKA_DATA_LOSS kinds.
    # ``summary`` is what was lost (DATA_LOSS_SUMMARY, or a stream planner's own words)
    "KAFKA_DATA_LOSS": Condition(
        "Kafka error {name} ({code}){context}{where}: {summary}. " + DATA_LOSS_ADVICE,
        "planned offsets are no longer in Kafka and failOnDataLoss is true"),
    "KAFKA_DATA_LOSS.PARTITIONS_DELETED": Condition(
        None, "a planned topic or partition was deleted"),
    "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE": Condition(
        None, "planned offsets left the log (retention, truncation, a re-created topic)"),
    "KAFKA_DATA_LOSS.ADDED_PARTITION_DOES_NOT_START_FROM_OFFSET_ZERO": Condition(
        None, "a stream's new partition does not start at offset 0"),
    "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED": Condition(
        None, "a stream's partition went back to an earlier offset"),
    "KAFKA_DATA_LOSS.INITIAL_OFFSET_NOT_FOUND_FOR_PARTITIONS": Condition(
        None, "a stream found no earliest offset of a new partition"),

    # -- connections and authentication
    "KAFKAWIRE_BROKER_CONNECTION": Condition(
        "connection to broker {broker} failed: {reason}",
        "a socket to one broker failed (refused, reset, closed mid-response)"),
    "KAFKAWIRE_BROKER_CONNECTION.REQUEST_TIMEOUT": Condition(
        "no response to {request} within {limit}; the broker is overloaded or unreachable",
        "no answer within kafka.request.timeout.ms (the client's own timeout)", fills="reason"),
    "KAFKAWIRE_BROKER_CONNECTION.API_VERSIONS_TIMEOUT": Condition(
        "{timeout}. Kafka 0.9 brokers leave ApiVersions unanswered (0.8 brokers close the "
        "connection on it): for a 0.8 or 0.9 broker set kafka.api.version.request=false and "
        "kafka.broker.version.fallback to its release (e.g. 0.8.2 or 0.9.0)",
        "ApiVersions unanswered (a Kafka 0.9 broker)", fills="reason"),
    "KAFKAWIRE_BROKER_CONNECTION.API_VERSIONS_CLOSED": Condition(
        None, "the broker closed the connection on every ApiVersions request (before 0.10)"),
    "KAFKAWIRE_BROKER_CONNECTION.NOT_KAFKA": Condition(
        "{broker} answered, but not in Kafka's protocol: {evidence}",
        "the address answered, not in Kafka's protocol", fills="reason"),
    "KAFKAWIRE_BROKER_CONNECTION.CONNECTION_SETUP_TIMEOUT": Condition(
        "{step} timed out after {limit}; the broker is down, overloaded or a firewall drops "
        "the connection",
        "no connection within kafka.socket.connection.setup.timeout.ms", fills="reason"),
    "KAFKAWIRE_TLS_HANDSHAKE": Condition(
        "TLS handshake with broker {broker} failed (kafka.security.protocol={security_protocol})"
        ": {reason}", "a TLS handshake with a broker failed"),
    "KAFKAWIRE_SASL_AUTHENTICATION": Condition(
        "SASL authentication with broker {broker} failed (kafka.security.protocol="
        "{security_protocol}, kafka.sasl.mechanism={mechanism}, user {user!r}): {reason}",
        "a broker refused the SASL login"),
    "KAFKAWIRE_OAUTH_TOKEN": Condition(
        "could not get an OAUTHBEARER token from {source}{client}: {reason}",
        "no OAUTHBEARER token could be had"),
    "KAFKAWIRE_NO_BROKERS_AVAILABLE": Condition(
        "none of the bootstrap servers {servers} {failed}{last}. Check {setting}, that the "
        "brokers are running and that this machine can reach them",
        "none of the bootstrap servers answered"),

    # -- the producer gave up on its side (DeliveryFailedError)
    "KAFKAWIRE_DELIVERY_FAILED": Condition(
        _DELIVERY_FAILED, "the producer gave up on a batch after kafka.retries attempts"),
    "KAFKAWIRE_DELIVERY_FAILED.DELIVERY_TIMEOUT": Condition(
        "delivery of a batch of {records} records to topic {topic!r}, partition {partition}"
        "{broker} failed within kafka.delivery.timeout.ms={timeout_ms} ({attempts} attempts): "
        "{timeout_ms} ms have passed since the batch was created; last error: {last}. Check the "
        "broker; raise kafka.delivery.timeout.ms if it is only slow",
        "the producer gave up on a batch once kafka.delivery.timeout.ms passed"),

    # -- ZooKeeper
    "KAFKAWIRE_ZOOKEEPER": Condition(
        "{operation} {path} on ZooKeeper at {connect} failed: {error}",
        "ZooKeeper could not be reached or refused an operation"),
    "KAFKAWIRE_ZOOKEEPER.TLS_HANDSHAKE": Condition(
        "{reason}", "the TLS handshake with a ZooKeeper server failed"),
    "KAFKAWIRE_ZOOKEEPER.AUTHENTICATION": Condition(
        "{reason}", "ZooKeeper refused (or requires) a SASL login"),
    "KAFKAWIRE_ZOOKEEPER.NO_BROKERS_REGISTERED": Condition(
        "{reason}", "zookeeper.connect found no broker to bootstrap from"),
    "KAFKAWIRE_ZOOKEEPER.BROKER_REGISTRATION": Condition(
        "{reason}", "a node under /brokers is in no layout Kafka wrote"),

    # -- Schema Registry (SchemaRegistryError, always narrowed to a kind): {request} is the
    # method and path, {about} the subject / version / id (with a leading space, or empty),
    # {answer} the status and the registry's own error_code and message (printable,
    # truncated), {url} the base URL without credentials.
    "KAFKAWIRE_SCHEMA_REGISTRY": Condition(
        None, "a Schema Registry request failed"),
    "KAFKAWIRE_SCHEMA_REGISTRY.UNREACHABLE": Condition(
        "Schema Registry {url}: {request}{about} failed: {reason}. Check schema.registry.url, "
        "that the registry is running and that this machine (executors included) can reach it",
        "no registry URL could be connected to or answered within the request timeout, every "
        "URL and every retry tried"),
    "KAFKAWIRE_SCHEMA_REGISTRY.SERVER_ERROR": Condition(
        "Schema Registry {url}: {request}{about} failed: {answer} ({reason}). The registry is "
        "failing or overloaded: check its logs; raise the retries to wait longer",
        "the registry answered a server error (5xx), 429 or 408 until the retries ran out"),
    "KAFKAWIRE_SCHEMA_REGISTRY.TLS_HANDSHAKE": Condition(
        "Schema Registry {url}: TLS handshake failed: {reason}",
        "the registry's TLS certificate is not trusted, not valid for its host name, or "
        "expired (not retried)"),
    "KAFKAWIRE_SCHEMA_REGISTRY.UNAUTHORIZED": Condition(
        "Schema Registry {url}: {request}{about} refused: {answer}. Check the credentials "
        "(basic.auth.user.info, user info in the URL, or the bearer token) and that the "
        "principal may read (or write) the subject",
        "the registry refused the credentials or the principal (401, 403)"),
    "KAFKAWIRE_SCHEMA_REGISTRY.NOT_FOUND": Condition(
        "Schema Registry {url}: {request}{about} not found: {answer}. Check the subject (its "
        "name strategy; key or value), the version or id, and that schema.registry.url is the "
        "registry the records were written with, ending in Confluent's API path (Apicurio: "
        "/apis/ccompat/v7)",
        "the subject, version or schema id does not exist (404; Confluent's error codes "
        "40401, 40402, 40403), or the URL is not Confluent's API"),
    "KAFKAWIRE_SCHEMA_REGISTRY.INCOMPATIBLE": Condition(
        "Schema Registry {url}: {request}{about} refused: the schema is incompatible with the "
        "subject's earlier versions under its compatibility level: {answer}. Change the schema "
        "(a new field needs a default, ...) or the subject's compatibility level",
        "a schema registered under a subject breaks its compatibility level (409)"),
    "KAFKAWIRE_SCHEMA_REGISTRY.INVALID_SCHEMA": Condition(
        "Schema Registry {url}: {request}{about} refused: the schema is invalid: {answer}. Fix "
        "the schema (its type, syntax and references)",
        "the registry refused a schema as invalid (422, error code 42201)"),
    "KAFKAWIRE_SCHEMA_REGISTRY.INVALID_REQUEST": Condition(
        "Schema Registry {url}: {request}{about} refused: {answer}",
        "the registry refused the request otherwise (another 4xx: a bad version, "
        "compatibility level or media type)"),
    "KAFKAWIRE_SCHEMA_REGISTRY.REDIRECTED": Condition(
        "Schema Registry {url}: {request}{about} was answered with a redirect ({answer}), "
        "which kafkawire does not follow (it would send the credentials on to another "
        "address): configure the registry's final URL",
        "the registry answered a redirect (3xx), which kafkawire does not follow"),
    "KAFKAWIRE_SCHEMA_REGISTRY.BAD_ANSWER": Condition(
        "Schema Registry {url}: {request}{about}: {reason}. Check that schema.registry.url "
        "points at Confluent's Schema Registry API (Apicurio: /apis/ccompat/v7), not a proxy's "
        "or a login page",
        "the registry's answer is not what Confluent's API answers (not JSON, fields missing "
        "or of the wrong type, an unknown schema type) or is larger than the client's limit"),
    "KAFKAWIRE_SCHEMA_REGISTRY.REFERENCE_LIMIT": Condition(
        "Schema Registry {url}: the references of the schema{about} go beyond the client's "
        "limits: {reason}. A reader fetches a schema's imports within bounds, so that no "
        "registry answer makes it fetch, hold or wait without end: check the references "
        "registered with that schema (a chain without end, or the same schema imported again "
        "under new names, is a registry's mistake or an attack); a schema that truly imports "
        "more must be split or flattened",
        "a schema's references (its imports, theirs, ...) go beyond what the client fetches "
        "for one schema: more schemas, more bytes or more levels than its limits"),

    # -- record formats (formats/errors.py)
    "KAFKAWIRE_UNDECODABLE_RECORD": Condition(
        "cannot decode the {column} of {where}{writer}: {reason}. Set mode=PERMISSIVE to read "
        "such records as null with their bytes in {corrupt}, or read the column raw "
        "({column}.format=raw)",
        "a record its column's format cannot decode (mode=FAILFAST)"),
    "KAFKAWIRE_UNENCODABLE_VALUE": Condition(
        "cannot encode the {column} of a row for topic {topic!r} with the schema of id "
        "{schema_id}: {reason}. Give the column a type the schema takes (or let kafkawire "
        "derive the schema from the column: unset use.latest.version and {column}.schema.id)",
        "a row's column value does not fit the schema it is written with"),
    "KAFKAWIRE_SCHEMA_TOO_COMPLEX": Condition(
        "cannot read the {kind}{which}: {reason}. kafkawire reads schemas whose "
        "Spark type has at most {nodes} fields and nests at most {depth} deep; read the "
        "column raw (value.format=raw or key.format=raw), or register a smaller schema",
        "a schema whose Spark type would be too large or deep to build"),
}

#: What a data loss was, where the planner gives no words of its own (``summary``).
DATA_LOSS_SUMMARY = (
    "data loss: cannot read offsets [{start}, {end}) of {topic}-{partition}: {reason}")


def family(condition: str) -> str:
    """The condition ``condition`` narrows (``A.B`` -> ``A``); a family is its own."""
    return condition.rpartition(".")[0] or condition


def is_known(condition: str) -> bool:
    """Whether ``condition`` is in the table, or is a broker code of an open family."""
    return condition in CONDITIONS or (family(condition) in OPEN_FAMILIES
                                       and "." in condition)


def template_of(condition: str) -> str:
    """The message template of ``condition``: its own, or the nearest family's."""
    name = condition
    while True:
        entry = CONDITIONS.get(name)
        if entry is not None and entry.template is not None and entry.fills is None:
            return entry.template
        if "." not in name:
            raise KeyError(f"no template for the error condition {condition!r}")
        name = family(name)


def parameters_of(condition: str) -> frozenset[str]:
    """The parameters the message of ``condition`` takes."""
    entry = CONDITIONS.get(condition)
    if entry is not None and entry.fills is not None:
        assert entry.template is not None, condition
        outer = parameters_of(family(condition)) - {entry.fills}
        return outer | template_parameters(entry.template)
    return template_parameters(template_of(condition))


def part(condition: str, **parameters: object) -> str:
    """The part of the message a condition with ``fills`` gives its family (a broker
    connection error's ``reason``), from those of ``parameters`` its template takes."""
    entry = CONDITIONS[condition]
    assert entry.template is not None and entry.fills is not None, condition
    return entry.template.format(**{name: parameters[name]
                                    for name in template_parameters(entry.template)})


def message(condition: str, **parameters: object) -> str:
    """The message of ``condition``: its template filled with ``parameters``, which give
    every field of the template (and may give more: the kinds of a family that share a
    constructor, such as a Schema Registry error's, each use some of its facts)."""
    if not is_known(condition):
        raise KeyError(f"unknown error condition {condition!r}")
    missing = parameters_of(condition) - parameters.keys()
    if missing:
        raise TypeError(f"{condition} needs the parameters {sorted(missing)}")
    entry = CONDITIONS.get(condition)
    if entry is not None and entry.fills is not None:
        outer = {name: parameters[name] for name in parameters_of(family(condition))
                 if name != entry.fills}
        return message(family(condition), **outer,
                       **{entry.fills: part(condition, **parameters)})
    return template_of(condition).format(**parameters)


def worded(condition: str, wording: str, **parameters: object) -> str:
    """The message of one problem of ``condition``: the wording ``"<condition>:<wording>"``
    of protocol/configuration_wordings.py filled with ``parameters`` (every field of it)."""
    if not is_known(condition):
        raise KeyError(f"unknown error condition {condition!r}")
    template = WORDINGS[f"{condition}:{wording}"]
    missing = template_parameters(template) - parameters.keys()
    if missing:
        raise TypeError(f"{condition}:{wording} needs the parameters {sorted(missing)}")
    return template.format(**parameters)


def kinds(of: str) -> dict[str, str]:
    """The kinds of the family ``of``: each sub-condition's last name -> when it applies."""
    prefix = f"{of}."
    return {name.removeprefix(prefix): entry.when for name, entry in CONDITIONS.items()
            if name.startswith(prefix) and "." not in name.removeprefix(prefix)}
