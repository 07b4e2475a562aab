"""The CLI's pieces that need no broker: separators, times, record text, tables, and how
failures end (one line on stderr, an exit status, no traceback unless --debug)."""

from __future__ import annotations

import base64
import csv
import io
import json
import random
import socket

import click
import pyarrow as pa
import pytest
from rich.console import Console

from spark_kafka_wire import __version__
from spark_kafka_wire.cli.output import print_table, tsv_field
from spark_kafka_wire.cli.produce import (
    header_option,
    headers_column,
    partitions_column,
    refuse_on_plain_messages,
    timestamps_column,
)
from spark_kafka_wire.cli.produce_input import (
    Chunk,
    InputError,
    decode_jsonl,
    decode_lines,
    line_chunks,
    split_line,
    unescape,
)
from spark_kafka_wire.cli.record_format import compile_format
from spark_kafka_wire.cli.records import (
    CSV_HEADER,
    Record,
    as_text,
    from_text,
    table_cells,
    to_csv,
    to_json,
)
from spark_kafka_wire.cli.start_offsets import (
    ABSOLUTE,
    BEGINNING,
    END,
    LAST,
    TIME,
    StartSpec,
    parse_start,
    spec_for,
    start_offset,
)
from spark_kafka_wire.cli.times import When, WhenType, format_ms
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.options.produce import parse_sink_options
from tests.cli.conftest import run_cli
from tests.support.errors import raises_condition


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
    [lines] = list(line_chunks(data, b"\t", keep_empty=True))
    assert lines.keys == [b"a", None, None, None]
    assert lines.values == [b"1", b"b", b"", b"last-without-newline"]
    assert lines.size == len(data.getvalue())
    assert lines.numbers == [1, 2, 3, 4]


def test_empty_lines_are_skipped_unless_kept_and_crlf_is_a_line_end() -> None:
    data = b"one\r\n\r\n\ntwo\rstill two\r\n\nk\t\r\n"
    [lines] = list(line_chunks(io.BytesIO(data), b"\t"))
    keys, values = lines.keys, lines.values
    # as Kafka's console producer: no record for an empty line, no \r from a CRLF end; a \r
    # inside a line is data
    assert values == [b"one", b"two\rstill two", b""] and keys == [None, None, b"k"]
    assert lines.size == len(data)  # skipped lines count as read (the progress bar's bytes)
    assert lines.numbers == [1, 4, 6]  # line numbers count the skipped lines (errors name them)
    [kept_lines] = list(line_chunks(io.BytesIO(data), b"\t", keep_empty=True))
    kept = kept_lines.values
    assert kept == [b"one", b"", b"", b"two\rstill two", b"", b""]
    # only empty lines: one chunk without records, so the bytes read are still reported
    [blank] = list(line_chunks(io.BytesIO(b"\n\r\n"), None))
    assert (blank.values, blank.size, blank.numbers) == ([], 3, [])


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
    # the CLI's user gave -b, not a query's option: the hint names the flag (issue 46 item 11)
    assert "Check --bootstrap-server (-b), " in result.stderr, result.stderr
    assert "kafka.bootstrap.servers" not in result.stderr


def test_unreachable_broker_names_where_the_address_came_from(tmp_path) -> None:
    """$KAFKA_BOOTSTRAP_SERVERS or bootstrap.servers of the -F file: the hint names the one
    that gave the address, and -b, which overrides it."""
    address = f"127.0.0.1:{_closed_port()}"
    from_env = run_cli("topics", env={"KAFKA_BOOTSTRAP_SERVERS": address})
    assert from_env.exit_code == 1
    assert "Check KAFKA_BOOTSTRAP_SERVERS (which -b HOST:PORT overrides), " in from_env.stderr
    props = tmp_path / "client.properties"
    props.write_text(f"bootstrap.servers={address}\n")
    from_file = run_cli("-F", str(props), "topics")
    assert from_file.exit_code == 1
    assert f"Check bootstrap.servers in {props} (which -b HOST:PORT overrides), " in \
        from_file.stderr
    assert "kafka.bootstrap.servers" not in from_env.stderr + from_file.stderr


