"""The option table (spark_kafka_wire.options.OPTIONS, in options/table.py): every option the parsers read is in
it, every entry in it is read or handled and documented, the table is consistent with itself,
and the option reference page (docs/reference/options.md) is exactly what it generates."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest

import spark_kafka_wire
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.producer.partitioner import PARTITIONERS
from spark_kafka_wire.options import (
    NOWHERE,
    OPTIONS,
    SINK,
    SOURCE,
    Kind,
    Option,
    Use,
    option,
    options_for,
)
from spark_kafka_wire.options import reference as option_tables
from spark_kafka_wire.options.java_client_configs import JAVA_CLIENT_CONFIGS
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.options.table import REFUSED_VALUES
from spark_kafka_wire.protocol.compression import CODEC_NAMES
from spark_kafka_wire.source.options import parse_source_options, parse_stream_options
from tests.support.docs_pages import page
from tests.support.errors import raises_condition

PACKAGE = Path(spark_kafka_wire.__file__).parent
#: the generated option reference, where the README's option tables moved
REFERENCE = page("reference/options.md")
# The modules that parse options; other modules may use the same words for other things
# (the writer's `topic` column).
# The table's rows (options/rows/) are checked too: their entries (``Option(...)``) are left out,
# so only what else they spell is.
PARSERS = ("options/table.py", "options/values.py", "options/files.py", "options/client.py",
           "options/security.py", "options/oauth.py", "source/options.py", "source/strategy.py",
           "source/limits.py", "options/produce.py", "options/formats.py",
           *(f"options/rows/{area}.py" for area in ("kinds", "connection", "security", "reads",
                                                     "writes", "formats", "refused")))
# Functions whose argument names an option of the table (options/table.py, options/values.py).
ACCESSORS = {"option": 0, "given": 1, "text_value": 1, "int_value": 1, "optional_int": 1,
             "bool_value": 1, "wire_text": 1, "text_default": 0, "int_default": 0,
             "bool_default": 0}
NAMES = {o.name for o in OPTIONS}
KEYS = {o.key: o.name for o in OPTIONS}
SOURCE_BASE = {"kafka.bootstrap.servers": "h:9092", "subscribe": "a"}
SINK_BASE = {"kafka.bootstrap.servers": "h:9092"}


def _parser_strings() -> list[tuple[str, int, str, bool]]:
    """(module, line, string, is an accessor's option argument) for every string constant of
    the parsing modules, leaving out the table's own entries (``Option(...)``)."""
    found = []
    for module in PARSERS:
        tree = ast.parse((PACKAGE / module).read_text())
        looked_up: set[int] = set()
        skipped: set[int] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id == "Option":
                skipped.update(id(n) for n in ast.walk(node))
            position = ACCESSORS.get(node.func.id)
            if position is not None and len(node.args) > position:
                looked_up.add(id(node.args[position]))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in skipped):
                found.append((module, node.lineno, node.value, id(node) in looked_up))
    return found


def test_names_are_unique_whatever_their_case() -> None:
    assert len(KEYS) == len(OPTIONS)


def test_lookup_refuses_names_not_in_the_table() -> None:
    assert option("startingOffsets").key == "startingoffsets"
    with pytest.raises(KeyError, match="'startingOffset' is not in"):
        option("startingOffset")
    with pytest.raises(KeyError, match="spelled 'startingOffsets'"):
        option("startingoffsets")


def test_the_parsers_name_options_only_through_the_table() -> None:
    """An option name written in a parser is an accessor's argument, and in the table; no
    parser matches keys by a literal of its own (``opts.get("minpartitions")``)."""
    strays, unknown = [], []
    for module, line, text, looked_up in _parser_strings():
        if looked_up:
            if text not in NAMES:
                unknown.append(f"{module}:{line}: {text!r}")
        elif text in NAMES or text in KEYS:
            strays.append(f"{module}:{line}: {text!r}")
    assert not unknown, "looked up but not in OPTIONS: " + ", ".join(unknown)
    assert not strays, "option names spelled outside option()/..._value(): " + ", ".join(strays)


