"""``value.format`` / ``key.format`` and the Schema Registry's settings (issue 32), parsed once
where the query is defined.

The registry settings are Confluent's serializer and deserializer names, unprefixed
(``schema.registry.url``, ``basic.auth.credentials.source``, ``basic.auth.user.info``,
``bearer.auth.*``, ``schema.registry.ssl.*``, ``*.subject.name.strategy``,
``auto.register.schemas``, ``use.latest.version``), so a Confluent client's configuration reads
the same here. What a query names is not trusted (docs/security.md, "Security model"): the registry's URL
is like ``kafka.bootstrap.servers``, a place the query chooses to talk to, and only http and
https are spoken (``client/registry/schema_registry.py`` refuses any other scheme, follows no redirect
and bounds what it reads); the TLS stores named are read here, on the driver, like Kafka's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from spark_kafka_wire.client.errors import (
    CONFLICTING_OPTIONS,
    MISSING_OPTION,
    UNSUPPORTED_VALUE,
    ConfigurationError,
)
from spark_kafka_wire.client.security.sasl.oauth_config import OAuthConfig, check_url_allowed
from spark_kafka_wire.client.security.tls import TlsConfig
from spark_kafka_wire.options.security import sasl_config, tls_config
from spark_kafka_wire.options.table import (
    DECODE_MODES,
    SUBJECT_NAME_STRATEGIES,
    VALUE_FORMATS,
    Option,
    bool_default,
    option,
    text_default,
)
from spark_kafka_wire.options.values import (
    bool_value,
    given,
    lower_keys,
    optional_int,
    text_value,
)

if TYPE_CHECKING:
    from spark_kafka_wire.client.registry.schema_registry import RegistryConfig

#: The columns a format applies to, in the order their options are checked.
COLUMNS = ("value", "key")
#: ``key.format`` / ``value.format``'s value for Spark's binary column.
RAW = "raw"
#: ``mode``'s values (DECODE_MODES): fail the query, or give null and keep the bytes.
FAILFAST, PERMISSIVE = DECODE_MODES
#: The columns ``mode=PERMISSIVE`` adds: the bytes of the records a format could not decode.
CORRUPT_COLUMN = {"value": "_corrupt_value", "key": "_corrupt_key"}

# Each schema.registry.ssl.* option and the Kafka TLS option whose parsing it shares.
_REGISTRY_SSL = {
    option("schema.registry.ssl.truststore.location"): option("kafka.ssl.truststore.location"),
    option("schema.registry.ssl.truststore.type"): option("kafka.ssl.truststore.type"),
    option("schema.registry.ssl.truststore.password"): option("kafka.ssl.truststore.password"),
    option("schema.registry.ssl.keystore.location"): option("kafka.ssl.keystore.location"),
    option("schema.registry.ssl.keystore.type"): option("kafka.ssl.keystore.type"),
    option("schema.registry.ssl.keystore.password"): option("kafka.ssl.keystore.password"),
    option("schema.registry.ssl.key.password"): option("kafka.ssl.key.password"),
    option("schema.registry.ssl.endpoint.identification.algorithm"):
        option("kafka.ssl.endpoint.identification.algorithm"),
}


@dataclass(frozen=True)
class _ColumnOptions:
    """A column's own options (Confluent configures the key and the value serializer apart)."""

    format: Option
    strategy: Option
    subject: Option
    schema_id: Option
    schema_version: Option
    message: Option


_PER_COLUMN = {
    "value": _ColumnOptions(option("value.format"), option("value.subject.name.strategy"),
                            option("value.subject"), option("value.schema.id"),
                            option("value.schema.version"), option("value.protobuf.message")),
    "key": _ColumnOptions(option("key.format"), option("key.subject.name.strategy"),
                          option("key.subject"), option("key.schema.id"),
                          option("key.schema.version"), option("key.protobuf.message")),
}


@dataclass(frozen=True)
class ColumnFormat:
    """How one column (``value`` or ``key``) is read and written in a registry format."""

    column: str  # "value" or "key"
    format: str  # one of VALUE_FORMATS but raw
    strategy: str  # one of SUBJECT_NAME_STRATEGIES
    subject: str | None = None  # <column>.subject: wins over the strategy
    schema_id: int | None = None  # <column>.schema.id
    schema_version: int | None = None  # <column>.schema.version
    message: str | None = None  # <column>.protobuf.message: the message a protobuf column reads

    def subject_for(self, topic: str, record_name: str | None = None) -> str:
        """The subject of this column's schema in ``topic`` (Confluent's strategies); a record
        strategy needs the record's full name, which a reader only has once it knows the
        schema: asking without one is a configuration error naming the option to set."""
        if self.subject is not None:
            return self.subject
        if self.strategy == "TopicNameStrategy":
            return f"{topic}-{self.column}"
        if record_name is None:
            raise ConfigurationError.of(
                MISSING_OPTION, "SUBJECT_BY_RECORD_NAME", column=self.column,
                strategy=self.strategy)
        if self.strategy == "RecordNameStrategy":
            return record_name
        return f"{topic}-{record_name}"


