"""Every kafkawire error has a stable condition that users can match on, documented once.

The error table of docs/errors.md and the code's conditions are the same set; each class's condition
is unique (families of broker errors share the prefix their instances narrow); every error's
text begins with ``[CONDITION] `` and is built from its module's template table.
"""

from __future__ import annotations

import pickle
import re

import pytest

import spark_kafka_wire.errors
from spark_kafka_wire.client.errors import (
    CONFIGURATION,
    DATA_LOSS,
    DATA_LOSS_KINDS,
    SCHEMA_REGISTRY,
    SCHEMA_REGISTRY_KINDS,
    DataLossError,
    DeliveryFailedError,
    DeliveryTimeoutError,
    NoBrokersAvailableError,
    RequestTimeoutError,
    SchemaRegistryError,
    StartAfterEndError,
)
from spark_kafka_wire.errors import (
    ConfigurationError,
    CorruptRecordError,
    KafkaError,
    KafkaWireError,
    ProtocolError,
)
from spark_kafka_wire.protocol.conditions import CONDITIONS, kinds
from spark_kafka_wire.protocol.errors import (
    BROKER_CONDITION,
    ERRORS,
    KAFKA07_BROKER_CONDITION,
    KAFKA07_ERRORS,
    UNKNOWN_CODE,
    ErrorCode,
    error_for_code,
    kafka07_error_for_code,
)
from tests.support.docs_pages import page
from tests.support.errors import assert_condition, raises_condition

ERRORS_PAGE = page("errors.md")  # the error table, moved from the README
CONDITION = re.compile(r"[A-Z][A-Z0-9_]*(\.[A-Z][A-Z0-9_]*)*")


def _classes() -> dict[str, type[KafkaWireError]]:
    exported = (getattr(spark_kafka_wire.errors, n) for n in spark_kafka_wire.errors.__all__)
    return {c.__name__: c for c in exported
            if isinstance(c, type) and issubclass(c, BaseException)}


def _code_conditions() -> set[str]:
    """Every condition an error can carry, every class's, and the conditions table's."""
    found = {c.condition for c in _classes().values()} | set(CONDITIONS)
    found |= {spec.condition for spec, _ in [*ERRORS.values(), *KAFKA07_ERRORS.values()]}
    found |= {f"{BROKER_CONDITION}.{UNKNOWN_CODE}", f"{KAFKA07_BROKER_CONDITION}.{UNKNOWN_CODE}"}
    found |= {f"{DATA_LOSS}.{kind}" for kind in DATA_LOSS_KINDS}
    found |= {f"{CONFIGURATION}.{kind}" for kind in kinds(CONFIGURATION)}
    found |= {f"{SCHEMA_REGISTRY}.{kind}" for kind in SCHEMA_REGISTRY_KINDS}
    return found


def _docs_rows() -> list[list[str]]:
    section = ERRORS_PAGE.read_text(encoding="utf-8").split("# Errors\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| `")]
    assert rows, "docs/errors.md has no error table"
    return rows


def test_the_docs_error_table_lists_exactly_the_conditions_of_the_code() -> None:
    rows = _docs_rows()
    listed = [row[0].strip("`") for row in rows]
    assert len(listed) == len(set(listed)), "a condition is listed twice"
    assert set(listed) == _code_conditions()
    for row in rows:
        assert len(row) == 4 and all(row), f"error row without class, when or what: {row}"


def test_every_exception_class_has_a_condition_unique_to_it() -> None:
    owners: dict[str, str] = {}
    for name, cls in _classes().items():
        assert CONDITION.fullmatch(cls.condition), (name, cls.condition)
        if "condition" not in vars(cls):
            # a broker error family: its instances carry their code's condition
            assert issubclass(cls, KafkaError) and cls.condition == BROKER_CONDITION, name
            continue
        assert cls.condition not in owners, f"{name} and {owners[cls.condition]} share a condition"
        owners[cls.condition] = name


def test_broker_codes_have_unique_conditions() -> None:
    specs = [spec for spec, _ in [*ERRORS.values(), *KAFKA07_ERRORS.values()]]
    conditions = [spec.condition for spec in specs]
    assert len(conditions) == len(set(conditions))
    for spec in specs:
        assert CONDITION.fullmatch(spec.condition), spec
    # a class standing for one code carries that code's condition
    for spec, cls in [*ERRORS.values(), *KAFKA07_ERRORS.values()]:
        if cls.condition not in (BROKER_CONDITION, spec.condition):
            assert any(s.condition == cls.condition and c is cls
                       for s, c in [*ERRORS.values(), *KAFKA07_ERRORS.values()]), cls


@pytest.mark.parametrize("code", sorted(ERRORS))
def test_a_broker_error_is_named_by_its_code(code: int) -> None:
    error = error_for_code(code, topic="t", partition=1, broker="b:9092", context="Fetch")
    assert_condition(error, f"{BROKER_CONDITION}.{ErrorCode(code).name}", "topic 't'",
                     "partition 1", "broker b:9092")


def test_unknown_codes_have_a_condition_of_their_own() -> None:
    assert_condition(error_for_code(31999), f"{BROKER_CONDITION}.{UNKNOWN_CODE}", "31999")
    assert_condition(kafka07_error_for_code(99), f"{KAFKA07_BROKER_CONDITION}.{UNKNOWN_CODE}")
    assert_condition(kafka07_error_for_code(3), f"{KAFKA07_BROKER_CONDITION}.WRONG_PARTITION")


