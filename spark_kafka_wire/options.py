"""Every option kafkawire reads, in one table, and the parsing the source and the sink share.

Names and semantics follow Spark's built-in kafka source and sink (keys are case-insensitive,
``kafka.``-prefixed keys are Kafka client settings), so switching formats means changing one
string. :data:`OPTIONS` is the one place an option is declared: its name, kind of value,
default, where it applies and its documentation. The parsers read options through
:func:`option` and the ``*_value`` helpers, which raise KeyError for a name the table does not
hold, so a misspelt key fails in the tests instead of being silently unset; the check for
unknown ``kafka.*`` keys accepts exactly the table's; and the README's option tables are
rendered from it (``make docs``, see option_tables.py). Adding an option means adding its entry
here and reading it where it takes effect.

Anything kafkawire does not support yet fails loudly rather than being ignored: silently
dropping, say, a security setting would connect in plaintext.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum, Flag, auto
from urllib.parse import urlsplit

from spark_kafka_wire.client.config import ClientConfig, parse_bootstrap
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.producer.partitioner import DEFAULT_PARTITIONER, PARTITIONERS
from spark_kafka_wire.client.sasl.aws_iam import check_signer, region_from_host
from spark_kafka_wire.client.sasl.config import MECHANISMS as SASL_MECHANISMS
from spark_kafka_wire.client.sasl.config import SaslConfig
from spark_kafka_wire.client.sasl.gssapi import load_gssapi
from spark_kafka_wire.client.sasl.jaas import (
    PLAIN_MODULE,
    SCRAM_MODULE,
    digest_credentials,
    jaas_credentials,
    parse_jaas,
    shown_module,
)
from spark_kafka_wire.client.sasl.kerberos import (
    DEFAULT_SERVICE_NAME,
    KerberosConfig,
    kerberos_from_jaas,
    keytab_config,
)
from spark_kafka_wire.client.sasl.oauth_config import (
    AWS_HANDLER,
    AWS_MODULE,
    OAUTH_MODULE,
    OIDC_HANDLERS,
    UNSECURED_HANDLER,
    HttpSettings,
    OAuthConfig,
    RefreshSettings,
    check_provider_allowed,
    check_url_allowed,
    extensions_from,
    unsecured_claims,
)
from spark_kafka_wire.client.tls import (
    PROTOCOL_VERSIONS,
    TlsConfig,
    context_for,
    load_keystore,
    load_private_key,
    load_truststore,
    store_type,
    version_name,
)
from spark_kafka_wire.client.zookeeper_registry import find_cluster
from spark_kafka_wire.client.zookeeper_security import ZooKeeperSecurity, check_sasl_support
from spark_kafka_wire.config_files import file_kafka_options, resolve_placeholders
from spark_kafka_wire.java_client_configs import JAVA_CLIENT_CONFIGS
from spark_kafka_wire.protocol.errors import FromPlaceholder, shown
from spark_kafka_wire.protocol.records.entries import (
    DECOMPRESSION_RATIO,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    MAX_DECOMPRESSED_OPTION,
)
from spark_kafka_wire.protocol.versions import is_kafka07, versions_for_release

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
INT32_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE: int settings, and int32 fields on the wire
INT64_MAX = 2**63 - 1  # Java's Long.MAX_VALUE: long settings, offsets, timestamps


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
    """What an option's value is, for the shared parsers and the README's default column."""

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
    format takes, or one side's setting given to the other). ``doc`` is the README's meaning
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
    default_doc: str | None = None  # the README's default cell when ``default`` cannot say it
    kafkawire_only: bool = False  # not an option of Spark's kafka format
    stream_default: str | None = None
    stream_doc: str | None = None
    ignored_in: Use = NOWHERE
    refused: str | None = None

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
           "are read from ZooKeeper on the driver (see the README's Kafka 0.7 section)"),
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
           "IAMOAuthBearerLoginCallbackHandler` (Amazon MSK IAM, needs "
           "`pip install 'spark-kafka-wire[aws]'`); other JVM classes are refused"),
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
    Option("kafka.sasl.kerberos.service.name", EVERYWHERE, default_doc="`kafka`",
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
           "names starting with `__`) are never read. Exactly one of `subscribe`, "
           "`subscribePattern` and `assign`"),
    Option("assign", SOURCE,
           doc='JSON `{"t":[0,1]}`; assigned partitions that do not exist are left out, a '
           "missing topic is an error, as in Spark; internal topics (Metadata's "
           "`is_internal`) are never read. Exactly one of `subscribe`, `subscribePattern` and "
           "`assign`"),
    Option("startingOffsets", SOURCE, default="earliest", stream_default="latest",
           doc='`earliest` or Spark\'s JSON `{"t":{"0":23,"1":-2}}` (-2 earliest) naming '
           'exactly the partitions read, where a topic may map to `"earliest"` for all its '
           "partitions (Spark 4.x); `latest` is refused for batch, as in Spark",
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
    Option("fetchOffset.numRetries", SOURCE, kind=Kind.INT, minimum=1,
           doc="driver-side offset lookups: number of attempts. Unset, the client's own retries "
           "apply (for up to `kafka.request.timeout.ms`, backoff `kafka.retry.backoff.ms` "
           "doubling up to `kafka.retry.backoff.max.ms`)"),
    Option("fetchOffset.retryIntervalMs", SOURCE, kind=Kind.INT,
           doc="driver-side offset lookups: a fixed pause between attempts, in ms. Unset, the "
           "client's backoff applies"),
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
           doc="how long a broker may hold a Fetch waiting for `kafka.fetch.min.bytes`"),
    Option("kafka.fetch.min.bytes", SOURCE, kind=Kind.BYTES, default=1,
           doc="the bytes a broker waits for before answering a Fetch"),
    Option("kafka.check.crcs", SOURCE, kind=Kind.BOOL, default=True,
           doc="check the CRC of every record batch or message; a mismatch names topic, "
           "partition, offset and broker and fails the read (not retried, as by Java's "
           "consumer: Spark's task retry fetches again)"),
    Option("kafka.default.api.timeout.ms", SOURCE, kind=Kind.INT, default=60_000,
           doc="accepted and has no effect (each request is bounded by "
           "`kafka.request.timeout.ms` and the retries)"),
    Option("kafkaConsumer.pollTimeoutMs", NOWHERE, ignored_in=SOURCE,
           doc="every request is bounded by `kafka.request.timeout.ms`"),
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
    Option("kafka.retries", SINK, kind=Kind.INT, default=2_147_483_647,
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
    so a parser cannot read an option the table (and so the README) does not declare."""
    found = _BY_KEY.get(name.lower())
    if found is None or found.name != name:
        raise KeyError(f"option {name!r} is not in spark_kafka_wire.options.OPTIONS"
                       + (f" (it is spelled {found.name!r})" if found else ""))
    return found


