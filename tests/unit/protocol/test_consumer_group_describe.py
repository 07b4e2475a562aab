"""ConsumerGroupDescribe (69, KIP-848), which kafka-python (the layout oracle of
test_messages_oracle.py) lacks: random bodies of each version and kind encode
and decode back to themselves, and a v0 answer leaves out v1's member type. Kafka 4.1's own
answers are read in tests/cli/test_cli_kafka_tools.py (a KIP-848 group described as
kafka-consumer-groups describes it)."""

from __future__ import annotations

import random

import pytest

from spark_kafka_wire.protocol.messages import ALL_APIS, CONSUMER_GROUP_DESCRIBE
from tests.support.spec_values import random_struct

SPEC = CONSUMER_GROUP_DESCRIBE


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("kind", ["request", "response"])
def test_random_bodies_round_trip(version: int, kind: str) -> None:
    rnd = random.Random(f"cgd-{version}-{kind}")
    fields = SPEC.request if kind == "request" else SPEC.response
    encode = SPEC.encode_request if kind == "request" else SPEC.encode_response
    decode = SPEC.decode_request if kind == "request" else SPEC.decode_response
    for _ in range(50):
        body = random_struct(fields, version, rnd)
        for group in body.get("groups", []):
            for member in group["members"]:
                member.setdefault("member_type", -1)  # v0 has none: decoded as the default
        data = encode(version, body)
        assert decode(version, data) == body
        assert encode(version, decode(version, data)) == data


def test_member_type_is_v1_only() -> None:
    member = {"member_id": "m", "instance_id": None, "rack_id": None, "member_epoch": 3,
              "client_id": "c", "client_host": "/h", "subscribed_topic_names": ["t"],
              "subscribed_topic_regex": None,
              "assignment": {"topic_partitions": []},
              "target_assignment": {"topic_partitions": []}, "member_type": 1}
    body = {"throttle_time_ms": 0, "groups": [
        {"error_code": 0, "error_message": None, "group_id": "g", "group_state": "Stable",
         "group_epoch": 1, "assignment_epoch": 1, "assignor_name": "uniform",
         "members": [member], "authorized_operations": -2147483648}]}
    v0 = SPEC.decode_response(0, SPEC.encode_response(0, body))
    v1 = SPEC.decode_response(1, SPEC.encode_response(1, body))
    assert len(SPEC.encode_response(1, body)) == len(SPEC.encode_response(0, body)) + 1
    assert v0["groups"][0]["members"][0]["member_type"] == -1  # the default where absent
    assert v1["groups"][0]["members"][0]["member_type"] == 1
    assert ALL_APIS[69] is SPEC