def test_data_loss_narrows_to_its_kind() -> None:
    deleted = DataLossError("t", 0, 5, 9, "gone", "b:9092", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert_condition(deleted, "KAFKA_DATA_LOSS.PARTITIONS_DELETED", r"\[5, 9\) of t-0",
                     "failOnDataLoss")
    aged = DataLossError("t", 0, 5, 9, "aged out", "b:9092")
    assert_condition(aged, "KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE", "broker b:9092")
    changed = DataLossError("t", 0, 9, 5, "went back", context="streaming source",
                            summary="Partition t-0's offset was changed from 9 to 5",
                            kind="PARTITION_OFFSET_CHANGED")
    assert_condition(changed, "KAFKA_DATA_LOSS.PARTITION_OFFSET_CHANGED", "from 9 to 5")


def test_messages_come_from_the_template_tables() -> None:
    """Each class that builds its text renders its condition's template; the facts stay
    attributes and appear in the text."""
    assert_condition(RequestTimeoutError("b:9092", "Fetch", 500),
                     "KAFKAWIRE_BROKER_CONNECTION.REQUEST_TIMEOUT",
                     "broker b:9092", "Fetch", "500 ms", "kafka.request.timeout.ms")
    assert_condition(NoBrokersAvailableError(["a:1", "b:2"], None),
                     "KAFKAWIRE_NO_BROKERS_AVAILABLE", "a:1, b:2", "kafka.bootstrap.servers")
    assert_condition(StartAfterEndError("t", 0, 9, 5, "startingOffsets", "endingOffsets"),
                     "KAFKAWIRE_CONFIGURATION.RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET",
                     "topic t partition 0", "startingOffsets")
    assert_condition(SchemaRegistryError("NOT_FOUND", "http://r:8081", "GET /schemas/ids/7",
                                         answer="HTTP 404, error code 40403", status=404,
                                         error_code=40403, schema_id=7),
                     "KAFKAWIRE_SCHEMA_REGISTRY.NOT_FOUND", "http://r:8081",
                     r"GET /schemas/ids/7 \(schema id 7\)", "40403")
    assert_condition(CorruptRecordError("CRC mismatch", topic="t", partition=0, offset=3),
                     "KAFKAWIRE_PROTOCOL.CORRUPT_RECORD", "CRC mismatch",
                     r"\(topic 't', partition 0, offset 3\)")
    for condition in CONDITIONS:
        assert condition in _code_conditions(), condition


def test_raises_condition_matches_the_condition_not_the_words() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION", "kafka.x") as info:
        raise ConfigurationError("kafka.x: not an option")
    assert str(info.value) == "[KAFKAWIRE_CONFIGURATION] kafka.x: not an option"
    with raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL.*"):
        raise CorruptRecordError("bad")
    with pytest.raises(AssertionError), raises_condition(ProtocolError, "KAFKAWIRE_PROTOCOL"):
        raise CorruptRecordError("bad")


def test_a_producer_giving_up_on_its_side_is_no_broker_code() -> None:
    """A write that gave up after connection failures or client timeouts says so, with its
    own condition, instead of a REQUEST_TIMED_OUT no broker answered; it survives pickling."""
    lost = RequestTimeoutError("b:9092", "Produce", 500)
    timed_out = DeliveryTimeoutError("t", 3, 10, 4, lost, "b:9092", timeout_ms=1000)
    assert not isinstance(timed_out, KafkaError) and not timed_out.retriable
    assert_condition(timed_out, "KAFKAWIRE_DELIVERY_FAILED.DELIVERY_TIMEOUT", "topic 't'",
                     "partition 3", "broker b:9092", r"kafka.delivery.timeout.ms=1000 \(4 ",
                     "kafka.request.timeout.ms")
    failed = DeliveryFailedError("t", 3, 10, 1, lost, "b:9092", retries=0)
    assert_condition(failed, "KAFKAWIRE_DELIVERY_FAILED", "topic 't'", "partition 3",
                     "broker b:9092", r"kafka.retries=0")
    for error in (timed_out, failed):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error)


def test_a_configuration_error_narrows_to_its_kind() -> None:
    """A raise site names the kind of configuration error (a kind of the conditions table);
    it stays a ConfigurationError (and a ValueError) and survives pickling."""
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION.*", "kafka.x") as info:
        raise ConfigurationError("kafka.x: not an option",
                                 condition="KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION")
    assert info.value.condition == "KAFKAWIRE_CONFIGURATION.UNKNOWN_OPTION"
    assert isinstance(info.value, ValueError)
    again = pickle.loads(pickle.dumps(info.value))
    assert again.condition == info.value.condition and str(again) == str(info.value)
    made = ConfigurationError.of("KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE", option="o",
                                 bound=">= 1", got="0")
    assert_condition(made, "KAFKAWIRE_CONFIGURATION.VALUE_OUT_OF_RANGE", "o must be >= 1, got 0")
    with pytest.raises(AssertionError):
        ConfigurationError("x", condition="KAFKAWIRE_CONFIGURATION.NO_SUCH_KIND")


def test_a_schema_registry_error_narrows_to_its_kind_and_survives_pickling() -> None:
    """Every kind of SCHEMA_REGISTRY_KINDS has its template; the facts stay attributes and
    come back from pickling (an error raised in a Spark task travels to the driver)."""
    for kind in SCHEMA_REGISTRY_KINDS:
        error = SchemaRegistryError(kind, "https://r", "POST /subjects/s/versions",
                                    reason="why", answer="HTTP 409, error code 409",
                                    status=409, error_code=409, subject="s", version=2)
        assert_condition(error, f"{SCHEMA_REGISTRY}.{kind}", "https://r")
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is SchemaRegistryError and str(again) == str(error)
        assert vars(again) == vars(error)
    with pytest.raises(AssertionError):
        SchemaRegistryError("NO_SUCH_KIND", "u", "GET /")
