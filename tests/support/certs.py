"""Test certificates, keystores and truststores, generated per test session.

Real managed Kafka services are reached over TLS, so the security tests need a CA and
certificates that look like the ones users have: a server certificate for localhost and
127.0.0.1, one for the wrong host name (hostname verification must fail), an expired one, a
client certificate for mutual TLS, and a second CA that trusts none of them ("wrong CA").
Everything is written once into a private temporary directory as PEM, PKCS12 (with and
without password, via ``cryptography``) and JKS (the JDK's ``keytool`` importing the PKCS12,
because that is how Java users get theirs). Key material is never world-readable: the
directory is 0700 and every file 0600.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: Password of every password-protected store and key (JKS needs at least 6 characters).
STORE_PASSWORD = "changeit-store"
KEY_PASSWORD = "changeit-key"
KEYTOOL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Keystore:
    """One key with its certificate chain in every format a user may point kafkawire at."""

    cert_pem: str  # the certificate followed by the CA (chain)
    key_pem: str  # unencrypted PKCS8 key
    key_pem_encrypted: str  # PKCS8 key encrypted with KEY_PASSWORD
    p12: str  # PKCS12 protected with STORE_PASSWORD
    p12_no_password: str  # PKCS12 without any password
    jks: str | None  # JKS with STORE_PASSWORD (key password = STORE_PASSWORD); None without keytool
    subject: str


@dataclass(frozen=True)
class TestPki:
    """Paths and passwords of a session's certificates (see ``make_pki``)."""

    directory: str
    store_password: str
    key_password: str
    ca_pem: str  # the CA every good certificate chains to
    ca_p12: str  # Java-style PKCS12 truststore (trusted-cert entries), STORE_PASSWORD
    ca_p12_no_password: str
    ca_jks: str | None
    other_ca_pem: str  # a CA that signed nothing the servers use: the "wrong CA"
    server: Keystore  # SANs localhost and 127.0.0.1
    wrong_host: Keystore  # SAN wrong-host.invalid only
    expired: Keystore  # localhost/127.0.0.1 but expired yesterday
    client: Keystore  # for mutual TLS, signed by the CA
    rogue_client: Keystore  # a client certificate signed by other_ca: refused by mutual TLS


