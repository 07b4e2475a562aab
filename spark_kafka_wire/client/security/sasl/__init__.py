"""SASL for ``security.protocol=SASL_PLAINTEXT`` and ``SASL_SSL``: settings, JAAS parsing,
mechanisms and the handshake/authenticate flow run on every new connection.

Kafka's SASL framing: KIP-43 (SaslHandshake, raw tokens after v0,
https://cwiki.apache.org/confluence/x/TVEvAw), KIP-152 (SaslAuthenticate, error messages,
https://cwiki.apache.org/confluence/x/5gNkB), KIP-368 (re-authentication,
https://cwiki.apache.org/confluence/x/5pYYBQ) and the protocol guide
(https://kafka.apache.org/protocol#sasl_handshake).
"""
