"""The global options of every command, turned into client settings the way a query's are.

``--bootstrap-server`` and ``--command-config`` become the same ``kafka.*`` options a Spark query
would be given (``kafka.bootstrap.servers`` and the keys of a ``kafkaConfigFile``), and
``options.client_config`` parses them: TLS, SASL, timeouts and version pinning therefore work,
and fail, exactly as in queries, and a setting kafkawire cannot honour is refused instead of
connecting with less security. Explicit options win over the file, as they do for
``kafkaConfigFile``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_kafka_wire.cli.commands import BOOTSTRAP_ENV
from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import KAFKA07_UNSUPPORTED, MISSING_OPTION, ConfigurationError
from spark_kafka_wire.client.fetching.fetch_settings import FetchSettings
from spark_kafka_wire.client.metadata.cluster import KafkaClient
from spark_kafka_wire.client.metadata.cluster_adapters import open_cluster
from spark_kafka_wire.client.metadata.cluster_api import Cluster
from spark_kafka_wire.client.zookeeper.security import ZooKeeperSecurity
from spark_kafka_wire.options import (
    SINK,
    SOURCE,
    Use,
    client_config,
    config_file_options,
    fetch_settings,
    lower_keys,
    option,
    unknown_client_configs,
    zookeeper_security,
)

if TYPE_CHECKING:
    # the producer (numpy, pyarrow, the codecs) loads only for produce (sink_options)
    from spark_kafka_wire.options.produce import SinkOptions

log = logging.getLogger(__name__)

ZOOKEEPER_KEY = option("zookeeper.connect").key


@dataclass(frozen=True)
class GlobalOptions:
    """What the options before the command name say (``kafkawire --bootstrap-server ...``)."""

    bootstrap_server: str | None = None
    command_config: str | None = None
    debug: bool = False
    zookeeper: str | None = None  # --zookeeper: zookeeper.connect, as a query's option

    def kafka_options(self, use: Use, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The lower-cased ``kafka.*`` options of a read (``use`` SOURCE) or a write (SINK):
        ``extra`` and the bootstrap server (and ZooKeeper) first, then the config file's keys
        for ``use``."""
        opts = lower_keys(extra or {})
        if self.bootstrap_server:
            opts["kafka.bootstrap.servers"] = self.bootstrap_server
        if self.zookeeper:
            opts[ZOOKEEPER_KEY] = self.zookeeper
        if self.command_config:
            taken, skipped = config_file_options(self.command_config, opts, use)
            unknown = unknown_client_configs(skipped)
            for name in unknown:
                # what Java clients say of a key no client knows: most often a typo
                log.warning("--command-config %s: the configuration '%s' was supplied but "
                            "isn't a known Kafka client config; it is ignored",
                            self.command_config, name)
            unused = sorted(set(skipped) - set(unknown))
            if unused:
                # A client.properties is shared with producers and consumers: keys of other
                # clients are neither an error nor worth a warning on every command.
                log.info("--command-config %s: skipped keys this command does not use: %s",
                         self.command_config, ", ".join(unused))
            opts = {**taken, **opts}
        if not (opts.get("kafka.bootstrap.servers") or "").strip() and \
                not (opts.get(ZOOKEEPER_KEY) or "").strip():
            raise ConfigurationError.of(
                MISSING_OPTION, "CLI_NO_BROKER", bootstrap_env=BOOTSTRAP_ENV)
        return opts

    def client_config(self, use: Use = SOURCE, extra: dict[str, str] | None = None
                      ) -> ClientConfig:
        """The connection settings, parsed as a query's: with zookeeper.connect and no
        bootstrap server, the brokers registered in ZooKeeper (a Kafka 0.7 cluster's give a
        config whose ``registry_only`` is true)."""
        return client_config(self.kafka_options(use, extra), use)

    def zookeeper_security(self, extra: dict[str, str] | None = None
                           ) -> ZooKeeperSecurity | None:
        """``zookeeper.ssl.*`` and ``zookeeper.sasl.jaas.config`` (from --command-config, as
        Kafka's tools take them from ``--zk-tls-config-file``), parsed as a query's."""
        return zookeeper_security(self.kafka_options(SOURCE, extra))

    def fetch_settings(self, options: dict[str, str] | None = None) -> FetchSettings:
        """Fetch sizes and isolation level from the config file's consumer keys, parsed as a
        query's ``kafka.fetch.*`` / ``kafka.isolation.level`` options are; ``options`` (a
        command's own) win."""
        return fetch_settings(self.kafka_options(SOURCE, options))

    def sink_options(self, topic: str, compression: str | None = None,
                     options: dict[str, str] | None = None) -> SinkOptions:
        """A write's settings exactly as the sink parses them (acks, idempotence, batching
        from the config file), with ``--compression`` winning over compression.type and
        ``options`` (a command's own, as a query gives them) over the file."""
        extra = {"topic": topic, **(options or {})}
        if compression is not None:
            extra["kafka.compression.type"] = compression
        from spark_kafka_wire.options.produce import parse_sink_options  # noqa: PLC0415

        return parse_sink_options(self.kafka_options(SINK, extra))


@contextmanager
def connected_any(config: ClientConfig) -> Iterator[Cluster]:
    """A 0.8+ cluster through a client as :func:`connected` gives it, or a Kafka 0.7 cluster
    (found through ZooKeeper) through its view from ZooKeeper, both behind the one interface
    (``client/metadata/cluster_api.py``), for the commands that speak both: ``open_cluster`` reaches
    it as :func:`connected` does."""
    cluster = open_cluster(config)
    try:
        yield cluster
    finally:
        cluster.close()


@contextmanager
def connected(config: ClientConfig, command: str = "this command") -> Iterator[KafkaClient]:
    """A client that has already reached one bootstrap server.

    The first connection is made before the command starts, without the retry rule: a CLI
    asked about an unreachable cluster should say so at once, not after the backoff that
    helps a long-running query over a leader change. Later requests retry as usual. A Kafka
    0.7 cluster is refused here, naming ``command``: only the commands that use
    :func:`connected_any` speak 0.7's protocol.
    """
    if config.registry_only:
        raise ConfigurationError.of(
            KAFKA07_UNSUPPORTED, "CLI_COMMAND", command=command,
            zookeeper_connect=config.zookeeper_connect)
    client = KafkaClient(config)
    try:
        client.any_connection()
        yield client
    finally:
        client.close()


def env_bootstrap() -> str | None:
    return os.environ.get(BOOTSTRAP_ENV) or None
