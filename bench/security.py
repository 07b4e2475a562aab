"""The secured brokers of the bench's SSL and SASL_SSL rows, from the test suite's own test
environment (tests/support): Tansu behind Debian's stunnel4 for SSL, and behind the SASL test
front (SCRAM-SHA-512) and stunnel for SASL_SSL. Each protocol has a broker of its own, so every
row writes its data anew over that protocol.

What the rows measure is the whole path: client TLS + stunnel (+ the SASL front, a Python asyncio
relay) + Tansu. kafkawire and librdkafka go through the same path, so the kw/peer ratio is fair;
the ratio of an SSL row to the PLAINTEXT row of the same scenario is what TLS costs kafkawire.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")
SASL_MECHANISM = "SCRAM-SHA-512"


def missing_tools(protocols: list[str]) -> str | None:
    """Why the secured rows cannot run here, or None."""
    if any(p != "PLAINTEXT" for p in protocols) and shutil.which("stunnel4") is None \
            and shutil.which("stunnel") is None:
        return "stunnel4 is not installed (apt-get install stunnel4)"
    return None


@contextmanager
def secured_endpoints(protocols: list[str]) -> Iterator[dict[str, dict[str, str]]]:
    """``{protocol: kafka.* options}`` for every secured protocol asked for (PLAINTEXT is the
    bench's own embedded broker), stopped on exit. The options use only names that librdkafka
    shares (``ssl.ca.location``, ``sasl.username``), so one dict configures both clients."""
    from tests.support.certs import make_pki, remove_pki
    from tests.support.sasl_front import start_sasl_broker
    from tests.support.sasl_mechanisms import Credentials
    from tests.support.security_env import SASL_USERS
    from tests.support.tls_front import start_tls_broker

    out: dict[str, dict[str, str]] = {}
    with ExitStack() as stack:
        pki = make_pki()
        stack.callback(remove_pki, pki)
        tls = {"kafka.ssl.ca.location": pki.ca_pem}
        if "SSL" in protocols:
            broker = stack.enter_context(start_tls_broker(pki))
            out["SSL"] = {"kafka.bootstrap.servers": broker.bootstrap_servers,
                          "kafka.security.protocol": "SSL", **tls}
        if "SASL_SSL" in protocols:
            sasl = stack.enter_context(start_sasl_broker(
                Credentials(users=dict(SASL_USERS)), pki=pki, mechanisms=(SASL_MECHANISM,)))
            user = sorted(SASL_USERS)[0]
            out["SASL_SSL"] = {"kafka.bootstrap.servers": sasl.bootstrap_servers,
                               "kafka.security.protocol": "SASL_SSL", **tls,
                               "kafka.sasl.mechanism": SASL_MECHANISM,
                               "kafka.sasl.username": user,
                               "kafka.sasl.password": SASL_USERS[user]}
        yield out