def options_for(use: Use) -> list[Option]:
    """The options read somewhere in ``use`` (refused and ignored ones left out)."""
    return [o for o in OPTIONS if o.uses & use and o.refused is None]


_log = logging.getLogger(__name__)
_SECURITY_PREFIXES = ("kafka.security.", "kafka.ssl.", "kafka.sasl.")

# ------------------------------------------------------------------------- reading values
# ``opts`` is always the result of lower_keys; ``name`` an Option or a name in the table.


def lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    """Keys lower-cased (Spark's options are case-insensitive), values as given: a value from a
    placeholder stays marked (see config_files), so that no message shows it."""
    return {k.lower(): v if isinstance(v, str) else str(v) for k, v in options.items()}


def with_config_file(opts: dict[str, str], use: Use) -> dict[str, str]:
    """``opts`` with the placeholders of its ``kafka.*`` values resolved through the providers
    ``kafka.config.providers*`` declares, and the keys of its ``kafkaConfigFile`` (resolved
    through the providers the file declares) added where not given explicitly.

    A client.properties is shared by producers, consumers and tools, so keys this query does
    not take (serializers, ``acks`` on a read, ``schema.registry.url``) are skipped with one
    warning, as Java clients warn of unused configs; security keys are always taken so that a
    setting kafkawire cannot honour fails loudly instead of connecting with less security.
    """
    opts = resolve_placeholders(opts, "options", prefix="kafka.", precise=False)
    path = given(opts, "kafkaConfigFile")
    if path is None:
        return opts
    if not path.strip():
        raise ConfigurationError("kafkaConfigFile is empty: give the path of a .properties file")
    taken, skipped = config_file_options(path.strip(), opts, use, precise=False)
    if skipped:
        _log.warning("kafkaConfigFile %s: skipped keys this %s does not use: %s", path.strip(),
                     "read" if use & SOURCE else "write", ", ".join(sorted(skipped)))
    return {**taken, **{k: v for k, v in opts.items() if k != option("kafkaConfigFile").key}}


def known_client_configs() -> frozenset[str]:
    """Every Kafka client setting name (no ``kafka.`` prefix, lower case) that is not a typo:
    the ``kafka.*`` options kafkawire reads, refuses or ignores, and the Java clients' own."""
    return frozenset(o.key[len("kafka."):] for o in OPTIONS if o.key.startswith("kafka.")) \
        | JAVA_CLIENT_CONFIGS


def _security_names() -> frozenset[str]:
    return frozenset(k for k in known_client_configs()
                     if k.startswith(tuple(p[len("kafka."):] for p in _SECURITY_PREFIXES)))


def edit_distance(a: str, b: str, limit: int = 3) -> int:
    """Optimal string alignment distance (insertions, deletions, substitutions and swaps of
    neighbours each cost 1: ``secuirty`` is 1 from ``security``), or ``limit`` once it is at
    least that (names far apart need no exact count)."""
    if abs(len(a) - len(b)) >= limit:
        return limit
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return min(prev[-1], limit)


def misspelt_security_key(name: str) -> str | None:
    """The security setting (``security.protocol``, ``ssl.*``, ``sasl.*``) that ``name``, a
    key that is no client setting, is 1 or 2 edits away from: the one it likely meant."""
    key = name.lower()
    if key in known_client_configs():
        return None
    scored = sorted((edit_distance(key, k), k) for k in _security_names())
    return scored[0][1] if scored and scored[0][0] <= 2 else None


def check_security_spelling(names: Iterable[str], where: str) -> None:
    """A misspelt security setting is an error, not a skipped key: ignoring
    ``secuirty.protocol=SSL`` would connect in plaintext. ``where`` names the source in the
    message (the file); the value is never shown."""
    for name in names:
        intended = misspelt_security_key(name)
        if intended is not None:
            raise ConfigurationError(
                f"{where}: '{name}' is not a Kafka client setting; did you mean "
                f"'{intended}'? Fix its name: kafkawire will not connect without the security "
                "setting it seems to give")


def unknown_client_configs(names: Iterable[str]) -> list[str]:
    """The keys among ``names`` that are no Kafka client setting at all (likely typos; Java
    clients warn of them), as given."""
    known = known_client_configs()
    return sorted(n for n in names if n.lower() not in known)


def config_file_options(path: str, opts: Mapping[str, str], use: Use, precise: bool = True
                        ) -> tuple[dict[str, str], list[str]]:
    """(the ``kafka.*`` options of the config file at ``path`` that ``use`` takes and ``opts``
    does not set, lower-cased; the file's keys skipped as unused there). Shared by
    ``kafkaConfigFile`` and the CLI's ``--command-config``, which read one file the same way.
    ``precise`` (the CLI, a user's own Python) says why a file cannot be used; a query's
    options get one message whatever the reason, so they cannot probe the driver's files."""
    # Keys refused on one side are skipped from a file on both (a shared client.properties
    # holds the serializers of producers and the deserializers of consumers).
    accepted = _accepted_kafka_keys(use) - {o.key for o in OPTIONS if o.refused is not None}
    taken: dict[str, str] = {}
    skipped: list[str] = []
    zookeeper = {o.key for o in OPTIONS if o.key.startswith("zookeeper.")}
    for key, value in file_kafka_options(path, precise).items():
        k = key.lower()
        if k[len("kafka."):] in zookeeper:
            # zookeeper.connect of a ZooKeeper-era client's consumer.properties, and the
            # zookeeper.ssl.* / zookeeper.sasl.* of a broker's server.properties (or a
            # --command-config): the options of those names, not Kafka client settings
            k = k[len("kafka."):]
        if k in opts:
            continue
        if k in zookeeper or k in accepted or k.startswith(_SECURITY_PREFIXES):
            taken[k] = value
        else:
            skipped.append(key[len("kafka."):])
    check_security_spelling([k[len("kafka."):] for k in taken if k.startswith("kafka.")]
                            + skipped, f"config file {path}")
    return taken, skipped