@pytest.mark.parametrize(("argv", "pointer"), [
    (["-C", "-t", "orders"], "'-C'. -C is kcat's consumer mode: use `kafkawire consume TOPIC`"),
    (["-P", "-t", "orders"], "'-P'. -P is kcat's producer mode: use `kafkawire produce TOPIC"),
    (["-L"], "'-L'. -L is kcat's metadata listing: use `kafkawire topics`"),
    (["consume", "-t", "orders"], "'-t'. -t is kcat's topic flag: kafkawire takes topics as "
                                  "arguments"),
    (["consume", "orders", "-f", "%k %s\\n"], "'-f'. -f is kcat's format string: use "
                                             "`--format"),
    (["consume", "orders", "-eJ"], "'-J'. -J is kcat's JSON envelope: use `--format json`"),
    (["tail", "orders", "-J"], "'-J'. -J is kcat's JSON envelope: use `--format json`"),
    (["-X", "security.protocol=SSL", "topics"], "'-X'. -X is kcat's client property: put the "
                                                "property in a .properties file"),
])
def test_kcat_options_point_at_what_does_it_here(argv: list[str], pointer: str) -> None:
    """kcat's mode and format flags (issue 46 item 11): click's usage error, with the
    kafkawire command or option that does the same, before any connection is tried."""
    result = run_cli("-b", "127.0.0.1:1", *argv)
    assert result.exit_code == 2
    assert f"No such option {pointer}" in result.stderr, result.stderr


def test_an_option_kcat_lacks_gets_clicks_error_alone() -> None:
    result = run_cli("-b", "127.0.0.1:1", "lag", "g", "-Q")
    assert result.exit_code == 2
    assert result.stderr.rstrip().endswith("No such option '-Q'.")
    # kafkawire's own short options are never taken for kcat's: tail -f follows, lag -t
    # names a topic (both fail here only for want of a broker)
    for argv in (["tail", "orders", "-f"], ["lag", "g", "-t", "orders"]):
        assert "No such option" not in run_cli("-b", "127.0.0.1:1", *argv).stderr


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
    for both in (("-n", "3", "--from-beginning"), ("-n", "3", "-o", "5"),
                 ("--from-beginning", "-o", "end")):
        result = run_cli("-b", "127.0.0.1:1", "tail", "t", *both)
        assert result.exit_code == 2
        assert "give one of -n/--last, --from-beginning and -o/--offset" in result.stderr


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


# --------------------------------------------------------------------------- produce's input


def _records(decode, data: bytes, separator: bytes | None = None, *, key_format: str = "utf8",
             value_format: str = "utf8", tombstone: bool = False) -> list:
    chunks = list(decode(line_chunks(io.BytesIO(data), separator), key_format, value_format,
                         tombstone))
    out = []
    for c in chunks:
        for i in range(len(c.values)):
            out.append((c.keys[i], c.values[i],
                        None if c.headers is None else c.headers[i],
                        None if c.partitions is None else c.partitions[i],
                        None if c.timestamps is None else c.timestamps[i]))
    return out


def test_plain_lines_in_each_field_format_and_tombstones() -> None:
    data = b"6b31:aGVsbG8=\n:\n00ff:AAE=\n"
    got = _records(decode_lines, data, b":", key_format="hex", value_format="base64")
    assert [(k, v) for k, v, *_ in got] == [(b"k1", b"hello"), (b"", b""),
                                            (b"\x00\xff", b"\x00\x01")]
    # -Z: an empty value is null, an empty key stays a key
    got = _records(decode_lines, b"k:\n:v\nnosep\n", b":", tombstone=True)
    assert [(k, v) for k, v, *_ in got] == [(b"k", None), (b"", b"v"), (None, b"nosep")]
    # json is checked, and kept as typed (bytes unchanged)
    got = _records(decode_lines, b'{"a": 1}\n[1, 2]\n', value_format="json")
    assert [v for _, v, *_ in got] == [b'{"a": 1}', b"[1, 2]"]


@pytest.mark.parametrize(("data", "fmt", "message"), [
    (b"0a0b\n\nzz\n", "hex", "line 3: the value is not hex"),
    (b"aGk=\n\n\nnot base64!\n", "base64", "line 4: the value is not base64"),
    (b'{"a": 1}\n{"a": \n', "json", "line 2: the value is not json"),
])
def test_a_field_that_does_not_decode_names_its_line(data, fmt, message) -> None:
    with pytest.raises(InputError, match=message):
        _records(decode_lines, data, value_format=fmt)


def test_the_lines_before_a_failing_one_are_records() -> None:
    """So a write without a transaction holds exactly the lines before the bad one."""
    got = []
    chunks = decode_lines(line_chunks(io.BytesIO(b"00\n01\n\nzz\n02\n"), None), "utf8", "hex",
                          False)
    with pytest.raises(InputError, match="line 4"):
        for chunk in chunks:
            got += chunk.values
    assert got == [b"\x00", b"\x01"]


