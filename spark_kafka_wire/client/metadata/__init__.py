"""The cluster as the read side and the CLI see it: metadata, leaders, routing, topic admin."""
