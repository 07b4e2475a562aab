"""``kafkawire topics`` as a group (issue 33): listing by regular expression, ``create`` with
partitions, replication and configs, ``delete``, ``add-partitions``; librdkafka's admin client
is the oracle of what the broker then holds. ``add-partitions`` runs on Apache Kafka (Tansu
does not offer CreatePartitions, which the command reports as such)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.cli.conftest import run_cli, tsv

pytestmark = pytest.mark.broker


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _partitions(bootstrap: str, topic: str) -> int | None:
    # every topic: a Metadata request naming the topic would create it (auto.create.topics)
    found = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    meta = found.topics.get(topic)
    return None if meta is None or meta.error is not None else len(meta.partitions)


def test_create_list_and_delete(kw, bootstrap) -> None:
    topic = _name("cli-create")
    done = kw("topics", "create", topic, "--partitions", "3", "--config",
              "retention.ms=86400000", "-c", "cleanup.policy=compact")
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"created topic {topic} with 3 partitions"
    assert _partitions(bootstrap, topic) == 3
    resource = ConfigResource("topic", topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the answer
    configs = admin.describe_configs([resource])[resource].result(30)
    assert configs["retention.ms"].value == "86400000"
    assert configs["cleanup.policy"].value == "compact"

    listed = tsv(kw("topics").output)
    assert {"topic": topic, "partitions": "3"} in listed
    # a first argument that is no subcommand is a regular expression over whole names
    assert tsv(kw("topics", f"{topic[:-8]}.*").output) == [{"topic": topic, "partitions": "3"}]
    assert tsv(kw("topics", "list", topic[:-1]).output) == []  # whole names, not a prefix

    again = kw("topics", "create", topic)
    assert again.exit_code == 1 and "TOPIC_ALREADY_EXISTS" in again.output
    assert kw("topics", "create", topic, "--if-not-exists").output.strip() == \
        f"topic {topic} exists"

    gone = kw("topics", "delete", topic)
    assert gone.exit_code == 0 and gone.output.strip() == f"deleted topic {topic}"
    assert _partitions(bootstrap, topic) is None
    missing = kw("topics", "delete", topic)
    assert missing.exit_code == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.output, \
        missing.output
    assert kw("topics", "delete", topic, "--if-exists").output.strip() == f"no topic {topic}"


def test_bad_input_is_one_line_and_status_2(kw) -> None:
    bad_regex = kw("topics", "(")
    assert bad_regex.exit_code == 2 and "not a regular expression" in bad_regex.output
    bad_config = kw("topics", "create", _name("cli-bad"), "--config", "retention.ms")
    assert bad_config.exit_code == 2 and "give NAME=VALUE" in bad_config.output
    assert kw("topics", "create", "x", "--partitions", "0").exit_code == 2  # click's range


def test_add_partitions_on_apache_kafka(apache_kafka) -> None:
    bootstrap = apache_kafka.bootstrap()
    topic = _name("cli-grow")
    assert run_cli("-b", bootstrap, "topics", "create", topic, "-p", "2").exit_code == 0
    done = run_cli("-b", bootstrap, "topics", "add-partitions", topic, "3")
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"topic {topic}: 2 -> 5 partitions"
    assert _partitions(bootstrap, topic) == 5
    described = tsv(run_cli("-b", bootstrap, "describe", topic).output)
    assert [r["partition"] for r in described] == ["0", "1", "2", "3", "4"]
    assert all(r["isr"] == r["replicas"] != "-" for r in described)


def test_describe_configs(kw, bootstrap, broker_kind) -> None:
    """``describe --configs``: the topic's configs not at their default, with their source
    (DescribeConfigs); ``--all-configs`` adds the defaults; the values are librdkafka's."""
    topic = _name("cli-configs")
    assert kw("topics", "create", topic, "-p", "2", "-c", "retention.ms=3600000").exit_code == 0
    mine = tsv(kw("describe", topic, "--configs").output)
    # Tansu answers a topic's own configs with config_source DEFAULT_CONFIG (5), so its are
    # all "at their default"; Apache Kafka answers DYNAMIC_TOPIC_CONFIG (1)
    if broker_kind != "tansu":
        assert {"config": "retention.ms", "value": "3600000", "source": "topic"} in mine
        assert all(r["source"] != "default" for r in mine)
    every = tsv(kw("describe", topic, "--configs", "--all-configs").output)
    resource = ConfigResource("topic", topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    theirs = admin.describe_configs([resource])[resource].result(30)
    assert {"config": "retention.ms", "value": "3600000"}.items() <= {
        k: v for k, v in next(r for r in every if r["config"] == "retention.ms").items()
        if k != "source"}.items()
    assert {r["config"]: r["value"] for r in every} == {
        name: "(sensitive)" if entry.is_sensitive else
        ("-" if entry.value is None else entry.value)
        for name, entry in theirs.items()}
    # without --configs a pipe gets the partitions table alone, as before
    assert [r["partition"] for r in tsv(kw("describe", topic).output)] == ["0", "1"]
    if broker_kind != "tansu":  # Tansu answers DescribeConfigs of any name without an error
        missing = kw("describe", _name("cli-none"), "--configs")
        assert missing.exit_code == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.output
