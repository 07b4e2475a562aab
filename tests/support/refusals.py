"""A refusal checked the same way in every security test: it comes at once, as the expected
type, not retriable, and shows no secret.

A refused login or an ACL denial must not be retried (the client would hide the cause behind
a timeout and hammer the broker), so each test bounds how long the refusal took with a limit of
its own (the GSSAPI exchange with a KDC takes longer than a PLAIN one). The SASL, OAuth and
GSSAPI tests each used to carry a copy of this; their own checks of the message (which broker,
mechanism, user) stay in their modules.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import pytest

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import SaslAuthenticationError
from spark_kafka_wire.client.metadata.cluster import KafkaClient

E = TypeVar("E", bound=BaseException)


def refused(kind: type[E], action: Callable[[], object], fail_fast_s: float) -> E:
    """The error ``action`` raises, checked to be ``kind``, to come within ``fail_fast_s`` and
    not to be retriable (an error without ``retriable`` counts as retriable: it must say)."""
    began = time.monotonic()
    with pytest.raises(kind) as raised:
        action()
    took = time.monotonic() - began
    assert took < fail_fast_s, f"the refusal took {took:.1f} s: it was retried"
    assert not getattr(raised.value, "retriable", True)
    return raised.value


def login_refused(config: ClientConfig, fail_fast_s: float, *,
                  kind: type[E] = SaslAuthenticationError,  # type: ignore[assignment]
                  caplog: pytest.LogCaptureFixture | None = None,
                  secrets: Iterable[str] = ()) -> E:
    """The error a client with ``config`` raises on its first request (metadata), checked as
    :func:`refused` does; no ``secrets`` appear in its message, in ``repr(config)`` or, with
    ``caplog`` (set to DEBUG here), in anything logged meanwhile."""
    if caplog is not None:
        caplog.set_level(logging.DEBUG)

    def first_request() -> None:
        client = KafkaClient(config)
        try:
            client.fetch_metadata()
        finally:
            client.close()

    err = refused(kind, first_request, fail_fast_s)
    text, logged = str(err), caplog.text if caplog is not None else ""
    for secret in secrets:
        assert secret not in text and secret not in repr(config) and secret not in logged
    return err
