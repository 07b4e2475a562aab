"""Every API and version we implement, checked against kafka-python as an independent oracle.

kafka-python (3.x) generates its codecs from Kafka's JSON message specs; it shares no code
with ours. For random values of every layout at every version: our bytes decode with
kafka-python to the same values, kafka-python re-encodes them to the same bytes, and our
decoder reads its bytes back to the values we started from.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from kafka.protocol.admin import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.admin.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.admin.transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from spark_kafka_wire.protocol.engine import NULL_UUID, ApiSpec
from spark_kafka_wire.protocol.messages import ALL_APIS
from tests.support.spec_values import random_struct


class _Reencoded:
    """A decoded kafka-python message whose encode() is the generic one."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getattr__(self, name: str) -> Any:
        return getattr(self._obj, name)

    def encode(self) -> bytes:
        return ApiMessage.encode(self._obj)


class _DeleteTopicsRequestOracle:
    """kafka-python's DeleteTopicsRequest.encode (it copies topics into topic_names for v0-5)
    sets a request header that a decoded message lacks; the generic encode is the spec's."""

    valid_versions = DeleteTopicsRequest.valid_versions

    @staticmethod
    def decode(data: bytes, version: int) -> _Reencoded:
        return _Reencoded(DeleteTopicsRequest.decode(data, version=version))


ORACLE = {
    18: (ApiVersionsRequest, ApiVersionsResponse),
    3: (MetadataRequest, MetadataResponse),
    2: (ListOffsetsRequest, ListOffsetsResponse),
    1: (FetchRequest, FetchResponse),
    0: (ProduceRequest, ProduceResponse),
    19: (CreateTopicsRequest, CreateTopicsResponse),
    8: (OffsetCommitRequest, OffsetCommitResponse),
    9: (OffsetFetchRequest, OffsetFetchResponse),
    10: (FindCoordinatorRequest, FindCoordinatorResponse),
    22: (InitProducerIdRequest, InitProducerIdResponse),
    17: (SaslHandshakeRequest, SaslHandshakeResponse),
    36: (SaslAuthenticateRequest, SaslAuthenticateResponse),
    20: (_DeleteTopicsRequestOracle, DeleteTopicsResponse),
    21: (DeleteRecordsRequest, DeleteRecordsResponse),
    24: (AddPartitionsToTxnRequest, AddPartitionsToTxnResponse),
    25: (AddOffsetsToTxnRequest, AddOffsetsToTxnResponse),
    26: (EndTxnRequest, EndTxnResponse),
    28: (TxnOffsetCommitRequest, TxnOffsetCommitResponse),
    37: (CreatePartitionsRequest, CreatePartitionsResponse),
    32: (DescribeConfigsRequest, DescribeConfigsResponse),
    16: (ListGroupsRequest, ListGroupsResponse),
    15: (DescribeGroupsRequest, DescribeGroupsResponse),
    42: (DeleteGroupsRequest, DeleteGroupsResponse),
    65: (DescribeTransactionsRequest, DescribeTransactionsResponse),
    66: (ListTransactionsRequest, ListTransactionsResponse),
    11: (JoinGroupRequest, JoinGroupResponse),
    14: (SyncGroupRequest, SyncGroupResponse),
    12: (HeartbeatRequest, HeartbeatResponse),
    13: (LeaveGroupRequest, LeaveGroupResponse),
}


#: APIs kafka-python does not implement, each with the test that checks its layout instead.
NO_ORACLE = {
    # ConsumerGroupDescribe (KIP-848): Kafka 4.1's own answers, read back as its
    # kafka-consumer-groups shows them (tests/cli/test_cli_kafka_tools.py), and every version
    # round-tripped (tests/unit/protocol/test_consumer_group_describe.py)
    69: "tests/cli/test_cli_kafka_tools.py",
}


def test_every_api_has_an_oracle_or_says_which_test_checks_it() -> None:
    assert set(ALL_APIS) == set(ORACLE) | set(NO_ORACLE)
    assert not set(ORACLE) & set(NO_ORACLE)


def _cases() -> list[tuple[ApiSpec, int, str]]:
    cases = []
    for spec in ALL_APIS.values():
        if spec.key in NO_ORACLE:
            continue
        req_cls, _ = ORACLE[spec.key]
        # kafka-python decodes every version its specs describe, including those Kafka 4
        # removed (its validVersions start later, but the field versions still cover them).
        _, hi = req_cls.valid_versions
        lo = 0
        for v in range(spec.min_version, spec.max_version + 1):
            if lo <= v <= hi:
                cases += [(spec, v, "request"), (spec, v, "response")]
    return cases