def test_every_setting_in_the_table_is_read_by_a_parser() -> None:
    read = {text for _, _, text, looked_up in _parser_strings() if looked_up}
    settings = {o.name for o in OPTIONS if o.refused is None and o.uses != NOWHERE}
    assert settings - read == set()


@pytest.mark.parametrize("o", OPTIONS, ids=lambda o: o.name)
def test_entries_are_consistent(o: Option) -> None:
    default_types = {Kind.TEXT: str, Kind.BOOL: bool, Kind.INT: int, Kind.BYTES: int}
    if o.default is not None:
        assert o.kind in default_types and type(o.default) is default_types[o.kind]
    if o.kind not in (Kind.INT, Kind.BYTES):
        assert o.minimum == 0
    if o.stream_default is not None or o.stream_doc is not None:
        assert Use.STREAM_READ in o.uses
    if o.refused is not None:
        assert o.uses != NOWHERE and o.default is None and not o.doc and o.refused
    elif o.uses != NOWHERE:
        assert o.doc, "every option read somewhere is documented"
    else:
        assert o.ignored_in != NOWHERE, "an entry nothing reads must at least be accepted"
    for text in (o.doc, o.stream_doc or "", o.refused or ""):
        assert "|" not in text and "\n" not in text  # one Markdown table cell


def test_batch_and_stream_parsers_accept_the_same_kafka_keys() -> None:
    """The source's parser serves batch and stream reads, the sink's batch and stream writes,
    so a kafka.* key cannot be accepted by one of a pair and not the other."""
    for o in OPTIONS:
        if o.key.startswith("kafka."):
            accepted = o.uses | o.ignored_in
            for pair in (SOURCE, SINK):
                assert accepted & pair in (NOWHERE, pair), o.name


@pytest.mark.parametrize("o", [o for o in OPTIONS if o.refused], ids=lambda o: o.name)
def test_refused_options_fail_with_their_reason(o: Option) -> None:
    message = f"Kafka option '{o.name}' is not supported: {o.refused}"
    for side, parse, base in ((SOURCE, parse_source_options, SOURCE_BASE),
                              (SINK, parse_sink_options, SINK_BASE)):
        if o.uses & side:
            with raises_condition(ConfigurationError,
                                  "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION") as info:
                parse({**base, o.name: "x"})
            assert str(info.value) == f"[KAFKAWIRE_CONFIGURATION.REFUSED_OPTION] {message}"


@pytest.mark.parametrize("o", [o for o in OPTIONS if o.ignored_in], ids=lambda o: o.name)
def test_ignored_options_are_accepted_with_any_value(o: Option) -> None:
    """Any value; an option read nowhere but typed (kafkaConsumer.pollTimeoutMs: Spark
    refuses what is not a long) any value of its kind, the others refused."""
    # kafka.sasl.* keys (Kerberos re-login settings) are refused without a SASL protocol
    sasl = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.username": "u", "kafka.sasl.password": "p"} \
        if o.name.startswith("kafka.sasl.") else {}
    checked = o.kind is not Kind.TEXT and not o.uses
    value = "1" if checked else "anything"
    for use, parse, base in ((Use.READ, parse_source_options, SOURCE_BASE),
                             (Use.STREAM_READ, parse_stream_options, SOURCE_BASE),
                             (SINK, parse_sink_options, SINK_BASE)):
        if o.ignored_in & use:
            parse({**base, **sasl, o.name: value})
            if checked:
                with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                                      o.name):
                    parse({**base, **sasl, o.name: "anything"})


def test_the_other_sides_settings_are_accepted_with_a_warning(caplog) -> None:
    """One options dict shared by a read and a write: each side accepts the other's settings
    without effect and names them (never their values) in one warning."""
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.options.client"):
        sink = parse_sink_options({**SINK_BASE, "kafka.fetch.max.bytes": "1",
                                   "kafka.isolation.level": "read_committed"})
    assert sink.client.bootstrap_servers  # parsed
    [warning] = [r.getMessage() for r in caplog.records]
    assert "kafka.fetch.max.bytes, kafka.isolation.level" in warning and "write" in warning
    assert "read_committed" not in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.options.client"):
        parse_source_options({**SOURCE_BASE, "kafka.acks": "1"})
    [warning] = [r.getMessage() for r in caplog.records]
    assert "kafka.acks" in warning and "read does not use" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.options.client"):
        parse_source_options(SOURCE_BASE)  # nothing unused: no warning
    assert not caplog.records


