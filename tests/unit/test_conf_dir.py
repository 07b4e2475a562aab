"""conf/: every deployment's .properties loads through options_from_properties and passes the
source and sink option parsers with the security it announces; spark-defaults.conf names only
settings that Spark defines; the documentation (docs/security.md, Config files) points at every
file."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

import spark_kafka_wire
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options
from tests.support.conf_properties import (
    CONF,
    EXPECTED,
    NEEDS,
    PROPERTIES,
    check_properties_file,
    environment,
)
from tests.support.docs_pages import page
from tests.support.errors import raises_condition

CONF_PAGE = page("security.md")  # its "Config files" section, moved from the README
#: the files the unit tier parses: all but kerberos.properties, which needs a KDC
UNIT_PROPERTIES = [p for p in PROPERTIES if NEEDS.get(p.stem) != "kdc"]


def test_every_file_is_expected_and_in_the_docs() -> None:
    assert sorted(p.stem for p in PROPERTIES) == sorted(EXPECTED)
    docs = CONF_PAGE.read_text()
    for path in [*PROPERTIES, CONF / "spark-defaults.conf"]:
        assert f"conf/{path.name}" in docs, f"{CONF_PAGE.name} does not mention conf/{path.name}"


@pytest.mark.parametrize("path", UNIT_PROPERTIES, ids=[p.stem for p in UNIT_PROPERTIES])
def test_properties_file_parses_for_reads_and_writes(path, pki, tmp_path, monkeypatch) -> None:
    """Every file but kerberos.properties (tests/integration/test_conf_kerberos.py: it needs
    a KDC)."""
    need = NEEDS.get(path.stem)
    if need:
        pytest.importorskip(need)
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    env = environment(path, pki, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    check_properties_file(path, env)


def test_options_from_properties_keeps_each_sides_keys(tmp_path, caplog) -> None:
    """A shared client.properties: acks goes to writes, isolation.level to reads, and the dict
    for both leaves out (with one warning naming them) what one side would refuse."""
    path = tmp_path / "client.properties"
    path.write_text("bootstrap.servers=b:9092\nacks=all\nisolation.level=read_committed\n"
                    "client.dns.lookup=use_all_dns_ips\nkey.serializer=x.StringSerializer\n")
    both = spark_kafka_wire.options_from_properties(path)
    assert both == {"kafka.bootstrap.servers": "b:9092"}
    assert "acks" in caplog.text and "client.dns.lookup" in caplog.text
    reads = spark_kafka_wire.options_from_properties(path, use="read")
    assert reads["kafka.isolation.level"] == "read_committed" and "kafka.acks" not in reads
    writes = spark_kafka_wire.options_from_properties(path, use="write")
    assert writes["kafka.acks"] == "all" and "kafka.isolation.level" not in writes
    assert parse_source_options({**reads, "subscribe": "t"}).isolation_level == 1
    assert parse_sink_options({**writes, "topic": "t"}).produce.acks == -1
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.UNSUPPORTED_VALUE",
                          "use must be one of"):
        spark_kafka_wire.options_from_properties(path, use="produce")


def _spark_jar_strings() -> bytes:
    pyspark = pytest.importorskip("pyspark")
    jars = Path(pyspark.__file__).parent / "jars"
    blob = bytearray()
    for jar in jars.glob("spark-*_2.13-*.jar"):
        if not re.match(r"spark-(core|sql|sql-api|catalyst)_", jar.name):
            continue
        with zipfile.ZipFile(jar) as z:
            for info in z.infolist():
                if info.filename.endswith(".class"):
                    blob += z.read(info)
    return bytes(blob)


def test_spark_defaults_names_only_settings_spark_defines() -> None:
    """Each key (commented ones included) is a string constant in Spark's own jars, so a
    misspelt key, which Spark would ignore silently, fails here."""
    keys = []
    for line in (CONF / "spark-defaults.conf").read_text().splitlines():
        m = re.match(r"#?\s*(spark\.[\w.]+)\s+\S", line)
        if m:
            keys.append(m.group(1))
    assert keys
    blob = _spark_jar_strings()
    for key in keys:
        name = key[len("spark.executorEnv."):] if key.startswith("spark.executorEnv.") else None
        probe = b"spark.executorEnv." if name else key.encode()
        assert probe in blob, f"{key} is not a Spark setting"
