"""Sans-I/O Kafka protocol: bytes in, values out; no sockets here."""
