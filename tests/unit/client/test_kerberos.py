"""GSSAPI settings without a KDC: Krb5LoginModule JAAS entries, librdkafka's keytab names,
the keytab reader, RFC 4752's security-layer answer, and the explanations of Kerberos
failures. Logins against a real KDC: tests/integration/test_gssapi_client.py."""

from __future__ import annotations

import os
import pickle
import re
import struct
import subprocess
import sys
import textwrap

import pytest

from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.security.sasl.gssapi import (
    KerberosFailure,
    explain,
    private_file_keytab,
    security_layer_answer,
)
from spark_kafka_wire.client.security.sasl.kerberos import (
    KerberosConfig,
    keytab_principals,
    principal_in,
)
from spark_kafka_wire.options import SINK, SOURCE, client_config, lower_keys
from tests.support.errors import raises_condition

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
KEY = b"\x8fSECRET-KEY-BYTES\x01" * 2


def _counted(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">H", len(data)) + data


def _entry(principal: str, kvno: int = 1, enctype: int = 18) -> bytes:
    """One keytab entry in MIT's version 2 layout (big-endian)."""
    name, realm = principal.rsplit("@", 1)
    parts = name.split("/")
    body = struct.pack(">H", len(parts)) + _counted(realm) + b"".join(map(_counted, parts))
    body += struct.pack(">IIB", 1, 1_700_000_000, kvno & 0xFF)
    body += struct.pack(">H", enctype) + struct.pack(">H", len(KEY)) + KEY
    body += struct.pack(">I", kvno)
    return struct.pack(">i", len(body)) + body


def _keytab(*principals: str, hole: bool = False) -> bytes:
    data = b"\x05\x02"
    if hole:
        data += struct.pack(">i", -12) + b"\0" * 12
    return data + b"".join(_entry(p, kvno) for kvno, p in enumerate(principals, 1))


@pytest.fixture
def keytab_file(tmp_path):
    path = tmp_path / "alice.keytab"
    path.write_bytes(_keytab("alice@EXAMPLE.COM", "alice@EXAMPLE.COM", "svc/host.example@EXAMPLE.COM",
                             hole=True))
    return str(path)


def _config(use=SOURCE, **options: str):
    opts = {"kafka.bootstrap.servers": "broker1.example.com:9092",
            "kafka.security.protocol": "SASL_SSL", **options}
    return client_config(lower_keys(opts), use)


# ---------------------------------------------------------------------------------- keytab


def test_keytab_principals() -> None:
    assert keytab_principals(_keytab("alice@R", "alice@R", "kafka/h.example@R", hole=True)) == [
        "alice@R", "kafka/h.example@R"]
    assert keytab_principals(b"\x05\x02") == []
    assert keytab_principals(b"\x05\x01" + _entry("a@R")[4:]) is None  # version 1: not read
    assert keytab_principals(b"not a keytab") is None
    assert keytab_principals(_keytab("alice@R")[:-30]) is None  # cut inside an entry


@pytest.mark.parametrize(("principal", "found"), [
    ("alice@R", True), ("alice", True), ("alice@OTHER", False), ("bob", False),
    ("kafka/h.example", True), ("kafka/h.example@R", True)])
def test_principal_in(principal: str, found: bool) -> None:
    assert principal_in(principal, ["alice@R", "kafka/h.example@R"]) is found


def test_private_file_keytab_is_owner_only() -> None:
    name = private_file_keytab(KEY)
    assert name.startswith("FILE:")
    path = name[5:]
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700
    with open(path, "rb") as f:
        assert f.read() == KEY


# ------------------------------------------------------------------------------ JAAS / options

try:
    import gssapi  # noqa: F401
    HAVE_GSSAPI = True
except ImportError:
    HAVE_GSSAPI = False
# parsing ends by checking that gssapi can be imported, so accepted settings need it
needs_gssapi = pytest.mark.skipif(not HAVE_GSSAPI, reason="the gssapi package ([kerberos] extra)")


@needs_gssapi
@pytest.mark.parametrize("use", [SOURCE, SINK])
def test_keytab_login_reads_the_file_on_the_driver(keytab_file: str, use) -> None:
    config = _config(use, **{"kafka.sasl.mechanism": "gssapi", "kafka.sasl.jaas.config": (
        f'{KRB5} required useKeyTab=true storeKey=true keyTab="{keytab_file}" '
        'principal="alice@EXAMPLE.COM" debug=true;')})
    sasl = config.sasl
    assert sasl is not None and sasl.mechanism == "GSSAPI" and sasl.username == "alice@EXAMPLE.COM"
    assert sasl.kerberos == KerberosConfig(service_name="kafka", principal="alice@EXAMPLE.COM",
                                           keytab=open(keytab_file, "rb").read(),
                                           keytab_path=keytab_file)
    assert pickle.loads(pickle.dumps(config)) == config
    text = repr(config) + str(config) + repr(sasl.kerberos)
    assert "SECRET-KEY" not in text and "8fSECRET" not in text
    assert "bytes hidden" in repr(sasl.kerberos) and keytab_file in repr(sasl.kerberos)


