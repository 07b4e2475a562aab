"""How many bytes a broker's answer to each request may announce: checked on its size prefix,
before a byte of it is allocated or read (issue 45).

Why per API and not one limit for all: an answer's cost is not its size. Record data (Fetch)
stays bytes, gathered into columns, so it costs about its size; every other answer is decoded
into Python dicts, lists and ints, measured at 19 (a real cluster's Metadata, three replicas)
to 28 (empty replica lists) times its size: one limit high enough for Fetch would let a
34 MiB Metadata answer cost 856 MiB. So:

* answers whose size does not grow with what was asked (a heartbeat's error code, a
  coordinator's address, a SASL token) get ``SMALL_ANSWER_BYTES``;
* answers that list what was asked (Metadata's topics and partitions, offsets, groups and
  their members, configs) get ``LISTING_ANSWER_BYTES``;
* a Fetch answer gets what its request asked for plus ``FETCH_ANSWER_SLACK``.

Java's consumer sets no limit on answers; librdkafka bounds every answer by
receive.message.max.bytes (default 100,000,000, raised by itself to fetch.max.bytes + 512);
the broker bounds every request by socket.request.max.bytes (100 MiB). The values below
follow those where they apply and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.messages import (
    ADD_OFFSETS_TO_TXN,
    API_VERSIONS,
    END_TXN,
    FETCH,
    FIND_COORDINATOR,
    HEARTBEAT,
    INIT_PRODUCER_ID,
    LEAVE_GROUP,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
)

#: Answers of a few fixed fields: 1 MiB is thousands of times the largest seen (ApiVersions of
#: Kafka 4, about 1 KiB with its features; a Kerberos token, tens of KiB).
SMALL_ANSWER_BYTES = 1 << 20
#: The APIs whose answers are that small whatever was asked (kafkawire's LeaveGroup and
#: FindCoordinator name one member and one key).
SMALL_ANSWERS = frozenset(spec.key for spec in (
    API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, FIND_COORDINATOR, HEARTBEAT, LEAVE_GROUP,
    INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN))
#: Every other answer but Fetch. 16 MiB holds the Metadata of 400,000 partitions of three
#: replicas (about 41 bytes each), twice the 200,000 partitions per cluster Kafka's
#: ZooKeeper-era guidance named as the most a cluster should have; decoded, it costs up to
#: 450 MiB (the 28 times above), not 28 GiB.
LISTING_ANSWER_BYTES = 16 << 20
#: What a Fetch answer may hold beyond the bytes its request asked for: Kafka returns the first
#: record batch whole even when it is larger than max_bytes (KIP-74), and a batch reached the
#: broker inside one Produce request, which the broker's socket.request.max.bytes (100 MiB)
#: bounds; the partitions' headers and aborted-transaction lists fit in that room too.
FETCH_ANSWER_SLACK = 100 << 20


def answer_limit(spec: ApiSpec[Any, Any], version: int, body: Mapping[str, Any]) -> int:
    """The most bytes the answer to ``body`` (a request of ``spec`` at ``version``) may
    announce."""
    if spec.key == FETCH.key:
        return fetch_asked(version, body) + FETCH_ANSWER_SLACK
    if spec.key in SMALL_ANSWERS:
        return SMALL_ANSWER_BYTES
    return LISTING_ANSWER_BYTES


def fetch_asked(version: int, body: Mapping[str, Any]) -> int:
    """The record bytes a Fetch asks for: its max_bytes (v3+, kafka.fetch.max.bytes), at most
    the partitions' partition_max_bytes together (all a Fetch before v3 has)."""
    partitions = sum(p["partition_max_bytes"] for t in body.get("topics", ())
                     for p in t.get("partitions", ()))
    return min(int(body["max_bytes"]), partitions) if version >= 3 and "max_bytes" in body \
        else partitions


def kafka07_fetch_limit(asked: int) -> int:
    """The most bytes a Kafka 0.7 FETCH or MULTIFETCH answer may announce: the messages among
    the ``asked`` bytes (a 0.7 broker cuts its message set at the request's max size; a message
    longer than that never comes) and the answer's headers, for which SMALL_ANSWER_BYTES more
    is ample."""
    return asked + SMALL_ANSWER_BYTES


def too_large(subject: str, size: int, limit: int) -> str:
    """The reason of the ProtocolError for ``subject`` ("the Metadata answer") announcing
    ``size`` bytes: what was refused, why, and what to do."""
    if subject == f"the {FETCH.name} answer":
        advice = ("kafkawire accepts what the Fetch asked for (kafka.fetch.max.bytes, "
                  f"kafka.max.partition.fetch.bytes) plus {FETCH_ANSWER_SLACK >> 20} MiB for "
                  "one record batch larger than that (the broker's socket.request.max.bytes "
                  "bounds a batch to 100 MiB by default)")
    elif limit <= SMALL_ANSWER_BYTES:
        advice = "an answer of a few fields never comes near that"
    else:
        advice = (f"kafkawire accepts {limit >> 20} MiB for an answer listing topics, "
                  "partitions, offsets or group members (it costs Python objects 20 to 30 "
                  "times its size); if the cluster really is that large, ask about fewer "
                  "topics at once (name them instead of a pattern)")
    return (f"{subject} announces {size} bytes, more than the {limit} bytes it may have: "
            f"{advice}. The connection is closed unread; check the broker (and any proxy in "
            "between): it is not answering as Kafka does")
