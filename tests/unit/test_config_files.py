"""Kafka client config files (kafkaConfigFile, options_from_properties): Java's .properties
syntax, checked against the JDK's own java.util.Properties; KIP-297/KIP-887 placeholders; how
the file's keys merge with explicit options for a read and a write; no secret in any error."""

from __future__ import annotations

import base64
import logging
import shutil
import subprocess
from pathlib import Path

import pytest

import spark_kafka_wire
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.config_files import parse_properties
from spark_kafka_wire.sink.options import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options, parse_stream_options

SECRET = "s3cr3t-V@lue"

# Every rule of Properties.load: separators (=, :, white space), comments (# and !, only at
# the start of a logical line), continuation lines (odd trailing backslashes; the next line's
# leading white space dropped), escapes (\t \n \uXXXX, \= \: \  in keys, unknown \x = x),
# CRLF and lone CR line ends, empty values, duplicate keys (the last wins).
HAIRY = (
    "# a comment\n"
    "! another comment\n"
    "   \n"
    "bootstrap.servers=broker1:9092,broker2:9092\n"
    "security.protocol : SASL_SSL\n"
    "sasl.mechanism   PLAIN\n"
    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
    "    username=\"alice\" \\\n"
    "    password=\"pa\\\\ss\";\n"
    "key\\=with\\:seps\\ and\\ space = v\n"
    "tabs=a\\tb\\nc\\u00e9\\q\n"
    "empty=\n"
    "onlykey\n"
    "dup=first\r\n"
    "dup=second\r"
    "cont=one\\\n"
    "# not a comment, a continuation\n"
    "even=ends\\\\\n"
    "last=  leading spaces dropped, trailing kept  "
)


def _java_parse(path: Path) -> dict[str, str]:
    source = Path(__file__).parent / "PropertiesDump.java"
    out = subprocess.run(["java", str(source), str(path)], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    pairs = (line.split(" ") for line in out.splitlines())
    return {base64.b64decode(k).decode(): base64.b64decode(v).decode() for k, v in pairs}


def test_parse_matches_javas_properties(tmp_path) -> None:
    if shutil.which("java") is None:
        pytest.skip("needs a JDK's java (Spark needs one too) to compare with")
    path = tmp_path / "hairy.properties"
    path.write_bytes(HAIRY.encode())
    ours = parse_properties(HAIRY)
    assert ours == _java_parse(path)
    assert ours["sasl.jaas.config"].endswith('username="alice" password="pa\\ss";')
    assert ours["key=with:seps and space"] == "v"
    assert ours["dup"] == "second" and ours["onlykey"] == "" and ours["tabs"] == "a\tb\ncéq"


def _write(tmp_path: Path, text: str, name: str = "client.properties") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_options_from_properties_prefixes_and_resolves(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KW_TEST_PASSWORD", SECRET)
    secrets = _write(tmp_path, f"password={SECRET}x\n", "secrets.properties")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "token").write_text("tok-123")
    path = _write(tmp_path, (
        "config.providers=env,file\n"
        "config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider\n"
        "bootstrap.servers=b:9092\n"
        "sasl.password=${env:KW_TEST_PASSWORD}\n"
        "sasl.username=${env::KW_TEST_PASSWORD}-user\n"
        f"ssl.key.password=${{file:{secrets}:password}}\n"
        f"sasl.jaas.config=x required token=\"${{directory:{tmp_path / 'dir'}:token}}\";\n"))
    got = spark_kafka_wire.options_from_properties(path)
    assert got == {"kafka.bootstrap.servers": "b:9092", "kafka.sasl.password": SECRET,
                   "kafka.sasl.username": f"{SECRET}-user",
                   "kafka.ssl.key.password": f"{SECRET}x",
                   "kafka.sasl.jaas.config": 'x required token="tok-123";'}


@pytest.mark.parametrize(("text", "message"), [
    ("sasl.password=${env:KW_UNSET_VARIABLE}", "sasl.password: placeholder .*KW_UNSET_VARIABLE"
     ".* is not set"),
    ("sasl.password=${vault:secret/kafka:pw}", "unknown config provider 'vault'"),
    ("sasl.password=${file:/nonexistent/x.properties:pw}", "cannot read '/nonexistent"),
    ("sasl.password=${file:SECRETS:missing}", "has no key 'missing'"),
    ("sasl.password=${directory:DIR:../escape}", "is not a file name"),
    ("bad=\\u12G4", "malformed"),
])
def test_placeholder_errors_name_the_key_never_a_value(tmp_path, text, message) -> None:
    secrets = _write(tmp_path, f"pw={SECRET}\n", "secrets.properties")
    path = _write(tmp_path, text.replace("SECRETS", secrets).replace("DIR", str(tmp_path)))
    with pytest.raises(ConfigurationError, match=message) as info:
        spark_kafka_wire.options_from_properties(path)
    assert SECRET not in str(info.value)


def test_unreadable_file_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ConfigurationError, match="kafkaConfigFile: cannot read"):
        spark_kafka_wire.options_from_properties(tmp_path / "missing.properties")
    with pytest.raises(ConfigurationError, match="kafkaConfigFile is empty"):
        parse_source_options({"kafkaConfigFile": " ", "subscribe": "t"})