@needs_gssapi
@pytest.mark.parametrize(("jaas", "expected"), [
    (f"{KRB5} required useTicketCache=true;", KerberosConfig()),
    (f'{KRB5} required useTicketCache=true principal="bob@R" ticketCache="/tmp/krb5cc_1" '
     'serviceName="kafka-prod";',
     KerberosConfig(service_name="kafka-prod", principal="bob@R", ticket_cache="/tmp/krb5cc_1")),
    (f"{KRB5} required useKeyTab=true principal=\"bob@R\";",  # MIT's default client keytab
     KerberosConfig(principal="bob@R")),
    (None, KerberosConfig()),  # no JAAS: kinit's ticket cache, as librdkafka
])
def test_process_credentials(jaas: str | None, expected: KerberosConfig) -> None:
    options = {"kafka.sasl.mechanism": "GSSAPI"}
    if jaas is not None:
        options["kafka.sasl.jaas.config"] = jaas
    config = _config(**options)
    assert config.sasl is not None and config.sasl.kerberos == expected
    assert config.sasl.username == expected.who


@needs_gssapi
def test_service_name_option_and_librdkafka_names(keytab_file: str) -> None:
    config = _config(**{"kafka.sasl.mechanism": "GSSAPI",
                        "kafka.sasl.kerberos.service.name": "kafka-prod",
                        "kafka.sasl.kerberos.keytab": keytab_file,
                        "kafka.sasl.kerberos.principal": "alice",
                        "kafka.sasl.kerberos.min.time.before.relogin": "60000",
                        "kafka.sasl.kerberos.kinit.cmd": "/usr/bin/kinit"})
    kerberos = config.sasl.kerberos if config.sasl else None
    assert kerberos is not None and kerberos.service_name == "kafka-prod"
    assert kerberos.principal == "alice" and kerberos.keytab_path == keytab_file
    same = _config(**{"kafka.sasl.kerberos.service.name": "kafka-prod",
                      "kafka.sasl.jaas.config": f'{KRB5} required serviceName="kafka-prod" '
                                                'useTicketCache=true;'})
    assert same.sasl is not None and same.sasl.kerberos is not None
    assert same.sasl.kerberos.service_name == "kafka-prod"


@pytest.mark.parametrize(("options", "kind", "message"), [
    ({"kafka.sasl.jaas.config": f"{KRB5} required;"},
     "SECURITY_SETTING", "needs useKeyTab=true with keyTab=.* or useTicketCache=true.*cannot prompt"),
    ({"kafka.sasl.jaas.config": f'{KRB5} required keyTab="/x.keytab" principal="a";'},
     "SECURITY_SETTING", "keyTab is set but useKeyTab is not true"),
    ({"kafka.sasl.jaas.config": f'{KRB5} required useKeyTab=true keyTab="/x.keytab";'},
     "SECURITY_SETTING", r"useKeyTab=true needs principal="),
    ({"kafka.sasl.jaas.config": f'{KRB5} required useKeyTab=yes;'},
     "SECURITY_SETTING", "useKeyTab must be true or false"),
    ({"kafka.sasl.jaas.config": f'{KRB5} required useKeyTab=true keyTab="/nonexistent.keytab" '
                                'principal="a";'},
     "SECURITY_SETTING", "cannot read the keytab named by keyTab in kafka.sasl.jaas.config: No such file"),
    ({"kafka.sasl.jaas.config": f'{KRB5} required useTicketCache=true serviceName="a";',
      "kafka.sasl.kerberos.service.name": "b"},
     "CONFLICTING_OPTIONS", "conflicting Kerberos service names"),
    ({"kafka.sasl.kerberos.service.name": " "}, "MISSING_OPTION", "kafka.sasl.kerberos.service.name is empty"),
    ({"kafka.sasl.kerberos.keytab": "/x.keytab"}, "MISSING_OPTION", "needs kafka.sasl.kerberos.principal"),
    ({"kafka.sasl.kerberos.principal": "a", "kafka.sasl.jaas.config": f"{KRB5} required;"},
     "CONFLICTING_OPTIONS", "not both"),
    ({"kafka.sasl.mechanism": "GSSAPI", "kafka.sasl.password": "s3cret"},
     "CONFLICTING_OPTIONS", "do not apply to kafka.sasl.mechanism=GSSAPI"),
])
def test_refusals(options: dict, kind: str, message: str) -> None:
    with raises_condition(ConfigurationError, f"KAFKAWIRE_CONFIGURATION.{kind}",
                          message) as info:
        _config(**options)
    assert "s3cret" not in str(info.value)
    assert "nonexistent" not in str(info.value)  # no text of the JAAS entry (issue 27)