def _write_private(path: str, data: bytes) -> str:
    """Create ``path`` with mode 0600 from the start (no window where it is readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "spark-kafka-wire tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn)).issuer_name(_name(cn))
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(ca_key: rsa.RSAPrivateKey, ca_cert: x509.Certificate, cn: str, sans: list[str],
          client: bool, expired: bool = False) -> tuple[rsa.RSAPrivateKey, x509.Certificate]:
    key = _key()
    now = datetime.datetime.now(datetime.timezone.utc)
    if expired:
        not_before, not_after = now - datetime.timedelta(days=10), now - datetime.timedelta(days=1)
    else:
        not_before, not_after = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=30)
    names: list[x509.GeneralName] = []
    for san in sans:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(san)))
        except ValueError:
            names.append(x509.DNSName(san))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn)).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(not_before).not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(
            [ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH]),
            critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                       critical=False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _keytool(*args: str) -> None:
    result = subprocess.run(["keytool", *args], capture_output=True, text=True,
                            timeout=KEYTOOL_TIMEOUT_S, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"keytool {' '.join(args[:1])} failed ({result.returncode}): "
                           f"{result.stdout.strip()} {result.stderr.strip()}")


def _keystore(directory: str, stem: str, key: rsa.RSAPrivateKey, cert: x509.Certificate,
              ca_cert: x509.Certificate, with_jks: bool) -> Keystore:
    base = os.path.join(directory, stem)
    cert_pem = _write_private(f"{base}.pem", _pem(cert) + _pem(ca_cert))
    key_pem = _write_private(f"{base}.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    key_pem_enc = _write_private(f"{base}.enc.key", key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(KEY_PASSWORD.encode())))
    p12 = _write_private(f"{base}.p12", pkcs12.serialize_key_and_certificates(
        stem.encode(), key, cert, [ca_cert],
        serialization.BestAvailableEncryption(STORE_PASSWORD.encode())))
    p12_plain = _write_private(f"{base}.nopass.p12", pkcs12.serialize_key_and_certificates(
        stem.encode(), key, cert, [ca_cert], serialization.NoEncryption()))
    jks = None
    if with_jks:
        jks = f"{base}.jks"
        _keytool("-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12",
                 "-srcstorepass", STORE_PASSWORD, "-destkeystore", jks, "-deststoretype", "JKS",
                 "-deststorepass", STORE_PASSWORD, "-destkeypass", STORE_PASSWORD)
        os.chmod(jks, 0o600)
    return Keystore(cert_pem=cert_pem, key_pem=key_pem, key_pem_encrypted=key_pem_enc, p12=p12,
                    p12_no_password=p12_plain, jks=jks, subject=cert.subject.rfc4514_string())


def make_pki(directory: str | None = None, jks: bool = True,
             hosts: tuple[str, ...] = ()) -> TestPki:
    """Generate everything into ``directory`` (a fresh 0700 temp dir by default).

    JKS files need the JDK's keytool; without it, or with ``jks=False`` (the unit tier, which
    starts no JVM), their paths are None (tests needing JKS skip). ``hosts``: more names or
    addresses of the server certificate (a test host's address, tests/cluster). Remove the
    directory with
    ``remove_pki`` when done.
    """
    directory = directory or tempfile.mkdtemp(prefix="kafkawire-pki-")
    os.chmod(directory, 0o700)
    with_jks = jks and shutil.which("keytool") is not None
    ca_key, ca_cert = _ca("kafkawire test CA")
    other_key, other_cert = _ca("kafkawire other CA")
    ca_pem = _write_private(os.path.join(directory, "ca.pem"), _pem(ca_cert))
    other_pem = _write_private(os.path.join(directory, "other-ca.pem"), _pem(other_cert))
    trusted = [pkcs12.PKCS12Certificate(ca_cert, b"ca")]
    ca_p12 = _write_private(os.path.join(directory, "truststore.p12"),
                            pkcs12.serialize_java_truststore(
                                trusted, serialization.BestAvailableEncryption(STORE_PASSWORD.encode())))
    ca_p12_plain = _write_private(os.path.join(directory, "truststore.nopass.p12"),
                                  pkcs12.serialize_java_truststore(trusted, serialization.NoEncryption()))
    ca_jks = None
    if with_jks:
        ca_jks = os.path.join(directory, "truststore.jks")
        _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", ca_pem, "-keystore", ca_jks,
                 "-storetype", "JKS", "-storepass", STORE_PASSWORD)
        os.chmod(ca_jks, 0o600)

    def leaf(stem: str, cn: str, sans: list[str], client: bool = False, expired: bool = False,
             issuer: tuple[rsa.RSAPrivateKey, x509.Certificate] = (ca_key, ca_cert)) -> Keystore:
        key, cert = _leaf(issuer[0], issuer[1], cn, sans, client, expired)
        return _keystore(directory, stem, key, cert, issuer[1], with_jks)

    local = ["localhost", "127.0.0.1", *hosts]
    return TestPki(
        directory=directory, store_password=STORE_PASSWORD, key_password=KEY_PASSWORD,
        ca_pem=ca_pem, ca_p12=ca_p12, ca_p12_no_password=ca_p12_plain, ca_jks=ca_jks,
        other_ca_pem=other_pem,
        server=leaf("server", "localhost", local),
        wrong_host=leaf("wrong-host", "wrong-host.invalid", ["wrong-host.invalid"]),
        expired=leaf("expired", "localhost", local, expired=True),
        client=leaf("client", "kafkawire-client", [], client=True),
        rogue_client=leaf("rogue-client", "rogue-client", [], client=True,
                          issuer=(other_key, other_cert)),
    )


def remove_pki(pki: TestPki) -> None:
    shutil.rmtree(pki.directory, ignore_errors=True)


# A Java program (run from source, JDK 11+) that rewrites a PKCS12 store so that its key entry
# has a password of its own: keytool and openssl cannot write such a store, Java's KeyStore
# API can, and Java clients read it with ssl.key.password.
_TWO_PASSWORDS_JAVA = """
import java.io.*; import java.security.*;
public class TwoPasswords { public static void main(String[] a) throws Exception {
  KeyStore in = KeyStore.getInstance("PKCS12");
  try (InputStream f = new FileInputStream(a[0])) { in.load(f, a[2].toCharArray()); }
  KeyStore out = KeyStore.getInstance("PKCS12"); out.load(null, null);
  String alias = in.aliases().nextElement();
  out.setKeyEntry(alias, in.getKey(alias, a[2].toCharArray()), a[3].toCharArray(),
                  in.getCertificateChain(alias));
  try (OutputStream f = new FileOutputStream(a[1])) { out.store(f, a[2].toCharArray()); }
}}
"""


def two_password_p12(keystore: Keystore) -> str:
    """``keystore``'s PKCS12 rewritten by Java with store password STORE_PASSWORD and key
    password KEY_PASSWORD (mode 0600, beside the original)."""
    directory = os.path.dirname(keystore.p12)
    source = os.path.join(directory, "TwoPasswords.java")
    # 0600 like every file of the directory (test_tls_front_certificates_are_private checks it,
    # and runs after this when tests/unit is collected first)
    with os.fdopen(os.open(source, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(_TWO_PASSWORDS_JAVA)
    os.chmod(source, 0o600)
    target = keystore.p12.replace(".p12", ".two-passwords.p12")
    result = subprocess.run(["java", source, keystore.p12, target, STORE_PASSWORD, KEY_PASSWORD],
                            capture_output=True, text=True, timeout=KEYTOOL_TIMEOUT_S,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"java TwoPasswords failed: {result.stderr.strip()[-500:]}")
    os.chmod(target, 0o600)
    return target
