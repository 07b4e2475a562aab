"""The configuration names of Kafka's Java clients (producer, consumer and admin client,
Kafka 3.x: ``ProducerConfig``, ``ConsumerConfig``, ``AdminClientConfig``, ``CommonClientConfigs``,
``SslConfigs``, ``SaslConfigs``), without the ``kafka.`` prefix options give them.

A client.properties is shared by producers, consumers and tools, so a key kafkawire does not
use is often a real setting of another client (``key.serializer`` in a read): such keys are
skipped quietly. A key that is none of these, nor one kafkawire reads, is what Java clients
warn of ("The configuration 'x' was supplied but isn't a known config"): usually a typo. One
list, read by ``options`` for both the ``kafkaConfigFile`` option and the CLI's
``--command-config``.
"""

from __future__ import annotations

_COMMON = """
bootstrap.servers client.dns.lookup client.id client.rack connections.max.idle.ms
default.api.timeout.ms metadata.max.age.ms metadata.recovery.strategy
metadata.recovery.rebootstrap.trigger.ms metric.reporters metrics.num.samples
metrics.recording.level metrics.sample.window.ms receive.buffer.bytes reconnect.backoff.max.ms
reconnect.backoff.ms request.timeout.ms retries retry.backoff.ms retry.backoff.max.ms
security.protocol security.providers send.buffer.bytes socket.connection.setup.timeout.max.ms
socket.connection.setup.timeout.ms auto.include.jmx.reporter enable.metrics.push
config.providers interceptor.classes
"""
_CONSUMER = """
allow.auto.create.topics auto.commit.interval.ms auto.offset.reset check.crcs
enable.auto.commit exclude.internal.topics fetch.max.bytes fetch.max.wait.ms fetch.min.bytes
group.id group.instance.id group.protocol group.remote.assignor heartbeat.interval.ms
isolation.level key.deserializer value.deserializer max.partition.fetch.bytes
max.poll.interval.ms max.poll.records partition.assignment.strategy session.timeout.ms
internal.leave.group.on.close internal.throw.on.fetch.stable.offset.unsupported
"""
_PRODUCER = """
acks batch.size buffer.memory compression.type compression.gzip.level compression.lz4.level
compression.zstd.level delivery.timeout.ms enable.idempotence key.serializer value.serializer
linger.ms max.block.ms max.in.flight.requests.per.connection max.request.size
metadata.max.idle.ms partitioner.class partitioner.adaptive.partitioning.enable
partitioner.availability.timeout.ms partitioner.ignore.keys transaction.timeout.ms
transactional.id
"""
_SSL = """
ssl.cipher.suites ssl.enabled.protocols ssl.endpoint.identification.algorithm
ssl.engine.factory.class ssl.key.password ssl.keymanager.algorithm
ssl.keystore.certificate.chain ssl.keystore.key ssl.keystore.location ssl.keystore.password
ssl.keystore.type ssl.protocol ssl.provider ssl.secure.random.implementation
ssl.trustmanager.algorithm ssl.truststore.certificates ssl.truststore.location
ssl.truststore.password ssl.truststore.type
"""
_SASL = """
sasl.client.callback.handler.class sasl.jaas.config sasl.kerberos.kinit.cmd
sasl.kerberos.min.time.before.relogin sasl.kerberos.service.name
sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds
sasl.login.refresh.min.period.seconds sasl.login.refresh.window.factor
sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
sasl.mechanism sasl.oauthbearer.clock.skew.seconds sasl.oauthbearer.expected.audience
sasl.oauthbearer.expected.issuer sasl.oauthbearer.header.urlencode
sasl.oauthbearer.jwks.endpoint.refresh.ms sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
sasl.oauthbearer.token.endpoint.url
"""

JAVA_CLIENT_CONFIGS: frozenset[str] = frozenset(
    " ".join((_COMMON, _CONSUMER, _PRODUCER, _SSL, _SASL)).split())
