"""The CLI's pieces that need no broker: separators, times, record text, tables, and how
failures end (one line on stderr, an exit status, no traceback unless --debug)."""

from __future__ import annotations

import base64
import csv
import io
import json
import socket

import pytest
from rich.console import Console

from spark_kafka_wire import __version__
from spark_kafka_wire.cli.output import print_table, tsv_field
from spark_kafka_wire.cli.produce import line_chunks, split_line, unescape
from spark_kafka_wire.cli.records import (
    CSV_HEADER,
    Record,
    as_text,
    from_text,
    table_cells,
    to_csv,
    to_json,
)
from spark_kafka_wire.cli.times import When, WhenType, format_ms
from tests.cli.conftest import run_cli


@pytest.mark.parametrize(("typed", "expected"), [
    ("\\t", b"\t"), (":", b":"), ("\\x1f", b"\x1f"), ("\\\\", b"\\"), ("a\\tb", b"a\tb"),
    ("\\0", b"\0"), ("\\q", b"\\q"), ("\\x4", b"\\x4"), ("é", "é".encode()),
])
def test_separator_escapes(typed: str, expected: bytes) -> None:
    assert unescape(typed) == expected


# Kafka's declaration of the env config provider: placeholders resolve only through one.
ENV_PROVIDER = ("config.providers=env\n"
                "config.providers.env.class=org.apache.kafka.common.config.provider."
                "EnvVarConfigProvider\n")


def test_lines_split_at_the_first_separator_and_keyless_without_it() -> None:
    assert split_line(b"k\tv\tw", b"\t") == (b"k", b"v\tw")
    assert split_line(b"value only", b"\t") == (None, b"value only")
    assert split_line(b"\tv", b"\t") == (b"", b"v")  # an empty key is a key
    assert split_line(b"k\tv", None) == (None, b"k\tv")
    data = io.BytesIO(b"a\t1\nb\n\nlast-without-newline")
    [(keys, values, size)] = list(line_chunks(data, b"\t", keep_empty=True))
    assert keys == [b"a", None, None, None]
    assert values == [b"1", b"b", b"", b"last-without-newline"]
    assert size == len(data.getvalue())


def test_empty_lines_are_skipped_unless_kept_and_crlf_is_a_line_end() -> None:
    data = b"one\r\n\r\n\ntwo\rstill two\r\n\nk\t\r\n"
    [(keys, values, size)] = list(line_chunks(io.BytesIO(data), b"\t"))
    # as Kafka's console producer: no record for an empty line, no \r from a CRLF end; a \r
    # inside a line is data
    assert values == [b"one", b"two\rstill two", b""] and keys == [None, None, b"k"]
    assert size == len(data)  # skipped lines count as read (the progress bar's bytes)
    [(_, kept, _)] = list(line_chunks(io.BytesIO(data), b"\t", keep_empty=True))
    assert kept == [b"one", b"", b"", b"two\rstill two", b"", b""]
    # only empty lines: one chunk without records, so the bytes read are still reported
    assert list(line_chunks(io.BytesIO(b"\n\r\n"), None)) == [([], [], 3)]


@pytest.mark.parametrize(("typed", "ms"), [
    ("1700000000123", 1_700_000_000_123),
    ("2023-11-14T22:13:20.123Z", 1_700_000_000_123),
    ("2023-11-14T22:13:20.123", 1_700_000_000_123),  # no offset: UTC
    ("2023-11-15T00:13:20.123+02:00", 1_700_000_000_123),
    ("2023-11-14", 1_699_920_000_000),
])
def test_at_accepts_epoch_ms_and_iso_8601(typed: str, ms: int) -> None:
    assert WhenType().convert(typed, None, None) == When(epoch_ms=ms)


def test_printed_timestamps_are_accepted_back() -> None:
    text = format_ms(1_700_000_000_123)
    assert text == "2023-11-14T22:13:20.123Z"
    assert WhenType().convert(text, None, None).epoch_ms == 1_700_000_000_123
    assert WhenType().convert("Latest", None, None) == When(special="latest")


def test_bad_at_is_a_usage_error_naming_the_forms() -> None:
    result = run_cli("-b", "127.0.0.1:1", "offsets", "t", "--at", "yesterday")
    assert result.exit_code == 2
    assert "ISO-8601" in result.stderr and "Traceback" not in result.stderr


