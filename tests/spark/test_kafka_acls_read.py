"""A Spark read of a topic the principal may not DESCRIBE (Kafka ACLs, issue 46 item 15), on the
session's Apache Kafka with StandardAuthorizer (tests/support/kafka_acls.py): the refusal
says the one true thing, the principal and the kafka-acls grant, never that the topic might
not exist, and comes at once (an ACL does not change between retries)."""

from __future__ import annotations

import time
import uuid

import pytest

from spark_kafka_wire.client.metadata.admin import create_topics
from tests.support.kafka_acls import Acl, admin_client, grant, sasl_options

pytestmark = [pytest.mark.spark, pytest.mark.broker]
#: Planning's refusal, without Spark's own start-up of the job (seconds on a loaded machine).
FAIL_FAST_S = 20.0


def test_a_read_of_a_topic_without_describe_names_the_acl(spark, apache_kafka):
    topic = f"acl-spark-{uuid.uuid4().hex[:8]}"
    with admin_client(apache_kafka) as admin:
        create_topics(admin, [(topic, 1)])
    # the topic has ACLs (alice's), so bob, with none, may not even describe it
    grant(apache_kafka, Acl("User:alice", "Read", "Topic", topic))
    started = time.monotonic()
    with pytest.raises(Exception) as failed:
        (spark.read.format("kafkawire").options(**sasl_options(apache_kafka, "bob"))
         .option("subscribe", topic).load().collect())
    assert time.monotonic() - started < FAIL_FAST_S
    text = str(failed.value)
    assert "TOPIC_AUTHORIZATION_FAILED (29) in Metadata" in text
    assert (f"User:bob is not authorized to DESCRIBE topic '{topic}': grant User:bob DESCRIBE "
            f"on topic '{topic}' (kafka-acls --add --allow-principal User:bob --operation "
            f"Describe --topic {topic}); a reader needs Read") in text
    assert "does not exist" not in text and "not visible" not in text
