"""conf/: every deployment's .properties loads through options_from_properties and passes the
source and sink option parsers with the security it announces; spark-defaults.conf names only
settings that Spark defines; the README points at every file."""

from __future__ import annotations

import re
import shutil
import zipfile
from pathlib import Path

import pytest

import spark_kafka_wire
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.sink.options import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options

CONF = Path(__file__).resolve().parents[2] / "conf"
README = Path(__file__).resolve().parents[2] / "README.md"
PROPERTIES = sorted(CONF.glob("*.properties"))
# What each file must configure: (security.protocol, SASL mechanism or None, client cert?).
EXPECTED = {
    "local": ("PLAINTEXT", None, False),
    "confluent-cloud": ("SASL_SSL", "PLAIN", False),
    "msk-scram": ("SASL_SSL", "SCRAM-SHA-512", False),
    "msk-mtls": ("SSL", None, True),
    "event-hubs": ("SASL_SSL", "PLAIN", False),
    "aiven": ("SSL", None, True),
    "redpanda-cloud": ("SASL_SSL", "SCRAM-SHA-256", False),
    "msk-iam": ("SASL_SSL", "OAUTHBEARER", False),
    "kerberos": ("SASL_SSL", "GSSAPI", False),
}
# Files whose parsing needs more than the test PKI: an optional extra or a Kerberos realm.
NEEDS = {"msk-iam": "aws_msk_iam_sasl_signer", "kerberos": "kdc"}
_ENV = re.compile(r"\$\{env:([A-Z0-9_]+)\}")


def _environment(path: Path, pki, tmp_path: Path, kdc=None) -> dict[str, str]:
    """A test value for every ${env:NAME} of the file: host lists, the test PKI's files."""
    certs = tmp_path / "certs"
    certs.mkdir(exist_ok=True)
    for name, src in (("ca.pem", pki.ca_pem), ("service.cert", pki.client.cert_pem),
                      ("service.key", pki.client.key_pem)):
        shutil.copy(src, certs / name)
    env = {}
    for name in _ENV.findall(path.read_text()):
        if name == "MSK_BOOTSTRAP_SERVERS" and path.stem == "msk-iam":
            # MSK's broker names carry the region, which the IAM signer needs
            env[name] = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"
        elif name.endswith("BOOTSTRAP_SERVERS"):
            env[name] = "b-1.example:9096,b-2.example:9096"
        elif name == "KERBEROS_TRUSTSTORE":
            env[name] = pki.ca_pem
        elif name == "KERBEROS_KEYTAB":
            env[name] = kdc.client_keytab
        elif name == "KERBEROS_PRINCIPAL":
            env[name] = kdc.client_principal
        elif name == "MSK_KEYSTORE":
            env[name] = pki.client.p12
        elif name == "MSK_KEYSTORE_PASSWORD":
            env[name] = pki.store_password
        elif name == "AIVEN_CERT_DIR":
            env[name] = str(certs)
        else:
            env[name] = f"value-of-{name.lower()}"
    return env


def test_every_file_is_expected_and_in_the_readme() -> None:
    assert sorted(p.stem for p in PROPERTIES) == sorted(EXPECTED)
    readme = README.read_text()
    for path in [*PROPERTIES, CONF / "spark-defaults.conf"]:
        assert f"conf/{path.name}" in readme, f"README does not mention conf/{path.name}"


@pytest.mark.parametrize("path", PROPERTIES, ids=[p.stem for p in PROPERTIES])
def test_properties_file_parses_for_reads_and_writes(path, pki, tmp_path, monkeypatch,
                                                     request) -> None:
    need = NEEDS.get(path.stem)
    kdc = request.getfixturevalue("kdc") if need == "kdc" else None
    if need and need != "kdc":
        pytest.importorskip(need)
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    env = _environment(path, pki, tmp_path, kdc)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    protocol, mechanism, client_cert = EXPECTED[path.stem]
    # Both routes (the file as kafkaConfigFile, its dict through options_from_properties) for
    # both sides: the dict of use="both" works for reads and writes, use="read"/"write" each
    # for its side, and each gives the client settings the file itself gives.
    by_file = {"read": parse_source_options({"kafkaConfigFile": str(path), "subscribe": "t"}),
               "write": parse_sink_options({"kafkaConfigFile": str(path), "topic": "t"})}
    parsers = {"read": lambda o: parse_source_options({**o, "subscribe": "t"}),
               "write": lambda o: parse_sink_options({**o, "topic": "t"})}
    for use, sides in (("both", ("read", "write")), ("read", ("read",)),
                       ("write", ("write",))):
        options = spark_kafka_wire.options_from_properties(path, use=use)
        assert all(k.startswith("kafka.") for k in options)
        for side in sides:
            parsed = parsers[side](options)
            assert parsed.client == by_file[side].client, (use, side)
    for parsed in by_file.values():
        client = parsed.client
        assert client.security_protocol == protocol
        assert (client.sasl.mechanism if client.sasl else None) == mechanism
        assert (client.tls is not None and client.tls.key is not None) == client_cert
        for name, value in env.items():
            if "PASSWORD" in name or "SECRET" in name or "CONNECTION_STRING" in name:
                assert value not in repr(parsed), f"{name} shows in the parsed options"


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
    with pytest.raises(ConfigurationError, match="use must be one of"):
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