#: ``options_from_properties``'s sides: the options a read or a write takes, or both.
FILE_USES = {"read": SOURCE, "write": SINK, "both": EVERYWHERE}


def options_from_properties(path: str | os.PathLike[str], use: str = "both"
                            ) -> dict[str, str]:
    """The ``kafka.*`` options of a Kafka client config file, for ``.options(**...)``.

    The dict is what ``kafkaConfigFile`` would take from the same file: placeholders resolved
    and only the keys ``use`` accepts, ``"read"``, ``"write"`` or (the default) ``"both"``,
    the keys every read and every write accepts, so that one dict serves either side. A
    client.properties holds keys for producers and consumers alike (``acks``, serializers,
    ``client.dns.lookup``), and an explicit option kafkawire does not take is an error, so
    passing the file's keys unfiltered would fail; the keys left out are named in one warning,
    as ``kafkaConfigFile`` does. This runs where it is called: with Spark Connect, on the
    client, so files and ``${env:...}`` of the client's machine are read.

    >>> spark.read.format("kafkawire").options(**options_from_properties("client.properties"))
    >>> df.write.format("kafkawire").options(**options_from_properties(p, use="write"))
    """
    side = FILE_USES.get(use)
    if side is None:
        raise ConfigurationError(f"options_from_properties: use must be one of "
                                 f"{', '.join(map(repr, FILE_USES))}, got {shown(use)}")
    source = os.fspath(path)
    taken, skipped = config_file_options(source, {}, SINK if side == SINK else SOURCE)
    if side == EVERYWHERE:
        for_writes, _ = config_file_options(source, {}, SINK)
        skipped += [k[len("kafka."):] for k in taken if k not in for_writes]
        taken = {k: v for k, v in taken.items() if k in for_writes}
    if skipped:
        _log.warning("%s: skipped keys %s does not use: %s", source,
                     {"read": "a read", "write": "a write", "both": "every read and write"}[use],
                     ", ".join(sorted(skipped)))
    return taken


def _entry(name: Option | str) -> Option:
    return name if isinstance(name, Option) else option(name)


def given(opts: Mapping[str, str], name: Option | str) -> str | None:
    """The raw value when the option is set."""
    return opts.get(_entry(name).key)


def text_value(opts: Mapping[str, str], name: Option | str) -> str:
    """The raw value, or the table's default."""
    opt = _entry(name)
    raw = opts.get(opt.key)
    if raw is not None:
        return raw
    if not isinstance(opt.default, str):
        raise TypeError(f"option {opt.name!r} has no text default")
    return opt.default


def optional_int(opts: Mapping[str, str], name: Option | str) -> int | None:
    """The integer value when set, checked against the option's minimum (COUNT: positive)."""
    opt = _entry(name)
    raw = opts.get(opt.key)
    if raw is None:
        return None
    text = raw.strip()
    # ASCII digits only (int() takes any script's digits, and "1_000"), as Java's parseInt;
    # no more than a long's 19 digits, so the conversion cost stays bounded.
    digits = text[1:] if text[:1] in "+-" else text
    if not (digits.isascii() and digits.isdigit() and len(digits.lstrip("0")) <= 19):
        raise ConfigurationError(f"{opt.name} must be an integer, got {shown(raw)}")
    value = int(text)
    got = shown(value, within=raw)
    if opt.kind is Kind.COUNT:
        if value <= 0:
            raise ConfigurationError(f"{opt.name} must be positive, got {got}")
    elif value < opt.minimum:
        raise ConfigurationError(f"{opt.name} must be >= {opt.minimum}, got {got}")
    if value > opt.highest:
        raise ConfigurationError(f"{opt.name} must be at most {opt.highest}, got {got}")
    return value


def int_value(opts: Mapping[str, str], name: Option | str) -> int:
    """The integer value, or the table's default."""
    opt = _entry(name)
    value = optional_int(opts, opt)
    if value is not None:
        return value
    if not isinstance(opt.default, int) or isinstance(opt.default, bool):
        raise TypeError(f"option {opt.name!r} has no integer default")
    return opt.default


MAX_WIRE_STRING = 2**15 - 1  # a Kafka protocol string: int16 length, then UTF-8


def wire_text(opts: Mapping[str, str], name: Option | str) -> str | None:
    """The value (or text default) of an option sent to brokers as a protocol string (client
    and group ids): checked to be UTF-8 text that fits the int16 length prefix."""
    opt = _entry(name)
    value = opts.get(opt.key, opt.default if isinstance(opt.default, str) else None)
    if value is None:
        return None
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ConfigurationError(f"{opt.name} holds a character UTF-8 cannot encode (a lone "
                                 "surrogate)") from None
    if size > MAX_WIRE_STRING:
        raise ConfigurationError(f"{opt.name} is {size} bytes of UTF-8; a Kafka protocol "
                                 f"string holds at most {MAX_WIRE_STRING}")
    return value


def bool_value(opts: Mapping[str, str], name: Option | str) -> bool:
    """``true`` or ``false`` in any case, or the table's default."""
    opt = _entry(name)
    raw = opts.get(opt.key)
    if raw is None:
        if not isinstance(opt.default, bool):
            raise TypeError(f"option {opt.name!r} has no boolean default")
        return opt.default
    v = raw.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise ConfigurationError(f"{opt.name} must be true or false, got {raw!r}")


