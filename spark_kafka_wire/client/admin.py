"""Topic administration needed by the connector and its tests (CreateTopics)."""

from __future__ import annotations

from collections.abc import Iterable

from ..protocol.errors import TopicAlreadyExistsError, error_for_code
from ..protocol.messages import CREATE_TOPICS
from .cluster import KafkaClient


def create_topics(
    client: KafkaClient,
    topics: Iterable[tuple[str, int]],
    replication_factor: int = -1,
    configs: dict[str, str] | None = None,
    exist_ok: bool = False,
    timeout_ms: int = 30_000,
) -> None:
    """Create (name, partitions) topics through the controller; -1 = broker default
    replication. Waits until every new topic shows its partitions in metadata."""
    wanted = list(topics)
    cfg = [{"name": k, "value": v} for k, v in (configs or {}).items()]
    body = {
        "topics": [
            {"name": name, "num_partitions": n, "replication_factor": replication_factor,
             "assignments": [], "configs": cfg}
            for name, n in wanted
        ],
        "timeout_ms": timeout_ms,
        "validate_only": False,
    }

    def attempt() -> dict:
        md = client.fetch_metadata([])
        conn = client.broker(md.controller_id) if md.controller_id >= 0 else client.any_connection()
        return conn.request(CREATE_TOPICS, body)

    resp = client.retry(attempt, "CreateTopics")
    for t in resp["topics"]:
        code = t["error_code"]
        if code:
            exc = error_for_code(code, topic=t["name"], context="CreateTopics",
                                 message=t.get("error_message"))
            if isinstance(exc, TopicAlreadyExistsError) and exist_ok:
                continue
            raise exc
    names = [name for name, _ in wanted]

    def visible() -> None:
        md = client.fetch_metadata(names)
        for name, n in wanted:
            info = md.topics.get(name)
            if info is None or info.error_code or len(info.partitions) < n:
                raise error_for_code(5, topic=name, context="waiting for the new topic")

    client.retry(visible, "topic creation", retries=20)
