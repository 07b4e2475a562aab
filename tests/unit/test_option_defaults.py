"""Every default is the option table's: the settings the source and the sink build take theirs
from spark_kafka_wire.options.table, and the client layer's settings from client/defaults.py,
which the table's rows read, so the option reference (rendered from the table) says what the
code does, and a default changed there changes everywhere.

Three checks: options parsed from nothing equal the settings' own defaults; each field fed by
an option has that option's default (FED, below, says which field each option feeds, and
every option with a default is either there or listed in PARSED_ONLY with the reason); and no
field of these settings carries a literal default of its own (only None, empty values and the
sentinels in SENTINELS)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.fetching.fetch_settings import (
    FetchSettings,
    FetchSettings07,
    fetch_settings07,
)
from spark_kafka_wire.client.fetching.offsets import ISOLATION_LEVELS
from spark_kafka_wire.client.producer import ProduceSettings
from spark_kafka_wire.client.producer.settings import parse_acks
from spark_kafka_wire.client.security.sasl.kerberos import DEFAULT_SERVICE_NAME, KerberosConfig
from spark_kafka_wire.client.security.sasl.oauth_config import (
    HttpSettings,
    OAuthConfig,
    RefreshSettings,
)
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.options import (
    OPTIONS,
    SOURCE,
    client_config,
    fetch_settings,
    lower_keys,
    option,
)
from spark_kafka_wire.options.formats import ColumnFormat, FormatOptions
from spark_kafka_wire.options.produce import SinkOptions, TopicCreation, parse_sink_options
from spark_kafka_wire.protocol.compression import CODEC_NAMES
from spark_kafka_wire.source.options import (
    SourceOptions,
    StreamOptions,
    parse_source_options,
    parse_stream_options,
)
from spark_kafka_wire.source.rate_limits import parse_duration_ms

SOURCE_BASE = {"kafka.bootstrap.servers": "h:9092", "subscribe": "t"}
SINK_BASE = {"kafka.bootstrap.servers": "h:9092"}


def _same(value: Any) -> Any:
    return value


def _https(value: Any) -> Any:
    return value == "https"


# option -> the (settings class, field, the option's default as that field holds it) it feeds
FED: dict[str, list[tuple[type, str, Callable[[Any], Any]]]] = {
    "kafka.client.id": [(ClientConfig, "client_id", _same)],
    "kafka.request.timeout.ms": [(ClientConfig, "request_timeout_ms", _same),
                                 (ProduceSettings, "timeout_ms", _same)],
    "kafka.socket.connection.setup.timeout.ms": [(ClientConfig, "connect_timeout_ms", _same)],
    "kafka.retry.backoff.ms": [(ClientConfig, "retry_backoff_ms", _same),
                               (ProduceSettings, "retry_backoff_ms", _same)],
    "kafka.retry.backoff.max.ms": [(ClientConfig, "retry_backoff_max_ms", _same),
                                   (ProduceSettings, "retry_backoff_max_ms", _same)],
    "kafka.metadata.max.age.ms": [(ClientConfig, "metadata_max_age_ms", _same)],
    "kafka.api.version.request": [(ClientConfig, "api_version_request", _same)],
    "kafka.broker.version.fallback": [(ClientConfig, "broker_version_fallback", _same)],
    "kafka.security.protocol": [(ClientConfig, "security_protocol", _same)],
    "kafka.ssl.endpoint.identification.algorithm": [(TlsConfig, "check_hostname", _https)],
    "zookeeper.ssl.endpoint.identification.enable": [(TlsConfig, "check_hostname", _same)],
    "kafka.sasl.oauthbearer.sub.claim.name": [(OAuthConfig, "sub_claim", _same)],
    "kafka.sasl.oauthbearer.scope.claim.name": [(OAuthConfig, "scope_claim", _same)],
    "kafka.sasl.oauthbearer.header.urlencode": [(HttpSettings, "urlencode_header", _same)],
    "kafka.sasl.login.connect.timeout.ms": [(HttpSettings, "connect_timeout_ms", _same)],
    "kafka.sasl.login.read.timeout.ms": [(HttpSettings, "read_timeout_ms", _same)],
    "kafka.sasl.login.retry.backoff.ms": [(HttpSettings, "retry_backoff_ms", _same)],
    "kafka.sasl.login.retry.backoff.max.ms": [(HttpSettings, "retry_backoff_max_ms", _same)],
    "kafka.sasl.login.refresh.window.factor": [(RefreshSettings, "window_factor", float)],
    "kafka.sasl.login.refresh.window.jitter": [(RefreshSettings, "window_jitter", float)],
    "kafka.sasl.login.refresh.min.period.seconds": [(RefreshSettings, "min_period_s", _same)],
    "kafka.sasl.login.refresh.buffer.seconds": [(RefreshSettings, "buffer_s", _same)],
    "kafka.sasl.kerberos.service.name": [(KerberosConfig, "service_name", _same)],
    "failOnDataLoss": [(SourceOptions, "fail_on_data_loss", _same)],
    "includeHeaders": [(SourceOptions, "include_headers", _same)],
    "groupIdPrefix": [(SourceOptions, "group_id_prefix", _same)],
    "fetchOffset.numRetries": [(SourceOptions, "offset_fetch_attempts", _same)],
    "fetchOffset.retryIntervalMs": [(SourceOptions, "offset_fetch_interval_ms", _same)],
    "kafka.isolation.level": [(FetchSettings, "isolation_level", ISOLATION_LEVELS.__getitem__)],
    "kafka.max.partition.fetch.bytes": [(FetchSettings, "max_partition_fetch_bytes", _same),
                                        (FetchSettings07, "fetch_size", _same)],
    "kafka.fetch.max.bytes": [(FetchSettings, "fetch_max_bytes", _same),
                              (FetchSettings07, "max_fetch_size", _same)],
    "kafka.fetch.max.wait.ms": [(FetchSettings, "max_wait_ms", _same)],
    "kafka.fetch.min.bytes": [(FetchSettings, "min_bytes", _same)],
    "kafka.check.crcs": [(FetchSettings, "check_crcs", _same),
                         (FetchSettings07, "check_crcs", _same)],
    "maxTriggerDelay": [(StreamOptions, "max_trigger_delay_ms",
                         lambda v: parse_duration_ms(v, "maxTriggerDelay"))],
    "commitOffsets": [(StreamOptions, "commit_offsets", _same)],
    "kafka.acks": [(ProduceSettings, "acks", parse_acks)],
    "kafka.partitioner": [(SinkOptions, "partitioner", _same)],
    "kafka.compression.type": [(ProduceSettings, "compression", CODEC_NAMES.__getitem__)],
    "kafka.batch.size": [(ProduceSettings, "batch_size", _same)],
    "kafka.linger.ms": [(ProduceSettings, "linger_ms", _same)],
    "kafka.buffer.memory": [(ProduceSettings, "buffer_memory", _same)],
    "kafka.max.in.flight.requests.per.connection": [(ProduceSettings, "max_in_flight", _same)],
    "kafka.max.request.size": [(ProduceSettings, "max_request_size", _same)],
    "kafka.retries": [(ProduceSettings, "retries", _same)],
    "kafka.delivery.timeout.ms": [(ProduceSettings, "delivery_timeout_ms", _same)],
    "kafka.transaction.timeout.ms": [(ProduceSettings, "transaction_timeout_ms", _same)],
    "createTopic": [(TopicCreation, "explicit", _same)],
    "kafka.allow.auto.create.topics": [(TopicCreation, "auto", _same)],
    "mode": [(FormatOptions, "mode", _same)],
    "enableStableIdentifiersForUnionType": [(FormatOptions, "stable_union_ids", _same)],
    "auto.register.schemas": [(FormatOptions, "auto_register", _same)],
    "use.latest.version": [(FormatOptions, "use_latest_version", _same)],
}

# Options whose default is applied while parsing and held in no settings field's default.
PARSED_ONLY = {
    "zookeeper.ssl.client.enable": "decides whether ZooKeeper TLS settings are read at all",
    "kafka.sasl.mechanism": "decides which SASL settings are built",
    "startingOffsets": "parsed into a Limit (source/limits.py)",
    "endingOffsets": "parsed into a Limit (source/limits.py)",
    "startingOffsetsByTimestampStrategy": "parsed into the starting Limit",
    "maxRecordsPerBatch": "a required field of SourceOptions",
    "kafka.default.api.timeout.ms": "checked, has no effect",
    "kafka.enable.idempotence": "ProduceSettings holds None for 'defaulted' (Java's rules)",
    "kafka.compression.gzip.level": "ProduceSettings.compression_level holds the level of the "
                                    "codec in use; -1 is None, zlib's default",
    "value.format": "raw: FormatOptions.value is None",
    "key.format": "raw: FormatOptions.key is None",
    "value.subject.name.strategy": "a required field of ColumnFormat",
    "key.subject.name.strategy": "a required field of ColumnFormat",
    "basic.auth.credentials.source": "decides where RegistryConfig.user_info comes from",
    "schema.registry.ssl.endpoint.identification.algorithm":
        "parsed by the TLS parser as kafka.ssl.endpoint.identification.algorithm",
    "kafka.compression.zstd.level": "ProduceSettings.compression_level holds the level of the "
                                    "codec in use; the default is the codec's own "
                                    "(protocol/limits.py ZSTD_DEFAULT_LEVEL)",
}

# The settings built from options: none of their fields may default to a literal of its own.
SETTINGS = (ClientConfig, FetchSettings, FetchSettings07, ProduceSettings, SourceOptions,
            StreamOptions, SinkOptions, TopicCreation, RefreshSettings, HttpSettings,
            OAuthConfig, KerberosConfig, TlsConfig, FormatOptions, ColumnFormat)
# Literal defaults that are no option's default: "unset" values and the broker's own default.
SENTINELS = {
    (TopicCreation, "partitions"): "-1: the broker's default (CreateTopics)",
    (TopicCreation, "replication_factor"): "-1: the broker's default (CreateTopics)",
    (OAuthConfig, "lifetime_s"): "unsecuredLoginLifetimeSeconds, a JAAS option (Java's 3600)",
    (OAuthConfig, "principal_claim"): "unsecuredLoginPrincipalClaimName, a JAAS option",
    (OAuthConfig, "claims_json"): "unsecured tokens' claims, from JAAS options",
    (FormatOptions, "recursive_field_max_depth"): "-1: recursiveFieldMaxDepth unset (Spark's "
                                                  "value), a recursive schema is refused",
    (FormatOptions, "protobuf_max_depth"): "-1: recursive.fields.max.depth unset (Spark's "
                                           "from_protobuf value), recursion is refused",
}


def _default(cls: type, name: str) -> Any:
    found = {f.name: f for f in dataclasses.fields(cls)}[name]
    assert found.default is not dataclasses.MISSING, f"{cls.__name__}.{name} has no default"
    return found.default


def test_every_option_with_a_default_is_accounted_for() -> None:
    with_default = {o.name for o in OPTIONS if o.default is not None}
    assert with_default - set(FED) - set(PARSED_ONLY) == set()
    assert set(FED) | set(PARSED_ONLY) <= with_default  # no stale entry


@pytest.mark.parametrize("name", sorted(FED))
def test_each_field_defaults_to_its_options_default(name: str) -> None:
    for cls, field_name, held in FED[name]:
        assert _default(cls, field_name) == held(option(name).default), (
            f"{cls.__name__}.{field_name} does not default to {name}'s table default")


def test_kerberos_service_name() -> None:
    assert DEFAULT_SERVICE_NAME == option("kafka.sasl.kerberos.service.name").default


def _literal(node: ast.expr) -> bool:
    """A default written as a constant (``3``, ``"none"``, ``1 << 20``, ``-1``), not None."""
    if isinstance(node, ast.Constant):
        return node.value is not None and node.value not in ("", ())
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, ast.BinOp):
        return isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        return any(k.arg == "default" and _literal(k.value) for k in node.keywords)
    return False


@pytest.mark.parametrize("cls", SETTINGS, ids=lambda c: c.__name__)
def test_no_settings_field_has_a_literal_default_of_its_own(cls: type) -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0]
    assert isinstance(body, ast.ClassDef)
    own = [node.target.id for node in body.body
           if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
           and node.value is not None and _literal(node.value)
           and (cls, node.target.id) not in SENTINELS]
    assert own == [], f"{cls.__name__}: take these defaults from the option table: {own}"


# ------------------------------------------------------------- parsed from nothing: the same


def test_client_config_from_no_options_is_the_default_client_config() -> None:
    parsed = client_config(lower_keys(SINK_BASE), SOURCE)
    assert parsed == ClientConfig(bootstrap_servers=(("h", 9092),))


def test_fetch_settings_from_no_options_are_the_defaults() -> None:
    assert fetch_settings({}) == FetchSettings()
    assert fetch_settings07(fetch_settings({})) == FetchSettings07()


def _defaulted_fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING]


def test_source_options_from_no_options_hold_the_defaults() -> None:
    parsed = parse_source_options(SOURCE_BASE)
    assert parsed.fetch == FetchSettings()
    assert parsed.client == ClientConfig(bootstrap_servers=(("h", 9092),))
    # the planner's client is the task client unless fetchOffset.* are given
    assert parsed.planner_client == parsed.client
    for name in set(_defaulted_fields(SourceOptions)) - {"planner_client"}:
        assert getattr(parsed, name) == _default(SourceOptions, name), name


def test_stream_options_from_no_options_hold_the_defaults() -> None:
    parsed = parse_stream_options(SOURCE_BASE)
    for name in _defaulted_fields(StreamOptions):
        assert getattr(parsed, name) == _default(StreamOptions, name), name


def test_sink_options_from_no_options_hold_the_defaults() -> None:
    parsed = parse_sink_options(SINK_BASE)
    assert parsed.produce == ProduceSettings()
    assert parsed.client == ClientConfig(bootstrap_servers=(("h", 9092),))
    for name in _defaulted_fields(SinkOptions):
        assert getattr(parsed, name) == _default(SinkOptions, name), name
