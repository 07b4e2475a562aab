"""ApiVersions negotiation: pick, per API, the highest version both sides speak."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_kafka_wire.protocol.engine import ApiSpec
from spark_kafka_wire.protocol.errors import ErrorCode, ProtocolError, check_error, error_for_code
from spark_kafka_wire.protocol.messages import API_VERSIONS

BrokerVersions = dict[int, tuple[int, int]]


@dataclass(frozen=True)
class ApiVersionsResult:
    """Outcome of one ApiVersions exchange. ``retry_version`` is set when the broker did not
    know our request version and told us (in a v0 body) which versions it does know.
    ``finalized``: the cluster's finalized features and their levels (ApiVersions v3+,
    KIP-584), e.g. ``transaction.version``; empty from older brokers and from Tansu."""

    ranges: BrokerVersions
    retry_version: int | None = None
    finalized: dict[str, int] = field(default_factory=dict)


def parse_api_versions(version: int, body: bytes | memoryview) -> ApiVersionsResult:
    """Decode an ApiVersions response of the version we sent.

    A broker that does not know ``version`` answers UNSUPPORTED_VERSION with a v0-encoded body
    listing its own range for ApiVersions (KIP-511): we then retry with the highest version
    both know.
    """
    try:
        resp = API_VERSIONS.decode_response(version, body)
    except ProtocolError:
        if version == 0:
            raise
        resp = API_VERSIONS.decode_response(0, body)
    ranges = {a["api_key"]: (a["min_version"], a["max_version"]) for a in resp["api_keys"]}
    if resp["error_code"] == ErrorCode.UNSUPPORTED_VERSION:
        if version == 0 and not ranges:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION, context="ApiVersions")
        if not ranges and version > 0:
            # Some brokers send no list at all: fall back to v0, which every broker knows.
            return ApiVersionsResult({}, retry_version=0)
        lo, hi = ranges.get(API_VERSIONS.key, (0, 0))
        retry = min(hi, version - 1)
        if retry < lo:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION, context="ApiVersions")
        return ApiVersionsResult(ranges, retry_version=retry)
    check_error(resp["error_code"], context="ApiVersions")
    finalized = {f["name"]: f["max_version_level"]
                 for f in resp.get("finalized_features") or ()}
    return ApiVersionsResult(ranges, finalized=finalized)


def choose_version(spec: ApiSpec, broker: BrokerVersions, broker_name: str = "") -> int:
    """Highest version of ``spec`` both we and the broker implement."""
    rng = broker.get(spec.key)
    if rng is None:
        raise error_for_code(
            ErrorCode.UNSUPPORTED_VERSION,
            message=f"the broker does not offer {spec.name} (API key {spec.key}) at all",
            broker=broker_name,
        )
    lo, hi = rng
    chosen = min(spec.max_version, hi)
    if chosen < max(spec.min_version, lo):
        raise error_for_code(
            ErrorCode.UNSUPPORTED_VERSION,
            message=(
                f"no common {spec.name} version: broker offers {lo}-{hi}, "
                f"spark-kafka-wire implements {spec.min_version}-{spec.max_version}"
            ),
            broker=broker_name,
        )
    return chosen


# What brokers of the ApiVersions-less era (and the first ones with it) serve, per release,
# for the APIs we use: {api_key: (min, max)}. Used with api.version.request=false, like
# librdkafka's broker.version.fallback. Keys: 0 Produce, 1 Fetch, 2 ListOffsets, 3 Metadata,
# 8 OffsetCommit, 9 OffsetFetch, 10 FindCoordinator (GroupCoordinator), 17 SaslHandshake,
# 18 ApiVersions, 19 CreateTopics, 22 InitProducerId.
_R080 = {0: (0, 0), 1: (0, 0), 2: (0, 0), 3: (0, 0)}
_R081 = {**_R080, 8: (0, 0), 9: (0, 0)}
_R082 = {**_R081, 8: (0, 1), 9: (0, 1), 10: (0, 0)}
_R090 = {**_R082, 0: (0, 1), 1: (0, 1), 8: (0, 2)}
_R0100 = {**_R090, 0: (0, 2), 1: (0, 2), 3: (0, 1), 17: (0, 0), 18: (0, 0)}
_R0101 = {**_R0100, 1: (0, 3), 2: (0, 1), 3: (0, 2), 9: (0, 2), 19: (0, 0)}
_R0102 = {**_R0101, 19: (0, 1)}
_R0110 = {**_R0102, 0: (0, 3), 1: (0, 5), 2: (0, 2), 3: (0, 4), 8: (0, 3), 9: (0, 3),
          10: (0, 1), 17: (0, 1), 18: (0, 1), 19: (0, 2), 22: (0, 0)}
LEGACY_RELEASES: dict[str, BrokerVersions] = {
    "0.8.0": _R080, "0.8.1": _R081, "0.8.2": _R082, "0.9.0": _R090, "0.10.0": _R0100,
    "0.10.1": _R0101, "0.10.2": _R0102, "0.11.0": _R0110,
}


# Kafka 0.7 brokers speak a protocol of their own (protocol/kafka07/: no API versions, no
# correlation ids, byte offsets) and drop the connection on any request they do not know, an
# ApiVersions included; none of the APIs above exist there, so versions_for_release refuses
# them and only a connection made for 0.7 (client/kafka07/) accepts such a fallback.
KAFKA07_RELEASES = ("0.7.0", "0.7.1", "0.7.2")


def is_kafka07(release: str) -> bool:
    """Whether ``release`` (``0.7``, ``0.7.2``, ``0.7.2.x`` ...) names a Kafka 0.7 broker."""
    parts = release.strip().split(".")
    return parts[:2] == ["0", "7"] and (len(parts) < 3 or ".".join(parts[:3]) in KAFKA07_RELEASES)


def versions_for_release(release: str) -> BrokerVersions:
    """API ranges of a broker release given as ``0.8.2``, ``0.8.2.2``, ``0.10.0.1`` ...

    Releases after 0.11.0 are not listed: such brokers answer ApiVersions, so versions are
    negotiated (leave api.version.request on).
    """
    parts = release.strip().split(".")
    key = ".".join(parts[:3])
    if key in LEGACY_RELEASES:
        return dict(LEGACY_RELEASES[key])
    try:
        numbers = tuple(int(p) for p in parts)
    except ValueError:
        numbers = ()
    if numbers and numbers >= (0, 11):
        return dict(LEGACY_RELEASES["0.11.0"])
    raise ValueError(
        f"unknown broker release {release!r}; use one of {', '.join(LEGACY_RELEASES)}"
    )
