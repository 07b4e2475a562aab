"""The SASL exchange on one connection, right after ApiVersions (and TLS), before any other
request; run again for KIP-368 re-authentication.

SaslHandshake v1 (KIP-152) is followed by SaslAuthenticate requests carrying the tokens; v0
(KIP-43) by raw tokens, each a 4-byte big-endian length and the bytes, outside Kafka's request
framing. The versions are chosen from the broker's ApiVersions: SaslHandshake v1 and the
highest common SaslAuthenticate version when the broker offers both, else v0 with raw tokens
(https://kafka.apache.org/protocol#sasl_handshake).

Under v0 the broker answers a mechanism's last token with an (empty) raw token, except for
GSSAPI, whose last token gets no answer (``answers_final_token`` on the mechanism; see
``gssapi.py``).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from spark_kafka_wire.client.errors import BrokerConnectionError, SaslAuthenticationError
from spark_kafka_wire.client.security.sasl.config import SaslConfig
from spark_kafka_wire.client.security.sasl.gssapi import KerberosFailure
from spark_kafka_wire.client.security.sasl.mechanisms import mechanism_for
from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.errors import ErrorCode, KafkaWireError
from spark_kafka_wire.protocol.messages import METADATA, SASL_AUTHENTICATE, SASL_HANDSHAKE
from spark_kafka_wire.protocol.versions import BrokerVersions

log = logging.getLogger(__name__)

#: Mechanisms whose token is the secret itself (PLAIN's password, OAUTHBEARER's bearer
#: token), readable and reusable by anyone on the path without TLS; SCRAM and GSSAPI never
#: send theirs.
CLEARTEXT_SECRETS = {"PLAIN": "password", "OAUTHBEARER": "bearer token"}
_cleartext_lock = threading.Lock()
_cleartext_warned = False


def warn_cleartext(mechanism: str, broker: str, security_protocol: str) -> None:
    """Warn, once per process, that ``mechanism`` over SASL_PLAINTEXT sends its secret in
    clear, as librdkafka warns when its configuration does that. Once: every connection of
    every task logs in, and a warning per login would bury everything else; the first names
    the mechanism and the broker, which is what the reader needs to find the setting."""
    global _cleartext_warned
    what = CLEARTEXT_SECRETS.get(mechanism)
    if what is None or security_protocol != "SASL_PLAINTEXT":
        return
    with _cleartext_lock:
        if _cleartext_warned:
            return
        _cleartext_warned = True
    log.warning("SASL %s over SASL_PLAINTEXT sends the %s unencrypted to broker %s (and every "
                "other broker): anyone on the network path can read and reuse it. Use "
                "kafka.security.protocol=SASL_SSL (logged once per process)", mechanism, what,
                broker)


class Link(Protocol):
    """What the exchange needs from a connection."""

    name: str
    host: str  # the broker's host as connected (GSSAPI's service principal names it)
    api_versions: BrokerVersions

    def request(self, spec: ApiSpec, body: dict[str, Any],
                version: int | None = None) -> dict[str, Any]: ...

    def send_raw(self, token: bytes) -> None: ...

    def receive_raw(self) -> bytes: ...


def _common(versions: BrokerVersions, spec: ApiSpec) -> int | None:
    span = versions.get(spec.key)
    if span is None:
        return None
    top = min(span[1], spec.max_version)
    return top if top >= max(span[0], spec.min_version) else None


def choose_versions(versions: BrokerVersions) -> tuple[int, int | None]:
    """(SaslHandshake version, SaslAuthenticate version or None for raw tokens)."""
    handshake = _common(versions, SASL_HANDSHAKE)
    auth = _common(versions, SASL_AUTHENTICATE)
    if handshake is not None and handshake >= 1 and auth is not None:
        return 1, auth
    return 0, None


def what_to_check(config: SaslConfig) -> str:
    """The advice for a broker's refusal of ``config``'s credentials."""
    if config.mechanism == "GSSAPI":
        service = config.kerberos.service_name if config.kerberos else "kafka"
        return ("Check the principal and its keytab or ticket cache (kafka.sasl.jaas.config), "
                f"that the broker's principal is {service}/<broker host>@<realm> "
                "(kafka.sasl.kerberos.service.name) and that the broker's keytab holds its "
                "current key")
    return ("Check the user name and password (kafka.sasl.jaas.config or "
            "kafka.sasl.username/kafka.sasl.password) and that the user "
            f"exists for {config.mechanism} on the broker")


def _without_sasl(security_protocol: str) -> str:
    """The security protocol of the same transport without SASL."""
    return "SSL" if security_protocol == "SASL_SSL" else "PLAINTEXT"


def _refused_although_listed(link: Link, mechanism: str, code: int, listed: list[str],
                             security_protocol: str) -> str:
    """Why a SaslHandshake was refused although the answer does not say the mechanism is
    missing: Kafka's non-SASL listeners answer ILLEGAL_SASL_STATE (34), and brokers without
    SASL (Tansu) answer UNSUPPORTED_SASL_MECHANISM (33) listing just the mechanism asked for,
    so "not enabled; it enables: PLAIN" would contradict itself. A Metadata request settles
    it: a SASL listener closes a connection that sends one before logging in (Kafka does),
    any other listener answers it."""
    said = f"error {code}, {ErrorCode(code).name}" + (
        f", while listing {', '.join(listed)} as enabled" if listed else "")
    try:
        link.request(METADATA, {"topics": [], "allow_auto_topic_creation": False})
    except KafkaWireError:  # BrokerConnectionError: the connection was closed
        return (f"the broker refused {mechanism} ({said}), and closed the connection when "
                "asked for metadata without a login, as a SASL listener does: its SASL "
                f"setup is inconsistent. Check that {mechanism} is in the listener's "
                "sasl.enabled.mechanisms and that the broker has credentials for it")
    return (f"this listener does not take SASL logins: it refused {mechanism} ({said}) and "
            "answered a metadata request without any login. Use kafka.security.protocol="
            f"{_without_sasl(security_protocol)}, or the broker's SASL port")


def authenticate(link: Link, config: SaslConfig, security_protocol: str) -> int:
    """Log in on ``link``; the session lifetime in ms the broker granted (0: unlimited).

    Raises SaslAuthenticationError, which names the broker, protocol, mechanism and user and
    says what to check, never the password.
    """

    def fail(reason: str, code: int | None = None) -> SaslAuthenticationError:
        return SaslAuthenticationError(link.name, reason, security_protocol, config.mechanism,
                                       config.username, code)

    handshake_version, auth_version = choose_versions(link.api_versions)
    answer = link.request(SASL_HANDSHAKE, {"mechanism": config.mechanism},
                          version=handshake_version)
    code = answer["error_code"]
    listed = list(answer.get("mechanisms") or [])
    if code == ErrorCode.ILLEGAL_SASL_STATE or (
            code == ErrorCode.UNSUPPORTED_SASL_MECHANISM and config.mechanism in listed):
        raise fail(_refused_although_listed(link, config.mechanism, code, listed,
                                            security_protocol), code)
    if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        enabled = ", ".join(listed) or "none"
        raise fail(f"the broker has not enabled {config.mechanism} (error 33, "
                   f"UNSUPPORTED_SASL_MECHANISM); it enables: {enabled}. Set "
                   "kafka.sasl.mechanism to one of those, or enable it on the listener", code)
    if code != 0:
        raise fail(f"SaslHandshake answered error {code}", code)
    mech = mechanism_for(config, link.host)

    def advice(default: str) -> str:
        own = getattr(mech, "what_to_check", None)  # a mechanism's own advice (OAUTHBEARER)
        return own() if callable(own) else default

    warn_cleartext(config.mechanism, link.name, security_protocol)
    try:
        token: bytes | None = mech.first()
    except KerberosFailure as exc:  # no ticket: KDC unreachable, unknown principal, ...
        raise fail(str(exc)) from None
    lifetime = 0
    try:
        while token is not None:
            if auth_version is None:
                link.send_raw(token)
                if mech.done:
                    # PLAIN over raw tokens: Kafka answers success with an empty token and
                    # failure by closing the connection (KIP-43); GSSAPI's last token gets
                    # no answer.
                    if getattr(mech, "answers_final_token", True):
                        link.receive_raw()
                    break
                server = link.receive_raw()
            else:
                reply = link.request(SASL_AUTHENTICATE, {"auth_bytes": token},
                                     version=auth_version)
                code = reply["error_code"]
                if code != 0:
                    message = reply.get("error_message") or "no message"
                    raise fail(f"the broker refused the credentials: {message} (error {code}"
                               f"{', SASL_AUTHENTICATION_FAILED' if code == 58 else ''}). "
                               + advice(what_to_check(config)), code)
                lifetime = int(reply.get("session_lifetime_ms") or 0)
                server = reply["auth_bytes"] or b""
                if mech.done:
                    break
            try:
                token = mech.step(bytes(server))
            except KerberosFailure as exc:
                raise fail(str(exc)) from None
            except ValueError as exc:  # the mechanism refused the server's tokens
                raise fail(f"{exc}. " + advice(what_to_check(config))) from None
    except BrokerConnectionError as exc:
        if auth_version is not None:
            raise
        raise fail(f"the broker closed the connection during the raw-token exchange "
                   f"(SaslHandshake v0), which is how it refuses credentials: {exc.reason}. "
                   + advice(what_to_check(config))) from None
    if not mech.done:
        raise fail("the broker ended the exchange before it was complete")
    return lifetime


#: Apache Kafka refuses a re-authentication that begins less than a second after the previous
#: re-authentication began (KIP-368; KafkaChannel.maybeBeginServerReauthentication): the
#: SaslHandshake then reaches its request handler, which answers ILLEGAL_SASL_STATE. A first
#: login does not count.
MIN_REAUTH_INTERVAL_S = 1.0
#: How much later than the client Kafka may note the start of a re-authentication (the
#: SaslHandshake's way to the broker), and how much of a session must be left when one begins.
REAUTH_MARGIN_S = 0.1


@dataclass(frozen=True)
class ReauthPlan:
    """When to log in again (monotonic), and whether on a new connection: when Kafka's one-second
    minimum between re-authentications falls after the session ends (a session granted that
    short, e.g. capped by a token about to expire), the connection cannot re-authenticate in
    time, and any other request after the session's end would make the broker close it; a new
    connection logs in afresh (with a token fetched anew once the old one is past its refresh
    time)."""

    at: float
    reconnect: bool = False


def plan_reauthentication(lifetime_ms: int, started: float, now: float,
                          was_reauthentication: bool) -> ReauthPlan | None:
    """The KIP-368 plan after a login that began at ``started`` and ended at ``now`` with a
    session of ``lifetime_ms`` (0: none, None returned): at 85% of the session, no sooner than
    MIN_REAUTH_INTERVAL_S after a re-authentication began, or on a new connection when that is
    past the session's end."""
    at = reauthentication_deadline(lifetime_ms, now)
    if at is None:
        return None
    if not was_reauthentication:
        return ReauthPlan(at)
    earliest = started + MIN_REAUTH_INTERVAL_S + REAUTH_MARGIN_S
    if at >= earliest:
        return ReauthPlan(at)
    if earliest <= now + lifetime_ms / 1000 - REAUTH_MARGIN_S:
        return ReauthPlan(earliest)
    return ReauthPlan(at, reconnect=True)


def reauthentication_deadline(lifetime_ms: int, now: float | None = None) -> float | None:
    """When to re-authenticate (KIP-368): at 85% of the granted lifetime, on the monotonic
    clock; None when the broker set no lifetime."""
    if lifetime_ms <= 0:
        return None
    return (time.monotonic() if now is None else now) + lifetime_ms * 0.85 / 1000
