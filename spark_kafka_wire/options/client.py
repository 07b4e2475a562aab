"""The client's settings from a query's options: :func:`client_config` (connection, security,
version pinning; ZooKeeper discovery) and :func:`fetch_settings` (Fetch sizes, CRC checks,
isolation).

Both sides (the Spark source and sink) and the CLI read the same ``kafka.*`` options into the
client layer's settings, so these live with the options, below the sides: a CLI command reads
as a query does without importing Spark's read side. A Kafka client setting kafkawire does not
use is accepted with a warning, as Spark's kafka format hands it to a Java client; one whose
loss would change the data or its security fails loudly rather than being ignored: silently
dropping, say, a security setting would connect in plaintext.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from spark_kafka_wire.client.config import ClientConfig, parse_bootstrap, registry_only
from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    KAFKA07_UNSUPPORTED,
    MISSING_OPTION,
    REFUSED_OPTION,
    UNKNOWN_OPTION,
    UNSUPPORTED_VALUE,
    ConfigurationError,
)
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.fetching.offsets import ISOLATION_LEVELS
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity
from spark_kafka_wire.options.files import (
    check_security_spelling,
    closest_name,
    known_client_configs,
    unknown_client_configs,
)
from spark_kafka_wire.options.security import sasl_config, tls_config, zookeeper_security
from spark_kafka_wire.options.table import (
    OPTIONS,
    REFUSED_VALUES,
    SOURCE,
    Use,
    accepted_kafka_keys,
    option,
    options_for,
)
from spark_kafka_wire.options.values import (
    bool_value,
    given,
    int_value,
    optional_int,
    text_value,
    wire_text,
)
from spark_kafka_wire.protocol.errors import FromPlaceholder
from spark_kafka_wire.protocol.versions import versions_for_release

_log = logging.getLogger(__name__)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Said when no option at all arrived: Spark keeps none of the OPTIONS of a catalog table
#: (CREATE TABLE ... USING) for a Python data source (Spark 4.2 and 4.3), where its own kafka
#: format keeps them; only a temporary view, or the DataFrame API, hands them over.
NO_OPTIONS_AT_ALL = (
    ". No option at all reached kafkawire: a table created with CREATE TABLE ... USING "
    "kafkawire OPTIONS (...) keeps none of its options (Spark keeps no options for Python data "
    "source tables); define a temporary view instead (CREATE TEMPORARY VIEW ... USING "
    "kafkawire OPTIONS (...)) or use spark.read / df.write with .option(...)")

#: Said when the servers were given without the prefix, as Java's clients take them.
UNPREFIXED_BOOTSTRAP = (". 'bootstrap.servers' is set, but Kafka client settings take the "
                        "kafka. prefix in options: rename it to 'kafka.bootstrap.servers'")


def client_config(opts: dict[str, str], use: Use) -> ClientConfig:
    """The connection settings of a source (``use`` SOURCE) or a sink (SINK), after refusing
    what the table refuses there and every ``kafka.*`` key it does not accept there."""
    refuse_what_the_table_refuses(opts, use)
    servers = (given(opts, "kafka.bootstrap.servers") or "").strip()
    zookeeper = (given(opts, "zookeeper.connect") or "").strip()
    if not servers and not zookeeper:
        raise ConfigurationError.of(
            MISSING_OPTION, "BOOTSTRAP_SERVERS_REQUIRED",
            hints=("" if opts else NO_OPTIONS_AT_ALL)
            + (UNPREFIXED_BOOTSTRAP if "bootstrap.servers" in opts else ""))
    protocol = text_value(opts, "kafka.security.protocol").strip().upper()
    if protocol not in SECURITY_PROTOCOLS:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("kafka.security.protocol").name,
                                    allowed=", ".join(SECURITY_PROTOCOLS), got=repr(protocol))
    tls_on, sasl_on = protocol in ("SSL", "SASL_SSL"), protocol.startswith("SASL_")
    check_security_keys(opts, use, protocol, tls_on, sasl_on)
    check_unused_kafka_keys(opts, use)
    fallback = broker_version_fallback(opts, zookeeper, protocol, sasl_on)
    # brokers without a Metadata request (Kafka 0.7) are found through ZooKeeper only
    in_zookeeper = registry_only(fallback)
    tls = tls_config(opts) if tls_on else None
    sasl = sasl_config(opts) if sasl_on else None
    zk_security = zookeeper_security(opts) if zookeeper and (in_zookeeper or not servers) \
        else None
    # Only now, with every setting checked, is ZooKeeper asked (a wrong option fails first).
    if servers and not in_zookeeper:
        bootstrap = tuple(parse_bootstrap(servers))
    else:
        bootstrap, fallback = _brokers_in_zookeeper(opts, zookeeper, protocol, fallback,
                                                    zk_security)
        in_zookeeper = registry_only(fallback)
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
        zookeeper_connect=(zookeeper or None) if in_zookeeper else None,
        zookeeper_security=zk_security if in_zookeeper else None,
    )


def refuse_what_the_table_refuses(opts: Mapping[str, str], use: Use) -> None:
    """The table's refused options and refused values, where ``use`` refuses them."""
    for o in OPTIONS:
        if o.refused is not None and o.uses & use and o.key in opts:
            raise ConfigurationError.of(
                REFUSED_OPTION, "KAFKA_OPTION", option=o.name, refused=o.refused)
    for r in REFUSED_VALUES:
        if r.uses & use and r.key in opts and str(opts[r.key]).strip().lower() == r.value:
            raise ConfigurationError.of(
                REFUSED_OPTION, "KAFKA_OPTION_VALUE", option=r.name, value=r.value,
                reason=r.reason)


