"""SASL GSSAPI (Kerberos V5) as Kafka clients speak it: RFC 4752 over Kafka's SASL framing.

The exchange (RFC 4752 section 3.1, https://www.rfc-editor.org/rfc/rfc4752#section-3.1; the
GSS-API calls are RFC 2743's, https://www.rfc-editor.org/rfc/rfc2743):

1. a Kerberos security context with the broker's *host-based service* name
   ``<service>@<host>`` (RFC 2743 section 4.1, GSS_C_NT_HOSTBASED_SERVICE): the service is
   ``kafka.sasl.kerberos.service.name`` (the first part of the broker's principal, ``kafka``
   for ``kafka/broker1.example.com@REALM``), the host is the broker's host as the client
   connects to it (the Java client does the same). Mutual authentication is required, so the
   broker proves it holds the service key. Tokens go back and forth until the context is
   established; when the last step produces no token the client sends an empty one.
2. the security-layer negotiation: the broker sends a wrapped 4-octet message (offered layers,
   maximum buffer size); the client unwraps it, chooses "no security layer" (Kafka offers no
   other: TLS protects the connection when wanted) with a maximum size of 0, appends its
   authorization id (its principal, as Java's client sends) and answers with that wrapped
   without confidentiality. The broker sends nothing more: the SASL server returns no final
   token (Java's GssKrb5Server returns null), so after SaslHandshake v0 (KIP-43, raw tokens,
   https://cwiki.apache.org/confluence/x/TVEvAw) no raw token follows the client's answer;
   with SaslAuthenticate its response simply carries empty bytes.

Credentials (``kerberos.py`` decides which): a keytab's bytes shipped with the plan are given
to MIT Kerberos as a file only this process can open, an anonymous in-memory file
(``memfd_create``, reached as ``/proc/self/fd/N``) where Linux has it, else a 0600 file in a
0700 temporary directory removed at exit; tickets go to a private ``MEMORY:`` credential cache
per principal and keytab, so the user's own ticket cache is neither read nor overwritten, and
MIT Kerberos gets a new ticket from the keytab before the old one expires (its client keytab
support, https://web.mit.edu/kerberos/krb5-latest/doc/basic/keytab_def.html). Without a
keytab the process's default credentials are used (``KRB5CCNAME``, or MIT's default client
keytab). ``krb5.conf`` comes from the environment (``KRB5_CONFIG``, else ``/etc/krb5.conf``)
as for every Kerberos client.

The ``gssapi`` package (python-gssapi, over the system's MIT Kerberos) is an optional extra,
imported only when a GSSAPI login is configured.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from types import ModuleType
from typing import Any

from spark_kafka_wire.client.errors import SECURITY_SETTING, ConfigurationError
from spark_kafka_wire.client.security.sasl.kerberos import KerberosConfig

INSTALL_HINT = ("kafka.sasl.mechanism=GSSAPI needs the gssapi package (python-gssapi, built "
                "against MIT Kerberos) on the driver and on every executor: apt-get install "
                "libkrb5-dev (Debian/Ubuntu; krb5-devel on RHEL), then pip install "
                "gssapi (kafkawire's [kerberos] extra)")

#: RFC 4752 section 3.1: the security layers of the bit-mask; Kafka offers only the first.
NO_SECURITY_LAYER = 0x01
INTEGRITY_LAYER = 0x02
CONFIDENTIALITY_LAYER = 0x04


class KerberosFailure(ValueError):
    """A GSSAPI step failed; the message already says what to check (which principal, which
    service principal, krb5.conf, the keytab), so the caller adds no advice of its own."""


def load_gssapi() -> ModuleType:
    """The ``gssapi`` package; ConfigurationError saying what to install when it is missing."""
    try:
        import gssapi  # noqa: PLC0415 (an optional extra, needed only for GSSAPI logins)
    except ImportError as exc:
        raise ConfigurationError.of(
            SECURITY_SETTING, "GSSAPI_MISSING", install_hint=INSTALL_HINT, exc=str(exc)) from None
    return gssapi


# ------------------------------------------------------------------------- security layer


def security_layer_answer(offer: bytes, authzid: str) -> bytes:
    """The client's answer to the broker's unwrapped security-layer offer (RFC 4752 3.1),
    before wrapping: "no security layer" (0x01), a maximum size of 0 (which RFC 4752 requires
    when the client supports no layer) and the UTF-8 authorization id, not NUL-terminated.

    KerberosFailure when the offer is not 4 octets or does not offer "no security layer".
    """
    if len(offer) != 4:
        raise KerberosFailure(f"the broker's GSSAPI security-layer message has {len(offer)} "
                              "octets instead of 4 (RFC 4752 section 3.1)")
    if not offer[0] & NO_SECURITY_LAYER:
        raise KerberosFailure(
            f"the broker requires a GSSAPI security layer (offered layers 0x{offer[0]:02x}); "
            "kafkawire, like Kafka's clients, supports only 'no security layer' (use SASL_SSL "
            "for a protected connection)")
    return bytes([NO_SECURITY_LAYER, 0, 0, 0]) + authzid.encode("utf-8")


# ---------------------------------------------------------------------------- credentials

_lock = threading.Lock()
_keytabs: dict[str, str] = {}  # sha256 of a keytab's bytes -> its keytab name in this process
_private_dirs: list[str] = []


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big") + part)
    return h.hexdigest()


def _memfd_keytab(data: bytes) -> str | None:
    """An anonymous in-memory file holding ``data``, sealed against change; None where the
    system has no memfd_create or no /proc."""
    create = getattr(os, "memfd_create", None)
    if create is None or not os.path.isdir("/proc/self/fd"):
        return None
    flags = getattr(os, "MFD_CLOEXEC", 0) | getattr(os, "MFD_ALLOW_SEALING", 0)
    try:
        fd = create("kafkawire-keytab", flags)
    except OSError:
        return None
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    try:
        import fcntl  # noqa: PLC0415 (POSIX only; sealing is a safeguard, not a need)

        seals = sum(getattr(fcntl, n, 0) for n in
                    ("F_SEAL_SHRINK", "F_SEAL_GROW", "F_SEAL_WRITE", "F_SEAL_SEAL"))
        if seals and hasattr(fcntl, "F_ADD_SEALS"):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except (ImportError, OSError):
        pass
    return f"FILE:/proc/self/fd/{fd}"


def _remove_private_dirs() -> None:
    for directory in _private_dirs:
        shutil.rmtree(directory, ignore_errors=True)


def private_file_keytab(data: bytes) -> str:
    """``data`` in a 0600 file inside a fresh 0700 directory, removed when the process exits:
    where memfd_create is missing (not Linux)."""
    directory = tempfile.mkdtemp(prefix="kafkawire-keytab-")  # 0700 by definition
    if not _private_dirs:
        atexit.register(_remove_private_dirs)
    _private_dirs.append(directory)
    path = os.path.join(directory, "client.keytab")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return f"FILE:{path}"


def keytab_name(data: bytes) -> str:
    """A keytab name MIT Kerberos can open for ``data`` in this process, made once per keytab
    (an in-memory file where possible, else a private file)."""
    key = _digest(data)
    with _lock:
        name = _keytabs.get(key)
        if name is None:
            name = _memfd_keytab(data) or private_file_keytab(data)
            _keytabs[key] = name
        return name


def credential_store(kerberos: KerberosConfig) -> dict[str, str] | None:
    """The gss_acquire_cred_from store of a login: a keytab login's own keytab and a private
    MEMORY credential cache; a ticket cache when one is named; None for the defaults."""
    if kerberos.keytab is not None:
        cache = _digest((kerberos.principal or "").encode(), kerberos.keytab)[:24]
        return {"client_keytab": keytab_name(kerberos.keytab),
                "ccache": f"MEMORY:kafkawire-{cache}"}
    if kerberos.ticket_cache:
        return {"ccache": kerberos.ticket_cache}
    return None


# ---------------------------------------------------------------------------------- errors

# MIT Kerberos minor status codes (krb5.h; RFC 4120 section 7.5.9 for the KDC's error codes).
_C_PRINCIPAL_UNKNOWN = -1765328378
_S_PRINCIPAL_UNKNOWN = -1765328377
_CLIENT_REVOKED = -1765328366
_KEY_EXPIRED = -1765328361
_PREAUTH_FAILED = -1765328360
_BAD_INTEGRITY = -1765328353
_TICKET_EXPIRED = -1765328352
_CLOCK_SKEW = -1765328347
_CACHE_NOT_FOUND = -1765328243
_REALM_UNKNOWN = -1765328230
_KDC_UNREACHABLE = -1765328228
_KEYTAB_NO_ENTRY = -1765328203
_NO_CACHE_FILE = -1765328189
_NO_DEFAULT_REALM = -1765328160

_KRB5_CONF = "krb5.conf (KRB5_CONFIG, else /etc/krb5.conf)"


def _signed(code: int) -> int:
    return code - (1 << 32) if code >= 1 << 31 else code


def explain(code: int | None, mit_message: str, kerberos: KerberosConfig,
            service_principal: str) -> str:
    """What failed and what to check, for MIT Kerberos's minor status ``code``."""
    who = kerberos.who
    source = (f"the keytab {kerberos.keytab_path!r}" if kerberos.keytab is not None
              else "the ticket cache")
    signed = _signed(code) if code is not None else None
    if signed == _S_PRINCIPAL_UNKNOWN:
        advice = (f"the KDC knows no service principal for {service_principal} (asked as "
                  f"host-based service {service_principal!r}). Check "
                  "kafka.sasl.kerberos.service.name (the first part of the broker's principal, "
                  "e.g. kafka for kafka/broker1.example.com@REALM), that kafka.bootstrap.servers "
                  "and the brokers' advertised listeners use the host names of the brokers' "
                  f"principals (not IP addresses; DNS must resolve them), and [domain_realm] in "
                  f"{_KRB5_CONF}")
    elif signed == _C_PRINCIPAL_UNKNOWN:
        advice = (f"the KDC does not know the principal {who!r}: check principal= in "
                  "kafka.sasl.jaas.config, including its realm")
    elif signed in (_PREAUTH_FAILED, _BAD_INTEGRITY):
        advice = (f"the key in {source} for {who!r} is not the KDC's: the keytab is stale (the "
                  "principal's key changed since it was exported, e.g. by a new ktadd) or "
                  "belongs to another principal or realm; export a fresh keytab")
    elif signed == _CLOCK_SKEW:
        advice = ("the clocks of this machine and the KDC or the broker differ by more than "
                  "Kerberos allows (5 minutes by default): synchronize them (NTP)")
    elif signed in (_KDC_UNREACHABLE, _REALM_UNKNOWN, _NO_DEFAULT_REALM):
        advice = ("no KDC could be reached for the realm: check the realm's kdc entries (and "
                  f"default_realm) in {_KRB5_CONF} on this machine, and that the KDC's port "
                  "there (88 when the entry names none) is reachable from here")
    elif signed in (_CLIENT_REVOKED, _KEY_EXPIRED):
        advice = f"the KDC refuses {who!r}: the principal is locked, disabled or its key expired"
    elif signed == _TICKET_EXPIRED:
        advice = (f"the Kerberos ticket of {who!r} has expired: kinit again, or log in with "
                  "a keytab (useKeyTab=true keyTab=... principal=...), which is renewed "
                  "automatically")
    elif signed in (_NO_CACHE_FILE, _CACHE_NOT_FOUND, _KEYTAB_NO_ENTRY) \
            and kerberos.keytab is not None:
        advice = (f"no Kerberos ticket could be obtained for {who!r} from {source}: check "
                  "that the principal exists in the KDC and that the keytab holds its "
                  "current key")
    elif signed in (_NO_CACHE_FILE, _CACHE_NOT_FOUND, _KEYTAB_NO_ENTRY):
        cache = kerberos.ticket_cache or "the default ticket cache (KRB5CCNAME)"
        whose = f" for {kerberos.principal!r}" if kerberos.principal else ""
        advice = (f"no Kerberos credentials{whose} in {cache} on this machine: run kinit "
                  "on every machine that connects (the driver and each executor), or log in "
                  "with a keytab (useKeyTab=true keyTab=\"...\" principal=\"...\"), which "
                  "kafkawire ships to the executors")
    else:
        advice = (f"check the principal {who!r} and {source}, {_KRB5_CONF}, and the service "
                  f"principal {service_principal!r} (kafka.sasl.kerberos.service.name and the "
                  "broker's host name)")
    return f"Kerberos: {mit_message.rstrip('.')}. {advice[0].upper()}{advice[1:]}"


