"""What a SASL login needs, small and picklable so it travels with Spark plans."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_kafka_wire.client.security.sasl.kerberos import KerberosConfig
from spark_kafka_wire.client.security.sasl.oauth_config import OAuthConfig

#: The mechanisms this client speaks (RFC 4616 PLAIN; RFC 5802/7677 SCRAM, KIP-84; RFC 7628
#: OAUTHBEARER, KIP-255; RFC 4752 GSSAPI, Kerberos).
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")


@dataclass(frozen=True)
class SaslConfig:
    """A mechanism and its credentials. The password is a secret: the repr never shows it,
    so plans, partitions, writers and ``df.explain()`` cannot leak it."""

    mechanism: str
    username: str
    password: str = field(repr=False)
    # OAUTHBEARER: where tokens come from (``username`` names the principal, ``password`` is
    # empty); its repr hides the client secret and the claims.
    oauth: OAuthConfig | None = None
    #: GSSAPI only: the Kerberos credentials (its repr hides the keytab's bytes); ``username``
    #: is then the principal, for messages, and ``password`` empty.
    kerberos: KerberosConfig | None = None

    def __repr__(self) -> str:
        oauth = f", oauth={self.oauth!r}" if self.oauth is not None else ""
        kerberos = f", kerberos={self.kerberos!r}" if self.kerberos is not None else ""
        return f"SaslConfig(mechanism={self.mechanism}, username={self.username!r}, " \
               f"password=<hidden>{oauth}{kerberos})"
