"""ApiVersions negotiation: pick, per API, the highest version both sides speak."""

from __future__ import annotations

from dataclasses import dataclass

from .engine import ApiSpec
from .errors import ProtocolError, check_error, error_for_code
from .messages import API_VERSIONS

UNSUPPORTED_VERSION = 35

BrokerVersions = dict[int, tuple[int, int]]


@dataclass(frozen=True)
class ApiVersionsResult:
    """Outcome of one ApiVersions exchange. ``retry_version`` is set when the broker did not
    know our request version and told us (in a v0 body) which versions it does know."""

    ranges: BrokerVersions
    retry_version: int | None = None


def parse_api_versions(version: int, body: bytes | memoryview) -> ApiVersionsResult:
    """Decode an ApiVersions response of the version we sent.

    A broker that does not know ``version`` answers error 35 with a v0-encoded body listing
    its own range for ApiVersions: we then retry with the highest version both know.
    """
    try:
        resp = API_VERSIONS.decode_response(version, body)
    except ProtocolError:
        if version == 0:
            raise
        resp = API_VERSIONS.decode_response(0, body)
    ranges = {a["api_key"]: (a["min_version"], a["max_version"]) for a in resp["api_keys"]}
    if resp["error_code"] == UNSUPPORTED_VERSION:
        if version == 0 and not ranges:
            raise error_for_code(UNSUPPORTED_VERSION, context="ApiVersions")
        if not ranges and version > 0:
            # Some brokers send no list at all: fall back to v0, which every broker knows.
            return ApiVersionsResult({}, retry_version=0)
        lo, hi = ranges.get(API_VERSIONS.key, (0, 0))
        retry = min(hi, version - 1)
        if retry < lo:
            raise error_for_code(UNSUPPORTED_VERSION, context="ApiVersions")
        return ApiVersionsResult(ranges, retry_version=retry)
    check_error(resp["error_code"], context="ApiVersions")
    return ApiVersionsResult(ranges)


def choose_version(spec: ApiSpec, broker: BrokerVersions, broker_name: str = "") -> int:
    """Highest version of ``spec`` both we and the broker implement."""
    rng = broker.get(spec.key)
    if rng is None:
        raise error_for_code(
            UNSUPPORTED_VERSION,
            message=f"the broker does not offer {spec.name} (API key {spec.key}) at all",
            broker=broker_name,
        )
    lo, hi = rng
    chosen = min(spec.max_version, hi)
    if chosen < max(spec.min_version, lo):
        raise error_for_code(
            UNSUPPORTED_VERSION,
            message=(
                f"no common {spec.name} version: broker offers {lo}-{hi}, "
                f"spark-kafka-wire implements {spec.min_version}-{spec.max_version}"
            ),
            broker=broker_name,
        )
    return chosen
