"""What a GSSAPI (Kerberos) login needs, decided on the driver and shipped with the plan.

Kafka's Java client takes its Kerberos credentials from a JAAS entry for
``com.sun.security.auth.module.Krb5LoginModule`` (Kafka docs, "Authentication using
SASL/Kerberos", https://kafka.apache.org/documentation/#security_sasl_kerberos_clientconfig;
the module's options:
https://docs.oracle.com/javase/8/docs/jre/api/security/jaas/spec/com/sun/security/auth/module/Krb5LoginModule.html).
Two ways of holding credentials matter for a client:

* a keytab (``useKeyTab=true keyTab="..." principal="..."``): the file is read here, where the
  query is defined, and its bytes travel inside :class:`KerberosConfig` to every executor, as
  TLS stores do, so executors need no such path and no ``kinit``;
* the process's own credentials (``useTicketCache=true``, or no JAAS entry at all): MIT
  Kerberos's default ticket cache (``KRB5CCNAME``) or default client keytab
  (``KRB5_CLIENT_KTNAME``), on each process that connects, as librdkafka and ``kinit`` users
  expect.

No ``gssapi`` import here: this module only decides and checks; ``gssapi.py`` logs in.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from spark_kafka_wire.client import defaults
from spark_kafka_wire.client.errors import CONFLICTING_OPTIONS, SECURITY_SETTING, ConfigurationError
from spark_kafka_wire.client.security.sasl.jaas import shown_module

KRB5_MODULE = "com.sun.security.auth.module.Krb5LoginModule"
DEFAULT_SERVICE_NAME = defaults.SASL_KERBEROS_SERVICE_NAME
_WHAT = "kafka.sasl.jaas.config"


@dataclass(frozen=True)
class KerberosConfig:
    """The Kerberos side of a GSSAPI login: small, frozen and picklable.

    ``keytab`` holds the keytab's bytes (a secret: it holds the principal's keys), so the repr
    shows only where it was read from; ``keytab_path`` is kept for messages only. Without a
    keytab the process's default credentials are used (``ticket_cache`` names a cache
    instead of ``KRB5CCNAME``'s).
    """

    service_name: str = DEFAULT_SERVICE_NAME
    principal: str | None = None
    keytab: bytes | None = field(default=None, repr=False)
    keytab_path: str | None = None
    ticket_cache: str | None = None

    def __repr__(self) -> str:
        source = (f"keytab={self.keytab_path!r} (<{len(self.keytab)} bytes hidden>)"
                  if self.keytab is not None else
                  f"ticket_cache={self.ticket_cache or 'default'!r}")
        return (f"KerberosConfig(service_name={self.service_name!r}, "
                f"principal={self.principal!r}, {source})")

    @property
    def who(self) -> str:
        """The user named in messages."""
        return self.principal or "<the ticket cache's principal>"


def _flag(options: dict[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise ConfigurationError.of(SECURITY_SETTING, "JAAS_BOOLEAN", what=_WHAT, key=key)
    return value == "true"


def read_keytab(path: str, what: str, shown: str | None = None) -> bytes:
    """A keytab's bytes, read on the driver; ConfigurationError naming the keytab otherwise
    (``shown``: how, when the path must not be quoted; by default the path itself)."""
    name = shown or f"the keytab {path!r}"
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        # strerror, not str(exc): the latter quotes the path
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ConfigurationError.of(
            SECURITY_SETTING, "KEYTAB_UNREADABLE", what=what, name=name, reason=reason) from None
    principals = keytab_principals(data)
    if principals is None:
        raise ConfigurationError.of(
            SECURITY_SETTING, "NOT_A_KEYTAB", what=what, name=name)
    if not principals:
        raise ConfigurationError.of(SECURITY_SETTING, "KEYTAB_EMPTY", what=what, name=name)
    return data


def keytab_principals(data: bytes) -> list[str] | None:
    """The principals a keytab holds keys for, in file order without repeats; None when the
    bytes are not a version 2 keytab.

    The format is MIT's (https://web.mit.edu/kerberos/krb5-latest/doc/formats/keytab_file_format.html):
    ``0x05 0x02``, then entries, each a signed 32-bit size (negative: a hole left by a removed
    entry) and, in version 2, big-endian fields: component count, realm and components as
    16-bit-length strings, name type, timestamp, key version, key. Read here only to name the
    principals in a message when the configured one is missing, before any task runs.
    """
    if len(data) < 2 or data[0] != 5 or data[1] != 2:
        return None
    found: list[str] = []
    pos = 2
    try:
        while pos + 4 <= len(data):
            (size,) = struct.unpack_from(">i", data, pos)
            pos += 4
            if size <= 0:
                pos += -size
                continue
            if pos + size > len(data):
                return None  # cut short: not a keytab MIT Kerberos could read either
            entry, pos = data[pos:pos + size], pos + size
            (count,) = struct.unpack_from(">H", entry, 0)
            at = 2
            strings = []
            for _ in range(count + 1):  # the realm, then the components
                (n,) = struct.unpack_from(">H", entry, at)
                strings.append(entry[at + 2:at + 2 + n].decode("utf-8"))
                at += 2 + n
                if at > len(entry):
                    return None
            name = "/".join(strings[1:]) + "@" + strings[0]
            if name not in found:
                found.append(name)
    except (struct.error, UnicodeDecodeError):
        return None
    return found


def principal_in(principal: str, principals: list[str]) -> bool:
    """Whether ``principal`` (with or without its realm, which then is krb5.conf's default
    realm) is among a keytab's principals."""
    if "@" in principal:
        return principal in principals
    return any(p.rsplit("@", 1)[0] == principal for p in principals)


