"""The wordings of configuration errors, one per problem: ``ConfigurationError.of(condition,
wording, **parameters)`` renders ``"<condition>:<wording>"`` from here with the parameters,
which stay on the error (``error.parameters``; ``error.wording`` names the wording).

Part of the one table of conditions (protocol/conditions.py, which renders them: ``worded``):
the condition (a kind of KAFKAWIRE_CONFIGURATION, or the family itself) is what a program
tells errors apart by and what docs/errors.md lists; a wording only picks the sentence of one
problem under it, so that each is written once, here, and no raise site writes its own text
(tests/unit/test_architecture_configuration_errors.py). Secrets never go into parameters: a
raise site passes a value through ``shown`` (options/values.py), or names the option instead.
"""

from __future__ import annotations

WORDINGS: dict[str, str] = {
    # the family itself (no kind)
    "KAFKAWIRE_CONFIGURATION:BATCH_ID_TOO_LARGE":
        "batch id {batch_id} does not fit the marker's {batch_bits} bits",
    "KAFKAWIRE_CONFIGURATION:BROKER_WITHOUT_TRANSACTIONS":
        "broker {broker} does not support transactions (no InitProducerId: Kafka before 0.11); "
        "{transactional_id} needs Kafka 0.11+ (2.5+ recommended). Remove it to write "
        "at-least-once",
    "KAFKAWIRE_CONFIGURATION:BROKER_WITHOUT_TRANSACTION_V2":
        "broker {conn} speaks {spec} up to v{version}, but the transaction was begun with the "
        "transaction protocol v2 (KIP-890), which needs v{transaction_v2_from}: the cluster "
        "finalized {transaction_version_feature} {transaction_v2_level} while this broker does "
        "not support it (a rolling upgrade or downgrade under way?). Retry the write once every "
        "broker runs the same Kafka",
    "KAFKAWIRE_CONFIGURATION:CREATE_TOPICS_NEEDS_COUNTS":
        "the broker's CreateTopics v{version} cannot use its default partition count or "
        "replication factor (Kafka 2.4+ can): set createTopicPartitions and "
        "createTopicReplicationFactor",
    "KAFKAWIRE_CONFIGURATION:HEADERS_UNSUPPORTED_BY_TOPIC":
        "row {row} has headers, but the leader of topic {topic!r} speaks a Produce version with "
        "message format v{magic}, which has no headers (Kafka 0.11+ brokers store them); drop "
        "the 'headers' column or write to a newer broker",
    "KAFKAWIRE_CONFIGURATION:IDEMPOTENCE_UNSUPPORTED_BY_TOPIC":
        "kafka.enable.idempotence=true cannot be honoured for topic {topic!r}: {why}; idempotent "
        "produce needs Kafka 0.11+ (InitProducerId). Remove the setting (or set it to false) to "
        "write without idempotence",
    "KAFKAWIRE_CONFIGURATION:KAFKA07_CONNECTION_NEEDS_07":
        "a Kafka 0.7 connection needs broker_version_fallback 0.7.x (e.g. 0.7.2), not "
        "{broker_version_fallback!r}",
    "KAFKAWIRE_CONFIGURATION:KAFKA07_PARTITION_NOT_FOUND":
        "topic {topic!r} has no partition {number}: its brokers hold {locations_count} "
        "partitions, numbered 0 to {value} by broker id, then partition ({names})",
    "KAFKAWIRE_CONFIGURATION:KAFKA07_PAYLOAD_ONLY":
        "{asked}: a Kafka 0.7 message has a payload only (no key, headers, timestamp or null "
        "value, and 0.7 brokers have no transactions); write plain lines to this cluster",
    "KAFKAWIRE_CONFIGURATION:KAFKA07_TOPIC_NOT_REGISTERED":
        "topic {topic!r} is not registered in ZooKeeper at {zookeeper_connect} (/brokers/topics)",
    "KAFKAWIRE_CONFIGURATION:LOCAL_BROKER_NOT_STARTED":
        "the local broker did not start: {exc}; its log ends: {log_path}",
    "KAFKAWIRE_CONFIGURATION:NOT_A_KAFKA07_REQUEST":
        "{spec} is not a Kafka 0.7 request (broker {name} is configured as "
        "{broker_version_fallback}): use spark_kafka_wire.client.kafka07",
    "KAFKAWIRE_CONFIGURATION:NO_GROUP_COORDINATOR_KAFKA07":
        "group {group!r}: Kafka 0.7 brokers have no group coordinator, so offsets are committed "
        "and read in ZooKeeper at {zookeeper_connect} only; use commitOffsets=zookeeper",
    "KAFKAWIRE_CONFIGURATION:NO_OFFSET_FOR_TIMESTAMP":
        "no offset matched from request of topic-partition {topic}-{partition} and timestamp "
        "{stamps} ({option}): no record has a timestamp at or after it. Set "
        "startingOffsetsByTimestampStrategy=latest to start such partitions at the latest offset "
        "instead",
    "KAFKAWIRE_CONFIGURATION:NO_TOPIC":
        "no topic to write to: set the 'topic' option or add a 'topic' column",
    "KAFKAWIRE_CONFIGURATION:PARTITION_NOT_IN_KAFKA07_TOPIC":
        "--partition {partition}: topic {topic!r} has partitions 0-{last} on its Kafka 0.7 "
        "brokers, numbered by broker id, then partition ({names})",
    "KAFKAWIRE_CONFIGURATION:ROW_HEADER_NULL":
        "row {value} has a null element in its 'headers' array; every header is a struct with a "
        "non-null key",
    "KAFKAWIRE_CONFIGURATION:ROW_HEADER_NULL_KEY":
        "row {value} has a header with a null key; header keys must be strings (values may be "
        "null)",
    "KAFKAWIRE_CONFIGURATION:TRANSACTIONS_UNSUPPORTED_BY_TOPIC":
        "kafka.transactional.id cannot be honoured for topic {topic!r}: its leader speaks a "
        "Produce version before record batches; transactions need Kafka 0.11+",
    "KAFKAWIRE_CONFIGURATION:TRANSACTIONS_WITHOUT_BATCH_ID":
        "kafka.transactional.id in a streaming write needs the micro-batch's id in the task's "
        "local properties ({batch_id_property}, {query_id_property}), which this Spark did not "
        "set; exactly-once cannot be guaranteed",
    "KAFKAWIRE_CONFIGURATION:TRANSACTIONS_WITHOUT_TASK":
        "kafka.transactional.id: the write is not running in a Spark task (no TaskContext), so "
        "it has no partition id",
    # INVALID_VALUE
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:ASSIGN_NOT_JSON":
        "option 'assign' must be JSON like {example}; got {value}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:BOOTSTRAP_SERVER_NOT_HOST_PORT":
        "kafka.bootstrap.servers: {item} is not host:port ({why}); give a comma-separated list "
        "such as broker1:9092,broker2:9092",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:GROUP_HAS_MEMBERS":
        "group {group!r} is {state} with {members_count} member(s): its consumers would "
        "overwrite reset offsets at their next commit; stop them first (a dry run, without "
        "--execute, shows the offsets)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:GROUP_HAS_ZOOKEEPER_CONSUMERS":
        "group {group!r} has {members_count} consumer(s) registered in ZooKeeper at {zookeeper}: "
        "they would overwrite reset offsets at their next commit; stop them first (a dry run, "
        "without --execute, shows the offsets)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:GROUP_HAS_ZOOKEEPER_CONSUMERS_2":
        "group {group!r} has {members_count} consumer(s) registered in ZooKeeper at {connect} "
        "(/consumers/{group}/ids: {value}); stop them before deleting the group",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:GROUP_NOTHING_TO_RESET":
        "group {group!r}: no partition to reset (it committed none; name them with --topic)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:GROUP_NOT_IN_ZOOKEEPER":
        "group {name!r} does not exist in ZooKeeper at {zookeeper} (kafkawire groups list "
        "--zookeeper lists them)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:NOTHING_TO_SHIFT":
        "--shift-by: group {group!r} has no committed offset for {topic}-{partition} to shift; "
        "reset it with --to-earliest, --to-latest or --to-offset first",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:NOT_A_REGEX":
        "{what} {pattern!r}: not a regular expression ({exc})",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:NO_TLS_VERSION":
        "{enabled_opt} names no TLS version: give some of {protocol_versions}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:PARTITIONS_MISSING":
        "{option} must give {what} for every {word} partition: {parts}{hint}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:PARTITION_LIMIT":
        "{option}: the value for {topic}-{partition} must be an integer up to {int64_max}, got "
        "{value}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:PARTITION_NUMBER":
        "{option}: partition {partition} of {topic!r} is not {what} (0 to {int32_max})",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:PARTITION_OFFSET":
        "{option}: offset for {topic}-{partition} must be an integer >= -2, got {off!r}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:PATTERN_MATCHES_NO_TOPIC":
        "--pattern {pattern!r} matches no topic (kafkawire topics lists them)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:PORT_IN_USE":
        "port {port} of {host} is in use by another process (another broker?): choose another "
        "port (kafkawire broker --port; 0 picks a free one); see {log_path}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:SUBSCRIBE_NO_TOPIC":
        "option 'subscribe' names no topic (its value is {value})",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:SUBSCRIBE_PATTERN_EMPTY":
        "option 'subscribePattern' is an empty pattern (its value is {value})",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:SUBSCRIBE_PATTERN_NOT_REGEX":
        "option 'subscribePattern' is not a valid regular expression (Python's re) "
        "({reason}){write}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TIMESTAMP_NOT_A_NUMBER":
        "{option} expects a single long value (milliseconds since the epoch), got {text}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOKEN_ENDPOINT_NOT_URL":
        "kafka.sasl.oauthbearer.token.endpoint.url is not a valid URL{why}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOKEN_ENDPOINT_NO_HOST":
        "kafka.sasl.oauthbearer.token.endpoint.url is not a valid URL (no host, or white space "
        "in it)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOKEN_ENDPOINT_SCHEME":
        "kafka.sasl.oauthbearer.token.endpoint.url must be an http, https or file URL",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOPICS_NOT_READ":
        "{name} names topics that are not {word} or do not exist: {unread}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOPIC_CONFIG_PAIR":
        "--config {pair!r}: give NAME=VALUE (a topic config such as retention.ms=86400000)",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOPIC_NAME":
        "{what}: {name} is not a legal Kafka topic name (1 to {max_topic_length} characters from "
        "letters, digits, '.', '_' and '-'; not '.' or '..')",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:TOPIC_OFFSET_WORD":
        "{option}: the value for topic {topic!r} must be 'earliest', 'latest' or a partition → "
        "offset map, got {given_word}",
    "KAFKAWIRE_CONFIGURATION.INVALID_VALUE:ZOOKEEPER_CONNECT":
        "zookeeper.connect {connect} is not host:port[,host:port][/chroot]: {exc}",
    # VALUE_OUT_OF_RANGE
    "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE:DURATION_TOO_LONG":
        "{option} is longer than {max_duration_ms} ms, got {text!r}",
    "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE:PARTITION_TIMESTAMP_NEGATIVE":
        "{by_timestamp}: the timestamp for {topic}-{partition} must be >= 0 (ms), got {ts}",
    "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE:TRANSACTIONAL_ID_TOO_LONG":
        "kafka.transactional.id is too long: a task's id (prefix, '-', its partition) must fit a "
        "protocol string of {max_wire_string} bytes",
    # UNSUPPORTED_VALUE
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:BASIC_AUTH_SOURCE":
        "basic.auth.credentials.source must be URL, USER_INFO or SASL_INHERIT, got {source!r}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:BEARER_AUTH_SOURCE":
        "bearer.auth.credentials.source must be STATIC_TOKEN, OAUTHBEARER or "
        "SASL_OAUTHBEARER_INHERIT, got {given_source!r}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:BROKER_VERSION_FALLBACK":
        "kafka.broker.version.fallback: {exc}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:COLUMN_FORMAT":
        "{name} must be one of {value_formats}, got {fmt!r}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:COLUMN_NOT_ENCODABLE":
        "the {column} column cannot be written with {format} {which}: {exc}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:COLUMN_SCHEMA_NOT_DERIVABLE":
        "the {column} column's {format} schema cannot be derived from its Spark type: {exc}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:DECODE_MODE":
        "mode must be {decode_modes}, got {mode!r}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:EARLIEST_AS_BATCH_END":
        "{option}{at} cannot be earliest (-2) for batch queries",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:LATEST_AS_BATCH_START":
        "{option}{at} cannot be latest (-1) for batch queries",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:LOGIN_CALLBACK_HANDLER":
        "kafka.sasl.login.callback.handler.class names a JVM class kafkawire cannot run; it "
        "understands {known}. For another token source, name a Python callable in "
        "kafka.sasl.oauthbearer.token.provider",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:SAVE_MODE_OVERWRITE":
        "kafkawire appends to topics; save mode overwrite is not allowed (use mode('append'))",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:SSL_ENDPOINT_IDENTIFICATION":
        "kafka.ssl.endpoint.identification.algorithm must be https or empty (no hostname check), "
        "got {algorithm!r}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:SUBJECT_NAME_STRATEGY":
        "{name} must be one of {subject_name_strategies} (or its io.confluent class name), got "
        "{value!r}",
    "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE:ZOOKEEPER_ENDPOINT_IDENTIFICATION":
        "{algorithm_opt} must be HTTPS or empty (no host name check), got {algorithm}",
    # MISSING_OPTION
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:AWS_REGION":
        "Amazon MSK IAM needs the cluster's region: set kafka.sasl.aws.region (it is taken from "
        "broker names like b-1.<cluster>.kafka.<region>.amazonaws.com, or AWS_REGION, when those "
        "are available)",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:BASIC_AUTH_USER_INFO":
        "basic.auth.credentials.source=USER_INFO needs basic.auth.user.info as user:password",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:BEARER_AUTH_OAUTH":
        "bearer.auth.credentials.source=OAUTHBEARER needs {name}",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:BEARER_AUTH_TOKEN":
        "bearer.auth.credentials.source=STATIC_TOKEN needs bearer.auth.token",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:BOOTSTRAP_SERVERS_EMPTY":
        "kafka.bootstrap.servers is empty: give a comma-separated list of host:port",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:BOOTSTRAP_SERVERS_REQUIRED":
        "option 'kafka.bootstrap.servers' is required: set it to the brokers' host:port list, "
        "e.g. .option('kafka.bootstrap.servers', 'broker1:9092'), or give the cluster's "
        "ZooKeeper in 'zookeeper.connect' (host:port[,host:port][/chroot]) to find the brokers "
        "there{hints}",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:CLI_NO_BROKER":
        "no broker to connect to: give --bootstrap-server HOST:PORT, set {bootstrap_env}, or put "
        "bootstrap.servers in the --command-config file; or name the cluster's ZooKeeper "
        "(--zookeeper HOST:PORT[/CHROOT], or zookeeper.connect in the file) to find the brokers "
        "there",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:CLI_SCHEMA_REGISTRY":
        "{chosen}: records are decoded with their schemas from a Schema Registry; add "
        "--schema-registry URL",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:COLUMN_SCHEMA_NOT_REGISTERED":
        "the {column} column's schema (derived from its Spark type) is not registered under "
        "subject {subject!r}, and auto.register.schemas=false: register it, or set "
        "use.latest.version=true or {column}.schema.id",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:COMMIT_ZOOKEEPER_CONNECT":
        "commitOffsets={commit} needs zookeeper.connect (host:port[,host:port][/chroot])",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:CONFIG_FILE_PATH":
        "kafkaConfigFile is empty: give the path of a .properties file",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:GROUP_ID":
        "commitOffsets and startingOffsets=group need a consumer group: set kafka.group.id (the "
        "group lag tools will show)",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:KAFKA07_ZOOKEEPER_CONNECT":
        "kafka.broker.version.fallback={said}: Kafka 0.7 brokers have no Metadata request, so "
        "kafkawire finds a 0.7 topic's brokers and partitions in ZooKeeper: give "
        "zookeeper.connect (host:port[,host:port][/chroot])",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:KERBEROS_PRINCIPAL":
        "kafka.sasl.kerberos.keytab needs kafka.sasl.kerberos.principal (name@REALM)",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:KERBEROS_SERVICE_NAME":
        "kafka.sasl.kerberos.service.name is empty",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:NEEDED_WITH":
        "{missing} is needed with {present}",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:OAUTHBEARER_JAAS_CONFIG":
        "SASL OAUTHBEARER needs kafka.sasl.jaas.config: {oauth_module} required clientId=\"...\" "
        "clientSecret=\"...\" scope=\"...\"; with kafka.sasl.oauthbearer.token.endpoint.url (an "
        "identity provider), or unsecuredLoginStringClaim_sub=\"<user>\"; (unsecured tokens, "
        "development only)",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:REGISTRY_FORMAT":
        "from_confluent/to_confluent need a registry format ({formats_named}), got {fmt!r}",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:SASL_CREDENTIALS":
        "SASL {mechanism} needs credentials: set kafka.sasl.jaas.config (e.g. {value} required "
        "username=\"...\" password=\"...\";) or kafka.sasl.username and kafka.sasl.password",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:SCHEMA_REGISTRY_URL":
        "value.format / key.format other than raw read schemas from a Schema Registry: set "
        "schema.registry.url",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:SUBJECT_BY_RECORD_NAME":
        "{column}.subject.name.strategy={strategy} names subjects by the record's name, which a "
        "read does not know before it has a schema: set {column}.subject (or {column}.schema.id)",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:SUBSCRIPTION":
        "one of the options 'subscribe', 'subscribePattern' or 'assign' is required: 'subscribe' "
        "takes a comma-separated list of topics, 'subscribePattern' a regular expression, "
        "'assign' JSON like {{\"topicA\":[0,1]}}",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:TOPIC_EMPTY":
        "option 'topic' is empty",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:TO_CONFLUENT_SUBJECT":
        "to_confluent needs the subject of the schema: give topic= (the subject is "
        "<topic>-value), or value.subject, or value.schema.id in options",
    "KAFKAWIRE_CONFIGURATION.MISSING_OPTION:TRANSACTIONAL_ID_EMPTY":
        "kafka.transactional.id is empty: give the prefix of the write's transactional ids",
    # UNKNOWN_OPTION
    "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION:MISSPELT_SETTING":
        "{where}: '{name}' is not a Kafka client setting; did you mean '{intended}'? Fix its "
        "name: kafkawire will not connect without the security setting it seems to give",
    "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION:UNKNOWN_KAFKA_OPTIONS":
        "unknown Kafka client option(s): {hints}: no Kafka client has such a setting. See "
        "docs/reference/options.md for the kafka.* settings kafkawire understands",
    # REFUSED_OPTION
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:BATCH_ONLY_OPTION":
        "option {option!r} is not valid for streaming queries; a stream reads until it is "
        "stopped (use Trigger.AvailableNow to stop at the current end)",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:KAFKA_OPTION":
        "Kafka option '{option}' is not supported: {refused}",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:KAFKA_OPTION_VALUE":
        "Kafka option '{option}={value}' is not supported: {reason}",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:PROTOBUF_SCHEMA_UNREADABLE":
        "the {column} column's Protobuf schema {id} cannot be read: {exc}",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:READER_SCHEMAS_DIFFER":
        "the {column} column needs one reader schema, and the topics' subjects have different "
        "ones: {listed}; set {column}.subject or {column}.schema.id to choose, or read the "
        "topics apart",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:SCHEMA_TYPE_MISMATCH":
        "{column}.format={format} needs a {expected} schema, and the registry's schema {id} "
        "(subject {subject}) is {schema_type}: set {column}.format to its format",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:SUBJECT_WITHOUT_TOPIC":
        "the {column} column's schema is found by topic ({strategy}), and this read names no "
        "topic yet: set {column}.subject or {column}.schema.id",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:UNIMPLEMENTED_SECURITY":
        "'{key}' {implemented}; refusing to connect without the security you asked for",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:USER_SCHEMA":
        "kafkawire has a fixed schema ({columns}); do not pass a schema to the reader",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:USER_SCHEMA_FORMATTED":
        "kafkawire gives the {column} column the registry's reader schema; do not pass a schema "
        "to the reader (pin one with {column}.schema.id or {column}.schema.version)",
    "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION:USER_SCHEMA_STREAM":
        "kafkawire has a fixed schema; do not pass a schema to the stream reader",
    # CONFLICTING_OPTIONS
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:BEARER_AND_BASIC":
        "a bearer token and Basic credentials (basic.auth.user.info or user info in "
        "schema.registry.url) are both set: give one",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:BEARER_HEADERS_WITHOUT_TOKEN":
        "bearer headers (target-sr-cluster, Confluent-Identity-Pool-Id) are set without a bearer "
        "token: they go with bearer.auth.token",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:CLI_SCHEMA_REGISTRY_UNUSED":
        "--schema-registry is used by --key-format / --value-format {registry_formats}: choose "
        "one, or leave it out",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:CREATE_TOPIC_ONLY":
        "{option} takes effect only with createTopic=true",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:DIFFERENT_PARTITIONS":
        "{option} and {option2} name different partitions: only in {option}: {value}; only in "
        "{option2}: {value2}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:FALLBACK_KAFKA07":
        "kafka.broker.version.fallback={said}, but the brokers registered in ZooKeeper at "
        "{zookeeper} are Kafka 0.8+ brokers (JSON registrations): leave the option unset or name "
        "their release",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:FALLBACK_NOT_KAFKA07":
        "kafka.broker.version.fallback={said}, but the brokers registered in ZooKeeper at "
        "{zookeeper} are Kafka 0.7 brokers (0.7's creator:host:port registrations): set it to "
        "0.7.2 (or leave it unset) to speak their protocol",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:GSSAPI_USERNAME":
        "kafka.sasl.username/kafka.sasl.password do not apply to kafka.sasl.mechanism=GSSAPI "
        "(Kerberos, the default): set kafka.sasl.mechanism to PLAIN, SCRAM-SHA-256 or "
        "SCRAM-SHA-512 for a user name and password, or give GSSAPI a keytab "
        "(kafka.sasl.jaas.config with Krb5LoginModule useKeyTab=true keyTab=\"...\" "
        "principal=\"...\")",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:IDEMPOTENCE_ACKS":
        "kafka.acks must be all to use kafka.enable.idempotence=true (got acks={acks}); "
        "otherwise idempotence cannot be guaranteed",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:IDEMPOTENCE_IN_FLIGHT":
        "to use the idempotent producer (kafka.enable.idempotence, on by default), "
        "kafka.max.in.flight.requests.per.connection must be at most "
        "{max_in_flight_for_idempotence}; got {in_flight}. Lower it, or set "
        "kafka.enable.idempotence=false",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:IDEMPOTENCE_RETRIES":
        "kafka.retries must be non-zero when kafka.enable.idempotence=true",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:JAAS_AND_KEYTAB":
        "give either kafka.sasl.jaas.config or "
        "kafka.sasl.kerberos.keytab/kafka.sasl.kerberos.principal, not both",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:JAAS_AND_USERNAME":
        "give either kafka.sasl.jaas.config or kafka.sasl.username/kafka.sasl.password, not both",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:KERBEROS_SERVICE_NAMES":
        "conflicting Kerberos service names: serviceName in {what} differs from "
        "kafka.sasl.kerberos.service.name={service_name!r}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:MIN_OFFSETS_ABOVE_MAX":
        "minOffsetsPerTrigger ({low}) is higher than maxOffsetsPerTrigger ({high}): a "
        "micro-batch could never hold enough offsets. Lower minOffsetsPerTrigger or raise "
        "maxOffsetsPerTrigger",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:OAUTHBEARER_INHERIT_MECHANISM":
        "bearer.auth.credentials.source=SASL_OAUTHBEARER_INHERIT sends the Kafka OAUTHBEARER "
        "login's tokens; kafka.sasl.mechanism is {mechanism}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:OAUTHBEARER_ONLY":
        "{oauth_only} applies to kafka.sasl.mechanism=OAUTHBEARER, not {mechanism}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:OAUTHBEARER_USERNAME":
        "kafka.sasl.username/kafka.sasl.password do not apply to OAUTHBEARER: give "
        "kafka.sasl.jaas.config",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:OAUTH_AND_OTHER_CREDENTIAL":
        "OAuth bearer tokens and another credential (bearer.auth.token, Basic credentials) are "
        "both set: give one",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:SASL_INHERIT_MECHANISM":
        "basic.auth.credentials.source=SASL_INHERIT takes the user and password of a PLAIN or "
        "SCRAM Kafka login; kafka.sasl.mechanism is {mechanism}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:SECURITY_PROTOCOL":
        "'{key}' is set but kafka.security.protocol is {protocol}: set "
        "kafka.security.protocol={protocols}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:START_AFTER_END":
        "the starting {unit} {start} of {topic}-{partition} is after its ending {unit} {end}; "
        "check {option} and {option2}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:SUBSCRIPTIONS":
        "only one of the options 'subscribe', 'subscribePattern' or 'assign' can be given; got "
        "{chosen}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:TLS_PROTOCOL_BELOW_ENABLED":
        "{cap_opt} is lower than every version in {enabled_opt}",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:TRANSACTIONS_NEED_IDEMPOTENCE":
        "kafka.transactional.id needs the idempotent producer: kafka.acks=all, kafka.retries > 0 "
        "and kafka.enable.idempotence not false (Java's producer refuses a transactional.id "
        "without idempotence too)",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:TRANSACTION_TIMEOUT_ALONE":
        "kafka.transaction.timeout.ms takes effect only with kafka.transactional.id",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:USER_INFO_TWICE":
        "basic.auth.user.info is set and a schema.registry.url holds user info too: give the "
        "credentials once",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:ZOOKEEPER_HOSTNAME_CHECK":
        "{algorithm_opt} and zookeeper.ssl.endpoint.identification.enable disagree: give one of "
        "them",
    "KAFKAWIRE_CONFIGURATION.CONFLICTING_OPTIONS:ZOOKEEPER_TLS_OFF":
        "'{stray}' is set but zookeeper.ssl.client.enable is not true: set "
        "zookeeper.ssl.client.enable=true to connect to ZooKeeper with TLS (its secureClientPort)",
    # NOT_ALLOWED_BY_OPERATOR
    "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR:CONFIG_PROVIDER":
        "{source}: {key}.class: the {kind} config provider is not allowed here; "
        "{operator_providers}",
    "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR:PROVIDER_PATH":
        "{where}: {path!r} is outside the directories config providers may read here; "
        "{operator_paths}",
    "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR:REGISTRY_URL":
        "{url_option}: {url} is not among the Schema Registries the cluster operator allows; to "
        "use it, {allowed_urls}, a comma-separated list of registry URLs",
    "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR:TOKEN_PROVIDER_MODULE":
        "{provider_option}: the module {module!r} is not one the cluster operator allows token "
        "providers from (a token provider is code the query makes every Python process import "
        "and run). To use it, ask the operator: {allowed_provider_modules}, a comma-separated "
        "list of modules (each allows its submodules too), or * for any",
    "KAFKAWIRE_CONFIGURATION.NOT_ALLOWED_BY_OPERATOR:URL":
        "{option}: kafkawire reads no URL a query names unless the cluster operator listed it, "
        "and {url} is not listed (the check compares the whole URL exactly, as Java's "
        "org.apache.kafka.sasl.oauthbearer.allowed.urls does since Kafka 4.0). To use it, ask "
        "the operator: {allowed_urls}, a comma-separated list of exact URLs",
    # CONFIG_FILE
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:ALLOWED_PATH_NOT_ABSOLUTE":
        "{what}: {item!r} is not an absolute path (Kafka's rule for allowed.paths)",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:ALLOWLIST_NOT_A_REGEX":
        "{source}: {key}.param.allowlist.pattern is not a regular expression ({exc})",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:BAD_ESCAPE":
        "{where}: malformed \\uXXXX escape",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:ENV_NOT_ALLOWED":
        "{where}: environment variable {item!r} does not match {key}.param.allowlist.pattern",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:ENV_NOT_SET":
        "{where}: environment variable {item!r} is not set",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:ENV_TAKES_NO_PATH":
        "{where} takes no path: write ${{{provider}:NAME}}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:NOT_A_FILE_NAME":
        "{where}: {item!r} is not a file name in {path!r}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:NOT_PROPERTIES":
        "{source}: not a Kafka client properties file (line {number} is not key=value)",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:NOT_UTF8":
        "{what}: {path!r} is not UTF-8 text",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:NO_SUCH_KEY":
        "{where}: {path!r} has no key {item!r}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:OUTSIDE_ALLOWED_PATHS":
        "{where}: {path!r} is outside {key}.param.allowed.paths",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PLACEHOLDER_FILE_UNREADABLE":
        "{where}: cannot read {file!r}: {why}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PLACEHOLDER_FILE_UNUSABLE":
        "{where}: cannot use {file!r} (missing, unreadable or not text)",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PLACEHOLDER_FORM":
        "{where}: write ${{{name}:PATH:{value}}}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PLACEHOLDER_KEY_UNUSABLE":
        "{where}: cannot use key {item!r} of {path!r} (missing, unreadable, not a properties "
        "file or without that key)",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PROVIDER_CLASS_MISSING":
        "{source}: {prefix}config.providers names {name!r} but {key}.class is not set: set it to "
        "one of {provider_classes}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PROVIDER_CLASS_UNKNOWN":
        "{source}: {key}.class names a JVM class kafkawire cannot run; it understands "
        "{provider_classes}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:PROVIDER_NOT_DECLARED":
        "{where}: config provider {name!r} is not declared; Kafka resolves a placeholder only "
        "through a declared provider: add {name2}",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:UNKNOWN_PROVIDER_PARAMETER":
        "{source}: {key}.param.{param} is not a parameter of the {kind} provider (it takes "
        "{value})",
    "KAFKAWIRE_CONFIGURATION.CONFIG_FILE:UNREADABLE":
        "{what}: cannot read {path!r}: {value}",
    # SECURITY_SETTING
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:AWS_JAAS_AND_HANDLER":
        "Amazon MSK IAM needs the JAAS module {aws_module} with "
        "kafka.sasl.login.callback.handler.class={aws_handler}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:AWS_SIGNER_MISSING":
        "Amazon MSK IAM (software.amazon.msk.auth.iam.IAMOAuthBearerLoginCallbackHandler) needs "
        "the aws-msk-iam-sasl-signer-python package: {install} (on the driver and the executors)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:CIPHER_SUITES":
        "kafka.ssl.cipher.suites: {exc}; give OpenSSL cipher names separated by commas (`openssl "
        "ciphers` lists them)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:DELEGATION_TOKENS":
        "{what}: tokenauth=true (delegation tokens, KIP-48) is not supported yet",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:ENDPOINT_CLIENT_CREDENTIALS":
        "kafka.sasl.oauthbearer.token.endpoint.url: the token endpoint needs clientId and "
        "clientSecret in kafka.sasl.jaas.config ({oauth_module})",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:EXTENSION_NAME":
        "{where}: the extension's name must be letters only and not 'auth' (KIP-342)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:EXTENSION_VALUE":
        "{where}: the extension's value must be non-empty printable ASCII (KIP-342)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:FILE_UNREADABLE":
        "{option}: cannot read {path!r}: {value}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:GSSAPI_JAAS_MODULE":
        "{what}: kafka.sasl.mechanism=GSSAPI (Kerberos, the default) takes {krb5_module}, not "
        "{module}; set kafka.sasl.mechanism to the mechanism of that login module (PLAIN, "
        "SCRAM-SHA-256/512 or OAUTHBEARER)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:GSSAPI_MISSING":
        "{install_hint} ({exc})",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:HANDLER_NEEDS_ENDPOINT":
        "kafka.sasl.login.callback.handler.class={handler} needs "
        "kafka.sasl.oauthbearer.token.endpoint.url",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_BOOLEAN":
        "{what}: {key} must be true or false",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_END":
        "{what} must end with ';'",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_FLAG":
        "{what}: the login module must be followed by one of {flags}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_FORM":
        "{what} must read '<LoginModule> required key=\"value\" ...;'",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_KEY_VALUE":
        "{what}: expected key=value after the module name (near option {value})",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_MODULES":
        "{what} holds more than one login module: give exactly one",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_MODULE_MECHANISM":
        "{what}: {module} does not fit kafka.sasl.mechanism={mechanism}; expected {plain_module} "
        "or {scram_module}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_MODULE_OTHER_MECHANISM":
        "{what}: {value} does not fit kafka.sasl.mechanism={mechanism} (it serves {value2})",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_MODULE_UNSUPPORTED":
        "{what}: {module} is not one kafkawire supports for kafka.sasl.mechanism={mechanism}; "
        "expected {plain_module} or {scram_module}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_OPTIONS_MISSING":
        "{what}: {missing} missing",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_QUOTE":
        "{what}: a quoted value is not closed",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JAAS_USER_EMPTY":
        "{what}: the user name is empty",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JKS_KEY_ENTRIES":
        "{what}: the JKS store holds {aliases_count} private key entries; kafkawire needs "
        "exactly one",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JKS_NEEDS_KEYTOOL":
        "{what}: {jks_advice}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JKS_TYPE_MISMATCH":
        "{what} is a JKS store, but {what}.type says {kind}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:JKS_UNREADABLE":
        "{what}: cannot read the JKS store (keytool said: {value}); check the store password "
        "(and kafka.ssl.key.password for a key entry)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEYTAB_EMPTY":
        "{what}: {name} holds no keys",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEYTAB_NEEDS_PRINCIPAL":
        "{what}: useKeyTab=true needs principal=\"name@REALM\" (the keytab's principal to log in "
        "as)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEYTAB_PRINCIPAL":
        "{what}: {keytab} holds no key for {who}; it holds keys for {principals}. Set principal "
        "to one of those or use the principal's own keytab",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEYTAB_UNREADABLE":
        "{what}: cannot read {name}: {reason}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEYTAB_WITHOUT_USEKEYTAB":
        "{what}: keyTab is set but useKeyTab is not true; add useKeyTab=true (Java ignores "
        "keyTab without it)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEYTOOL_TIMEOUT":
        "{what}: keytool did not read the JKS store within {keytool_timeout_s} s",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KEY_CERTIFICATE_MISMATCH":
        "the client private key does not match the client certificate (kafka.ssl.keystore.* / "
        "kafka.ssl.certificate.location)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:KRB5_LOGIN":
        "{what}: {krb5_module} needs useKeyTab=true with keyTab=\"/path/client.keytab\" and "
        "principal=\"name@REALM\", or useTicketCache=true (a kinit'ed ticket cache); kafkawire "
        "cannot prompt for a password",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:NOT_A_KEYTAB":
        "{what}: {name} is not a Kerberos keytab (MIT keytab format version 2 expected, as "
        "ktutil and kadmin write)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:NOT_A_NUMBER":
        "{where} must be a number",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:NOT_FINITE":
        "{where} must be a finite number",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:NOT_JKS":
        "{what}.type says JKS, but the file is not a JKS store",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:OAUTHBEARER_JAAS_MODULE":
        "kafka.sasl.jaas.config: {module} does not fit kafka.sasl.mechanism=OAUTHBEARER (use "
        "{oauth_module}, or {aws_module} for Amazon MSK IAM)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PEM_NO_CERTIFICATE":
        "{what} holds no readable PEM certificate",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PEM_NO_KEY":
        "{what}: the PEM keystore holds no private key",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PKCS12_KEYSTORE_UNREADABLE":
        "{what}: cannot read the PKCS12 keystore (wrong {what2}, or not PKCS12){hint}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PKCS12_NO_CERTIFICATE":
        "{what}: the PKCS12 truststore holds no certificate",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PKCS12_NO_KEY":
        "{what}: the PKCS12 keystore holds no private key entry",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PKCS12_TRUSTSTORE_UNREADABLE":
        "{what}: cannot read the PKCS12 truststore (wrong password, or not PKCS12)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PRIVATE_KEY_ENCRYPTED":
        "{what}: the private key is encrypted: set kafka.ssl.key.password",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PRIVATE_KEY_NOT_ENCRYPTED":
        "{what}: the private key is not encrypted, but kafka.ssl.key.password is set",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PRIVATE_KEY_UNREADABLE":
        "{what}: cannot read the private key (wrong kafka.ssl.key.password, or not a PEM private "
        "key)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:PURE_SASL_MISSING":
        "zookeeper.sasl.jaas.config needs the pure-sasl package (kazoo's SASL support): pip "
        "install pure-sasl",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:SASL_USER_EMPTY":
        "the SASL user name is empty",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:STORE_TYPE":
        "{what}.type must be one of {store_types}, got {declared!r}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:TLS_PROTOCOL":
        "{what}: unknown TLS protocol {value!r}; use one of {protocol_versions}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:TLS_PROTOCOLS":
        "kafka.ssl.enabled.protocols / kafka.ssl.protocol: {exc}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:TOKEN_PROVIDER_FORM":
        "{provider_option} must read package.module:function (or package.module.function), "
        "absolute module names only",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:TOKEN_SOURCES":
        "give one OAUTHBEARER token source: kafka.sasl.oauthbearer.token.endpoint.url, "
        "kafka.sasl.oauthbearer.token.provider or the MSK IAM callback handler",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:UNSECURED_CLAIM":
        "{where}: the claim cannot be set (an empty name, iat or exp, or a claim given twice)",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:UNSECURED_LIFETIME":
        "{what}: unsecuredLoginLifetimeSeconds must be positive and at most {max_lifetime_s}",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:UNSECURED_PRINCIPAL":
        "{what}: an unsecured OAUTHBEARER token needs its principal: set "
        "unsecuredLoginStringClaim_{claim}=\"<user>\" in {oauth_module}, or "
        "kafka.sasl.oauthbearer.token.endpoint.url with clientId/clientSecret for tokens from an "
        "identity provider",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:UNSECURED_SCOPE":
        "{what}: the scope claim (unsecuredLoginScopeClaimName, scope by default) must be a "
        "string or a list",
    "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING:ZOOKEEPER_JAAS_MODULE":
        "{what}: login module {module!r} is not supported for ZooKeeper; kafkawire logs in to "
        "ZooKeeper with SASL DIGEST-MD5: {digest_module} required username=\"...\" "
        "password=\"...\";",
    # KAFKA07_UNSUPPORTED
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:CLI_COMMAND":
        "{command} needs Kafka 0.8 or later, but the brokers registered in ZooKeeper at "
        "{zookeeper_connect} are Kafka 0.7 brokers; kafkawire topics, describe, offsets, tail, "
        "produce and lag work with them",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:CODEC":
        "kafka.compression.type={codec_name}: Kafka 0.7 knows {codecs}",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:COMMIT_OFFSETS":
        "commitOffsets={commit}: Kafka 0.7 brokers keep no consumer offsets; 0.7 consumers kept "
        "them in ZooKeeper: use commitOffsets=zookeeper",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:CREATE_TOPIC":
        "createTopic: Kafka 0.7 has no CreateTopics request; its brokers create a topic on the "
        "first write to it",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:FORMATS":
        "value.format / key.format: writes to Kafka 0.7 clusters take raw columns only (encode "
        "them in the DataFrame, e.g. with to_avro)",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:GROUP_OFFSETS":
        "startingOffsets=group on a Kafka 0.7 cluster reads the group's offsets from ZooKeeper, "
        "where 0.7 consumers kept them: set commitOffsets=zookeeper",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:HEADERS":
        "rows for topic {topic!r} carry headers, which Kafka 0.7 messages cannot hold: drop the "
        "'headers' column (or empty it) to write to a 0.7 cluster",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:IDEMPOTENCE":
        "kafka.enable.idempotence=true: Kafka 0.7 brokers have no idempotent producer (writes to "
        "them are at-least-once)",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:MESSAGE_TOO_LARGE":
        "row {i} of a partition holds a value of {value} bytes for topic {topic!r}, more than "
        "kafka.max.request.size ({max_message}) allows; Kafka 0.7 brokers also drop messages "
        "above their max.message.size",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:NEEDS_ZOOKEEPER":
        "Kafka 0.7 brokers have no Metadata request: kafkawire finds a 0.7 topic's brokers and "
        "partitions in ZooKeeper; give zookeeper.connect (host:port[,host:port][/chroot])",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:NOT_A_KAFKA07_BROKER":
        "broker {broker_id} registered in ZooKeeper at {zookeeper_connect} in Kafka 0.8+'s JSON "
        "layout ({broker_id2}), not 0.7's: this is not a Kafka 0.7 cluster; leave "
        "kafka.broker.version.fallback unset (or name the brokers' release) to use the protocol "
        "its brokers speak",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:NOT_A_KAFKA07_TOPIC":
        "topic {topic!r} is registered in Kafka 0.8+'s layout ({topic2} holds JSON): this is not "
        "a Kafka 0.7 cluster",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:NO_METADATA":
        "the brokers registered in ZooKeeper at {connect} are Kafka 0.7 brokers, which have no "
        "Metadata request to bootstrap from; kafkawire reads and writes them through "
        "zookeeper.connect with kafka.broker.version.fallback 0.7.x or unset",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:NULL_VALUE":
        "row {row} of a partition has a null value for topic {topic!r}: Kafka 0.7 messages have "
        "no null payload (no tombstones); filter such rows out",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:SASL":
        "Kafka 0.7 brokers have no SASL (broker {name}): use security.protocol PLAINTEXT (or SSL "
        "through a TLS proxy)",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:SECURITY_PROTOCOL":
        "kafka.security.protocol={protocol}: Kafka 0.7 brokers have no SASL",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:TOPIC_CONFIGS":
        "--configs: a Kafka 0.7 cluster has no per-topic configs to describe",
    "KAFKAWIRE_CONFIGURATION.KAFKA07_UNSUPPORTED:TRANSACTIONS":
        "kafka.transactional.id: Kafka 0.7 brokers have no transactions; exactly-once writes "
        "need Kafka 0.11 or later",
}
