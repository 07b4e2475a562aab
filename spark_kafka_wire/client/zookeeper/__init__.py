"""ZooKeeper-era clusters: broker and topic registrations, consumer offsets, security."""
