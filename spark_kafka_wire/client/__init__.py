"""I/O layer: sockets, cluster metadata, routing, retries, fetch and produce loops."""