def test_text_or_base64_round_trips_every_byte() -> None:
    for data in (b"plain", "ünïcødé".encode(), b"\xff\xfe\x00", b"", None):
        text, encoding = as_text(data)
        assert from_text(text, encoding) == data
    assert as_text(b"\xff") == (base64.b64encode(b"\xff").decode(), "base64")
    assert as_text("é".encode()) == ("é", "utf-8")


RECORD = Record("t", 1, 7, 1_700_000_000_123, 0, b"\xff\x00", b"v,\"1\"\n2",
                (("h", b"x"), ("h", None), ("bin", b"\x80")))


def test_json_line_says_each_encoding() -> None:
    obj = json.loads(to_json(RECORD))
    assert obj == {
        "topic": "t", "partition": 1, "offset": 7, "timestamp": 1_700_000_000_123,
        "timestamp_type": "CreateTime", "key": "/wA=", "key_encoding": "base64",
        "value": "v,\"1\"\n2", "value_encoding": "utf-8",
        "headers": [{"key": "h", "value": "x", "value_encoding": "utf-8"},
                    {"key": "h", "value": None, "value_encoding": None},
                    {"key": "bin", "value": "gA==", "value_encoding": "base64"}],
    }
    assert "\n" not in to_json(RECORD)


def test_csv_row_reads_back_with_the_csv_module() -> None:
    rows = list(csv.reader(io.StringIO(to_csv(None) + "\n" + to_csv(RECORD) + "\n")))
    assert tuple(rows[0]) == CSV_HEADER
    row = dict(zip(rows[0], rows[1], strict=True))
    assert from_text(row["key"], row["key_encoding"]) == RECORD.key
    assert from_text(row["value"], row["value_encoding"]) == RECORD.value
    assert json.loads(row["headers"])[2] == {"key": "bin", "value": "gA==",
                                             "value_encoding": "base64"}


def test_tables_are_rich_on_a_terminal_and_tsv_in_a_pipe(capsys) -> None:
    terminal = Console(file=io.StringIO(), force_terminal=True, width=120)
    print_table(("partition", "offset", "key"), [(0, 5, "a\tb"), (1, None, "c")],
                title="t", console=terminal)
    drawn = terminal.file.getvalue()
    assert "partition" in drawn and "─" in drawn and " 5 " in drawn
    print_table(("partition", "offset", "key"), [(0, 5, "a\tb"), (1, None, "c")],
                console=Console(file=io.StringIO(), force_terminal=False))
    assert capsys.readouterr().out == "partition\toffset\tkey\n0\t5\ta\\tb\n1\t-\tc\n"
    assert tsv_field("a\\b\nc") == "a\\\\b\\nc"
    markup = Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)
    print_table(("value",), [("[bold]not markup[/bold] :smile:",)], console=markup)
    assert "[bold]not markup[/bold] :smile:" in markup.file.getvalue()


def test_table_cells_mark_base64() -> None:
    assert table_cells(RECORD)[3] == "base64:/wA="
    assert table_cells(RECORD)[5] == "h=x, h=None, bin=base64:gA=="


def test_version() -> None:
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"kafkawire (spark-kafka-wire) {__version__}"


def test_no_broker_given_is_a_configuration_error() -> None:
    result = run_cli("topics")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(
        "kafkawire: error: [KAFKAWIRE_CONFIGURATION.MISSING_OPTION] no broker to connect to")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("command", [["topics"], ["describe", "t"], ["offsets", "t"],
                                     ["tail", "t"], ["lag", "g"], ["check"]])
def test_unreachable_broker_is_one_line_and_exit_1(command: list[str]) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    result = run_cli("-b", address, *command)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(
        "kafkawire: error: [KAFKAWIRE_NO_BROKERS_AVAILABLE] none of the bootstrap servers")
    assert address in result.stderr and "Traceback" not in result.stderr


def test_debug_shows_the_traceback() -> None:
    result = run_cli("--debug", "-b", f"127.0.0.1:{_closed_port()}", "topics")
    assert result.exit_code == 1
    assert "Traceback" in result.stderr and "NoBrokersAvailableError" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("kafkawire: error: ")


def test_bad_command_config_is_refused_in_one_line(tmp_path) -> None:
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\n"
                     "sasl.password=do-not-print-me\n")
    result = run_cli("-b", "127.0.0.1:1", "--command-config", str(props), "topics")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "do-not-print-me" not in result.output
    assert "sasl" in result.stderr.lower()