def test_keytab_without_the_principal_names_what_it_holds(keytab_file: str, tmp_path) -> None:
    # from JAAS, the principal and path are named by their keys (issue 27: no JAAS text)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING", (
            "holds no key for the principal of kafka.sasl.jaas.config; it holds keys for "
            "alice@EXAMPLE.COM, svc/host.example@EXAMPLE.COM")) as info:
        _config(**{"kafka.sasl.jaas.config": f'{KRB5} required useKeyTab=true '
                                             f'keyTab="{keytab_file}" principal="bob@EXAMPLE.COM";'})
    assert "bob" not in str(info.value) and keytab_file not in str(info.value)
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING", (
            "holds no key for principal 'bob@EXAMPLE.COM'; it holds keys for "
            "alice@EXAMPLE.COM, svc/host.example@EXAMPLE.COM")):
        _config(**{"kafka.sasl.kerberos.keytab": keytab_file,
                   "kafka.sasl.kerberos.principal": "bob@EXAMPLE.COM"})
    junk = tmp_path / "junk.keytab"
    junk.write_bytes(b"-----BEGIN CERTIFICATE-----")
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.SECURITY_SETTING",
                          "kafka.sasl.kerberos.keytab", "is not a Kerberos keytab"):
        _config(**{"kafka.sasl.kerberos.keytab": str(junk), "kafka.sasl.kerberos.principal": "a"})


def test_missing_gssapi_says_what_to_install(keytab_file: str) -> None:
    """Where the [kerberos] extra is not installed, the driver refuses GSSAPI at once."""
    code = textwrap.dedent(f"""
        import sys
        sys.modules["gssapi"] = None  # as if not installed
        from spark_kafka_wire.client.errors import ConfigurationError
        from spark_kafka_wire.options import SOURCE, client_config, lower_keys
        try:
            client_config(lower_keys({{"kafka.bootstrap.servers": "b:9092",
                "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.kerberos.keytab":
                {keytab_file!r}, "kafka.sasl.kerberos.principal": "alice"}}), SOURCE)
        except ConfigurationError as e:
            print(e)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "apt-get install libkrb5-dev" in done.stdout
    assert "pip install gssapi (kafkawire's [kerberos] extra)" in done.stdout


# ------------------------------------------------------------------------- RFC 4752 layer


@pytest.mark.parametrize(("offer", "answer"), [
    (b"\x01\x00\x00\x00", b"\x01\x00\x00\x00alice@R"),  # Kafka: no layer, max size 0
    (b"\x07\x01\x00\x00", b"\x01\x00\x00\x00alice@R"),  # every layer offered: still none
])
def test_security_layer_answer(offer: bytes, answer: bytes) -> None:
    assert security_layer_answer(offer, "alice@R") == answer


def test_security_layer_answer_utf8_authzid() -> None:
    assert security_layer_answer(b"\x01\0\0\0", "jürgen@R") == b"\x01\0\0\0" + "jürgen@R".encode()


@pytest.mark.parametrize(("offer", "message"), [
    (b"\x06\x00\x10\x00", "requires a GSSAPI security layer \\(offered layers 0x06\\)"),
    (b"\x01\x00\x00", "3 octets instead of 4"),
    (b"\x01\x00\x00\x00\x00", "5 octets instead of 4"),
])
def test_security_layer_refusals(offer: bytes, message: str) -> None:
    with pytest.raises(KerberosFailure, match=message):
        security_layer_answer(offer, "a@R")


# ------------------------------------------------------------------------------ failures

KEYTAB = KerberosConfig(principal="alice@R", keytab=b"k", keytab_path="/etc/alice.keytab")
CACHE = KerberosConfig()


@pytest.mark.parametrize(("code", "kerberos", "expected"), [
    (-1765328347 & 0xFFFFFFFF, KEYTAB, "differ by more than Kerberos allows"),  # clock skew
    (-1765328377 & 0xFFFFFFFF, KEYTAB, "knows no service principal for kafka@b1.example"),
    (-1765328378 & 0xFFFFFFFF, KEYTAB, "does not know the principal 'alice@R'"),
    (-1765328360 & 0xFFFFFFFF, KEYTAB, "the keytab '/etc/alice.keytab' for 'alice@R' is not"),
    (-1765328228 & 0xFFFFFFFF, KEYTAB, "No KDC could be reached"),
    (-1765328352 & 0xFFFFFFFF, CACHE, "ticket .* has expired: kinit again"),
    (-1765328189 & 0xFFFFFFFF, CACHE, "No Kerberos credentials in the default ticket cache"),
    (-1765328189 & 0xFFFFFFFF, KEYTAB, "No Kerberos ticket could be obtained for 'alice@R'"),
    (-1765328366 & 0xFFFFFFFF, KEYTAB, "locked, disabled"),
    (12345, KEYTAB, "check the principal 'alice@R'"),
    (None, CACHE, "the service principal 'kafka@b1.example'"),
])
def test_explanations(code: int | None, kerberos: KerberosConfig, expected: str) -> None:
    text = explain(code, "MIT's own message.", kerberos, "kafka@b1.example")
    assert text.startswith("Kerberos: MIT's own message. ")
    assert re.search(expected, text, flags=re.IGNORECASE), text
