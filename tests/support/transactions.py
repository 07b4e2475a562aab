"""Transactional data written by librdkafka, shared by the read_committed tests."""

from __future__ import annotations

import uuid

import confluent_kafka as ck


def transactional_producer(bootstrap: str, **config: object) -> ck.Producer:
    """A librdkafka producer with a fresh transactional.id, initialised; ``config`` adds
    settings (``compression.type``, ...)."""
    p = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex,
                     "log_level": 0, **config})
    p.init_transactions(20)
    return p


def committed_then_open(bootstrap: str, topic: str) -> ck.Producer:
    """c0, c1, c2 committed (offsets 0-2, marker at 3), then "open" at offset 4 in a transaction
    left open: the caller aborts it (``abort_transaction``) when done."""
    p = transactional_producer(bootstrap)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=b"c%d" % i, partition=0)
    p.commit_transaction(20)
    p.begin_transaction()
    p.produce(topic, value=b"open", partition=0)
    p.flush(20)
    return p


def committed_aborted_committed(bootstrap: str, topic: str) -> None:
    """c0 c1 committed, a0 a1 aborted, c2 committed: 5 records and 3 markers (end offset 8)."""
    p = transactional_producer(bootstrap)
    for values, commit in (([b"c0", b"c1"], True), ([b"a0", b"a1"], False), ([b"c2"], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, value=v, partition=0)
        p.flush(20)
        p.commit_transaction(20) if commit else p.abort_transaction(20)
