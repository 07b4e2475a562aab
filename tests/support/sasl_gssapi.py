"""Server side of SASL GSSAPI (RFC 4752) for the SASL front, as Kafka's broker runs it.

The acceptor context comes from the ``gssapi`` package with the service keytab of the test
KDC (``tests/support/kdc.py``). After the Kerberos context is established (the client sends
an empty token once it has the AP-REP), the server sends a wrapped security-layer offer
(Kafka offers no layer: 0x01 and max size 0), the client answers with its wrapped choice
and an authorization id; the authenticated principal is the initiator's Kerberos name.
Like Kafka's callback handler, the authorization id the client sends is not checked; like
Java's GssKrb5Server, the last step returns no token (None), so after SaslHandshake v0 the
front sends nothing after the client's answer (with SaslAuthenticate: empty auth bytes).
"""

from __future__ import annotations

import gssapi

from tests.support.sasl_mechanisms import AuthenticationFailed

NO_SECURITY_LAYER = 0x01


class GssapiServer:
    name = "GSSAPI"

    def __init__(self, keytab: str) -> None:
        self.done = False
        self.principal: str | None = None
        self.credential_expiry: float | None = None
        self.extensions: dict[str, str] = {}
        self.authzid: str | None = None  # what the client sent after the security layer
        self._keytab = keytab
        self._ctx: gssapi.SecurityContext | None = None
        self._state = "context"

    def step(self, token: bytes) -> bytes | None:
        try:
            return self._step(token)
        except gssapi.exceptions.GSSError as e:
            raise AuthenticationFailed(
                f"Authentication failed during GSSAPI authentication: {e.gen_message()}") from None

    def _step(self, token: bytes) -> bytes | None:
        if self._ctx is None:  # acquired here so that a broken keytab is an error 58 message
            creds = gssapi.Credentials(usage="accept", store={"keytab": self._keytab})
            self._ctx = gssapi.SecurityContext(creds=creds, usage="accept")
        if self._state == "context":
            out = self._ctx.step(token) or b""
            if not self._ctx.complete:
                return out
            self._state = "offer"
            if out:
                return out  # the AP-REP; the client answers with an empty token
            token = b""
        if self._state == "offer":
            if token:
                raise AuthenticationFailed("GSSAPI: expected an empty token after the context")
            self._state = "choice"
            return self._ctx.wrap(bytes([NO_SECURITY_LAYER, 0, 0, 0]), False).message
        if self._state == "choice":
            choice = self._ctx.unwrap(token).message
            if len(choice) < 4 or choice[0] != NO_SECURITY_LAYER:
                raise AuthenticationFailed("GSSAPI: the client chose a security layer we did not offer")
            self.authzid = choice[4:].decode()
            self.principal = str(self._ctx.initiator_name)
            self.done = True
            self._state = "done"
            return None
        raise AuthenticationFailed("GSSAPI: token after the exchange finished")
