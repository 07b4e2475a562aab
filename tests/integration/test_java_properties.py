"""kafkawire's .properties parser (config_files.parse_properties) against the JDK's own
java.util.Properties on a file using every rule of Properties.load. Here and not in the unit
tier because it starts a JVM (``java PropertiesDump.java``: the source launcher); the rest of
the config file tests are tests/unit/test_config_files.py."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from spark_kafka_wire.options.config_files import parse_properties

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