def test_json_lines_read_what_tail_prints() -> None:
    """tail --format json | produce --input-format jsonl: every field that is the record's
    own comes back exactly, bytes that are not UTF-8 included."""
    written = [
        Record("t", 1, 7, 1_700_000_000_123, 0, b"\xff\x00k", b"v\xc3\xa5",
               (("h", b"one"), ("h", b"\x80"), ("empty", None))),
        Record("t", 0, 8, 5, 1, None, None, ()),
        Record("t", 2, 9, 0, 0, b"", b"", ()),
    ]
    data = "".join(to_json(r) + "\n" for r in written).encode()
    got = _records(decode_jsonl, data)
    assert got == [(r.key, r.value, list(r.headers), r.partition, r.timestamp)
                   for r in written]


def test_json_lines_fields_formats_and_refusals() -> None:
    data = (b'{"key": "6b", "value": {"n": [1, 2]}, "headers": {"a": "1", "b": null}, '
            b'"timestamp": "2026-01-02T03:04:05Z"}\n'
            b'{"value": "", "partition": 3}\n')
    got = _records(decode_jsonl, data, key_format="hex", value_format="json", tombstone=True)
    assert got == [(b"k", b'{"n":[1,2]}', [("a", b"1"), ("b", None)], None,
                    1_767_323_045_000),
                   (None, b'""', [], 3, None)]  # in json format "" is a JSON string
    got = _records(decode_jsonl, b'{"value": ""}\n{"value": "", "value_encoding": "base64"}\n',
                   tombstone=True)
    assert [v for _, v, *_ in got] == [None, None]  # -Z: an empty value is null
    for line, message in [
        (b'{"vaule": "x"}', "line 1: unknown field 'vaule'"),
        (b'[1]', "line 1: a JSON list, not an object"),
        (b'{"value": 5}', "line 1: the value is a JSON int; give a string"),
        (b'{"partition": -1}', "line 1: partition must be a partition number"),
        (b'{"timestamp": "yesterday"}', "line 1: timestamp 'yesterday' is not an ISO-8601"),
        (b'{"headers": [{"key": 1}]}', "line 1: a header key must be a string"),
        (b'{"value": "%%", "value_encoding": "base64"}', "line 1: the value is not base64"),
        (b'{"value": "x", "value_encoding": "rot13"}', "value_encoding 'rot13' is none of"),
        (b"not json", "line 1: not a JSON object"),
    ]:
        with pytest.raises(InputError, match=message):
            _records(decode_jsonl, line + b"\n")


def test_produce_options_become_columns() -> None:
    assert header_option("a=b=c") == ("a", b"b=c")
    assert header_option("bare") == ("bare", None)
    with pytest.raises(click.BadParameter):
        header_option("=v")
    chunk = Chunk([b"k", None], [b"v", b"w"], 4, headers=[[("own", b"1")], []],
                  partitions=[None, 1], timestamps=[None, 99])
    column = headers_column(chunk, [("all", None)])
    assert column.to_pylist() == [[{"key": "all", "value": None}, {"key": "own", "value": b"1"}],
                                  [{"key": "all", "value": None}]]
    assert headers_column(Chunk([None], [b"v"], 1), []) is None
    assert timestamps_column(chunk, 5).tolist() == [5, 99]
    sink = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "t"})
    keys = pa.array(chunk.keys, pa.binary())
    assert partitions_column(chunk, 0, keys, 2, random.Random(1), sink).tolist() == [0, 1]
    with pytest.raises(InputError, match="line 2: partition 2, but the topic has partitions 0-1"):
        list(decode_jsonl(line_chunks(io.BytesIO(b'{}\n{"partition": 2}\n'), None), "utf8",
                          "utf8", False, 2))
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          "-H/--header, --txn-id: a Kafka 0.7 message"):
        refuse_on_plain_messages(("a=b",), None, False, "lines", "tx")
    refuse_on_plain_messages((), None, False, "lines", None)  # plain lines: fine


# --------------------------------------------------------------------------- tail / consume


@pytest.mark.parametrize(("typed", "spec"), [
    ("beginning", StartSpec(BEGINNING)), ("earliest", StartSpec(BEGINNING)),
    ("END", StartSpec(END)), ("latest", StartSpec(END)),
    ("1500", StartSpec(ABSOLUTE, 1500)), ("-5", StartSpec(LAST, 5)),
    ("@1700000000000", StartSpec(TIME, 1_700_000_000_000)),
    ("s@2026-01-02T03:04:05Z", StartSpec(TIME, 1_767_323_045_000)),
    ("2:-1", StartSpec(LAST, 1, 2)), ("0:end", StartSpec(END, 0, 0)),
])
def test_start_specs_read_as_kcat_o(typed, spec) -> None:
    assert parse_start(typed) == spec


