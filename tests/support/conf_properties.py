"""conf/'s client .properties files and what each must configure, for the tests that parse
them: tests/unit/test_conf_dir.py (every file whose parsing needs nothing running) and
tests/integration/test_conf_kerberos.py (kerberos.properties, whose keytab and principal come
from a real KDC, which the unit tier does not start)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import spark_kafka_wire
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options

CONF = Path(__file__).resolve().parents[2] / "conf"
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


def environment(path: Path, pki, tmp_path: Path, kdc=None) -> dict[str, str]:
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


def check_properties_file(path: Path, env: dict[str, str]) -> None:
    """The file parses for reads and writes with the security it announces, by both routes,
    and shows no secret of ``env`` (already set in the environment) in the parsed options."""
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
