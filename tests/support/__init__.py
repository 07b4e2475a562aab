"""Helpers the tests share: real servers started for them (ZooKeeper, the legacy broker
emulator, a Tansu on S3 that can be killed behind a fault proxy), librdkafka-based readers and
checks, transaction scenarios and oracle values."""