def check_security_keys(opts: Mapping[str, str], use: Use, protocol: str, tls_on: bool,
                        sasl_on: bool) -> None:
    """``kafka.ssl.*`` / ``kafka.sasl.*`` keys: misspelt ones, ones the security protocol
    does not use, and ones kafkawire does not implement are refused, so no connection is made
    without the security asked for."""
    accepted = accepted_kafka_keys(use)
    check_security_spelling([k[len("kafka."):] for k in opts
                             if k.startswith("kafka.") and k not in accepted], "option")
    # (prefix, in use, the protocols that use it and what for, what kafkawire implements)
    security = (
        ("kafka.sasl.", sasl_on, "SASL_PLAINTEXT or SASL_SSL to log in with SASL",
         "is not supported yet (kafkawire logs in with PLAIN, SCRAM, OAUTHBEARER and GSSAPI, "
         "see docs/security.md, SASL)"),
        ("kafka.ssl.", tls_on, "SSL or SASL_SSL to connect with TLS",
         "is not supported (kafkawire's TLS takes the trust and key stores, PEM files, "
         "protocols, cipher suites and host name check of docs/security.md, TLS)"),
    )
    for key in opts:
        for prefix, on, protocols, implemented in security:
            if not key.startswith(prefix):
                continue
            if not on:
                raise ConfigurationError.of(
                    CONFLICTING_OPTIONS, "SECURITY_PROTOCOL", key=key, protocol=protocol,
                    protocols=protocols)
            if key not in accepted:
                raise ConfigurationError.of(
                    REFUSED_OPTION, "UNIMPLEMENTED_SECURITY", key=key,
                    implemented=implemented)


def broker_version_fallback(opts: Mapping[str, str], zookeeper: str, protocol: str,
                            sasl_on: bool) -> str:
    """``kafka.broker.version.fallback``, checked: a release kafkawire knows, or 0.7.x, which
    needs ZooKeeper and has no SASL."""
    fallback = text_value(opts, "kafka.broker.version.fallback").strip()
    said = repr(fallback) if isinstance(fallback, FromPlaceholder) else fallback  # in messages
    if registry_only(fallback):
        if not zookeeper:
            raise ConfigurationError.of(MISSING_OPTION, "KAFKA07_ZOOKEEPER_CONNECT", said=said)
        if sasl_on:
            raise ConfigurationError.of(
                KAFKA07_UNSUPPORTED, "SECURITY_PROTOCOL", protocol=protocol)
    else:
        try:
            versions_for_release(fallback)
        except ValueError as exc:
            raise ConfigurationError.of(
                UNSUPPORTED_VALUE, "BROKER_VERSION_FALLBACK", exc=str(exc)) from None
    return fallback