@dataclass(frozen=True)
class FormatOptions:
    """The formats of a read or a write: None for a raw column."""

    value: ColumnFormat | None = None
    key: ColumnFormat | None = None
    registry: RegistryConfig | None = None
    mode: str = text_default("mode")
    stable_union_ids: bool = bool_default("enableStableIdentifiersForUnionType")
    recursive_field_max_depth: int = -1  # Spark's "unset": a recursive schema is refused
    protobuf_max_depth: int = -1  # recursive.fields.max.depth (from_protobuf's name)
    auto_register: bool = bool_default("auto.register.schemas")
    use_latest_version: bool = bool_default("use.latest.version")

    @property
    def columns(self) -> tuple[ColumnFormat, ...]:
        return tuple(c for c in (self.value, self.key) if c is not None)


def _strategy(opts: Mapping[str, str], name: Option) -> str:
    value = text_value(opts, name).strip()
    simple = value.rsplit(".", 1)[-1]
    if simple not in SUBJECT_NAME_STRATEGIES:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "SUBJECT_NAME_STRATEGY", name=name.name,
            subject_name_strategies=', '.join(SUBJECT_NAME_STRATEGIES), value=value)
    return simple


def _column(opts: Mapping[str, str], column: str) -> ColumnFormat | None:
    names = _PER_COLUMN[column]
    fmt = text_value(opts, names.format).strip().lower()
    if fmt not in VALUE_FORMATS:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "COLUMN_FORMAT", name=names.format.name,
            value_formats=', '.join(VALUE_FORMATS), fmt=fmt)
    schema_id = optional_int(opts, names.schema_id)
    schema_version = optional_int(opts, names.schema_version)
    subject = given(opts, names.subject)
    if fmt == RAW:
        return None
    if schema_id is not None and schema_version is not None:
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, subject=f"the {column} column's schema",
            options=f"{names.schema_id.name}, {names.schema_version.name}")
    message = (given(opts, names.message) or "").strip() or None
    return ColumnFormat(column, fmt, _strategy(opts, names.strategy),
                        subject.strip() if subject and subject.strip() else None,
                        schema_id, schema_version, message)


def _registry_tls(opts: Mapping[str, str], url: str) -> TlsConfig | None:
    """The registry's TLS settings, parsed by the Kafka TLS parser under their own names (so
    stores, passwords and hostname checks mean the same); None for an http registry with
    none of them set."""
    ours = {kafka.key: value for mine, kafka in _REGISTRY_SSL.items()
            if (value := given(opts, mine)) is not None}
    if not ours and not url.lower().startswith("https:"):
        return None
    try:
        return tls_config(ours)
    except ConfigurationError as exc:
        # the Kafka parser names its own options: say which of ours it was
        raise exc.renamed({kafka.name: mine.name for mine, kafka in _REGISTRY_SSL.items()}
                          ) from None


def _basic_user_info(opts: Mapping[str, str]) -> str | None:
    """Confluent's ``basic.auth.credentials.source`` rule: URL (the URLs' user info, taken by
    the registry client itself), USER_INFO, or SASL_INHERIT (the Kafka login's PLAIN or SCRAM
    user and password)."""
    source_opt = option("basic.auth.credentials.source")
    info = given(opts, option("basic.auth.user.info"))
    explicit = given(opts, source_opt)
    source = (explicit or ("USER_INFO" if info else text_value(opts, source_opt))).strip().upper()
    if source == "URL":
        return None
    if source == "USER_INFO":
        if not info or ":" not in info:
            raise ConfigurationError.of(MISSING_OPTION, "BASIC_AUTH_USER_INFO")
        return info
    if source == "SASL_INHERIT":
        # the mechanism alone decides, before the login is parsed: GSSAPI's (the default)
        # would first ask for the Kerberos extra, which has nothing to do with the conflict
        mechanism = text_value(opts, option("kafka.sasl.mechanism")).strip().upper()
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "SASL_INHERIT_MECHANISM", mechanism=mechanism)
        sasl = sasl_config(opts)
        return f"{sasl.username}:{sasl.password}"
    raise ConfigurationError.of(UNSUPPORTED_VALUE, "BASIC_AUTH_SOURCE", source=source)