# ------------------------------------------------------------------------- client settings


def _accepted_kafka_keys(use: Use) -> set[str]:
    return {o.key for o in OPTIONS if o.key.startswith("kafka.") and (
        o.ignored_in & use or (o.refused is None and o.uses & use))}


def client_config(opts: dict[str, str], use: Use) -> ClientConfig:
    """The connection settings of a source (``use`` SOURCE) or a sink (SINK), after refusing
    what the table refuses there and every ``kafka.*`` key it does not accept there."""
    for o in OPTIONS:
        if o.refused is not None and o.uses & use and o.key in opts:
            raise ConfigurationError(f"Kafka option '{o.name}' is not supported: {o.refused}")
    servers = (given(opts, "kafka.bootstrap.servers") or "").strip()
    zookeeper = (given(opts, "zookeeper.connect") or "").strip()
    if not servers and not zookeeper:
        raise ConfigurationError(
            "option 'kafka.bootstrap.servers' is required: set it to the brokers' "
            "host:port list, e.g. .option('kafka.bootstrap.servers', 'broker1:9092'), or give "
            "the cluster's ZooKeeper in 'zookeeper.connect' (host:port[,host:port][/chroot]) "
            "to find the brokers there"
        )
    protocol = text_value(opts, "kafka.security.protocol").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigurationError(f"kafka.security.protocol must be one of "
                                 f"{', '.join(SECURITY_PROTOCOLS)}, got {protocol!r}")
    tls_on, sasl_on = protocol in ("SSL", "SASL_SSL"), protocol.startswith("SASL_")
    accepted = _accepted_kafka_keys(use)
    check_security_spelling([k[len("kafka."):] for k in opts
                             if k.startswith("kafka.") and k not in accepted], "option")
    for key in opts:
        if key.startswith("kafka.sasl.") and not sasl_on:
            raise ConfigurationError(
                f"'{key}' is set but kafka.security.protocol is {protocol}: set "
                "kafka.security.protocol=SASL_PLAINTEXT or SASL_SSL to log in with SASL"
            )
        if key.startswith("kafka.sasl.") and key not in accepted:
            raise ConfigurationError(
                f"'{key}' is not supported yet (kafkawire logs in with PLAIN, SCRAM, "
                "OAUTHBEARER and GSSAPI, see the README's SASL options); refusing to connect "
                "without the security you asked for"
            )
        if key.startswith("kafka.ssl.") and not tls_on:
            raise ConfigurationError(
                f"'{key}' is set but kafka.security.protocol is {protocol}: set "
                "kafka.security.protocol=SSL or SASL_SSL to connect with TLS"
            )
    accepted = _accepted_kafka_keys(use)
    unknown = sorted(k for k in opts if k.startswith("kafka.") and k not in accepted)
    if unknown:
        raise ConfigurationError(
            "unsupported Kafka client option(s): "
            + ", ".join(f"'{k}'" for k in unknown)
            + ". See the README for the kafka.* settings kafkawire understands"
        )
    fallback = text_value(opts, "kafka.broker.version.fallback").strip()
    said = repr(fallback) if isinstance(fallback, FromPlaceholder) else fallback  # in messages
    named = given(opts, "kafka.broker.version.fallback") is not None
    kafka07 = is_kafka07(fallback)
    if kafka07:
        if not zookeeper:
            raise ConfigurationError(
                f"kafka.broker.version.fallback={said}: Kafka 0.7 brokers have no "
                "Metadata request, so kafkawire finds a 0.7 topic's brokers and partitions in "
                "ZooKeeper: give zookeeper.connect (host:port[,host:port][/chroot])")
        if sasl_on:
            raise ConfigurationError(
                f"kafka.security.protocol={protocol}: Kafka 0.7 brokers have no SASL")
    else:
        try:
            versions_for_release(fallback)
        except ValueError as exc:
            raise ConfigurationError(f"kafka.broker.version.fallback: {exc}") from None
    tls = tls_config(opts) if tls_on else None
    sasl = sasl_config(opts) if sasl_on else None
    zk_security = zookeeper_security(opts) if zookeeper and (kafka07 or not servers) else None
    # Only now, with every setting checked, is ZooKeeper asked (a wrong option fails first).
    if servers and not kafka07:
        bootstrap = tuple(parse_bootstrap(servers))
    else:
        # bounded like a broker connection: an unreachable ensemble fails as fast as an
        # unreachable broker would
        bootstrap, registered07 = find_cluster(
            zookeeper, protocol,
            timeout_s=int_value(opts, "kafka.socket.connection.setup.timeout.ms") / 1000,
            zookeeper_security=zk_security)
        if registered07 and not kafka07:
            if named:
                raise ConfigurationError(
                    f"kafka.broker.version.fallback={said}, but the brokers registered in "
                    f"ZooKeeper at {zookeeper} are Kafka 0.7 brokers (0.7's creator:host:port "
                    "registrations): set it to 0.7.2 (or leave it unset) to speak their "
                    "protocol")
            fallback, kafka07 = "0.7.2", True  # the registrations say which protocol
        elif kafka07 and not registered07:
            raise ConfigurationError(
                f"kafka.broker.version.fallback={said}, but the brokers registered in "
                f"ZooKeeper at {zookeeper} are Kafka 0.8+ brokers (JSON registrations): "
                "leave the option unset or name their release")
    return ClientConfig(
        bootstrap_servers=bootstrap,
        client_id=wire_text(opts, "kafka.client.id") or "",
        request_timeout_ms=int_value(opts, "kafka.request.timeout.ms"),
        connect_timeout_ms=int_value(opts, "kafka.socket.connection.setup.timeout.ms"),
        retry_backoff_ms=int_value(opts, "kafka.retry.backoff.ms"),
        retry_backoff_max_ms=int_value(opts, "kafka.retry.backoff.max.ms"),
        metadata_max_age_ms=int_value(opts, "kafka.metadata.max.age.ms"),
        api_version_request=bool_value(opts, "kafka.api.version.request"),
        broker_version_fallback=fallback,
        security_protocol=protocol,
        tls=tls,
        sasl=sasl,
        zookeeper_connect=(zookeeper or None) if kafka07 else None,
        zookeeper_security=zk_security if kafka07 else None,
    )


