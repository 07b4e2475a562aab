"""The table of every option kafkawire reads: name, kind of value, default, where it applies
and its documentation (:data:`OPTIONS`), and nothing else.

This is the one place an option and its default are declared. It is a leaf (the standard
library and constants of the protocol layer only) so that every layer can take its defaults
from here: the client's settings (``client/config.py``), the producer's, and the sides'
parsed options, as well as the option reference page (``option_tables.py``). Parsers read
options through :func:`option`, which raises KeyError for a name the table does not hold, so
a misspelt key fails in the tests instead of being silently unset.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, Flag, auto

from spark_kafka_wire.protocol.limits import (
    DECOMPRESSION_RATIO,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    MAX_DECOMPRESSED_OPTION,
    ZSTD_DEFAULT_LEVEL,
)
from spark_kafka_wire.protocol.primitives import INT32_MAX, INT64_MAX

#: value.format / key.format: how a column's bytes are read and written. ``raw`` is Spark's
#: binary column; the others are Confluent's wire format with a Schema Registry.
VALUE_FORMATS = ("raw", "avro", "protobuf", "json-schema")
#: Confluent's subject name strategies (the serializers' ``*.subject.name.strategy`` values,
#: by their class's simple name; the full io.confluent... class names are accepted too).
SUBJECT_NAME_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
#: How records a format cannot decode are treated, as Spark's from_avro ``mode``.
DECODE_MODES = ("FAILFAST", "PERMISSIVE")

# kafka.partitioner's values, librdkafka's partitioner names (client/producer/partitioner.py
# implements each), and its default, the Java client's placement.
PARTITIONERS = (
    "murmur2_random", "murmur2", "consistent_random", "consistent", "fnv1a_random", "fnv1a",
    "random",
)
DEFAULT_PARTITIONER = "murmur2_random"


class Use(Flag):
    """Where an option is read: batch and streaming reads, batch and streaming writes."""

    READ = auto()
    STREAM_READ = auto()
    WRITE = auto()
    STREAM_WRITE = auto()


NOWHERE = Use(0)
SOURCE = Use.READ | Use.STREAM_READ
SINK = Use.WRITE | Use.STREAM_WRITE
EVERYWHERE = SOURCE | SINK


class Kind(Enum):
    """What an option's value is, for the shared parsers and the option reference's default column."""

    TEXT = "text"  # read by the option's own code: names, lists, JSON, durations
    BOOL = "boolean"  # true or false, any case
    INT = "integer"  # between the option's minimum and maximum
    BYTES = "bytes"  # an INT counting bytes, shown in KiB / MiB
    COUNT = "count"  # a positive integer up to the maximum; these options have no default


@dataclass(frozen=True)
class Option:
    """One option, as users spell it (``startingOffsets``, ``kafka.fetch.max.bytes``).

    ``uses`` says where kafkawire reads it; for an option with a ``refused`` reason, where it
    is refused. ``ignored_in`` says where it is accepted without effect (a key Spark's kafka
    format takes, or one side's setting given to the other). ``doc`` is the option reference's meaning
    cell (Markdown, one line); ``stream_default`` / ``stream_doc`` replace the default and the
    doc in streaming reads where the option means something else there.
    """

    name: str
    uses: Use
    doc: str = ""
    kind: Kind = Kind.TEXT
    default: str | int | bool | None = None  # None: unset means absent
    minimum: int = 0  # INT and BYTES
    # INT, BYTES and COUNT; None: the Java type's range, Integer.MAX_VALUE for INT and BYTES
    # (most are Java ints, and those sent to brokers are int32 fields), Long.MAX_VALUE for COUNT
    maximum: int | None = None
    default_doc: str | None = None  # the option reference's default cell when ``default`` cannot say it
    kafkawire_only: bool = False  # not an option of Spark's kafka format
    stream_default: str | None = None
    stream_doc: str | None = None
    ignored_in: Use = NOWHERE
    refused: str | None = None
    # the option reference's table and help() group of options that are not connection, read or write
    # settings of Spark's kafka format: "formats" (value formats and the Schema Registry)
    section: str = ""

    @property
    def key(self) -> str:
        """The name as the parsers see it: Spark hands options over case-insensitively."""
        return self.name.lower()

    @property
    def highest(self) -> int:
        """The largest value an integer option takes."""
        if self.maximum is not None:
            return self.maximum
        return INT64_MAX if self.kind is Kind.COUNT else INT32_MAX


# Spark refuses these, each on the side that would use it (its source the consumer's, its sink
# the serializers); so does kafkawire, with the same reasons. On the other side Spark hands
# them to a client that does not use them: accepted there without effect, as in Spark.
# Interceptors are JVM classes, refused on both sides (Spark's sink would run them).
_REFUSED_BY_SPARK = [
    Option("kafka.auto.offset.reset", SOURCE, ignored_in=SINK,
           refused="set the source option 'startingOffsets' instead"),
    Option("kafka.enable.auto.commit", SOURCE, ignored_in=SINK,
           refused="the source does not commit offsets through the consumer; "
           "offsets are tracked by Spark"),
    Option("kafka.key.deserializer", SOURCE, ignored_in=SINK,
           refused="keys are always read as bytes; use DataFrame operations to deserialize them"),
    Option("kafka.value.deserializer", SOURCE, ignored_in=SINK,
           refused="values are always read as bytes; use DataFrame operations to "
           "deserialize them"),
    Option("kafka.key.serializer", SINK, ignored_in=SOURCE,
           refused="keys are always written as bytes; serialize them in the DataFrame"),
    Option("kafka.value.serializer", SINK, ignored_in=SOURCE,
           refused="values are always written as bytes; serialize them in the DataFrame"),
    Option("kafka.interceptor.classes", EVERYWHERE,
           refused="Kafka interceptors are JVM classes; they cannot run here"),
    Option("kafka.security.providers", EVERYWHERE,
           refused="it names JVM security providers, which cannot run here; kafkawire will "
           "not connect without the security they would give"),
]

# The Java client's (and librdkafka's) Kerberos re-login settings: MIT Kerberos renews a keytab's
# tickets itself, and a ticket cache is renewed by whoever runs kinit.
_KERBEROS_RELOGIN = [
    Option(f"kafka.sasl.kerberos.{name}", NOWHERE, ignored_in=EVERYWHERE,
           doc="GSSAPI tickets come from the keytab (MIT Kerberos gets a new one before the old "
           "expires) or from a ticket cache renewed by your own kinit")
    for name in ("kinit.cmd", "min.time.before.relogin", "ticket.renew.jitter",
                 "ticket.renew.window.factor")
]

# Java client settings with no counterpart here, accepted so that options written for Spark's
# kafka format keep working.
_IGNORED = [
    Option(f"kafka.{name}", NOWHERE, ignored_in=EVERYWHERE)
    for name in ("session.timeout.ms", "heartbeat.interval.ms", "max.poll.records",
                 "max.poll.interval.ms", "receive.buffer.bytes", "send.buffer.bytes",
                 "reconnect.backoff.ms", "reconnect.backoff.max.ms", "connections.max.idle.ms",
                 "max.block.ms")
]



@dataclass(frozen=True)
class RefusedValue:
    """A Kafka client setting kafkawire does not use, refused with one value only: the value
    whose silent loss would change which records are read or where they are written (other
    values are what kafkawire does anyway, accepted without effect)."""

    name: str
    uses: Use  # where the value is refused
    value: str  # lower case
    reason: str

    @property
    def key(self) -> str:
        return self.name.lower()


# Java client settings accepted without effect except for one value (the rule below).
REFUSED_VALUES: tuple[RefusedValue, ...] = (
    RefusedValue("kafka.exclude.internal.topics", SOURCE, "false",
                 "subscribePattern never matches internal topics (__consumer_offsets, "
                 "__transaction_state) in kafkawire; name an internal topic in 'subscribe' or "
                 "'assign' to read it"),
    RefusedValue("kafka.partitioner.ignore.keys", SINK, "true",
                 "kafkawire places keyed records by their key; set kafka.partitioner=random to "
                 "spread records whatever their key"),
)

# value.format / key.format and Confluent's Schema Registry settings (issue 32). The registry's
# names are Confluent's serializer and deserializer settings, unprefixed, as their Java and
# Python clients take them (https://docs.confluent.io/platform/current/schema-registry/
# connect.html#configuration-options).
_FORMAT_OPTIONS = [
    Option("value.format", EVERYWHERE, default="raw", section="formats", kafkawire_only=True,
           doc="how the `value` column's bytes are read and written: `raw` (binary, Spark's), "
           "`avro`, `json-schema` or `protobuf`: Confluent's wire format (magic byte 0, the "
           "schema id, the Avro body, the JSON text, or Protobuf's message indexes and "
           "message) with the schema in `schema.registry.url`; reads give a typed column of "
           "the reader schema, writes encode a struct (Avro and JSON: any Spark type "
           "`to_avro` takes; Protobuf: a struct, as one message)"),
    Option("key.format", EVERYWHERE, default="raw", section="formats", kafkawire_only=True,
           doc="how the `key` column's bytes are read and written: `raw` (binary, Spark's), "
           "`avro`, `json-schema` or `protobuf`: Confluent's wire format (magic byte 0, the "
           "schema id, the Avro body, the JSON text, or Protobuf's message indexes and "
           "message) with the schema in `schema.registry.url`; reads give a typed column of "
           "the reader schema, writes encode a struct (Avro and JSON: any Spark type "
           "`to_avro` takes; Protobuf: a struct, as one message)"),
    Option("schema.registry.url", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the Schema Registry's URL (http or https), or several comma-separated, tried in "
           "order when one cannot be reached; needed by every format but `raw`. Credentials "
           "in the URL (`https://user:secret@host`) are used with "
           "`basic.auth.credentials.source=URL` and never shown"),
    Option("basic.auth.credentials.source", EVERYWHERE, default="URL", section="formats", kafkawire_only=True,
           doc="where the registry's HTTP Basic credentials come from (Confluent's names): `URL`"
           " (the URL's user info), `USER_INFO` (`basic.auth.user.info`), `SASL_INHERIT` "
           "(the PLAIN or SCRAM user and password of `kafka.sasl.jaas.config`)"),
    Option("basic.auth.user.info", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="`user:password` for the registry (HTTP Basic; with "
           "`basic.auth.credentials.source=USER_INFO`, which it implies when that is unset);"
           " never shown"),
    Option("bearer.auth.credentials.source", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="bearer tokens for the registry (Confluent's names): `STATIC_TOKEN` sends "
           "`bearer.auth.token`; `OAUTHBEARER` gets tokens from `bearer.auth.issuer.endpoint.url` "
           "with the client-credentials grant (refreshed before they expire, like a Kafka "
           "OAUTHBEARER login's); `SASL_OAUTHBEARER_INHERIT` sends the Kafka OAUTHBEARER "
           "login's tokens"),
    Option("bearer.auth.token", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the registry's static bearer token (with `bearer.auth.credentials.source="
           "STATIC_TOKEN`, which it implies when that is unset); never shown"),
    Option("bearer.auth.issuer.endpoint.url", EVERYWHERE, section="formats",
           kafkawire_only=True,
           doc="the OAuth token endpoint of `bearer.auth.credentials.source=OAUTHBEARER`; read "
           "only when the cluster operator lists it, as Kafka's own token endpoints "
           "(`spark.kafkawire.sasl.oauthbearer.allowed.urls`)"),
    Option("bearer.auth.client.id", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the OAuth client id of `bearer.auth.credentials.source=OAUTHBEARER`"),
    Option("bearer.auth.client.secret", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the OAuth client secret of `bearer.auth.credentials.source=OAUTHBEARER`; never "
           "shown"),
    Option("bearer.auth.scope", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the OAuth scope asked for with `bearer.auth.credentials.source=OAUTHBEARER` "
           "(none when unset)"),
    Option("bearer.auth.logical.cluster", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="Confluent Cloud's Schema Registry cluster id, sent as `target-sr-cluster` with a"
           " bearer token"),
    Option("bearer.auth.identity.pool.id", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="Confluent Cloud's identity pool, sent as `Confluent-Identity-Pool-Id` with a "
           "bearer token"),
    Option("schema.registry.ssl.truststore.location", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the CAs of an https registry (PEM, PKCS12 or JKS), read where the query is "
           "defined like `kafka.ssl.truststore.location`; unset, the system's CAs"),
    Option("schema.registry.ssl.truststore.type", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="`JKS`, `PKCS12` or `PEM`; unset, recognized from the file's bytes"),
    Option("schema.registry.ssl.truststore.password", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the registry truststore's password; never shown"),
    Option("schema.registry.ssl.keystore.location", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="a client certificate and key for an https registry that asks for one (JKS, "
           "PKCS12 or PEM), read where the query is defined"),
    Option("schema.registry.ssl.keystore.type", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="`JKS`, `PKCS12` or `PEM`; unset, recognized from the file's bytes"),
    Option("schema.registry.ssl.keystore.password", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the registry keystore's password; never shown"),
    Option("schema.registry.ssl.key.password", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the password of the registry keystore's key; never shown"),
    Option("schema.registry.ssl.endpoint.identification.algorithm", EVERYWHERE, default="https", section="formats", kafkawire_only=True,
           doc="`https` checks that the registry's certificate names its host; empty turns the "
           "check off"),
    Option("value.subject.name.strategy", EVERYWHERE, default="TopicNameStrategy", section="formats", kafkawire_only=True,
           doc="the subject of the `value` column's schema (Confluent's strategies): "
           "`TopicNameStrategy` (`<topic>-value` / `<topic>-key`), `RecordNameStrategy` (the"
           " record's full name), `TopicRecordNameStrategy` (`<topic>-<record>`); the "
           "`io.confluent...` class names are taken too"),
    Option("key.subject.name.strategy", EVERYWHERE, default="TopicNameStrategy", section="formats", kafkawire_only=True,
           doc="the subject of the `key` column's schema (Confluent's strategies): "
           "`TopicNameStrategy` (`<topic>-value` / `<topic>-key`), `RecordNameStrategy` (the"
           " record's full name), `TopicRecordNameStrategy` (`<topic>-<record>`); the "
           "`io.confluent...` class names are taken too"),
    Option("value.subject", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the subject of the `value` column's schema, instead of the one its strategy "
           "names"),
    Option("key.subject", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the subject of the `key` column's schema, instead of the one its strategy names"),
    Option("value.schema.id", EVERYWHERE, kind=Kind.INT, section="formats", kafkawire_only=True,
           doc="pins the `value` column's schema by its registry id: the reader schema of reads,"
           " the schema of writes"),
    Option("key.schema.id", EVERYWHERE, kind=Kind.INT, section="formats", kafkawire_only=True,
           doc="pins the `key` column's schema by its registry id: the reader schema of reads, "
           "the schema of writes"),
    Option("value.schema.version", EVERYWHERE, kind=Kind.INT, minimum=1, section="formats", kafkawire_only=True,
           doc="pins the `value` column's schema to a version of its subject (unset: the latest "
           "when the query is planned)"),
    Option("key.schema.version", EVERYWHERE, kind=Kind.INT, minimum=1, section="formats", kafkawire_only=True,
           doc="pins the `key` column's schema to a version of its subject (unset: the latest "
           "when the query is planned)"),
    Option("mode", SOURCE, default="FAILFAST", section="formats", kafkawire_only=True,
           doc="a record a format cannot decode (not in Confluent's wire format, a schema that "
           "cannot be resolved to the reader schema, bytes that are not what the schema "
           "says): `FAILFAST` fails the query naming topic, partition, offset and schema id;"
           " `PERMISSIVE` gives null and keeps the record's bytes in `_corrupt_value` / "
           "`_corrupt_key` (as Spark's from_avro `mode`)"),
    Option("enableStableIdentifiersForUnionType", SOURCE, kind=Kind.BOOL, default=False, section="formats", kafkawire_only=True,
           doc="Avro unions of several types become structs whose fields are named after the "
           "types (`member_int`, `member_string`) instead of `member0`, `member1` (Spark's "
           "from_avro option)"),
    Option("recursiveFieldMaxDepth", SOURCE, kind=Kind.INT, minimum=1, maximum=12, section="formats", kafkawire_only=True,
           doc="how deep a recursive Avro record is unfolded, 1 to 12; unset, a recursive schema"
           " is refused (Spark's from_avro option)"),
    Option("recursive.fields.max.depth", SOURCE, kind=Kind.INT, minimum=1, maximum=10, section="formats", kafkawire_only=True,
           doc="how deep a recursive Protobuf message is unfolded, 1 to 10; unset, a recursive "
           "message is refused (Spark's from_protobuf option)"),
    Option("value.protobuf.message", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the full name of the message a `protobuf` `value` column reads or writes "
           "(unset: the schema file's first message); a write's message indexes name it"),
    Option("key.protobuf.message", EVERYWHERE, section="formats", kafkawire_only=True,
           doc="the full name of the message a `protobuf` `key` column reads or writes "
           "(unset: the schema file's first message); a write's message indexes name it"),
    Option("auto.register.schemas", SINK, kind=Kind.BOOL, default=True, section="formats", kafkawire_only=True,
           doc="register the schema a write derives from the column's Spark type under its "
           "subject (Confluent's serializer setting); `false`: it must be registered already"),
    Option("use.latest.version", SINK, kind=Kind.BOOL, default=False, section="formats", kafkawire_only=True,
           doc="write with the subject's latest schema instead of one derived from the column "
           "(Confluent's serializer setting)"),
]

# How a ``kafka.*`` key a side does not use is treated (the one rule, ``options/client.py``
# applies it): a Kafka Java client setting (``java_client_configs.JAVA_CLIENT_CONFIGS``) or a
# kafkawire option of the other side is accepted without effect, with one warning naming the
# keys (never their values), as Spark's kafka format hands it to a Java client that does not
# use it; a key that is neither is a typo (UNKNOWN_OPTION, with the closest name). Refused
# (REFUSED_OPTION, each with its reason) are the settings whose silent loss would change the
# data or its security: the table's ``refused`` options (Spark's own refusals, JVM classes:
# interceptors, partitioner.class, security.providers), the :data:`REFUSED_VALUES`, and every
# ``kafka.ssl.*`` / ``kafka.sasl.*`` key kafkawire does not implement (ssl.provider,
# ssl.engine.factory.class, ssl.keymanager.algorithm, ssl.trustmanager.algorithm,
# ssl.secure.random.implementation, sasl.login.class, sasl.client.callback.handler.class,
# sasl.oauthbearer.jwks.* / expected.* / clock.skew.seconds: the security asked for would be
# missing). The rest change neither: client.dns.lookup, client.rack (follower fetching: which
# replica answers, not what), metadata.recovery.*, metadata.max.idle.ms, metric.reporters,
# metrics.*, auto.include.jmx.reporter, enable.metrics.push,
# socket.connection.setup.timeout.max.ms, default.api.timeout.ms on writes, the consumer group
# settings (group.instance.id, group.protocol, group.remote.assignor,
# partition.assignment.strategy, auto.commit.interval.ms: Spark assigns partitions itself),
# internal.*, allow.auto.create.topics on reads, exclude.internal.topics=true,
# partitioner.ignore.keys=false, partitioner.adaptive.partitioning.enable and
# partitioner.availability.timeout.ms (the placement of keyless records, random in both),
# and each side's settings given to the other (a shared options dict; compression levels are
# honoured by writes).
OPTIONS: tuple[Option, ...] = (
    # ---------------------------------------------------------------- every read and write
    Option("kafka.bootstrap.servers", EVERYWHERE,
           default_doc="required, unless `zookeeper.connect` is given",
           doc="`host:port` list; the list is cycled until one broker answers"),
    Option("zookeeper.connect", EVERYWHERE, kafkawire_only=True,
           doc="`host:port[,host:port][/chroot]`, the ZooKeeper of a ZooKeeper-era cluster "
           "(0.8 to 3.x), written as in the brokers' own `zookeeper.connect`. Given instead "
           "of `kafka.bootstrap.servers`, the brokers registered there (`/brokers/ids`; of "
           "each, the listener speaking `kafka.security.protocol`) become the bootstrap "
           "servers, looked up once where the query is defined: executors never contact "
           "ZooKeeper. With both, `kafka.bootstrap.servers` wins and no lookup is made. "
           "Stream reads with `commitOffsets` `zookeeper` or `both` also commit here. A Kafka "
           "0.7 cluster (0.7's registrations) is found only this way: its topics' partitions "
           "are read from ZooKeeper on the driver (see docs/zookeeper-and-0.7.md, Kafka 0.7 clusters)"),
    # ---------------------------------------- ZooKeeper security (Kafka's broker settings)
    Option("zookeeper.ssl.client.enable", EVERYWHERE, kind=Kind.BOOL, default=False,
           kafkawire_only=True,
           doc="connect to ZooKeeper with TLS (its `secureClientPort`), checking its "
           "certificate against `zookeeper.ssl.truststore.*` (else the system's CAs) and the "
           "host names of `zookeeper.connect`; a refused certificate is a `ZooKeeperTlsError` "
           "naming the server. Every `zookeeper.ssl.*` store setting needs this"),
    Option("zookeeper.ssl.truststore.location", EVERYWHERE, kafkawire_only=True,
           doc="the CAs that sign ZooKeeper's certificate (JKS, PKCS12 or PEM), read where the "
           "query is defined"),
    Option("zookeeper.ssl.truststore.type", EVERYWHERE, kafkawire_only=True,
           default_doc="from the file", doc="`JKS`, `PKCS12` or `PEM`"),
    Option("zookeeper.ssl.truststore.password", EVERYWHERE, kafkawire_only=True,
           doc="the truststore's password; never shown"),
    Option("zookeeper.ssl.keystore.location", EVERYWHERE, kafkawire_only=True,
           doc="a client certificate and key for ZooKeepers that require one "
           "(`ssl.clientAuth=need`): JKS, PKCS12 or PEM"),
    Option("zookeeper.ssl.keystore.type", EVERYWHERE, kafkawire_only=True,
           default_doc="from the file", doc="`JKS`, `PKCS12` or `PEM`"),
    Option("zookeeper.ssl.keystore.password", EVERYWHERE, kafkawire_only=True,
           doc="the keystore's (and its key's) password; never shown"),
    Option("zookeeper.ssl.endpoint.identification.enable", EVERYWHERE, kind=Kind.BOOL,
           default=True, kafkawire_only=True,
           doc="check that ZooKeeper's certificate is valid for the host name in "
           "`zookeeper.connect` (ZooKeeper's `zookeeper.ssl.hostnameVerification`); `false` "
           "only if you accept the risk"),
    Option("zookeeper.ssl.endpoint.identification.algorithm", EVERYWHERE, kafkawire_only=True,
           default_doc="`HTTPS`",
           doc="Kafka brokers' name for the same check: `HTTPS`, or empty for none"),
    Option("zookeeper.clientCnxnSocket", NOWHERE, ignored_in=EVERYWHERE, kafkawire_only=True,
           doc="Java's ZooKeeper client needs `org.apache.zookeeper.ClientCnxnSocketNetty` for "
           "TLS (`zookeeper.ssl.client.enable`); kafkawire's speaks TLS without it"),
    Option("zookeeper.sasl.jaas.config", EVERYWHERE, kafkawire_only=True,
           doc="log in to ZooKeeper with SASL DIGEST-MD5, as Kafka brokers do from their JAAS "
           "file's `Client` section: `org.apache.zookeeper.server.auth.DigestLoginModule "
           "required username=\"...\" password=\"...\";`; a refused login is a "
           "`ZooKeeperAuthError`; never shown"),
    Option("kafkaConfigFile", EVERYWHERE, kafkawire_only=True,
           doc="a Kafka client config file (`client.properties`: `key=value`, Java's "
           "`.properties` syntax) whose keys become `kafka.<key>` options; options given "
           "explicitly win. Values may hold `${env:NAME}`, `${file:PATH:KEY}` and "
           "`${dir:PATH:FILE}` placeholders resolved through the providers the file declares "
           "(`config.providers`, KIP-297; see Config files), so secrets stay out of the "
           "file; a value from one is never shown. Keys this query does not use (serializers, `acks` on a read) are skipped "
           "with a warning; security keys are always taken. Read where the query is defined"),
    Option("kafka.client.id", EVERYWHERE, default="spark-kafka-wire",
           doc="the client id sent with every request"),
    Option("kafka.request.timeout.ms", EVERYWHERE, kind=Kind.INT, default=30_000, minimum=1,
           doc="the longest wait for the answer to one request; reads, offset lookups and "
           "metadata also retry refused or dropped connections (a restarting broker) for this "
           "long, and report a broker that does not answer in time at once; a read also waits "
           "this long for a broker that answers Fetches with no data below the partition's end "
           "(storage catching up) before failing with `FetchStalledError` (a quota throttle's "
           "wait is not counted)"),
    Option("kafka.socket.connection.setup.timeout.ms", EVERYWHERE, kind=Kind.INT,
           default=10_000, minimum=1, doc="the longest wait for a connection to a broker (TCP "
           "connect and TLS handshake)"),
    Option("kafka.retry.backoff.ms", EVERYWHERE, kind=Kind.INT, default=100,
           doc="pause before retrying a retriable error (stale leader, timeout, dropped "
           "connection), doubling at each retry up to `kafka.retry.backoff.max.ms`; reads and "
           "offset lookups retry for up to `kafka.request.timeout.ms`, writes until "
           "`kafka.delivery.timeout.ms` (or `kafka.retries`)"),
    Option("kafka.retry.backoff.max.ms", EVERYWHERE, kind=Kind.INT, default=1_000,
           doc="the longest pause between two retries"),
    Option("kafka.metadata.max.age.ms", EVERYWHERE, kind=Kind.INT, default=300_000,
           maximum=INT64_MAX,  # a Java long
           doc="topic metadata older than this is fetched again"),
    Option("kafka.api.version.request", EVERYWHERE, kind=Kind.BOOL, default=True,
           kafkawire_only=True,
           doc="librdkafka's setting; with `false` no ApiVersions is sent and the versions of "
           "the release in `kafka.broker.version.fallback` are used (for 0.8/0.9 brokers)"),
    Option("kafka.broker.version.fallback", EVERYWHERE, default="0.10.0", kafkawire_only=True,
           doc="librdkafka's setting; the broker release whose API versions are used when "
           "`kafka.api.version.request` is false, e.g. `0.8.2` or `0.9.0`; `0.7.x` (e.g. "
           "`0.7.2`) selects Kafka 0.7's own protocol, which needs `zookeeper.connect`"),
    Option("kafka.security.protocol", EVERYWHERE, default="PLAINTEXT",
           doc="`PLAINTEXT`, `SSL` (TLS), `SASL_PLAINTEXT` (SASL login) or `SASL_SSL` (both), "
           "on every connection: metadata, fetch, produce, admin, group coordinator. Any "
           "`kafka.ssl.*` setting without `SSL`/`SASL_SSL`, or `kafka.sasl.*` setting without "
           "`SASL_*`, is refused rather than connecting without the security asked for"),
    # ----------------------------------------------------- SASL (SASL_PLAINTEXT / SASL_SSL)
    Option("kafka.sasl.mechanism", EVERYWHERE, default="GSSAPI",
           doc="`GSSAPI` (Kerberos, Java's default; needs the `[kerberos]` extra), `PLAIN`, "
           "`SCRAM-SHA-256`, `SCRAM-SHA-512` or `OAUTHBEARER`"),
    Option("kafka.sasl.jaas.config", EVERYWHERE,
           doc="the credentials, in Java's JAAS syntax: "
           "`org.apache.kafka.common.security.plain.PlainLoginModule required "
           "username=\"...\" password=\"...\";` (`scram.ScramLoginModule` for SCRAM; "
           "`oauthbearer.OAuthBearerLoginModule` with `clientId`, `clientSecret`, `scope`, "
           "`extension_<name>` or `unsecuredLogin*` options for OAUTHBEARER; "
           "`software.amazon.msk.auth.iam.IAMLoginModule` for MSK IAM; "
           "`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
           "keyTab=\"...\" principal=\"...\";` or `useTicketCache=true` for GSSAPI); never "
           "shown"),
    Option("kafka.sasl.username", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name for the user, instead of `kafka.sasl.jaas.config`"),
    Option("kafka.sasl.password", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name for the password, with `kafka.sasl.username`; never shown"),
    # ------------------------------------------------- OAUTHBEARER (kafka.sasl.mechanism)
    Option("kafka.sasl.oauthbearer.token.endpoint.url", EVERYWHERE,
           doc="OAUTHBEARER tokens from this OAuth 2.0 token endpoint (client credentials grant, "
           "KIP-768) with `clientId`, `clientSecret` and `scope` from `kafka.sasl.jaas.config`; "
           "https trusts the system's CAs. A `file:` URL names a file holding the token. "
           "Only URLs the cluster operator lists exactly in "
           "`spark.kafkawire.sasl.oauthbearer.allowed.urls` (spark-defaults.conf, or the "
           "environment variable `KAFKAWIRE_SASL_OAUTHBEARER_ALLOWED_URLS`; comma-separated) are "
           "read, none by default, as Java's `org.apache.kafka.sasl.oauthbearer.allowed.urls` "
           "since Kafka 4.0; redirects are not followed. "
           "Without it (nor the two settings below) OAUTHBEARER sends unsecured tokens built "
           "from `unsecuredLogin*` JAAS options, as Java does"),
    Option("kafka.sasl.login.callback.handler.class", EVERYWHERE,
           doc="Java's token source: `org.apache.kafka.common.security.oauthbearer."
           "OAuthBearerLoginCallbackHandler` (or `...oauthbearer.secured.` of Kafka < 3.4: "
           "the token endpoint) or `software.amazon.msk.auth.iam."
           "IAMOAuthBearerLoginCallbackHandler` (Amazon MSK IAM, needs the `[aws]` extra: "
           "`pip install '.[aws]'` in a clone); other JVM classes are refused"),
    Option("kafka.sasl.oauthbearer.token.provider", EVERYWHERE, kafkawire_only=True,
           doc="OAUTHBEARER tokens from a Python callable, `package.module:function` (or "
           "`package.module.function`), importable on the driver and every executor; it takes "
           "no argument and returns the token or `(token, expiry in ms since the epoch)`. A "
           "token whose expiry is unknown (not a JWT) is asked for at every login. This is code "
           "execution chosen by the query, so it is refused, before any import, unless the "
           "cluster operator allows the module in "
           "`spark.kafkawire.sasl.oauthbearer.token.provider.allowed.modules` (spark-defaults.conf, "
           "or the environment variable "
           "`KAFKAWIRE_SASL_OAUTHBEARER_TOKEN_PROVIDER_ALLOWED_MODULES`): comma-separated module "
           "names, each allowing its submodules, or `*` for any; none by default"),
    Option("kafka.sasl.aws.region", EVERYWHERE, kafkawire_only=True,
           default_doc="from the brokers' names",
           doc="Amazon MSK IAM: the cluster's region; unset, taken from the first bootstrap "
           "server's name (`b-1.<cluster>.kafka.<region>.amazonaws.com`), else from "
           "`AWS_REGION` / `AWS_DEFAULT_REGION` where the query is defined"),
    Option("kafka.sasl.oauthbearer.sub.claim.name", EVERYWHERE, default="sub",
           doc="the token claim naming the principal (shown in errors)"),
    Option("kafka.sasl.oauthbearer.scope.claim.name", EVERYWHERE, default="scope",
           doc="the token claim holding the scope; accepted for Java's configs (the broker "
           "checks scopes, not the client)"),
    Option("kafka.sasl.oauthbearer.header.urlencode", EVERYWHERE, kind=Kind.BOOL,
           default=False,
           doc="URL-encode the client id and secret before the token request's Basic "
           "authorization (KIP-1025; Java's default is off too)"),
    Option("kafka.sasl.login.connect.timeout.ms", EVERYWHERE, kind=Kind.INT, default=10_000,
           minimum=1, doc="the longest wait for the token endpoint's connection (the larger of "
           "this and the read timeout bounds each step)"),
    Option("kafka.sasl.login.read.timeout.ms", EVERYWHERE, kind=Kind.INT, default=10_000,
           minimum=1, doc="the longest wait for the token endpoint's answer"),
    Option("kafka.sasl.login.retry.backoff.ms", EVERYWHERE, kind=Kind.INT, default=100,
           doc="pause before retrying the token endpoint (unreachable, 5xx), doubling each time"),
    Option("kafka.sasl.login.retry.backoff.max.ms", EVERYWHERE, kind=Kind.INT,
           default=10_000,
           doc="retries of the token endpoint stop this long after the first attempt (Java's "
           "rule); a 4xx answer (wrong secret) is never retried"),
    Option("kafka.sasl.login.refresh.window.factor", EVERYWHERE, default="0.8",
           doc="a token is replaced once this fraction of its lifetime has passed (0.5-1.0), "
           "within the two bounds below, as in Java"),
    Option("kafka.sasl.login.refresh.window.jitter", EVERYWHERE, default="0.05",
           doc="a random fraction up to this (0-0.25) added to the refresh window factor"),
    Option("kafka.sasl.login.refresh.min.period.seconds", EVERYWHERE, kind=Kind.INT,
           default=60, doc="the shortest wait before replacing a token (0-900)"),
    Option("kafka.sasl.login.refresh.buffer.seconds", EVERYWHERE, kind=Kind.INT, default=300,
           doc="replace a token at least this long before it expires (0-3600)"),
    # ------------------------------------------------------ GSSAPI (Kerberos)
    Option("kafka.sasl.kerberos.service.name", EVERYWHERE, default="kafka",
           doc="GSSAPI: the first part of the brokers' Kerberos principals "
           "(`kafka/<broker host>@REALM`); the broker's host is the one connected to, so "
           "`kafka.bootstrap.servers` and the advertised listeners must use the names in the "
           "principals. `serviceName` in the JAAS entry may give it too (they must agree)"),
    Option("kafka.sasl.kerberos.keytab", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: GSSAPI's keytab file, with `kafka.sasl.kerberos.principal`, "
           "instead of `kafka.sasl.jaas.config`. Read where the query is defined and shipped "
           "with the plan, like a JAAS `keyTab`"),
    Option("kafka.sasl.kerberos.principal", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: the client principal (`name@REALM`) of GSSAPI, with "
           "`kafka.sasl.kerberos.keytab`, or to pick one from the ticket cache"),
    # ------------------------------------------------------------ TLS (security.protocol=SSL)
    Option("kafka.ssl.truststore.location", EVERYWHERE,
           doc="the CAs that sign the brokers' certificates: a JKS, PKCS12 or PEM file (JKS is "
           "converted by the JDK's `keytool` where the query is defined). Read "
           "once where the query is defined and shipped with the plan: the path need not "
           "exist on executors. Without any truststore the system's default CAs are trusted "
           "(what managed services need)"),
    Option("kafka.ssl.truststore.type", EVERYWHERE, default_doc="from the file",
           doc="`JKS`, `PKCS12` or `PEM`; unset, the type is recognized from the file's bytes"),
    Option("kafka.ssl.truststore.password", EVERYWHERE,
           doc="the JKS or PKCS12 truststore's password; never shown in errors, logs or plans"),
    Option("kafka.ssl.truststore.certificates", EVERYWHERE,
           doc="the trusted CAs as inline PEM text (KIP-651), instead of a truststore file"),
    Option("kafka.ssl.ca.location", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: a PEM file of trusted CAs (as "
           "`kafka.ssl.truststore.location` with type PEM)"),
    Option("kafka.ssl.keystore.location", EVERYWHERE,
           doc="the client certificate and key for mutual TLS: a JKS or PKCS12 file, or PEM with "
           "the key and the certificate chain. Read where the query is defined, like the "
           "truststore"),
    Option("kafka.ssl.keystore.type", EVERYWHERE, default_doc="from the file",
           doc="`JKS`, `PKCS12` or `PEM`; unset, recognized from the file's bytes"),
    Option("kafka.ssl.keystore.password", EVERYWHERE,
           doc="the JKS or PKCS12 keystore's password (a PKCS12 key's too); never shown"),
    Option("kafka.ssl.key.password", EVERYWHERE,
           doc="the password of an encrypted PEM private key (keystore, "
           "`kafka.ssl.keystore.key` or `kafka.ssl.key.location`) or of a JKS key entry; "
           "never shown"),
    Option("kafka.ssl.keystore.certificate.chain", EVERYWHERE,
           doc="the client certificate chain as inline PEM text (KIP-651), with "
           "`kafka.ssl.keystore.key`"),
    Option("kafka.ssl.keystore.key", EVERYWHERE,
           doc="the client private key as inline PEM text (KIP-651; encrypted with "
           "`kafka.ssl.key.password` or not); never shown"),
    Option("kafka.ssl.certificate.location", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: a PEM file with the client certificate (chain), with "
           "`kafka.ssl.key.location`"),
    Option("kafka.ssl.key.location", EVERYWHERE, kafkawire_only=True,
           doc="librdkafka's name: a PEM file with the client private key"),
    Option("kafka.ssl.endpoint.identification.algorithm", EVERYWHERE, default="https",
           doc="`https` checks that the broker's certificate names the host connected to; an "
           "empty value (or librdkafka's `none`) turns the check off"),
    Option("kafka.ssl.enabled.protocols", EVERYWHERE,
           default_doc="Python's (TLSv1.2, TLSv1.3)",
           doc="comma-separated, from `TLSv1`, `TLSv1.1`, `TLSv1.2`, `TLSv1.3`; the lowest and "
           "the highest bound the versions offered"),
    Option("kafka.ssl.protocol", EVERYWHERE, default_doc="TLS",
           doc="`TLS`, or a version (`TLSv1.2`, `TLSv1.3`) that caps the versions offered"),
    Option("kafka.ssl.cipher.suites", EVERYWHERE, default_doc="Python's",
           doc="comma-separated OpenSSL cipher names (as librdkafka's `ssl.cipher.suites`) for "
           "TLS 1.2 and lower; TLS 1.3 suites are OpenSSL's defaults"),
    # ------------------------------------------------------------------------------- reads
    Option("subscribe", SOURCE,
           doc="comma-separated topics, each of which must exist; internal topics "
           "(Metadata's `is_internal`) are never read. Exactly one of `subscribe`, "
           "`subscribePattern` and `assign` is required"),
    Option("subscribePattern", SOURCE,
           doc="a regular expression found anywhere in a topic name (`re.search`, like "
           "Java's `find`; Python's regex dialect); internal topics (Metadata's `is_internal`, "
           "and Kafka's own `__consumer_offsets`, `__transaction_state`, "
           "`__share_group_state`) are never read; other topics named `__...` are, as in "
           "Spark. Exactly one of `subscribe`, `subscribePattern` and `assign`"),
    Option("assign", SOURCE,
           doc='JSON `{"t":[0,1]}`; assigned partitions that do not exist are left out, a '
           "missing topic is an error, as in Spark; internal topics (Metadata's "
           "`is_internal`) are never read. Exactly one of `subscribe`, `subscribePattern` and "
           "`assign`"),
    Option("startingOffsets", SOURCE, default="earliest", stream_default="latest",
           doc='`earliest` or Spark\'s JSON `{"t":{"0":23,"1":-2}}` (-2 earliest) naming '
           'exactly the partitions read, where a topic may map to `"earliest"` for all its '
           "partitions (SPARK-58774, after Spark 4.2); `latest` is refused for batch, as in Spark",
           stream_doc="`earliest`, `latest`, JSON (a topic may map to `\"earliest\"` or "
           "`\"latest\"`), or (kafkawire only) `group`: the committed "
           "offsets of `kafka.group.id`, earliest for partitions without a commit. Used only "
           "when the query has no checkpoint. `endingOffsets` and `endingOffsetsByTimestamp` "
           "are refused and `endingTimestamp` ignored with a warning, as in Spark"),
    Option("endingOffsets", Use.READ, default="latest",
           doc='`latest` or JSON (-1 latest; a topic may map to `"latest"`); `earliest` is '
           "refused, as in Spark"),
    Option("startingTimestamp", SOURCE,
           doc="one ms timestamp for every partition: the first offset whose record timestamp "
           "is at or after it. Wins over `startingOffsetsByTimestamp`, which wins over "
           "`startingOffsets` (the losers are ignored, as in Spark)"),
    Option("endingTimestamp", Use.READ, ignored_in=Use.STREAM_READ,
           doc="one ms timestamp for every partition: the first offset whose record timestamp "
           "is at or after it, latest where none is. Wins over `endingOffsetsByTimestamp`, "
           "which wins over `endingOffsets` (the losers are ignored, as in Spark)"),
    Option("startingOffsetsByTimestamp", SOURCE,
           doc='JSON `{"t":{"0":1700000000000}}` naming exactly the partitions read; '
           "`startingTimestamp` wins over it, it wins over `startingOffsets` (the losers are "
           "ignored, as in Spark)"),
    Option("endingOffsetsByTimestamp", Use.READ,
           doc='JSON `{"t":{"0":1700000000000}}` naming exactly the partitions read, latest '
           "where no record is at or after a timestamp; `endingTimestamp` wins over it, it "
           "wins over `endingOffsets` (the losers are ignored, as in Spark)"),
    Option("startingOffsetsByTimestampStrategy", SOURCE, default="error",
           doc="a partition with no record at or after the starting timestamp fails the read "
           "(`error`) or starts at latest (`latest`)"),
    Option("failOnDataLoss", SOURCE, kind=Kind.BOOL, default=True,
           doc="planned offsets gone when a task reads them (retention moved the log start, "
           "the partition now ends earlier, the topic was deleted), and in streams, when a "
           "micro-batch is planned, partitions deleted, a partition's offsets gone back below "
           "where the batch begins, partitions added that do not start at 0 (Spark's checks): "
           "fail naming topic, partition and offsets, or (`false`) log a warning saying what is "
           "skipped and read what exists. Compaction gaps and transaction markers are not "
           "loss. A batch read whose start is beyond a partition's end fails either way, as in "
           "Spark"),
    Option("minPartitions", SOURCE, kind=Kind.COUNT, maximum=INT32_MAX,  # Spark's Int
           doc="split topic-partitions into more Spark partitions: while there are fewer "
           "pieces than this, large pieces are cut in proportion to their size (Spark's "
           "KafkaOffsetRangeCalculator). Every piece is a fixed offset range. Small ranges "
           "packed together (see `maxOffsetRangesPerPartition`) aim at this many Spark "
           "partitions and never leave fewer"),
    Option("maxRecordsPerPartition", SOURCE, kind=Kind.COUNT,
           doc="split topic-partitions into pieces of at most this many offsets, before "
           "`minPartitions` applies. Every piece is a fixed offset range. Also the most "
           "offsets small ranges packed into one Spark partition may hold together (see "
           "`maxOffsetRangesPerPartition`)"),
    Option("maxOffsetRangesPerPartition", SOURCE, kind=Kind.COUNT, kafkawire_only=True,
           default_doc="no limit",
           doc="the most offset ranges (topic-partitions, or pieces of one) one Spark "
           "partition reads, one after another; `1` turns packing off: one Spark partition per "
           "range, as Spark plans. Packing: after splitting, small ranges share a task, taken "
           "in topic, partition and offset order, aiming at `minPartitions` tasks when given "
           "(never fewer), else at twice the CPUs of the process that plans the read (fewer "
           "when the packed ranges hold under 20,000 offsets per task: a micro-batch of a few "
           "hundred records is one task); a task "
           "holds at most the offsets divided by that number, and at most "
           "`maxRecordsPerPartition` (100,000 when unset); a range that large is read alone. "
           "Same rows, in the same order"),
    Option("includeHeaders", SOURCE, kind=Kind.BOOL, default=False,
           doc="adds `headers` `array<struct<key: string, value: binary>>`: null for a record "
           "without headers, order and duplicate keys kept"),
    Option("kafka.isolation.level", SOURCE, default="read_uncommitted",
           doc="`read_committed` reads up to the last stable offset and returns a "
           "transaction's records only if its producer's next marker commits it (KIP-98): "
           "transactions the broker lists as aborted are dropped at once, the others are held "
           "until their marker is read, past the range end if need be, so the read is exact "
           "on brokers that list none (Tansu)"),
    # Two contexts, two defaults: Spark's 3 attempts 1000 ms apart are what a stream uses when
    # it asks again for latest offsets below where its batch begins (stream_reader.py); the
    # driver's offset lookups, unless the option is given, keep the client's own retry rule
    # (a time budget), which covers more than Spark's count.
    Option("fetchOffset.numRetries", SOURCE, kind=Kind.INT, default=3, minimum=1,
           default_doc="`3` for a stream's second look at latest offsets; unset, offset "
           "lookups use the client's retries",
           doc="driver-side offset lookups: number of attempts. Unset, the client's own retries "
           "apply (for up to `kafka.request.timeout.ms`, backoff `kafka.retry.backoff.ms` "
           "doubling up to `kafka.retry.backoff.max.ms`); a stream asks again this many times "
           "for latest offsets below where its batch begins (Spark's rule and default)"),
    Option("fetchOffset.retryIntervalMs", SOURCE, kind=Kind.INT, default=1000,
           default_doc="`1000` for a stream's second look at latest offsets; unset, offset "
           "lookups use the client's backoff",
           doc="driver-side offset lookups: a fixed pause between attempts, in ms. Unset, the "
           "client's backoff applies; a stream's second look at latest offsets waits this long "
           "between attempts (Spark's default)"),
    Option("groupIdPrefix", SOURCE, default="spark-kafka-relation",
           doc="accepted for Spark's kafka format, where it names the consumer group Spark "
           "generates; kafkawire joins no group and commits offsets only for `kafka.group.id` "
           "(`commitOffsets`), so it has no effect. Ignored, with a warning, when "
           "`kafka.group.id` is set"),
    Option("kafka.group.id", SOURCE, ignored_in=SINK,
           doc="the group `commitOffsets` commits for and `startingOffsets=group` starts from; "
           "a read never joins it (a batch read warns: queries sharing a group id interfere "
           "once offsets are committed)"),
    Option("maxRecordsPerBatch", SOURCE, kind=Kind.INT, default=10_000, minimum=1,
           kafkawire_only=True, doc="rows per Arrow batch handed to Spark"),
    Option("kafka.max.partition.fetch.bytes", SOURCE, kind=Kind.BYTES, default=1 << 20,
           minimum=1,
           doc="each Fetch asks for the smaller of this and `kafka.fetch.max.bytes` (grown only "
           "for a batch larger than that), and a task holds at most two answers, so its memory "
           "is about twice that plus one output batch"),
    Option("kafka.fetch.max.bytes", SOURCE, kind=Kind.BYTES, default=50 << 20, minimum=1,
           doc="the request's byte budget; see `kafka.max.partition.fetch.bytes`"),
    Option(MAX_DECOMPRESSED_OPTION, SOURCE, kind=Kind.BYTES, minimum=1, kafkawire_only=True,
           default_doc=f"{DECOMPRESSION_RATIO} × the Fetch size, at least "
           f"{DEFAULT_MAX_DECOMPRESSED_SIZE >> 20} MiB, at most 2 GiB",
           doc="the most bytes the compressed records of one Fetch answer may decompress to, "
           "all batches and wrappers together, and the most a task holds decompressed at "
           "once: past it the read fails with `DecompressionLimitError` naming topic, "
           "partition, offset and broker instead of running out of memory on a decompression "
           "bomb. The default lets the default 1 MiB Fetch expand 256x and larger ones "
           f"{DECOMPRESSION_RATIO}x (typical topics compress 3-10x, logs and JSON up to "
           "20-50x); a task needs about three times this in memory at the worst"),
    Option("kafka.fetch.max.wait.ms", SOURCE, kind=Kind.INT, default=500,
           doc="how long a broker may hold a Fetch waiting for `kafka.fetch.min.bytes`; after "
           "an answer with no data below the partition's end the next Fetch allows twice as "
           "long (at least 500 ms, within `kafka.request.timeout.ms`), for a broker whose "
           "storage read is bounded by it (Tansu on S3)"),
    Option("kafka.fetch.min.bytes", SOURCE, kind=Kind.BYTES, default=1,
           doc="the bytes a broker waits for before answering a Fetch"),
    Option("kafka.check.crcs", SOURCE, kind=Kind.BOOL, default=True,
           doc="check the CRC of every record batch or message; a mismatch names topic, "
           "partition, offset and broker and fails the read (not retried, as by Java's "
           "consumer: Spark's task retry fetches again)"),
    Option("kafka.default.api.timeout.ms", SOURCE, kind=Kind.INT, default=60_000,
           doc="accepted and has no effect (each request is bounded by "
           "`kafka.request.timeout.ms` and the retries)"),
    # read as a long by Spark, which refuses a value that is not one: so does kafkawire
    Option("kafkaConsumer.pollTimeoutMs", NOWHERE, ignored_in=SOURCE, kind=Kind.INT,
           maximum=INT64_MAX, doc="every request is bounded by `kafka.request.timeout.ms`"),
    # ------------------------------------------------------------------------ stream reads
    Option("maxOffsetsPerTrigger", Use.STREAM_READ, kind=Kind.COUNT,
           doc="cap per micro-batch, prorated over partitions by backlog; small partitions are "
           "rounded up, never starved (Spark's rule). Respected by `Trigger.AvailableNow`, "
           "which fixes its end offsets when the run starts"),
    Option("minOffsetsPerTrigger", Use.STREAM_READ, kind=Kind.COUNT,
           doc="hold a micro-batch back until that many new offsets exist, unless "
           "`maxTriggerDelay` has passed since a trigger last went through (a query's first "
           "trigger always does, as in Spark). Must not exceed `maxOffsetsPerTrigger`"),
    Option("maxTriggerDelay", Use.STREAM_READ, default="15m",
           doc="how long `minOffsetsPerTrigger` may hold micro-batches back; `15m`, `30s`, "
           "`500ms`, `1h`, or ms"),
    Option("commitOffsets", Use.STREAM_READ, default="none", kafkawire_only=True,
           doc="`kafka`, `zookeeper` or `both` commit the end of every completed micro-batch "
           "for `kafka.group.id`, so lag tools (kafka-consumer-groups, Burrow, librdkafka's "
           "`committed()`) show the query's progress. Kafka commits are standalone (the query "
           "never joins the group); `zookeeper` writes "
           "`/consumers/<group>/offsets/<topic>/<partition>` on `zookeeper.connect` (on a Kafka "
           "0.7 cluster `<broker id>-<partition>`, 0.7's layout; only `zookeeper` there). "
           "Spark tells a "
           "source that a micro-batch is complete when it plans the next one, so after an "
           "availableNow run or `processAllAvailable()` the committed offsets are the end of "
           "the last micro-batch, while a query stopped just after a batch may leave that batch "
           "uncommitted (lag tools then show it one micro-batch behind). Commits never change "
           "what is read: the checkpoint stays the source of truth"),
    # ------------------------------------------------------------------------------ writes
    Option("topic", SINK,
           doc="the topic of every row; it wins over the `topic` column (whose type is then "
           "not checked, as in Spark)"),
    Option("kafka.acks", SINK, default="all",
           doc="`all` (or `-1`), `1` or `0` (nothing waits for an answer; answers a broker "
           "sends anyway, as Tansu does, are dropped)"),
    Option("kafka.enable.idempotence", SINK, kind=Kind.BOOL, default=True,
           doc="on by default with `acks=all`, like the Java client: a producer id per task and "
           "per-partition sequences, so retries inside a task never store a batch twice. "
           "Java's rules: `acks` ≠ all or `retries=0` turn a defaulted idempotence off and an "
           "explicit one into an error; more than 5 requests in flight is an error while it is "
           "on; a broker without InitProducerId (before 0.11) turns a defaulted one off and an "
           "explicit one into an error. A re-executed Spark task gets a new producer id: the "
           "sink stays at-least-once, like Spark's"),
    Option("kafka.partitioner", SINK, default=DEFAULT_PARTITIONER,
           doc="librdkafka's names: `murmur2_random` (the Java client's placement), `murmur2`, "
           "`consistent_random`, `consistent`, `fnv1a_random`, `fnv1a`, `random`; placement "
           "equals librdkafka's for every key it places deterministically (null keys under "
           "`*_random` and every row under `random` are spread over all partitions). "
           "`kafka.partitioner.class` (a JVM class) is refused"),
    Option("kafka.compression.type", SINK, default="none",
           doc="`none`, `gzip`, `snappy`, `lz4` or `zstd` (zstd only where the broker's Produce "
           "version allows it, else a clear error before sending)"),
    # KIP-390's levels, their ranges and defaults as in Java's producer; each applies to its
    # codec only, and all are checked whichever codec is chosen, as Java checks them
    Option("kafka.compression.gzip.level", SINK, kind=Kind.INT, default=-1, minimum=-1,
           maximum=9, doc="gzip's level with `kafka.compression.type=gzip`: `1` (fastest) to "
           "`9` (smallest), or `-1`, zlib's default (6)"),
    Option("kafka.compression.lz4.level", SINK, kind=Kind.INT, minimum=1, maximum=17,
           default_doc="lz4's fast mode (Java's producer: 9)",
           doc="lz4's level with `kafka.compression.type=lz4`: `1` to `17`, as Java's producer "
           "takes (LZ4HC from 3; the lz4 library caps levels at its highest, 12)"),
    Option("kafka.compression.zstd.level", SINK, kind=Kind.INT, default=ZSTD_DEFAULT_LEVEL,
           minimum=-131072,
           maximum=22, doc="zstd's level with `kafka.compression.type=zstd`: `-131072` "
           "(fastest) to `22` (smallest)"),
    Option("kafka.batch.size", SINK, kind=Kind.BYTES, default=512 << 10,
           doc="a partition's rows wait in the task until they fill this (Java's default: "
           "16 KiB), until they are `kafka.linger.ms` old or until `kafka.buffer.memory` bytes "
           "wait in all; the task sends everything left when its rows end"),
    Option("kafka.linger.ms", SINK, kind=Kind.INT, default=5, ignored_in=SOURCE,
           maximum=INT64_MAX,  # a Java long
           doc="how old a partition's waiting rows may get, checked whenever Spark hands over "
           "the next Arrow batch; `0` sends each Arrow batch at once"),
    Option("kafka.buffer.memory", SINK, kind=Kind.BYTES, default=32 << 20, minimum=1,
           maximum=INT64_MAX,  # a Java long
           ignored_in=SOURCE,
           doc="the most bytes that wait in a task, over all partitions, before they are sent"),
    Option("kafka.max.in.flight.requests.per.connection", SINK, kind=Kind.INT, default=5,
           minimum=1,
           doc="Produce requests pipelined per broker, answers read in order. After a failure "
           "every later batch of the partition waits for the retry, so order holds with "
           "idempotence or with 1 in flight (as in Java)"),
    Option("kafka.max.request.size", SINK, kind=Kind.BYTES, default=1 << 20, minimum=1,
           doc="a record that can never fit fails before sending, naming its size"),
    Option("kafka.retries", SINK, kind=Kind.INT, default=INT32_MAX,
           doc="retriable errors (stale leader, timeouts, dropped connections) are retried "
           "after a metadata refresh, the backoff doubling up to its maximum, until this many "
           "retries or `kafka.delivery.timeout.ms` is spent"),
    Option("kafka.delivery.timeout.ms", SINK, kind=Kind.INT, default=120_000, minimum=1,
           doc="the longest a batch may take to be acknowledged, retries included: no attempt, "
           "reconnect or wait for an answer goes past it (Java's rule that delivery.timeout.ms "
           "≥ linger.ms + request.timeout.ms is not enforced)"),
    Option("kafka.transactional.id", SINK,
           doc="exactly-once writes: the prefix of the transactional ids the write's tasks use "
           "(`<prefix>-<task partition>`), committed by the driver when the whole write "
           "succeeded (see Exactly-once writes); use one prefix per query or job. Unset: "
           "at-least-once, as Spark's kafka sink"),
    Option("kafka.transaction.timeout.ms", SINK, kind=Kind.INT, default=900_000, minimum=1,
           maximum=INT32_MAX,
           doc="the longest a task's transaction may stay open before a Kafka coordinator "
           "aborts it: from the task's first write until the driver commits the whole write "
           "(Java's default, 60000, is short for a Spark job; at most the broker's "
           "`transaction.max.timeout.ms`, 15 minutes by default)"),
    Option("createTopic", SINK, kind=Kind.BOOL, default=False, kafkawire_only=True,
           doc="create a missing topic with CreateTopics"),
    Option("createTopicPartitions", SINK, kind=Kind.INT, minimum=1, kafkawire_only=True,
           doc="the partitions of a topic `createTopic` creates (the broker's default when "
           "unset; needs Kafka 2.4+); refused without `createTopic=true`"),
    Option("createTopicReplicationFactor", SINK, kind=Kind.INT, minimum=1,
           maximum=2**15 - 1,  # int16 in CreateTopics
           kafkawire_only=True,
           doc="the replication factor of a topic `createTopic` creates (the broker's default "
           "when unset; needs Kafka 2.4+); refused without `createTopic=true`"),
    Option("kafka.allow.auto.create.topics", SINK, kind=Kind.BOOL, default=False,
           doc="let a broker with `auto.create.topics.enable` create a missing topic (Java's "
           "default: true). Otherwise a missing topic fails naming it, before anything is sent "
           "(on the driver for the `topic` option, when a task first meets it in the `topic` "
           "column)"),
    # ------------------------------------------- value formats and the Schema Registry
    *_FORMAT_OPTIONS,
    # ---------------------------------------------------------- refused, accepted and ignored
    Option("kafka.partitioner.class", SINK,
           refused="it names a JVM class, which cannot run here; set kafka.partitioner to one of "
           + ", ".join(PARTITIONERS)
           + " (librdkafka's partitioners; murmur2_random is the Java default)"),
    *_REFUSED_BY_SPARK,
    *_IGNORED,
    *_KERBEROS_RELOGIN,
)

_BY_KEY = {o.key: o for o in OPTIONS}


def option(name: str) -> Option:
    """The table's entry for ``name``, spelled as in the table; KeyError for any other name,
    so a parser cannot read an option the table (and so the option reference) does not declare."""
    found = _BY_KEY.get(name.lower())
    if found is None or found.name != name:
        raise KeyError(f"option {name!r} is not in spark_kafka_wire.options.OPTIONS"
                       + (f" (it is spelled {found.name!r})" if found else ""))
    return found


def options_for(use: Use) -> list[Option]:
    """The options read somewhere in ``use`` (refused and ignored ones left out)."""
    return [o for o in OPTIONS if o.uses & use and o.refused is None]


def accepted_kafka_keys(use: Use) -> set[str]:
    """The ``kafka.*`` keys ``use`` takes: read there, or accepted there without effect."""
    return {o.key for o in OPTIONS if o.key.startswith("kafka.") and (
        o.ignored_in & use or (o.refused is None and o.uses & use))}


# The defaults, typed, for the code that declares a setting's default (dataclass fields): each
# is the table's, so the option reference says what the code does.


def entry(name: Option | str) -> Option:
    """``name``'s entry (an Option is its own)."""
    return name if isinstance(name, Option) else option(name)


def text_default(name: Option | str) -> str:
    """The text default of ``name``; TypeError when it has none."""
    opt = entry(name)
    if not isinstance(opt.default, str):
        raise TypeError(f"option {opt.name!r} has no text default")
    return opt.default


def int_default(name: Option | str) -> int:
    """The integer default of ``name``; TypeError when it has none."""
    opt = entry(name)
    if not isinstance(opt.default, int) or isinstance(opt.default, bool):
        raise TypeError(f"option {opt.name!r} has no integer default")
    return opt.default


def bool_default(name: Option | str) -> bool:
    """The boolean default of ``name``; TypeError when it has none."""
    opt = entry(name)
    if not isinstance(opt.default, bool):
        raise TypeError(f"option {opt.name!r} has no boolean default")
    return opt.default
