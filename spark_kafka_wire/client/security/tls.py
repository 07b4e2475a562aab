"""TLS for ``security.protocol=SSL``: key material loaded on the driver, contexts built where
connections are made, handshake failures explained.

Kafka's SSL listener is plain TLS around the same framing (Kafka documentation, "Encryption and
Authentication using SSL", https://kafka.apache.org/documentation/#security_ssl), so the only
work is the context: which CAs to trust, which client certificate to present, whether the
broker's name is checked. The Java client's settings name stores (JKS, PKCS12, PEM; KIP-651
added PEM: https://cwiki.apache.org/confluence/x/HIcyCQ) that may exist only on the machine
that defines a Spark query, so every store is read once, on the driver, into a
:class:`TlsConfig` of plain bytes that travels with the plan; executors never open those paths.

JKS, the Java client's default store type, has no maintained Python reader; it is converted to
PKCS12 on the driver by the JDK's ``keytool`` (every Spark driver has a JDK), with the
passwords passed through the environment (``-storepass:env``), never on a command line.

Python's ``ssl`` takes CAs as bytes (``cadata``) but a client key only from a file
(``load_cert_chain``). The key is written, encrypted with a one-time password, to a private
directory (``mkdtemp``: mode 0700; the file 0600) and removed as soon as it is loaded.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from spark_kafka_wire.client import defaults
from spark_kafka_wire.client.errors import SECURITY_SETTING, ConfigurationError

# cryptography (about 0.15 s to import) is imported in the functions that read stores and
# certificates: a plaintext connection, and the CLI's start, never load it.
if TYPE_CHECKING:
    from cryptography import x509

STORE_TYPES = ("JKS", "PKCS12", "PEM")
# Java's names (ssl.enabled.protocols, ssl.protocol) -> Python's.
PROTOCOL_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_JKS_MAGIC = b"\xfe\xed\xfe\xed"
JKS_ADVICE = (
    "JKS stores are converted with the JDK's keytool, which was not found (set JAVA_HOME, or put "
    "keytool on the PATH where the query is defined). Or convert it once yourself: keytool "
    "-importkeystore -srckeystore store.jks -destkeystore store.p12 -deststoretype PKCS12, then "
    "set the .type option to PKCS12 (or export PEM files)"
)
_KEYTOOL_TIMEOUT_S = 120


@dataclass(frozen=True)
class TlsConfig:
    """What a TLS connection needs, as bytes: picklable, hashable, with no path in it.

    ``key`` (an unencrypted PKCS#8 DER private key) is a secret: the repr never shows it, so
    plans, partitions and ``df.explain()`` cannot leak it.
    """

    cadata: str | None = None  # PEM CA certificates; None trusts the system's default CAs
    cert_chain: bytes | None = None  # PEM: the client certificate, then its chain
    key: bytes | None = field(default=None, repr=False)
    # kafka.ssl.endpoint.identification.algorithm=https (and ZooKeeper's own setting, true)
    check_hostname: bool = defaults.SSL_ENDPOINT_IDENTIFICATION_ALGORITHM == "https"
    min_version: str | None = None  # a key of PROTOCOL_VERSIONS
    max_version: str | None = None
    ciphers: str | None = None  # OpenSSL cipher list, as librdkafka's ssl.cipher.suites

    def __repr__(self) -> str:
        cas = "system default CAs" if self.cadata is None else \
            f"{self.cadata.count('BEGIN CERTIFICATE')} CA certificate(s)"
        client = "client certificate" if self.cert_chain else "no client certificate"
        key = ", key=<hidden>" if self.key else ""
        return (f"TlsConfig({cas}, {client}{key}, check_hostname={self.check_hostname}, "
                f"versions={self.min_version or 'default'}..{self.max_version or 'default'}, "
                f"ciphers={self.ciphers or 'default'})")


# ------------------------------------------------------------------ loading (on the driver)


def detect_store_type(data: bytes) -> str:
    """JKS by its magic number, PEM by its armour, PKCS12 otherwise (a DER sequence)."""
    if data.startswith(_JKS_MAGIC):
        return "JKS"
    if b"-----BEGIN " in data[:4096]:
        return "PEM"
    return "PKCS12"


def store_type(data: bytes, declared: str | None, what: str) -> str:
    """The declared type (checked against the bytes for JKS) or the detected one."""
    kind = detect_store_type(data) if not declared else declared.strip().upper()
    if kind not in STORE_TYPES:
        raise ConfigurationError.of(
            SECURITY_SETTING, "STORE_TYPE", what=what, store_types=', '.join(STORE_TYPES),
            declared=declared)
    if data.startswith(_JKS_MAGIC) and kind != "JKS":
        raise ConfigurationError.of(SECURITY_SETTING, "JKS_TYPE_MISMATCH", what=what, kind=kind)
    if kind == "JKS" and not data.startswith(_JKS_MAGIC):
        raise ConfigurationError.of(SECURITY_SETTING, "NOT_JKS", what=what)
    return kind


def _keytool() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = os.path.join(java_home, "bin", "keytool")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("keytool")


def jks_to_pkcs12(data: bytes, store_password: str | None, key_password: str | None,
                  what: str) -> tuple[bytes, str]:
    """A JKS store converted by the JDK's keytool into PKCS12: (its bytes, the one-time
    password protecting them). The JKS file and the result live only in a private directory
    (0700, files 0600) removed before returning; passwords reach keytool through its
    environment, so they never show in a process list."""
    keytool = _keytool()
    if keytool is None:
        raise ConfigurationError.of(
            SECURITY_SETTING, "JKS_NEEDS_KEYTOOL", what=what, jks_advice=JKS_ADVICE)
    one_time = secrets.token_urlsafe(24)
    env = {**os.environ, "KAFKAWIRE_DEST_PASS": one_time,
           "KAFKAWIRE_SRC_PASS": store_password or ""}
    args = [keytool, "-importkeystore", "-noprompt", "-srcstoretype", "JKS",
            "-deststoretype", "PKCS12", "-deststorepass:env", "KAFKAWIRE_DEST_PASS"]
    if store_password:
        args += ["-srcstorepass:env", "KAFKAWIRE_SRC_PASS"]
    directory = tempfile.mkdtemp(prefix="kafkawire-jks-")  # mode 0700
    secrets_shown = (store_password, key_password, one_time)

    def run(command: list[str]) -> str:
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=_KEYTOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ConfigurationError.of(
                SECURITY_SETTING, "KEYTOOL_TIMEOUT", what=what,
                keytool_timeout_s=_KEYTOOL_TIMEOUT_S) from None
        if done.returncode != 0:
            said = " ".join((done.stdout + done.stderr).split())
            for secret in secrets_shown:
                if secret:
                    said = said.replace(secret, "<hidden>")
            raise ConfigurationError.of(
                SECURITY_SETTING, "JKS_UNREADABLE", what=what,
                value=said[-300:] or 'nothing')
        return done.stdout

    try:
        source, target = os.path.join(directory, "in.jks"), os.path.join(directory, "out.p12")
        fd = os.open(source, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if key_password and key_password != store_password:
            # a key entry with its own password: keytool converts it only when named
            listing = run([keytool, "-list", "-v", "-storetype", "JKS", "-keystore", source]
                          + (["-storepass:env", "KAFKAWIRE_SRC_PASS"] if store_password else []))
            aliases = _private_key_aliases(listing)
            if len(aliases) != 1:
                raise ConfigurationError.of(
                    SECURITY_SETTING, "JKS_KEY_ENTRIES", what=what,
                    aliases_count=len(aliases))
            env["KAFKAWIRE_KEY_PASS"] = key_password
            args += ["-srcalias", aliases[0], "-srckeypass:env", "KAFKAWIRE_KEY_PASS",
                     "-destkeypass:env", "KAFKAWIRE_DEST_PASS"]
        run([*args, "-srckeystore", source, "-destkeystore", target])
        with open(target, "rb") as f:
            return f.read(), one_time
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _private_key_aliases(listing: str) -> list[str]:
    """The aliases of the PrivateKeyEntry entries in ``keytool -list -v`` output."""
    aliases: list[str] = []
    alias = None
    for line in listing.splitlines():
        if line.startswith("Alias name:"):
            alias = line.split(":", 1)[1].strip()
        elif line.startswith("Entry type:") and "PrivateKeyEntry" in line and alias:
            aliases.append(alias)
    return aliases


def _password_option(what: str) -> str:
    """The password setting of the store option ``what`` (``zookeeper.ssl.keystore.location``
    -> ``zookeeper.ssl.keystore.password``), for messages; Kafka's keystore's by default."""
    if what.endswith(".location"):
        return what[:-len(".location")] + ".password"
    return "kafka.ssl.keystore.password"


def _pem_certs(data: bytes, what: str) -> list[x509.Certificate]:
    from cryptography import x509  # noqa: PLC0415

    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ConfigurationError.of(SECURITY_SETTING, "PEM_NO_CERTIFICATE", what=what) from None
    return certs


def _to_pem(certs: list[x509.Certificate]) -> bytes:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def load_truststore(data: bytes, kind: str, password: str | None, what: str) -> str:
    """The trusted CA certificates of a PEM, PKCS12 or JKS truststore, as PEM text
    (``cadata``)."""
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    if kind == "PEM":
        return _to_pem(_pem_certs(data, what)).decode("ascii")
    if kind == "JKS":
        data, password = jks_to_pkcs12(data, password, None, what)
    try:
        p12 = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise ConfigurationError.of(SECURITY_SETTING, "PKCS12_TRUSTSTORE_UNREADABLE", what=what) from None
    certs = [c.certificate for c in p12.additional_certs]
    if p12.cert is not None:
        certs.insert(0, p12.cert.certificate)
    if not certs:
        raise ConfigurationError.of(
            SECURITY_SETTING, "PKCS12_NO_CERTIFICATE", what=what)
    return _to_pem(certs).decode("ascii")


def load_private_key(data: bytes, password: str | None, what: str) -> bytes:
    """A PEM private key (PKCS#8 or traditional, encrypted with ``password`` or not), as
    unencrypted PKCS#8 DER."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    try:
        key = serialization.load_pem_private_key(data, password.encode() if password else None)
    except TypeError:
        raise ConfigurationError.of(
            SECURITY_SETTING, "PRIVATE_KEY_NOT_ENCRYPTED" if password else "PRIVATE_KEY_ENCRYPTED",
            what=what) from None
    except ValueError:
        raise ConfigurationError.of(SECURITY_SETTING, "PRIVATE_KEY_UNREADABLE", what=what) from None
    return key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_keystore(data: bytes, kind: str, store_password: str | None,
                  key_password: str | None, what: str) -> tuple[bytes, bytes]:
    """(PEM certificate chain, PKCS#8 DER key) from a PKCS12, JKS or PEM keystore.

    A PEM keystore (KIP-651) is one file with the key and the certificate chain; PKCS12 keys
    are protected by the store password (Java's PKCS12 stores use one password for both); a
    JKS key entry may have its own password (``kafka.ssl.key.password``).
    """
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.serialization import pkcs12  # noqa: PLC0415

    if kind == "JKS":
        data, store_password = jks_to_pkcs12(data, store_password, key_password, what)
        kind = "PKCS12"
    if kind == "PEM":
        if b"PRIVATE KEY-----" not in data:
            raise ConfigurationError.of(SECURITY_SETTING, "PEM_NO_KEY", what=what)
        return _to_pem(_pem_certs(data, what)), load_private_key(data, key_password, what)
    try:
        p12 = pkcs12.load_pkcs12(data, store_password.encode() if store_password else None)
    except ValueError:
        hint = ""
        if key_password and key_password != store_password:
            # keytool and openssl write one password for the whole store and ignore another
            # key password; only Java's KeyStore API writes a key with a password of its own.
            hint = ("; kafka.ssl.key.password differs from the store password, and a PKCS12 "
                    "key protected by a password of its own is not supported: export the key "
                    "and chain as PEM (kafka.ssl.keystore.type=PEM) or store the key under the "
                    "store password")
        raise ConfigurationError.of(
            SECURITY_SETTING, "PKCS12_KEYSTORE_UNREADABLE", what=what,
            what2=_password_option(what), hint=hint) from None
    if p12.key is None or p12.cert is None:
        raise ConfigurationError.of(SECURITY_SETTING, "PKCS12_NO_KEY", what=what)
    chain = [p12.cert.certificate, *(c.certificate for c in p12.additional_certs)]
    key = p12.key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return _to_pem(chain), key


def version_name(value: str, what: str) -> str:
    """A Java protocol name (``TLSv1.2``), checked."""
    for name in PROTOCOL_VERSIONS:
        if name.lower() == value.strip().lower():
            return name
    raise ConfigurationError.of(
        SECURITY_SETTING, "TLS_PROTOCOL", what=what, value=value,
        protocol_versions=", ".join(PROTOCOL_VERSIONS))


# ------------------------------------------------------------- contexts (where we connect)


@functools.lru_cache(maxsize=16)
def context_for(tls: TlsConfig) -> ssl.SSLContext:
    """The client context of ``tls``, built once per process and shared by its connections.

    ConfigurationError if the settings cannot work (an unknown cipher, a key that does not
    match its certificate); the driver builds one while parsing options so that happens there.
    """
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if tls.cadata is not None:
        ctx.load_verify_locations(cadata=tls.cadata)
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    ctx.check_hostname = tls.check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    try:
        if tls.min_version:
            ctx.minimum_version = PROTOCOL_VERSIONS[tls.min_version]
        if tls.max_version:
            ctx.maximum_version = PROTOCOL_VERSIONS[tls.max_version]
    except (ssl.SSLError, ValueError) as exc:
        raise ConfigurationError.of(
            SECURITY_SETTING, "TLS_PROTOCOLS", exc=_ssl_reason(exc)) from None
    try:
        if tls.ciphers:
            ctx.set_ciphers(tls.ciphers)
    except (ssl.SSLError, ValueError) as exc:  # ValueError: a NUL or non-ASCII character
        raise ConfigurationError.of(
            SECURITY_SETTING, "CIPHER_SUITES", exc=_ssl_reason(exc)) from None
    if tls.cert_chain is not None and tls.key is not None:
        _load_client_certificate(ctx, tls.cert_chain, tls.key)
    return ctx


def _ssl_reason(exc: Exception) -> str:
    """What OpenSSL said, without the tuple repr ``str(SSLError)`` gives for some errors."""
    if isinstance(exc, ssl.SSLError) and len(exc.args) == 1:
        return str(exc.args[0])
    return str(exc)


def _load_client_certificate(ctx: ssl.SSLContext, chain: bytes, key_der: bytes) -> None:
    """``load_cert_chain`` needs files: a private directory, the key encrypted with a one-time
    password, both removed before returning."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415

    one_time = secrets.token_urlsafe(24).encode()
    key = serialization.load_der_private_key(key_der, None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(one_time))
    directory = tempfile.mkdtemp(prefix="kafkawire-tls-")  # mode 0700
    try:
        paths = []
        for name, data in (("chain.pem", chain), ("key.pem", encrypted)):
            path = os.path.join(directory, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            paths.append(path)
        try:
            ctx.load_cert_chain(paths[0], paths[1], password=one_time)
        except ssl.SSLError:
            raise ConfigurationError.of(SECURITY_SETTING, "KEY_CERTIFICATE_MISMATCH") from None
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# ---------------------------------------------------------------- explaining failures


@dataclass(frozen=True)
class PeerCertificate:
    subject: str
    issuer: str
    names: tuple[str, ...]  # subjectAltName DNS names and IP addresses
    not_after: str


def peer_certificate(host: str, port: int, timeout: float) -> PeerCertificate | None:
    """The broker's certificate, fetched without verifying it, to say why it was refused.

    Python's ``SSLCertVerificationError`` has OpenSSL's reason but not the certificate, so a
    second, unverified handshake reads it; nothing is sent over that connection.
    """
    from cryptography import x509  # noqa: PLC0415

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw, \
                ctx.wrap_socket(raw, server_hostname=host) as sock:
            der = sock.getpeercert(binary_form=True)
    except OSError:
        return None
    if not der:
        return None
    cert = x509.load_der_x509_certificate(der)
    names: list[str] = []
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names += san.get_values_for_type(x509.DNSName)
        names += [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    except x509.ExtensionNotFound:
        pass
    return PeerCertificate(cert.subject.rfc4514_string(), cert.issuer.rfc4514_string(),
                           tuple(names), cert.not_valid_after_utc.isoformat())


# OpenSSL's X509_V_ERR_* codes (include/openssl/x509_vfy.h) that SSLCertVerificationError carries.
_EXPIRED, _NOT_YET_VALID = 10, 9
_HOSTNAME_MISMATCH, _IP_MISMATCH = 62, 64


@dataclass(frozen=True)
class VerifyAdvice:
    """Who the peer is and which settings to name when its certificate is refused: a
    broker's (``kafka.ssl.*``) by default, a ZooKeeper server's for ``zookeeper.ssl.*``."""

    peer: str = "broker"
    reached_by: str = "brokers are reached by their advertised listeners"
    no_hostname_check: str = "kafka.ssl.endpoint.identification.algorithm=''"
    truststore: str = "kafka.ssl.truststore.* or kafka.ssl.ca.location"


def explain_verify_failure(exc: ssl.SSLCertVerificationError, host: str,
                           cert: PeerCertificate | None,
                           advice: VerifyAdvice = VerifyAdvice()) -> str:
    """What went wrong and what to check, from OpenSSL's verify result and the certificate."""
    code = exc.verify_code
    peer = advice.peer
    about = (f" The {peer}'s certificate: subject {cert.subject!r}, issuer {cert.issuer!r}"
             if cert else "")
    if code in (_HOSTNAME_MISMATCH, _IP_MISMATCH):
        names = ", ".join(cert.names) if cert and cert.names else "none readable"
        return (f"hostname mismatch: the {peer}'s certificate is not valid for {host!r} (names "
                f"in the certificate: {names}).{about}. Connect with a name the certificate "
                f"holds ({advice.reached_by}), or, only if you accept the risk, turn the check "
                f"off with {advice.no_hostname_check}")
    if code in (_EXPIRED, _NOT_YET_VALID):
        when = f" (valid until {cert.not_after})" if cert and code == _EXPIRED else ""
        state = "has expired" if code == _EXPIRED else "is not valid yet"
        return (f"the {peer}'s certificate {state}{when}.{about}. Renew the {peer}'s "
                "certificate, or check this machine's clock")
    return (f"untrusted certificate: {exc.verify_message}.{about}. Check that the truststore "
            f"({advice.truststore}) holds the CA that issued it; without a truststore the "
            "system's default CAs are used")
