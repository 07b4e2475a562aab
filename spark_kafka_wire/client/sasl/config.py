"""What a SASL login needs, small and picklable so it travels with Spark plans."""

from __future__ import annotations

from dataclasses import dataclass, field

#: The mechanisms this client speaks (RFC 4616 PLAIN; RFC 5802/7677 SCRAM, KIP-84).
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: Mechanisms of the Java client that are not implemented yet (refused with a clear message).
NOT_YET = ("GSSAPI", "OAUTHBEARER")


@dataclass(frozen=True)
class SaslConfig:
    """A mechanism and its credentials. The password is a secret: the repr never shows it,
    so plans, partitions, writers and ``df.explain()`` cannot leak it."""

    mechanism: str
    username: str
    password: str = field(repr=False)

    def __repr__(self) -> str:
        return f"SaslConfig(mechanism={self.mechanism}, username={self.username!r}, " \
               "password=<hidden>)"