def kerberos_from_jaas(module: str, options: dict[str, str], service_name: str | None
                       ) -> KerberosConfig:
    """The credentials of a ``Krb5LoginModule`` entry (already parsed by ``parse_jaas``).

    ``service_name`` is ``kafka.sasl.kerberos.service.name`` when set; the entry's own
    ``serviceName`` may give it too, and the two must agree (the Java client's rule).
    """
    if module != KRB5_MODULE:
        raise ConfigurationError.of(
            SECURITY_SETTING, "GSSAPI_JAAS_MODULE", what=_WHAT, krb5_module=KRB5_MODULE,
            module=shown_module(module))
    jaas_service = options.get("serviceName")
    if jaas_service is not None and service_name is not None and jaas_service != service_name:
        raise ConfigurationError.of(
            CONFLICTING_OPTIONS, "KERBEROS_SERVICE_NAMES", what=_WHAT,
            service_name=service_name)
    service = (jaas_service or service_name or DEFAULT_SERVICE_NAME).strip()
    use_keytab, use_cache = _flag(options, "useKeyTab"), _flag(options, "useTicketCache")
    principal = options.get("principal") or None
    keytab_path = options.get("keyTab")
    if keytab_path is not None and not use_keytab:
        raise ConfigurationError.of(SECURITY_SETTING, "KEYTAB_WITHOUT_USEKEYTAB", what=_WHAT)
    if use_keytab and keytab_path:
        if principal is None:
            raise ConfigurationError.of(
                SECURITY_SETTING, "KEYTAB_NEEDS_PRINCIPAL", what=_WHAT)
        return keytab_config(principal, keytab_path.strip(), service, _WHAT, in_jaas=True)
    if use_keytab or use_cache:
        # No keyTab: MIT's default client keytab or the ticket cache of each process.
        return KerberosConfig(service_name=service, principal=principal,
                              ticket_cache=options.get("ticketCache") or None)
    raise ConfigurationError.of(
        SECURITY_SETTING, "KRB5_LOGIN", what=_WHAT, krb5_module=KRB5_MODULE)


def keytab_config(principal: str, path: str, service: str, what: str,
                  in_jaas: bool = False) -> KerberosConfig:
    """A keytab login: the file read now, and checked to hold the principal's keys.
    ``in_jaas``: the path and principal come from a JAAS entry, whose text messages never
    quote (a misplaced quote can put a password anywhere in it); they are named by their
    keys instead. The principals the keytab holds come from the file and are shown."""
    keytab = f"the keytab named by keyTab in {what}" if in_jaas else f"the keytab {path!r}"
    who = f"the principal of {what}" if in_jaas else f"principal {principal!r}"
    data = read_keytab(path, what, keytab)
    principals = keytab_principals(data) or []
    if not principal_in(principal, principals):
        raise ConfigurationError.of(
            SECURITY_SETTING, "KEYTAB_PRINCIPAL", what=what, keytab=keytab, who=who,
            principals=', '.join(principals))
    return KerberosConfig(service_name=service, principal=principal, keytab=data,
                          keytab_path=path)
