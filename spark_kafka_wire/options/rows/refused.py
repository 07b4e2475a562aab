"""The option table's rows of the Java client settings kafkawire cannot honour: refused with
their reason (Spark's own refusals, JVM classes), accepted without effect (settings with no
counterpart here, Kerberos re-login), and the settings refused with one value only
(:data:`REFUSED_VALUES`)."""

from __future__ import annotations

from spark_kafka_wire.client.defaults import PARTITIONERS
from spark_kafka_wire.options.rows.kinds import (
    EVERYWHERE,
    NOWHERE,
    SINK,
    SOURCE,
    Option,
    RefusedValue,
)

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

# Spark's own refusals, JVM classes, and the Java settings accepted without effect: the last
# rows of the table.
REFUSED: tuple[Option, ...] = (
    Option("kafka.partitioner.class", SINK,
           refused="it names a JVM class, which cannot run here; set kafka.partitioner to one of "
           + ", ".join(PARTITIONERS)
           + " (librdkafka's partitioners; murmur2_random is the Java default)"),
    *_REFUSED_BY_SPARK,
    *_IGNORED,
    *_KERBEROS_RELOGIN,
)