# ------------------------------------------------------------------------------ ZooKeeper

# Settings that mean something only with zookeeper.ssl.client.enable=true.
_ZK_TLS_ONLY = tuple(o for o in OPTIONS if o.key.startswith("zookeeper.ssl.")
                     and o is not option("zookeeper.ssl.client.enable"))


def zookeeper_security(opts: Mapping[str, str]) -> ZooKeeperSecurity | None:
    """How to reach ``zookeeper.connect``: TLS from ``zookeeper.ssl.*`` (Kafka brokers' names,
    KIP-515: https://cwiki.apache.org/confluence/display/KAFKA/KIP-515%3A+Enable+ZK+client+to+use+the+new+TLS+supported+authentication)
    and a SASL DIGEST-MD5 login from ``zookeeper.sasl.jaas.config``; None for plain TCP.

    Stores are read here, on the driver, with the broker TLS loaders (JKS through keytool),
    into the same :class:`TlsConfig` of bytes. A store setting without
    ``zookeeper.ssl.client.enable=true`` is refused, as ``kafka.ssl.*`` without SSL is: it
    would otherwise connect in plaintext although a truststore was given. Messages name
    options, never their values.
    """
    tls: TlsConfig | None = None
    if bool_value(opts, "zookeeper.ssl.client.enable"):
        tls = _zookeeper_tls(opts)
    else:
        stray = [o.name for o in _ZK_TLS_ONLY if given(opts, o) is not None]
        if stray:
            raise ConfigurationError(
                f"'{stray[0]}' is set but zookeeper.ssl.client.enable is not true: set "
                "zookeeper.ssl.client.enable=true to connect to ZooKeeper with TLS (its "
                "secureClientPort)")
    user = password = None
    jaas_opt = option("zookeeper.sasl.jaas.config")
    jaas = given(opts, jaas_opt)
    if jaas is not None:
        user, password = digest_credentials(jaas, jaas_opt.name)
        check_sasl_support()
    if tls is None and user is None:
        return None
    return ZooKeeperSecurity(tls=tls, sasl_user=user, sasl_password=password)


def _zookeeper_tls(opts: Mapping[str, str]) -> TlsConfig:
    """``zookeeper.ssl.*`` read into a :class:`TlsConfig` (the CAs; a client certificate
    when a keystore is given; the host name check)."""
    cadata: str | None = None
    truststore = option("zookeeper.ssl.truststore.location")
    data = _read_file(opts, truststore)
    if data is not None:
        kind = store_type(data, given(opts, "zookeeper.ssl.truststore.type"),
                          "zookeeper.ssl.truststore")
        cadata = load_truststore(data, kind, given(opts, "zookeeper.ssl.truststore.password"),
                                 truststore.name)
    chain = key = None
    keystore = option("zookeeper.ssl.keystore.location")
    data = _read_file(opts, keystore)
    if data is not None:
        kind = store_type(data, given(opts, "zookeeper.ssl.keystore.type"),
                          "zookeeper.ssl.keystore")
        password = given(opts, "zookeeper.ssl.keystore.password")
        # Kafka's ZooKeeper client has no key password: the key is under the store's (a PEM
        # keystore's key only when encrypted)
        key_password = password if kind != "PEM" or b"ENCRYPTED" in data else None
        chain, key = load_keystore(data, kind, password, key_password, keystore.name)
    check = bool_value(opts, "zookeeper.ssl.endpoint.identification.enable")
    algorithm_opt = option("zookeeper.ssl.endpoint.identification.algorithm")
    algorithm = given(opts, algorithm_opt)
    if algorithm is not None:
        value = algorithm.strip().lower()
        if value not in ("https", ""):
            raise ConfigurationError(f"{algorithm_opt.name} must be HTTPS or empty (no host "
                                     f"name check), got {shown(algorithm)}")
        enable = given(opts, "zookeeper.ssl.endpoint.identification.enable")
        if enable is not None and check != (value == "https"):
            raise ConfigurationError(
                f"{algorithm_opt.name} and zookeeper.ssl.endpoint.identification.enable "
                "disagree: give one of them")
        check = value == "https"
    tls = TlsConfig(cadata=cadata, cert_chain=chain, key=key, check_hostname=check)
    context_for(tls)  # a key that does not match its certificate fails here, on the driver
    return tls



# ----------------------------------------------------------------------------------- SASL


def sasl_config(opts: Mapping[str, str]) -> SaslConfig:
    """The mechanism and credentials of ``SASL_PLAINTEXT`` / ``SASL_SSL``: from
    ``kafka.sasl.jaas.config`` (Java) or ``kafka.sasl.username``/``password`` (librdkafka,
    https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md). Messages name
    options, never their values."""
    mechanism = text_value(opts, "kafka.sasl.mechanism").strip().upper()
    if mechanism not in SASL_MECHANISMS:
        raise ConfigurationError(f"kafka.sasl.mechanism must be one of "
                                 f"{', '.join(SASL_MECHANISMS)}, got {mechanism!r}")
    if mechanism == "OAUTHBEARER":
        oauth = oauth_config(opts)
        return SaslConfig(mechanism=mechanism, username=oauth.principal, password="",
                          oauth=oauth)
    for oauth_only in _OAUTH_ONLY:
        if given(opts, oauth_only) is not None:
            raise ConfigurationError(f"{oauth_only.name} applies to kafka.sasl.mechanism=OAUTHBEARER, "
                                     f"not {mechanism}")
    if mechanism == "GSSAPI":
        return kerberos_sasl_config(opts)
    jaas = given(opts, "kafka.sasl.jaas.config")
    user, password = given(opts, "kafka.sasl.username"), given(opts, "kafka.sasl.password")
    if jaas is not None and (user is not None or password is not None):
        raise ConfigurationError("give either kafka.sasl.jaas.config or kafka.sasl.username/"
                                 "kafka.sasl.password, not both")
    if jaas is not None:
        user, password = jaas_credentials(jaas, mechanism)
    elif user is None or password is None:
        raise ConfigurationError(
            f"SASL {mechanism} needs credentials: set kafka.sasl.jaas.config (e.g. "
            f"{SCRAM_MODULE if mechanism.startswith('SCRAM') else PLAIN_MODULE} required "
            'username="..." password="...";) or kafka.sasl.username and kafka.sasl.password')
    if not user:
        raise ConfigurationError("the SASL user name is empty")
    return SaslConfig(mechanism=mechanism, username=user, password=password)


