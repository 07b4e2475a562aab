"""TLS and SASL: key material, contexts and every SASL mechanism's login."""
