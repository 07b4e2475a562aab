"""How kafkawire reaches ZooKeeper beyond plain TCP: the settings, small and picklable.

Kept apart from ``client/zookeeper/consumer_offsets.py`` (which opens the sessions, with kazoo) so that
:class:`~spark_kafka_wire.client.config.ClientConfig` can hold them without importing the
ZooKeeper client.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from spark_kafka_wire.client.errors import SECURITY_SETTING, ConfigurationError
from spark_kafka_wire.client.security.tls import TlsConfig

#: SASL mechanism of ZooKeeper's DigestLoginModule, the only one kafkawire logs in with.
DIGEST_MD5 = "DIGEST-MD5"


@dataclass(frozen=True)
class ZooKeeperSecurity:
    """How kafkawire talks to ZooKeeper beyond plain TCP: TLS (``tls``, the same
    :class:`TlsConfig` of bytes the broker connections use, read from ``zookeeper.ssl.*`` on
    the driver) and a SASL DIGEST-MD5 login (``sasl_user`` / ``sasl_password``, from
    ``zookeeper.sasl.jaas.config``). Whoever can write to an unprotected ZooKeeper chooses the
    bootstrap brokers (and so receives the SASL passwords sent to them); TLS with host name
    verification and a login close that door.

    The password is a secret: the repr never shows it (nor does the TlsConfig's repr show
    the key), so plans, configs and error messages cannot leak it.
    """

    tls: TlsConfig | None = None
    sasl_user: str | None = None
    sasl_password: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        login = (f"SASL {DIGEST_MD5} user={self.sasl_user!r} password=<hidden>"
                 if self.sasl_user is not None else "no login")
        return f"ZooKeeperSecurity(tls={self.tls!r}, {login})"

    def sasl_options(self) -> dict[str, str] | None:
        """kazoo's ``sasl_options`` (pure-sasl's arguments), a fresh dict: kazoo adds to it."""
        if self.sasl_user is None:
            return None
        return {"mechanism": DIGEST_MD5, "username": self.sasl_user,
                "password": self.sasl_password or ""}


def check_sasl_support() -> None:
    """kazoo speaks SASL through pure-sasl, which it imports only if installed; without it a
    login would fail inside kazoo's connection thread, so say so where options are parsed."""
    if importlib.util.find_spec("puresasl") is None:
        raise ConfigurationError.of(SECURITY_SETTING, "PURE_SASL_MISSING")
