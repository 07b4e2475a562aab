"""An option kafkawire does not know is accepted, as Spark's kafka format accepts it, with a
warning naming the option it likely meant (issue 46 item 4: ``startingOffset`` made an
availableNow stream read nothing, without a word).

Each unknown key is warned of once per process, so every test here uses keys of its own.
"""

from __future__ import annotations

import logging

import pytest

from spark_kafka_wire.errors import ConfigurationError
from spark_kafka_wire.options import OPTIONS, SINK, SOURCE, Kind
from spark_kafka_wire.options.produce import parse_sink_options
from spark_kafka_wire.source.options import parse_source_options, parse_stream_options

READ = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "orders"}
WRITE = {"kafka.bootstrap.servers": "localhost:9092", "topic": "orders"}
LOGGER = "spark_kafka_wire.options.files"


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING]


def test_a_misspelt_stream_option_is_warned_of_with_the_closest_name(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        options = parse_stream_options({**READ, "startingOffset": "earliest"})
    assert options.source.strategy.topics == ("orders",)  # accepted, as in Spark
    assert _warnings(caplog) == [
        "option 'startingoffset' is not a kafkawire option and is ignored: did you mean "
        "'startingOffsets'? (docs/reference/options.md lists every option)"]


@pytest.mark.parametrize(("typo", "meant"), [
    ("endingOffset", "endingOffsets"),
    ("failOnDataLos", "failOnDataLoss"),
    ("includeHeader", "includeHeaders"),
])
def test_a_misspelt_batch_option_is_warned_of(caplog, typo: str, meant: str) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        parse_source_options({**READ, typo: "x"})
    [warning] = _warnings(caplog)
    assert f"'{typo.lower()}' is not a kafkawire option" in warning
    assert f"did you mean '{meant}'?" in warning


def test_a_misspelt_write_option_is_warned_of(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        parse_sink_options({**WRITE, "createTopics": "true"})
    [warning] = _warnings(caplog)
    assert "did you mean 'createTopic'?" in warning


def test_a_kafka_setting_without_its_prefix_names_the_prefixed_option(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        parse_sink_options({**WRITE, "linger.ms": "50"})
        with pytest.raises(ConfigurationError) as refused:
            parse_source_options({"bootstrap.servers": "localhost:9092", "subscribe": "t"})
    assert [w.split(": did you mean ")[1].split("?")[0] for w in _warnings(caplog)] == [
        "'kafka.linger.ms'", "'kafka.bootstrap.servers'"]
    # and the error that follows says so too
    assert "rename it to 'kafka.bootstrap.servers'" in str(refused.value)


def test_an_unknown_option_far_from_every_name_is_still_warned_of(caplog) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        parse_source_options({**READ, "qwertyuiop": "1"})
    assert _warnings(caplog) == [
        "option 'qwertyuiop' is not a kafkawire option and is ignored "
        "(docs/reference/options.md lists every option)"]


def test_each_unknown_option_is_warned_of_once(caplog) -> None:
    """Spark parses a query's options in several calls (schema, reader, a stream's planner
    calls): one warning, not one per call."""
    given = {**READ, "maxOffsetsPerTriger": "10"}
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for _ in range(3):
            parse_stream_options(given)
            parse_source_options(given, batch=False)
    assert len(_warnings(caplog)) == 1


def _valid(kind: Kind) -> str:
    return {Kind.BOOL: "false", Kind.INT: "1", Kind.BYTES: "1", Kind.COUNT: "1"}.get(kind, "x")


def test_known_and_spark_keys_are_never_warned_of(caplog) -> None:
    """Every option of the table, those accepted without effect included, and the keys Spark
    adds itself (load(path), a stream's checkpointLocation)."""
    from spark_kafka_wire.options.files import warn_unknown_options

    keys = {o.name: _valid(o.kind) for o in OPTIONS}
    keys |= {"path": "/data", "checkpointLocation": "/checkpoints/q"}
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for use in (SOURCE, SINK):
            warn_unknown_options({k.lower(): v for k, v in keys.items()}, use)
    assert _warnings(caplog) == []