# ---------------------------------------------------------------------------- OAUTHBEARER

_OAUTH_ONLY = (option("kafka.sasl.oauthbearer.token.endpoint.url"),
               option("kafka.sasl.login.callback.handler.class"),
               option("kafka.sasl.oauthbearer.token.provider"), option("kafka.sasl.aws.region"))


def _fraction(opts: Mapping[str, str], opt: Option, low: float, high: float) -> float:
    raw, name = text_value(opts, opt), opt.name
    try:
        value = float(raw.strip())
    except ValueError:
        raise ConfigurationError(f"{name} must be a number, got {raw!r}") from None
    if not low <= value <= high:
        raise ConfigurationError(f"{name} must be between {low} and {high}, got "
                                 f"{shown(value, within=raw)}")
    return value


def _bounded(opts: Mapping[str, str], opt: Option, high: int) -> int:
    value = int_value(opts, opt)
    if value > high:
        raise ConfigurationError(f"{opt.name} must be at most {high}, got "
                                 f"{shown(value, within=given(opts, opt))}")
    return value


def _refresh_settings(opts: Mapping[str, str]) -> RefreshSettings:
    """``sasl.login.refresh.*`` within the bounds Java's SaslConfigs enforces."""
    return RefreshSettings(
        window_factor=_fraction(opts, option("kafka.sasl.login.refresh.window.factor"), 0.5, 1.0),
        window_jitter=_fraction(opts, option("kafka.sasl.login.refresh.window.jitter"), 0.0, 0.25),
        min_period_s=_bounded(opts, option("kafka.sasl.login.refresh.min.period.seconds"), 900),
        buffer_s=_bounded(opts, option("kafka.sasl.login.refresh.buffer.seconds"), 3600))


def _aws_region(opts: Mapping[str, str]) -> str:
    region = (given(opts, "kafka.sasl.aws.region") or "").strip()
    if not region:
        hosts = [h for h, _ in parse_bootstrap(given(opts, "kafka.bootstrap.servers") or "")]
        region = next((r for r in map(region_from_host, hosts) if r), "")
    if not region:
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or ""
    if not region:
        raise ConfigurationError(
            "Amazon MSK IAM needs the cluster's region: set kafka.sasl.aws.region (it is "
            "taken from broker names like b-1.<cluster>.kafka.<region>.amazonaws.com, or "
            "AWS_REGION, when those are available)")
    return region


