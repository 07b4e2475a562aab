"""What a member takes from its group leader's assignment (client/groups/group_member.py, issue 45
item 8): only partitions of the topics it subscribed to, each once; the rest is named in a
warning that another client's topic names cannot forge lines of."""

from __future__ import annotations

import logging

from spark_kafka_wire.client.config import ClientConfig
from spark_kafka_wire.client.groups.group_member import GroupMember, MemberSettings
from spark_kafka_wire.client.metadata.cluster import KafkaClient


def test_partitions_of_topics_not_subscribed_to_are_dropped_and_named(caplog) -> None:
    member = GroupMember(KafkaClient(ClientConfig.from_servers("127.0.0.1:1")),
                         MemberSettings("g", ("orders",)))
    assigned = [("orders", 1), ("secret", 0), ("orders", 0), ("orders", 1),
                ("x\nINFO forged line", 3), *(("zzz", p) for p in range(50))]
    with caplog.at_level(logging.WARNING):
        assert member._subscribed(assigned) == [("orders", 0), ("orders", 1)]
    [warning] = caplog.records
    text = warning.getMessage()
    assert "52 partitions" in text and "'secret' partition 0" in text and "and 42 more" in text
    assert "\n" not in text and "'x\\nINFO forged line' partition 3" in text