def _oauth(opts: Mapping[str, str], source: str) -> OAuthConfig:
    """The OAuth token source of ``OAUTHBEARER`` (the client-credentials grant at
    ``bearer.auth.issuer.endpoint.url``, allowed by the operator like Kafka's token
    endpoints) or ``SASL_OAUTHBEARER_INHERIT`` (the Kafka login's own)."""
    if source == "SASL_OAUTHBEARER_INHERIT":
        sasl = sasl_config(opts)
        if sasl.oauth is None:
            raise ConfigurationError.of(
                CONFLICTING_OPTIONS, "OAUTHBEARER_INHERIT_MECHANISM", mechanism=sasl.mechanism)
        return sasl.oauth
    url_opt = option("bearer.auth.issuer.endpoint.url")
    url, client_id = given(opts, url_opt), given(opts, option("bearer.auth.client.id"))
    secret = given(opts, option("bearer.auth.client.secret"))
    for name, value in ((url_opt, url), (option("bearer.auth.client.id"), client_id),
                        (option("bearer.auth.client.secret"), secret)):
        if not value or not value.strip():
            raise ConfigurationError.of(
                MISSING_OPTION, "BEARER_AUTH_OAUTH", name=name.name)
    assert url is not None and client_id is not None and secret is not None
    check_url_allowed(url.strip(), url_opt.name)
    return OAuthConfig(source="oidc", principal=client_id.strip(), endpoint_url=url.strip(),
                       client_id=client_id.strip(), client_secret=secret,
                       scope=(given(opts, option("bearer.auth.scope")) or "").strip())


def _bearer(opts: Mapping[str, str]
            ) -> tuple[str | None, OAuthConfig | None, tuple[tuple[str, str], ...]]:
    """The registry's bearer credentials: a static token, or an OAuth token source; and the
    Confluent Cloud headers that go with either."""
    given_source = given(opts, option("bearer.auth.credentials.source"))
    token = given(opts, option("bearer.auth.token"))
    if given_source is None and token is None:
        return None, None, ()
    source = (given_source or "STATIC_TOKEN").strip().upper()
    headers = []
    for name, header in ((option("bearer.auth.logical.cluster"), "target-sr-cluster"),
                         (option("bearer.auth.identity.pool.id"), "Confluent-Identity-Pool-Id")):
        value = given(opts, name)
        if value is not None and value.strip():
            headers.append((header, value.strip()))
    if source in ("OAUTHBEARER", "SASL_OAUTHBEARER_INHERIT"):
        return None, _oauth(opts, source), tuple(headers)
    if source != "STATIC_TOKEN":
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "BEARER_AUTH_SOURCE", given_source=given_source)
    if not token or not token.strip():
        raise ConfigurationError.of(MISSING_OPTION, "BEARER_AUTH_TOKEN")
    return token.strip(), None, tuple(headers)


def registry_config(opts: Mapping[str, str]) -> RegistryConfig:
    """The registry client's settings; MISSING_OPTION without ``schema.registry.url``."""
    opts = lower_keys(opts)
    url = given(opts, option("schema.registry.url"))
    urls = tuple(u.strip() for u in (url or "").split(",") if u.strip())
    if not urls:
        raise ConfigurationError.of(MISSING_OPTION, "SCHEMA_REGISTRY_URL")
    user_info = _basic_user_info(opts)
    token, oauth, headers = _bearer(opts)
    if user_info is not None and (token is not None or oauth is not None):
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, subject="the registry's credentials",
            options="basic.auth.user.info / basic.auth.credentials.source, bearer.auth.token")
    # the registry client, imported where a registry is configured (a worker unpickling a
    # format-less query's options never imports it: docs/benchmarks.md)
    from spark_kafka_wire.client.registry.schema_registry import (  # noqa: PLC0415
        RegistryConfig,
    )

    return RegistryConfig(urls=urls, user_info=user_info, bearer_token=token,
                          bearer_headers=headers, oauth=oauth, tls=_registry_tls(opts, urls[0]))


def format_options(opts: Mapping[str, str]) -> FormatOptions:
    """The formats of a read or a write; a query with both columns raw
    gets ``FormatOptions()`` and needs no registry."""
    opts = lower_keys(opts)
    value, key = (_column(opts, c) for c in COLUMNS)
    mode = text_value(opts, option("mode")).strip().upper()
    if mode not in DECODE_MODES:
        raise ConfigurationError.of(
            UNSUPPORTED_VALUE, "DECODE_MODE", decode_modes=' or '.join(DECODE_MODES), mode=mode)
    depth = optional_int(opts, option("recursiveFieldMaxDepth"))
    pb_depth = optional_int(opts, option("recursive.fields.max.depth"))
    settings = FormatOptions(
        value=value, key=key, mode=mode,
        stable_union_ids=bool_value(opts, option("enableStableIdentifiersForUnionType")),
        recursive_field_max_depth=-1 if depth is None else depth,
        protobuf_max_depth=-1 if pb_depth is None else pb_depth,
        auto_register=bool_value(opts, option("auto.register.schemas")),
        use_latest_version=bool_value(opts, option("use.latest.version")))
    if value is None and key is None:
        return settings
    return FormatOptions(**{**settings.__dict__, "registry": registry_config(opts)})