def test_names_no_kafka_client_has_are_refused_with_the_closest_name() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION",
                          r"'kafka\.fetch\.max\.byte' \(did you mean 'kafka\.fetch\.max\.bytes'\?\)"):
        parse_sink_options({**SINK_BASE, "kafka.fetch.max.byte": "1"})
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION",
                          "'kafka.frobnicate': no Kafka client has such a setting"):
        parse_source_options({**SOURCE_BASE, "kafka.frobnicate": "1"})


# The Java client settings each side refuses although it does not use them (with a SASL_SSL
# connection, so that security keys are judged for themselves): their loss would change the
# data or its security. Every other Java setting a side does not use is accepted.
_SECURITY_NOT_IMPLEMENTED = {
    "ssl.engine.factory.class", "ssl.keymanager.algorithm", "ssl.provider",
    "ssl.secure.random.implementation", "ssl.trustmanager.algorithm",
    "sasl.client.callback.handler.class", "sasl.login.class",
    "sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "sasl.oauthbearer.jwks.endpoint.url",
}
REFUSED_UNUSED = {
    "read": {"auto.offset.reset", "enable.auto.commit", "key.deserializer", "value.deserializer",
             "interceptor.classes", "security.providers"} | _SECURITY_NOT_IMPLEMENTED,
    "write": {"key.serializer", "value.serializer", "partitioner.class", "interceptor.classes",
              "security.providers"} | _SECURITY_NOT_IMPLEMENTED,
}
_SASL_SSL = {"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN",
             "kafka.sasl.username": "u", "kafka.sasl.password": "p"}


# each side with the Java settings it does not use (those it uses have their values checked
# by their own tests); config.providers declares placeholder providers (test_config_files)
_UNUSED = [(side, name) for side, use in (("read", SOURCE), ("write", SINK))
           for name in sorted(JAVA_CLIENT_CONFIGS - {"config.providers"})
           if f"kafka.{name}" not in {o.key for o in options_for(use)}]


@pytest.mark.parametrize(("side", "name"), _UNUSED)
def test_each_java_client_setting_is_accepted_or_refused_with_its_reason(side, name,
                                                                         caplog) -> None:
    parse, base = ((parse_source_options, SOURCE_BASE) if side == "read"
                   else (parse_sink_options, SINK_BASE))
    key = f"kafka.{name}"
    opts = {**base, **_SASL_SSL, key: "secret-value"}
    if name in REFUSED_UNUSED[side]:
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                              re.escape(name)) as info:
            parse(opts)
        assert "secret-value" not in str(info.value)
        return
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.options.client"):
        parse(opts)
    [warning] = [r.getMessage() for r in caplog.records]
    assert key in warning and "secret-value" not in warning


@pytest.mark.parametrize(("name", "refused", "kept", "parse", "base"), [
    ("kafka.exclude.internal.topics", "false", "true", parse_source_options, SOURCE_BASE),
    ("kafka.partitioner.ignore.keys", "true", "false", parse_sink_options, SINK_BASE),
])
def test_values_that_would_change_the_data_are_refused(name, refused, kept, parse, base,
                                                       tmp_path) -> None:
    """The value whose loss changes which records are read or where they go is refused, from
    an option and from a kafkaConfigFile alike; the value kafkawire honours anyway is
    accepted; the other side accepts both."""
    reason = next(r.reason for r in REFUSED_VALUES if r.name == name)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                          re.escape(f"'{name}={refused}'"), re.escape(reason)):
        parse({**base, name: refused.upper()})
    props = tmp_path / "client.properties"
    props.write_text(f"{name[len('kafka.'):]}={refused}\n")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.REFUSED_OPTION",
                          re.escape(f"'{name}={refused}'")):
        parse({**base, "kafkaConfigFile": str(props)})
    parse({**base, name: kept})
    other, other_base = ((parse_sink_options, SINK_BASE) if parse is parse_source_options
                         else (parse_source_options, SOURCE_BASE))
    other({**other_base, name: refused})
    other({**other_base, "kafkaConfigFile": str(props)})