CLIENT_PROPERTIES = (
    "bootstrap.servers=from-file:9092\n"
    "security.protocol=SASL_PLAINTEXT\n"
    "sasl.mechanism=SCRAM-SHA-512\n"
    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
    f"username=\"alice\" password=\"{SECRET}\";\n"
    "client.id=from-file\n"
    "acks=1\n"
    "fetch.max.bytes=1048576\n"
    "key.serializer=org.apache.kafka.common.serialization.StringSerializer\n"
    "schema.registry.url=https://sr.example\n"
    "session.timeout.ms=45000\n"
)


def test_a_read_takes_what_it_uses_and_explicit_options_win(tmp_path, caplog) -> None:
    path = _write(tmp_path, CLIENT_PROPERTIES)
    with caplog.at_level(logging.WARNING, logger="spark_kafka_wire.options"):
        source = parse_source_options({"kafkaConfigFile": path, "subscribe": "t",
                                       "kafka.client.id": "explicit"})
    client = source.client
    assert client.bootstrap_servers == (("from-file", 9092),)
    assert client.client_id == "explicit"
    assert client.sasl is not None and client.sasl.username == "alice"
    assert client.sasl.password == SECRET
    assert source.fetch.fetch_max_bytes == 1048576
    skipped = " ".join(r.getMessage() for r in caplog.records)
    assert "acks" in skipped and "key.serializer" in skipped and "schema.registry.url" in skipped
    assert SECRET not in skipped and SECRET not in repr(source)


def test_a_write_takes_acks_and_a_stream_its_group(tmp_path) -> None:
    path = _write(tmp_path, CLIENT_PROPERTIES + "group.id=lag-group\n")
    sink = parse_sink_options({"kafkaConfigFile": path, "topic": "t"})
    assert sink.produce.acks == 1
    assert sink.client.sasl is not None and SECRET not in repr(sink)
    stream = parse_stream_options({"kafkaConfigFile": path, "subscribe": "t",
                                   "commitOffsets": "kafka"})
    assert stream.group_id == "lag-group"


def test_security_keys_are_never_skipped(tmp_path) -> None:
    """An ssl.* key with PLAINTEXT is refused as when given explicitly: a config file must not
    silently connect with less security than it says."""
    path = _write(tmp_path, "bootstrap.servers=b:9092\nssl.truststore.location=/x.p12\n")
    with pytest.raises(ConfigurationError, match="kafka.ssl.truststore.location' is set but"):
        parse_source_options({"kafkaConfigFile": path, "subscribe": "t"})