def _brokers_in_zookeeper(opts: Mapping[str, str], zookeeper: str, protocol: str,
                          fallback: str, zk_security: ZooKeeperSecurity | None
                          ) -> tuple[tuple[tuple[str, int], ...], str]:
    """The bootstrap servers registered in ZooKeeper, and the broker release to speak: their
    registrations say whether they are Kafka 0.7 brokers, which must agree with a
    ``kafka.broker.version.fallback`` given."""
    said = repr(fallback) if isinstance(fallback, FromPlaceholder) else fallback  # in messages
    named = given(opts, "kafka.broker.version.fallback") is not None
    in_zookeeper = registry_only(fallback)
    # the ZooKeeper client, imported where brokers are looked up in ZooKeeper
    from spark_kafka_wire.client.zookeeper.registry import find_cluster  # noqa: PLC0415

    # bounded like a broker connection: an unreachable ensemble fails as fast as an
    # unreachable broker would
    bootstrap, registered_only = find_cluster(
        zookeeper, protocol,
        timeout_s=int_value(opts, "kafka.socket.connection.setup.timeout.ms") / 1000,
        zookeeper_security=zk_security)
    if registered_only and not in_zookeeper:
        if named:
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "FALLBACK_NOT_KAFKA07", said=said,
                zookeeper=zookeeper)
        fallback = "0.7.2"  # the registrations say which protocol
    elif in_zookeeper and not registered_only:
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, "FALLBACK_KAFKA07", said=said, zookeeper=zookeeper)
    return bootstrap, fallback


def check_unused_kafka_keys(opts: Mapping[str, str], use: Use) -> None:
    """Refuse the ``kafka.*`` keys of ``opts`` that are no Kafka client setting (typos, with
    the closest name), and log one warning naming those ``use`` accepts without effect (a Java
    client's setting kafkawire does not have, the other side's settings): the rule of the
    option table's REFUSED_VALUES comment. Values are never logged (they may be secrets)."""
    used = {o.key for o in options_for(use)}
    given_keys = sorted(k for k in opts if k.startswith("kafka.") and k not in used)
    unknown = unknown_client_configs(k[len("kafka."):] for k in given_keys)
    if unknown:
        known = known_client_configs()
        hints = []
        for name in unknown:
            close = closest_name(name, known)
            hints.append(f"'kafka.{name}'" + ("" if close is None
                                                else f" (did you mean 'kafka.{close}'?)"))
        raise ConfigurationError.of(
            UNKNOWN_OPTION, "UNKNOWN_KAFKA_OPTIONS", hints=", ".join(hints))
    if given_keys:
        side = "read" if use & SOURCE else "write"
        _log.warning("Kafka client settings a kafkawire %s does not use, accepted without "
                     "effect (as Java's clients accept settings they do not use): %s", side,
                     ", ".join(given_keys))


def fetch_settings(opts: Mapping[str, str]) -> FetchSettings:
    """Fetch sizes, CRC checks and isolation level from lower-cased ``kafka.*`` options (a
    query's, or the CLI's --command-config)."""
    isolation = text_value(opts, "kafka.isolation.level").strip().lower()
    if isolation not in ISOLATION_LEVELS:
        raise ConfigurationError.of(UNSUPPORTED_VALUE, option=option("kafka.isolation.level").name,
                                    allowed=", ".join(ISOLATION_LEVELS), got=repr(isolation))
    return FetchSettings(
        max_partition_fetch_bytes=int_value(opts, "kafka.max.partition.fetch.bytes"),
        fetch_max_bytes=int_value(opts, "kafka.fetch.max.bytes"),
        max_wait_ms=int_value(opts, "kafka.fetch.max.wait.ms"),
        min_bytes=int_value(opts, "kafka.fetch.min.bytes"),
        isolation_level=ISOLATION_LEVELS[isolation],
        check_crcs=bool_value(opts, "kafka.check.crcs"),
        max_decompressed_bytes=optional_int(opts, "kafka.fetch.max.decompressed.bytes"),
    )