def test_value_lists_in_docs_follow_the_code() -> None:
    for name in PARTITIONERS:
        assert f"`{name}`" in option("kafka.partitioner").doc
    for name in CODEC_NAMES:
        assert f"`{name}`" in option("kafka.compression.type").doc


def test_defaults_of_the_table_are_what_parsing_yields() -> None:
    source, sink = parse_source_options(SOURCE_BASE), parse_sink_options(SINK_BASE)
    assert source.fetch.max_partition_fetch_bytes == option("kafka.max.partition.fetch.bytes").default
    assert source.max_records_per_batch == option("maxRecordsPerBatch").default
    assert source.client.client_id == option("kafka.client.id").default
    assert sink.produce.batch_size == option("kafka.batch.size").default
    assert sink.partitioner == option("kafka.partitioner").default


# ------------------------------------------------------------------------ the reference page


def test_reference_option_tables_are_what_the_table_generates() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    assert option_tables.update(text) == text, (
        "the option reference's tables differ from spark_kafka_wire/options/table.py: "
        "run `make docs`")
    assert option_tables.reference_page() == text, (
        "docs/reference/options.md is not what `make docs` writes: run `make docs`")


def test_guide_pages_link_to_every_table_of_the_reference() -> None:
    """The hand-written pages hold no copy of a generated table (one could drift), and every
    table of the reference is linked from the guide, where its prose is."""
    guide = "\n".join(p.read_text(encoding="utf-8") for p in REFERENCE.parents[1].glob("*.md"))
    assert "<!-- options:" not in guide
    for heading, _, _ in option_tables.REFERENCE_PARTS:
        anchor = re.sub(r"[^\w\s-]", "", heading.lower()).strip().replace(" ", "-")
        assert f"reference/options.md#{anchor}" in guide, heading


@pytest.mark.parametrize("o", OPTIONS, ids=lambda o: o.name)
def test_every_option_is_in_a_generated_table(o: Option) -> None:
    rendered = "".join(render() for render in option_tables.SECTIONS.values())
    assert f"`{o.name}`" in rendered


def test_generated_tables_show_defaults_as_users_write_them() -> None:
    rows = option_tables.read_table() + option_tables.write_table()
    assert "| `kafka.max.partition.fetch.bytes` | 1 MiB |" in rows
    assert "| `kafka.batch.size` | 512 KiB |" in rows
    assert "| `includeHeaders` | `false` |" in rows
    assert "| `maxRecordsPerBatch` | 10000 | kafkawire only: " in rows
    assert "| `startingOffsets` | `latest` |" in option_tables.stream_table()


def test_docs_rewrites_stale_tables_and_needs_every_marker(tmp_path: Path) -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    stale = text.replace(option_tables.write_table(), "| option | default | meaning |\n")
    assert stale != text
    written = tmp_path / "options.md"
    written.write_text(stale, encoding="utf-8")
    assert option_tables.main(["--check", str(written)]) == 1
    assert written.read_text(encoding="utf-8") == stale
    assert option_tables.main([str(written)]) == 0
    assert written.read_text(encoding="utf-8") == text
    with pytest.raises(ValueError, match="option table markers"):
        option_tables.update(text.replace("<!-- /options:read -->", ""))


def test_the_data_source_docstring_lists_every_option_by_group() -> None:
    """``help(KafkaWireDataSource)`` is the user manual: generated from the same table, it
    names every option kafkawire reads, and every option it refuses."""
    from spark_kafka_wire.datasource import KafkaWireDataSource

    doc = KafkaWireDataSource.__doc__ or ""
    for title in ("Every read and write", "Reading", "Streaming reads", "Writing"):
        assert f"\n{title}" in doc
    listed = {line.split()[0] for line in doc.splitlines() if line.startswith("  ")
              and not line.startswith("      ")}
    settable = {o.name for o in OPTIONS if o.refused is None and o.uses != NOWHERE}
    assert listed == settable
    for o in OPTIONS:
        if o.refused is not None:
            assert o.name in doc
