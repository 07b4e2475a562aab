"""Which transaction protocol and request versions kafkawire picks (KIP-890 part 2): the v2
versions only in a transaction of the v2 protocol, which needs the cluster's finalized
``transaction.version`` 2; classic caps everywhere else. Broker answers are ApiVersions
results as a Kafka 4 broker gives them (no broker needed to choose a version)."""

from __future__ import annotations

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.errors import ConfigurationError
from spark_kafka_wire.client.producer.transactions import (
    offers_v2,
    request_version,
    transaction_v2_level,
)
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.messages import (
    API_VERSIONS,
    CLASSIC_MAX_VERSION,
    END_TXN,
    PRODUCE,
    TRANSACTION_V2_FROM,
    TXN_OFFSET_COMMIT,
)
from spark_kafka_wire.protocol.versions import parse_api_versions
from tests.support.errors import raises_condition

#: what Apache Kafka 4.1.1 offers (measured on the test broker)
KAFKA_4_1 = {PRODUCE.key: (0, 13), END_TXN.key: (0, 5), TXN_OFFSET_COMMIT.key: (0, 5)}
#: what Tansu offers (measured): no v2 versions of EndTxn and TxnOffsetCommit
TANSU = {PRODUCE.key: (0, 11), END_TXN.key: (0, 4), TXN_OFFSET_COMMIT.key: (0, 4)}


def _conn(ranges: dict[int, tuple[int, int]], finalized: dict[str, int]) -> BrokerConnection:
    conn = BrokerConnection("127.0.0.1", 9, ClientConfig.from_servers("127.0.0.1:9"))
    conn.api_versions = dict(ranges)
    conn.finalized_features = dict(finalized)
    return conn


def test_the_finalized_features_of_an_api_versions_v3_answer_are_kept() -> None:
    body = API_VERSIONS.encode_response(3, {
        "error_code": 0, "api_keys": [{"api_key": 26, "min_version": 0, "max_version": 5}],
        "throttle_time_ms": 0, "finalized_features_epoch": 7,
        "finalized_features": [
            {"name": "transaction.version", "max_version_level": 2, "min_version_level": 2},
            {"name": "metadata.version", "max_version_level": 27, "min_version_level": 27}]})
    result = parse_api_versions(3, body)
    assert result.finalized == {"transaction.version": 2, "metadata.version": 27}
    older = API_VERSIONS.encode_response(2, {
        "error_code": 0, "api_keys": [], "throttle_time_ms": 0})
    assert parse_api_versions(2, older).finalized == {}


def test_v2_versions_only_in_a_v2_transaction_and_classic_caps_elsewhere() -> None:
    kafka = _conn(KAFKA_4_1, {"transaction.version": 2})
    assert transaction_v2_level(kafka)
    assert all(offers_v2(kafka, spec) for spec in (PRODUCE, END_TXN, TXN_OFFSET_COMMIT))
    assert {s.name: request_version(kafka, s, True) for s in (PRODUCE, END_TXN,
                                                               TXN_OFFSET_COMMIT)} == {
        "Produce": 12, "EndTxn": 5, "TxnOffsetCommit": 5}  # Produce v13 names topics by id
    assert {s.key: request_version(kafka, s, False) for s in (PRODUCE, END_TXN,
                                                               TXN_OFFSET_COMMIT)} == \
        CLASSIC_MAX_VERSION
    for spec in (PRODUCE, END_TXN, TXN_OFFSET_COMMIT):  # classic stays below v2's versions
        assert CLASSIC_MAX_VERSION[spec.key] < TRANSACTION_V2_FROM[spec.key] <= spec.max_version


def test_level_1_or_no_feature_is_classic_whatever_the_versions() -> None:
    assert not transaction_v2_level(_conn(KAFKA_4_1, {"transaction.version": 1}))
    assert not transaction_v2_level(_conn(KAFKA_4_1, {}))
    tansu = _conn(TANSU, {})
    assert not offers_v2(tansu, END_TXN)
    assert request_version(tansu, PRODUCE, False) == 8
    assert request_version(tansu, END_TXN, False) == 4


def test_a_v2_transaction_on_a_broker_without_v2_versions_fails_saying_why() -> None:
    with raises_condition(ConfigurationError, "KAFKAWIRE_CONFIGURATION",
                          r"EndTxn up to v4.*needs v5.*rolling"):
        request_version(_conn(TANSU, {}), END_TXN, True)
