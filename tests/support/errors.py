"""Matching kafkawire errors by condition, not by the English of their messages.

Every KafkaWireError carries a stable ``condition`` (``KAFKA_DATA_LOSS.PARTITIONS_DELETED``,
``KAFKA_BROKER_ERROR.NOT_CONTROLLER``); its message's wording may improve without breaking a
test. A test that checks the *facts* a message must carry (topic, partition, offset, broker,
the option to change) still matches them with ``facts``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from spark_kafka_wire.errors import KafkaWireError


@contextmanager
def raises_condition(cls: type[KafkaWireError], condition: str, *facts: str
                     ) -> Iterator[pytest.ExceptionInfo[KafkaWireError]]:
    """Like ``pytest.raises(cls)``, and the error's condition is ``condition`` (or, with a
    trailing ``.*``, one of its sub-conditions); each of ``facts`` (regular expressions) is
    found in the message."""
    with pytest.raises(cls) as info:
        yield info
    assert_condition(info.value, condition, *facts)


def assert_condition(error: BaseException, condition: str, *facts: str) -> None:
    """``error`` is a KafkaWireError of ``condition`` whose message shows every one of
    ``facts`` (regular expressions)."""
    assert isinstance(error, KafkaWireError), repr(error)
    if condition.endswith(".*"):
        assert error.condition.startswith(condition[:-1]), (error.condition, condition)
    else:
        assert error.condition == condition, (error.condition, condition, str(error))
    text = str(error)
    assert text.startswith(f"[{error.condition}] "), text
    for fact in facts:
        assert re.search(fact, text), (fact, text)