def test_missing_placeholder_names_the_key_not_the_value(tmp_path) -> None:
    props = tmp_path / "client.properties"
    props.write_text(ENV_PROVIDER + "bootstrap.servers=127.0.0.1:1\n"
                     "security.protocol=SASL_PLAINTEXT\n"
                     "sasl.mechanism=PLAIN\nsasl.username=alice\n"
                     "sasl.password=${env:KAFKAWIRE_TEST_UNSET_PASSWORD}\n")
    result = run_cli("--command-config", str(props), "topics")
    assert result.exit_code == 2
    assert "sasl.password" in result.stderr and "KAFKAWIRE_TEST_UNSET_PASSWORD" in result.stderr


def test_command_config_placeholders_need_a_declared_provider(tmp_path) -> None:
    """As Kafka's own tools: --command-config resolves ${env:...} only through a provider the
    file declares; the error says how to declare it and shows no value; the operator's
    KAFKAWIRE_CONFIG_PROVIDERS, when set, holds for the CLI too."""
    secret = "cli-S3CRET-" + "x" * 6
    body = ("bootstrap.servers=127.0.0.1:1\nsecurity.protocol=${env:KAFKAWIRE_TEST_SECRET}\n")
    props = tmp_path / "client.properties"
    props.write_text(body)
    result = run_cli("--command-config", str(props), "topics",
                     env={"KAFKAWIRE_TEST_SECRET": secret})
    assert result.exit_code == 2, result.output
    assert "config provider 'env' is not declared" in result.stderr
    assert "config.providers=env and config.providers.env.class=" in result.stderr
    assert secret not in result.output
    props.write_text(ENV_PROVIDER + body)
    result = run_cli("--command-config", str(props), "topics",
                     env={"KAFKAWIRE_TEST_SECRET": secret})
    assert result.exit_code == 2, result.output
    assert "got the value from ${env:KAFKAWIRE_TEST_SECRET}" in result.stderr
    assert secret not in result.output
    result = run_cli("--command-config", str(props), "topics",
                     env={"KAFKAWIRE_TEST_SECRET": secret, "KAFKAWIRE_CONFIG_PROVIDERS": ""})
    assert result.exit_code == 2, result.output
    assert "KAFKAWIRE_CONFIG_PROVIDERS" in result.stderr and secret not in result.output


def test_command_config_that_is_not_a_properties_file_says_so_precisely(tmp_path) -> None:
    """The CLI's user owns the file: the message says which line is wrong, never its text."""
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\n")
    result = run_cli("--command-config", str(passwd), "topics")
    assert result.exit_code == 2, result.output
    assert "not a Kafka client properties file (line 1 is not key=value)" in result.stderr
    assert "alice" not in result.output and "/bin/bash" not in result.output


def test_missing_command_config_file_is_a_usage_error(tmp_path) -> None:
    result = run_cli("--command-config", str(tmp_path / "nope.properties"), "topics")
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_last_and_from_beginning_exclude_each_other() -> None:
    result = run_cli("-b", "127.0.0.1:1", "tail", "t", "-n", "3", "--from-beginning")
    assert result.exit_code == 2 and "not both" in result.stderr


def test_unknown_command_config_key_is_warned_of_and_unused_known_ones_are_not(tmp_path):
    props = tmp_path / "client.properties"
    # key.serializer and acks are real client settings a read does not use: quiet
    props.write_text("key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
                     "acks=all\nschema.registry.urll=do-not-print-me\n")
    result = run_cli("-b", f"127.0.0.1:{_closed_port()}", "-F", str(props), "topics")
    assert result.exit_code == 1  # the broker is unreachable; the warning came first
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("kafkawire: warning: ") and "'schema.registry.urll'" in lines[0]
    assert "isn't a known Kafka client config" in lines[0]
    assert "do-not-print-me" not in result.output
    assert "key.serializer" not in result.stderr and "acks" not in result.stderr


@pytest.mark.parametrize(("typo", "intended"), [
    ("secuirty.protocol", "security.protocol"), ("security.protocl", "security.protocol"),
    ("sasl.mechansim", "sasl.mechanism"), ("sasl.jaas.confg", "sasl.jaas.config"),
    ("ssl.truststore.locaton", "ssl.truststore.location"),
])
def test_misspelt_security_key_in_command_config_is_an_error(tmp_path, typo, intended):
    props = tmp_path / "client.properties"
    props.write_text(f"{typo}=SSL-secret-value\n")
    result = run_cli("-b", "127.0.0.1:1", "-F", str(props), "topics")
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"'{typo}'" in result.stderr and f"did you mean '{intended}'" in result.stderr
    assert "SSL-secret-value" not in result.output
