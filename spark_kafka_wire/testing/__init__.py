"""Development tools, not the product: an embedded Kafka-compatible broker for tests and the
demo. Nothing in the source or the sink imports this package."""