def oauth_config(opts: Mapping[str, str]) -> OAuthConfig:
    """Where OAUTHBEARER tokens come from, chosen as the Java client chooses its login callback
    handler (see client/sasl/oauth_config.py): MSK IAM, a Python token provider, a token
    endpoint, else unsecured tokens. Messages name options, never their values."""
    if given(opts, "kafka.sasl.username") is not None or \
            given(opts, "kafka.sasl.password") is not None:
        raise ConfigurationError("kafka.sasl.username/kafka.sasl.password do not apply to "
                                 "OAUTHBEARER: give kafka.sasl.jaas.config")
    handler = (given(opts, "kafka.sasl.login.callback.handler.class") or "").strip()
    url = (given(opts, "kafka.sasl.oauthbearer.token.endpoint.url") or "").strip()
    provider = (given(opts, "kafka.sasl.oauthbearer.token.provider") or "").strip()
    jaas = given(opts, "kafka.sasl.jaas.config")
    module, jopts = parse_jaas(jaas) if jaas is not None else ("", {})
    known = (*OIDC_HANDLERS, UNSECURED_HANDLER, AWS_HANDLER)
    if handler and handler not in known:
        raise ConfigurationError(
            "kafka.sasl.login.callback.handler.class names a JVM class kafkawire cannot run; "
            f"it understands {', '.join(known)}. For another token source, name a Python "
            "callable in kafka.sasl.oauthbearer.token.provider")
    aws = handler == AWS_HANDLER or module == AWS_MODULE
    if sum((aws, bool(url), bool(provider))) > 1:
        raise ConfigurationError(
            "give one OAUTHBEARER token source: kafka.sasl.oauthbearer.token.endpoint.url, "
            "kafka.sasl.oauthbearer.token.provider or the MSK IAM callback handler")
    if module and module not in (OAUTH_MODULE, AWS_MODULE):
        raise ConfigurationError(f"kafka.sasl.jaas.config: {shown_module(module)} does not fit "
                                 f"kafka.sasl.mechanism=OAUTHBEARER (use {OAUTH_MODULE}, or "
                                 f"{AWS_MODULE} for Amazon MSK IAM)")
    if module == AWS_MODULE and not aws or module == OAUTH_MODULE and aws:
        raise ConfigurationError(f"Amazon MSK IAM needs the JAAS module {AWS_MODULE} with "
                                 f"kafka.sasl.login.callback.handler.class={AWS_HANDLER}")
    refresh = _refresh_settings(opts)
    if aws:
        check_signer()
        profile, role = jopts.get("awsProfileName", ""), jopts.get("awsRoleArn", "")
        who = f"awsRoleArn {role}" if role else \
            f"awsProfileName {profile}" if profile else "the default AWS credentials"
        return OAuthConfig(source="aws", principal=who, refresh=refresh,
                           region=_aws_region(opts), aws_profile=profile, aws_role_arn=role,
                           aws_role_session_name=jopts.get("awsRoleSessionName", ""))
    if provider:
        check_provider_allowed(provider)  # refused here, before any import, not only on executors
        return OAuthConfig(source="provider", principal=provider, provider=provider,
                           extensions=extensions_from(jopts, "extension_"), refresh=refresh)
    if jaas is None:
        raise ConfigurationError(
            f"SASL OAUTHBEARER needs kafka.sasl.jaas.config: {OAUTH_MODULE} required "
            'clientId="..." clientSecret="..." scope="..."; with '
            "kafka.sasl.oauthbearer.token.endpoint.url (an identity provider), or "
            'unsecuredLoginStringClaim_sub="<user>"; (unsecured tokens, development only)')
    if url or handler in OIDC_HANDLERS:
        if not url:
            raise ConfigurationError(
                f"kafka.sasl.login.callback.handler.class={handler} needs "
                "kafka.sasl.oauthbearer.token.endpoint.url")
        scheme = url.partition(":")[0].lower()
        if scheme not in ("http", "https", "file"):
            raise ConfigurationError("kafka.sasl.oauthbearer.token.endpoint.url must be an "
                                     "http, https or file URL")
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
        except ValueError as exc:
            # exc quotes a piece of the URL
            why = f" ({shown(url)})" if isinstance(url, FromPlaceholder) else f" ({exc})"
            raise ConfigurationError("kafka.sasl.oauthbearer.token.endpoint.url is not a "
                                     f"valid URL{why}") from None
        if scheme != "file" and not parts.hostname or any(c in url for c in " \x00\r\n"):
            raise ConfigurationError("kafka.sasl.oauthbearer.token.endpoint.url is not a "
                                     "valid URL (no host, or white space in it)")
        client_id, secret = jopts.get("clientId", ""), jopts.get("clientSecret", "")
        if scheme != "file" and (not client_id or not secret):
            raise ConfigurationError(
                "kafka.sasl.oauthbearer.token.endpoint.url: the token endpoint needs clientId "
                f"and clientSecret in kafka.sasl.jaas.config ({OAUTH_MODULE})")
        check_url_allowed(url)  # where the query is defined; oidc.py checks again where read
        return OAuthConfig(
            source="oidc", principal=client_id or "token file", endpoint_url=url,
            client_id=client_id, client_secret=secret, scope=jopts.get("scope", ""),
            extensions=extensions_from(jopts, "extension_"), refresh=refresh,
            sub_claim=text_value(opts, "kafka.sasl.oauthbearer.sub.claim.name").strip(),
            scope_claim=text_value(opts, "kafka.sasl.oauthbearer.scope.claim.name").strip(),
            http=HttpSettings(
                connect_timeout_ms=int_value(opts, "kafka.sasl.login.connect.timeout.ms"),
                read_timeout_ms=int_value(opts, "kafka.sasl.login.read.timeout.ms"),
                retry_backoff_ms=int_value(opts, "kafka.sasl.login.retry.backoff.ms"),
                retry_backoff_max_ms=int_value(opts, "kafka.sasl.login.retry.backoff.max.ms"),
                urlencode_header=bool_value(opts, "kafka.sasl.oauthbearer.header.urlencode")))
    claims, principal_claim, principal, lifetime = unsecured_claims(jopts)
    return OAuthConfig(source="unsecured", principal=principal, claims_json=claims,
                       lifetime_s=lifetime, principal_claim=principal_claim,
                       extensions=extensions_from(jopts, "unsecuredLoginExtension_"),
                       refresh=refresh)


# -------------------------------------------------------------------------------- GSSAPI


def kerberos_sasl_config(opts: Mapping[str, str]) -> SaslConfig:
    """GSSAPI's credentials: a ``Krb5LoginModule`` JAAS entry, librdkafka's
    ``kafka.sasl.kerberos.keytab``/``principal``, or, with neither, each process's default
    Kerberos credentials (``kinit``'s ticket cache, MIT's default client keytab). A keytab
    is read here, on the driver, and shipped with the plan (``client/sasl/kerberos.py``)."""
    if given(opts, "kafka.sasl.username") is not None \
            or given(opts, "kafka.sasl.password") is not None:
        raise ConfigurationError(
            "kafka.sasl.username/kafka.sasl.password do not apply to kafka.sasl.mechanism="
            "GSSAPI (Kerberos, the default): set kafka.sasl.mechanism to PLAIN, SCRAM-SHA-256 "
            "or SCRAM-SHA-512 for a user name and password, or give GSSAPI a keytab "
            "(kafka.sasl.jaas.config with Krb5LoginModule useKeyTab=true keyTab=\"...\" "
            "principal=\"...\")")
    service = given(opts, "kafka.sasl.kerberos.service.name")
    if service is not None and not service.strip():
        raise ConfigurationError("kafka.sasl.kerberos.service.name is empty")
    jaas = given(opts, "kafka.sasl.jaas.config")
    principal = (given(opts, "kafka.sasl.kerberos.principal") or "").strip() or None
    keytab_opt = option("kafka.sasl.kerberos.keytab")
    keytab = (given(opts, keytab_opt) or "").strip() or None
    if jaas is not None and (principal or keytab):
        raise ConfigurationError("give either kafka.sasl.jaas.config or kafka.sasl.kerberos."
                                 "keytab/kafka.sasl.kerberos.principal, not both")
    kerberos: KerberosConfig
    if jaas is not None:
        module, options = parse_jaas(jaas)
        kerberos = kerberos_from_jaas(module, options, service.strip() if service else None)
    elif keytab is not None:
        if principal is None:
            raise ConfigurationError("kafka.sasl.kerberos.keytab needs "
                                     "kafka.sasl.kerberos.principal (name@REALM)")
        kerberos = keytab_config(principal, keytab, (service or DEFAULT_SERVICE_NAME).strip(),
                                 keytab_opt.name)
    else:
        kerberos = KerberosConfig(service_name=(service or DEFAULT_SERVICE_NAME).strip(),
                                  principal=principal)
    load_gssapi()  # a missing extra fails here, on the driver, before any task runs
    return SaslConfig(mechanism="GSSAPI", username=kerberos.who, password="",
                      kerberos=kerberos)


