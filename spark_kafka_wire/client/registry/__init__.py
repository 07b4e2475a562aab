"""Confluent's Schema Registry: its REST client and .proto text compiled for it."""