@pytest.mark.parametrize("typed", ["", "begin", "1.5", "@yesterday", "x:5", "--3"])
def test_bad_start_specs_say_what_is_expected(typed) -> None:
    with pytest.raises(ValueError, match="is not beginning, end|ISO-8601"):
        parse_start(typed)


def test_start_offsets_per_partition_within_the_log() -> None:
    specs = (StartSpec(ABSOLUTE, 7), StartSpec(LAST, 2, 1), StartSpec(TIME, 99, 2))
    default = StartSpec(LAST, 10)
    assert spec_for(specs, 0, default) == StartSpec(ABSOLUTE, 7)
    assert spec_for(specs, 1, default) == StartSpec(LAST, 2, 1)
    assert spec_for((StartSpec(END, 0, 3),), 0, default) == default
    # clamped to [lo, hi]: past the end starts at the end, before the start at the start
    assert start_offset(StartSpec(ABSOLUTE, 7), 10, 20, None) == 10
    assert start_offset(StartSpec(ABSOLUTE, 70), 10, 20, None) == 20
    assert start_offset(StartSpec(LAST, 2), 10, 20, None) == 18
    assert start_offset(StartSpec(LAST, 50), 10, 20, None) == 10
    assert start_offset(StartSpec(TIME, 99), 10, 20, 15) == 15
    assert start_offset(StartSpec(TIME, 99), 10, 20, None) == 20  # no record that new
    assert start_offset(StartSpec(BEGINNING), 10, 20, None) == 10
    assert start_offset(StartSpec(END), 10, 20, None) == 20


def test_format_strings_are_kcats() -> None:
    r = Record("orders", 2, 41, 1_700_000_000_123, 0, b"k\xff", b"v 1",
               (("a", b"1"), ("b", None)))
    render = compile_format("%t|%p|%o|%k|%s|%K|%S|%T|%h|100%%\\n")
    assert render(r, "text", "text") == \
        b"orders|2|41|k\xff|v 1|2|3|1700000000123|a=1,b=|100%\n"
    null = Record("t", 0, 0, -1, 0, None, None, ())
    assert compile_format("[%k][%s] %K %S %T\\t")(null, "text", "text") == b"[][] -1 -1 -1\t"
    assert compile_format("%k %s")(r, "hex", "base64") == b"6bff diAx"
    with pytest.raises(click.BadParameter, match="%x in"):
        compile_format("%k %x")
    with pytest.raises(click.BadParameter, match="% in"):
        compile_format("trailing %")


def test_keys_and_values_shown_in_each_format() -> None:
    r = Record("t", 0, 5, 0, 0, b"\xff\x01", b'{"a": [1, "\xc3\xa5"]}', ())
    obj = json.loads(to_json(r, "hex", "json"))
    assert (obj["key"], obj["key_encoding"]) == ("ff01", "hex")
    assert (obj["value"], obj["value_encoding"]) == ({"a": [1, "å"]}, "json")
    assert json.loads(to_json(r, "base64", "text"))["key"] == "/wE="
    assert table_cells(r, "text", "json")[3:5] == ("base64:/wE=", '{"a":[1,"å"]}')
    assert table_cells(r, "hex", "text")[3] == "ff01"
    assert next(csv.reader([to_csv(r, "hex", "json")]))[4:8] == \
        ["ff01", "hex", '{"a":[1,"å"]}', "json"]
    with pytest.raises(click.ClickException, match="the key of the record at offset 5 of t-0 "
                       "is not JSON"):
        to_json(r, "json", "text")


def test_output_json_prints_every_table_as_json_lines() -> None:
    """--output json (the root command's option, as kafkawire's): one object per row keyed by
    column, numbers as numbers, a missing value as null, tabs kept; the title left out."""
    import click as _click

    from spark_kafka_wire.cli.output import print_table

    @_click.command()
    @_click.option("--output", default="table")
    def show(output: str) -> None:
        print_table(("topic", "partitions", "leader"), [("a\tb", 3, None), ("c", 1, 2)],
                    title="ignored in JSON")

    from click.testing import CliRunner

    out = CliRunner().invoke(show, ["--output", "json"]).output
    assert [json.loads(line) for line in out.splitlines()] == [
        {"topic": "a\tb", "partitions": 3, "leader": None},
        {"topic": "c", "partitions": 1, "leader": 2}]
    tsv_out = CliRunner().invoke(show, []).output
    assert tsv_out.splitlines()[0] == "topic\tpartitions\tleader"