def _norm(value: Any) -> Any:
    """Make our values and kafka-python's comparable (bytes-likes, UUIDs, nested dicts)."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return None if value == NULL_UUID else str(value)
    if hasattr(value, "to_dict"):
        return _norm(value.to_dict())
    if hasattr(value, "buffer") and hasattr(value, "valid_bytes"):
        return bytes(value.buffer())
    return value


def _plain(obj: Any) -> Any:
    """kafka-python's decoded values, read attribute by attribute (its to_dict renders bytes
    fields as escaped text)."""
    if hasattr(obj, "to_dict"):
        return {k: _plain(getattr(obj, k)) for k in obj.to_dict()}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def _restrict(ours: Any, theirs: Any) -> Any:
    """Our decoded dicts also carry defaults of fields the version lacks: keep theirs' keys."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        assert set(theirs) <= set(ours), f"kafka-python has fields we lack: {set(theirs) - set(ours)}"
        return {k: _restrict(ours[k], theirs[k]) for k in theirs}
    if isinstance(ours, list) and isinstance(theirs, list):
        return [_restrict(a, b) for a, b in zip(ours, theirs, strict=False)]
    return ours


@pytest.mark.parametrize("spec,version,kind", _cases(), ids=lambda x: getattr(x, "name", x))
def test_layout_matches_kafka_python(spec: ApiSpec, version: int, kind: str) -> None:
    req_cls, resp_cls = ORACLE[spec.key]
    oracle = req_cls if kind == "request" else resp_cls
    fields = spec.request if kind == "request" else spec.response
    encode = spec.encode_request if kind == "request" else spec.encode_response
    decode = spec.decode_request if kind == "request" else spec.decode_response
    rnd = random.Random(f"{spec.name}-{version}-{kind}")
    for _ in range(25):
        value = random_struct(fields, version, rnd)
        _blank_records(fields, value)
        if spec.key == 18 and kind == "response" and version > 0:
            # Brokers encode an ApiVersions error as v0 and kafka-python decodes it so;
            # the fallback has its own test (test_framing.py).
            value["error_code"] = 0
        ours = encode(version, value)
        theirs_obj = oracle.decode(ours, version=version)
        theirs = _from_kafka_python(spec, fields, _norm(_plain(theirs_obj)))
        # Our decode of our bytes is the reference value (defaults filled in).
        decoded = decode(version, ours)
        assert _norm(_restrict(decoded, theirs)) == theirs
        # kafka-python re-encodes to the very same bytes, and we read them back.
        assert bytes(theirs_obj.encode()) == ours
        assert _norm(decode(version, ours)) == _norm(decoded)


def _from_kafka_python(spec: ApiSpec, fields, theirs: dict) -> dict:
    """Undo kafka-python's presentation choices: empty record sets shown as '', Metadata's
    *_authorized_operations renamed to authorized_operations and shown as a list of bits, as
    DescribeGroups' authorized_operations are."""

    def bits_to_int(bits: list[int] | None) -> int:
        if bits is None:  # kafka-python's view of -2^31, "not requested"
            return -(1 << 31)
        v = sum(1 << b for b in bits)
        return v - (1 << 32) if v >= 1 << 31 else v

    def walk(fs, obj, ops_name):
        if not isinstance(obj, dict):
            return
        if spec.key in (3, 15) and "authorized_operations" in obj:  # Metadata, DescribeGroups
            name = ops_name if spec.key == 3 else "authorized_operations"
            obj[name] = bits_to_int(obj.pop("authorized_operations"))
        for f in fs:
            if f.name not in obj:
                continue
            if f.type == "records" and obj[f.name] == "":
                obj[f.name] = b""
            elif f.type == "[]" and obj[f.name]:
                for item in obj[f.name]:
                    walk(f.fields, item, "topic_authorized_operations")

    walk(fields, theirs, "cluster_authorized_operations")
    return theirs


def _blank_records(fields, obj) -> None:
    if obj is None:
        return
    for f in fields:
        if f.name not in obj:
            continue
        if f.type == "records":
            obj[f.name] = None if obj[f.name] is None else b""
        elif f.type in ("[]", "struct") and obj[f.name]:
            for item in obj[f.name] if f.type == "[]" else [obj[f.name]]:
                _blank_records(f.fields, item)
