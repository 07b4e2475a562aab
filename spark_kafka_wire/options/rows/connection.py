"""The option table's rows every read and write takes: the cluster's address (bootstrap servers
or ZooKeeper, and ZooKeeper's own security), the Kafka client config file, and the connection
settings (client id, timeouts, retries, metadata, API versions, security protocol)."""

from __future__ import annotations

from spark_kafka_wire.client import defaults
from spark_kafka_wire.options.rows.kinds import EVERYWHERE, NOWHERE, Kind, Option
from spark_kafka_wire.protocol.primitives import INT64_MAX

CONNECTION: tuple[Option, ...] = (
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
    Option("kafka.client.id", EVERYWHERE, default=defaults.CLIENT_ID,
           doc="the client id sent with every request"),
    Option("kafka.request.timeout.ms", EVERYWHERE, kind=Kind.INT, default=defaults.REQUEST_TIMEOUT_MS, minimum=1,
           doc="the longest wait for the answer to one request; reads, offset lookups and "
           "metadata also retry refused or dropped connections (a restarting broker) for this "
           "long, and report a broker that does not answer in time at once; a read also waits "
           "this long for a broker that answers Fetches with no data below the partition's end "
           "(storage catching up) before failing with `FetchStalledError` (a quota throttle's "
           "wait is not counted)"),
    Option("kafka.socket.connection.setup.timeout.ms", EVERYWHERE, kind=Kind.INT,
           default=defaults.SOCKET_CONNECTION_SETUP_TIMEOUT_MS, minimum=1, doc="the longest wait for a connection to a broker (TCP "
           "connect and TLS handshake)"),
    Option("kafka.retry.backoff.ms", EVERYWHERE, kind=Kind.INT, default=defaults.RETRY_BACKOFF_MS,
           doc="pause before retrying a retriable error (stale leader, timeout, dropped "
           "connection), doubling at each retry up to `kafka.retry.backoff.max.ms`; reads and "
           "offset lookups retry for up to `kafka.request.timeout.ms`, writes until "
           "`kafka.delivery.timeout.ms` (or `kafka.retries`)"),
    Option("kafka.retry.backoff.max.ms", EVERYWHERE, kind=Kind.INT, default=defaults.RETRY_BACKOFF_MAX_MS,
           doc="the longest pause between two retries"),
    Option("kafka.metadata.max.age.ms", EVERYWHERE, kind=Kind.INT, default=defaults.METADATA_MAX_AGE_MS,
           maximum=INT64_MAX,  # a Java long
           doc="topic metadata older than this is fetched again"),
    Option("kafka.api.version.request", EVERYWHERE, kind=Kind.BOOL, default=defaults.API_VERSION_REQUEST,
           kafkawire_only=True,
           doc="librdkafka's setting; with `false` no ApiVersions is sent and the versions of "
           "the release in `kafka.broker.version.fallback` are used (for 0.8/0.9 brokers)"),
    Option("kafka.broker.version.fallback", EVERYWHERE, default=defaults.BROKER_VERSION_FALLBACK, kafkawire_only=True,
           doc="librdkafka's setting; the broker release whose API versions are used when "
           "`kafka.api.version.request` is false, e.g. `0.8.2` or `0.9.0`; `0.7.x` (e.g. "
           "`0.7.2`) selects Kafka 0.7's own protocol, which needs `zookeeper.connect`"),
    Option("kafka.security.protocol", EVERYWHERE, default=defaults.SECURITY_PROTOCOL,
           doc="`PLAINTEXT`, `SSL` (TLS), `SASL_PLAINTEXT` (SASL login) or `SASL_SSL` (both), "
           "on every connection: metadata, fetch, produce, admin, group coordinator. Any "
           "`kafka.ssl.*` setting without `SSL`/`SASL_SSL`, or `kafka.sasl.*` setting without "
           "`SASL_*`, is refused rather than connecting without the security asked for"),
)