# ------------------------------------------------------------------------------------ TLS


def _read_file(opts: Mapping[str, str], opt: Option) -> bytes | None:
    """The bytes of the file an option names, read here (on the driver) so that executors
    need no such path."""
    path = given(opts, opt)
    if path is None or not path.strip():
        return None
    try:
        with open(path.strip(), "rb") as f:
            return f.read()
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ConfigurationError(f"{opt.name}: cannot read {path!r}: "
                                 f"{getattr(exc, 'strerror', None) or exc}") from None


def _inline(opts: Mapping[str, str], opt: Option) -> bytes | None:
    value = given(opts, opt)
    return value.encode() if value is not None and value.strip() else None


def _one_of(found: dict[Option, bytes | None], what: str) -> None:
    named = [o.name for o, v in found.items() if v is not None]
    if len(named) > 1:
        raise ConfigurationError(f"{what}: give only one of {', '.join(named)}")


def tls_config(opts: Mapping[str, str]) -> TlsConfig:
    """The TLS settings of ``security.protocol=SSL``, with every store read into bytes.

    The Java client's names and KIP-651's inline PEM values, and librdkafka's file names as
    aliases (https://kafka.apache.org/documentation/#producerconfigs_ssl.truststore.location,
    https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md). A context is
    built once here so an unusable setting fails on the driver, not in every task.
    """
    # -- trusted CAs
    truststore, ca_location = option("kafka.ssl.truststore.location"), \
        option("kafka.ssl.ca.location")
    inline_cas = option("kafka.ssl.truststore.certificates")
    cas = {o: (_inline(opts, o) if o is inline_cas else _read_file(opts, o))
           for o in (truststore, ca_location, inline_cas)}
    _one_of(cas, "trusted CAs")
    cadata: str | None = None
    if cas[truststore] is not None:
        data = cas[truststore]
        assert data is not None
        kind = store_type(data, given(opts, "kafka.ssl.truststore.type"), "kafka.ssl.truststore")
        cadata = load_truststore(data, kind, given(opts, "kafka.ssl.truststore.password"),
                                 truststore.name)
    for o in (ca_location, inline_cas):
        found = cas[o]
        if found is not None:
            cadata = load_truststore(found, "PEM", None, o.name)
    # -- client certificate (mutual TLS)
    key_password = given(opts, "kafka.ssl.key.password")
    keystore = option("kafka.ssl.keystore.location")
    pairs = ((option("kafka.ssl.keystore.certificate.chain"), option("kafka.ssl.keystore.key")),
             (option("kafka.ssl.certificate.location"), option("kafka.ssl.key.location")))
    sources = {keystore: _read_file(opts, keystore)}
    keys: dict[Option, bytes | None] = {}
    for chain_opt, key_opt in pairs:
        is_file = chain_opt.name.endswith(".location")
        sources[chain_opt] = _read_file(opts, chain_opt) if is_file else _inline(opts, chain_opt)
        keys[key_opt] = _read_file(opts, key_opt) if is_file else _inline(opts, key_opt)
        if (sources[chain_opt] is None) != (keys[key_opt] is None):
            missing, present = (key_opt, chain_opt) if keys[key_opt] is None else \
                (chain_opt, key_opt)
            raise ConfigurationError(f"{missing.name} is needed with {present.name}")
    _one_of(sources, "client certificate")
    chain: bytes | None = None
    key: bytes | None = None
    store = sources[keystore]
    if store is not None:
        kind = store_type(store, given(opts, "kafka.ssl.keystore.type"), "kafka.ssl.keystore")
        chain, key = load_keystore(store, kind, given(opts, "kafka.ssl.keystore.password"),
                                   key_password, keystore.name)
    for chain_opt, key_opt in pairs:
        chain_bytes, key_bytes = sources[chain_opt], keys[key_opt]
        if chain_bytes is not None and key_bytes is not None:
            chain = load_truststore(chain_bytes, "PEM", None, chain_opt.name).encode()
            key = load_private_key(key_bytes, key_password, key_opt.name)
    # -- verification and versions
    algorithm = text_value(opts, "kafka.ssl.endpoint.identification.algorithm").strip().lower()
    if algorithm not in ("https", "", "none"):
        raise ConfigurationError(
            "kafka.ssl.endpoint.identification.algorithm must be https or empty (no hostname "
            f"check), got {algorithm!r}")
    low = high = None
    enabled_opt = option("kafka.ssl.enabled.protocols")
    enabled = given(opts, enabled_opt)
    if enabled is not None and enabled.strip():
        names = [version_name(v, enabled_opt.name) for v in enabled.split(",") if v.strip()]
        if not names:
            raise ConfigurationError(f"{enabled_opt.name} names no TLS version: give some of "
                                     + ", ".join(PROTOCOL_VERSIONS))
        ranked = sorted(names, key=list(PROTOCOL_VERSIONS).index)
        low, high = ranked[0], ranked[-1]
    cap_opt = option("kafka.ssl.protocol")
    cap = given(opts, cap_opt)
    if cap is not None and cap.strip() and cap.strip().upper() != "TLS":
        capped = version_name(cap, cap_opt.name)
        order = list(PROTOCOL_VERSIONS)
        if high is None or order.index(capped) < order.index(high):
            high = capped
        if low is not None and order.index(low) > order.index(high):
            raise ConfigurationError(f"{cap_opt.name} is lower than every version in "
                                     f"{enabled_opt.name}")
    suites = given(opts, "kafka.ssl.cipher.suites")
    ciphers = ":".join(c.strip() for c in suites.split(",") if c.strip()) if suites else None
    tls = TlsConfig(cadata=cadata, cert_chain=chain, key=key,
                    check_hostname=algorithm == "https", min_version=low, max_version=high,
                    ciphers=ciphers or None)
    context_for(tls)
    return tls