def _mit_message(exc: Any) -> str:
    """MIT's own text of the minor status (the major one is GSS-API boilerplate)."""
    try:
        minor = exc.get_all_statuses(exc.min_code, False)
        text = "; ".join(s for s in minor if s) if minor else ""
    except Exception:  # display_status itself failed: keep the generic text
        text = ""
    return text or exc.gen_message()


# ------------------------------------------------------------------------------- mechanism


class Gssapi:
    """RFC 4752 client (see the module docstring): ``first()`` acquires the credentials and
    returns the first context token, ``step`` answers each broker token."""

    #: After its last token the client reads no answer under SaslHandshake v0 (see above).
    answers_final_token = False

    def __init__(self, kerberos: KerberosConfig, host: str) -> None:
        self._kerberos = kerberos
        self._gssapi = load_gssapi()
        self.service = f"{kerberos.service_name}@{host}"
        self._ctx: Any = None
        self._stage = "context"
        self.done = False

    def _failure(self, exc: Any) -> KerberosFailure:
        code = getattr(exc, "min_code", None)
        return KerberosFailure(explain(code, _mit_message(exc), self._kerberos, self.service))

    def first(self) -> bytes:
        gssapi = self._gssapi
        try:
            name = None
            if self._kerberos.principal:
                name = gssapi.Name(self._kerberos.principal, gssapi.NameType.kerberos_principal)
            creds = gssapi.Credentials(name=name, usage="initiate",
                                       store=credential_store(self._kerberos))
            target = gssapi.Name(self.service, gssapi.NameType.hostbased_service)
            flags = (gssapi.RequirementFlag.mutual_authentication
                     | gssapi.RequirementFlag.integrity)
            self._ctx = gssapi.SecurityContext(name=target, creds=creds, usage="initiate",
                                               mech=gssapi.MechType.kerberos, flags=flags)
            return bytes(self._ctx.step() or b"")
        except gssapi.exceptions.GSSError as exc:
            raise self._failure(exc) from None

    def step(self, token: bytes) -> bytes | None:
        gssapi = self._gssapi
        try:
            if self._stage == "context":
                out = self._ctx.step(token)
                if not self._ctx.complete:
                    return bytes(out or b"")
                if gssapi.RequirementFlag.mutual_authentication not in self._ctx.actual_flags:
                    raise KerberosFailure("the broker did not prove its identity (no mutual "
                                          "authentication); refusing to continue")
                self._stage = "layer"
                return bytes(out or b"")  # RFC 4752: an empty response when no token is left
            if self._stage == "layer":
                offer = self._ctx.unwrap(token).message
                answer = security_layer_answer(bytes(offer), str(self._ctx.initiator_name))
                self._stage = "done"
                self.done = True
                return bytes(self._ctx.wrap(answer, False).message)
        except gssapi.exceptions.GSSError as exc:
            raise self._failure(exc) from None
        raise KerberosFailure("the broker sent a GSSAPI token after the exchange ended")
