"""Helpers the tests share: real servers started for them (ZooKeeper, the legacy broker
emulator), librdkafka-based readers and checks, transaction scenarios and oracle values."""
