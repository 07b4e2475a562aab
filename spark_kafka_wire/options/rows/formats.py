"""The option table's rows of value formats (value.format / key.format) and the Schema
Registry's settings under Confluent's names, with the values those options take."""

from __future__ import annotations

from spark_kafka_wire.options.rows.kinds import EVERYWHERE, SINK, SOURCE, Kind, Option

#: value.format / key.format: how a column's bytes are read and written. ``raw`` is Spark's
#: binary column; the others are Confluent's wire format with a Schema Registry.
VALUE_FORMATS = ("raw", "avro", "protobuf", "json-schema")
#: Confluent's subject name strategies (the serializers' ``*.subject.name.strategy`` values,
#: by their class's simple name; the full io.confluent... class names are accepted too).
SUBJECT_NAME_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
#: How records a format cannot decode are treated, as Spark's from_avro ``mode``.
DECODE_MODES = ("FAILFAST", "PERMISSIVE")

# value.format / key.format and Confluent's Schema Registry settings (issue 32). The registry's
# names are Confluent's serializer and deserializer settings, unprefixed, as their Java and
# Python clients take them (https://docs.confluent.io/platform/current/schema-registry/
# connect.html#configuration-options).
FORMATS: tuple[Option, ...] = (
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
)
