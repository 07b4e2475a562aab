"""Consumer offsets in ZooKeeper, in the layout of Kafka's ZooKeeper-based consumers:
``/consumers/<group>/offsets/<topic>/<partition>`` holding the offset as decimal text
("ZooKeeper Directories" in the Kafka 0.8.2 documentation,
https://kafka.apache.org/082/documentation.html).

Lag tools of that era (Burrow's ZooKeeper mode, ConsumerOffsetChecker, kafka-manager) read
these nodes; writing them lets such tools follow a Spark query, and writing both ZooKeeper
and Kafka (``both``) is the dual commit that the same documentation describes for migrating
consumers from ZooKeeper to Kafka-based offset storage (``offsets.storage``,
``dual.commit.enabled``).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from spark_kafka_wire.client.cluster import TopicPartition
from spark_kafka_wire.client.errors import ConfigurationError, ZooKeeperError
from spark_kafka_wire.protocol.errors import shown

if TYPE_CHECKING:
    from kazoo.client import KazooClient


def offset_path(group: str, topic: str, partition: int | str) -> str:
    """``/consumers/<group>/offsets/<topic>/<partition>``; a Kafka 0.7 consumer names the
    partition ``<broker id>-<partition>`` (pass that name as ``partition``)."""
    for what, name in (("group", group), ("topic", topic)):
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"{what} name {name!r} cannot be a ZooKeeper node name")
    return f"/consumers/{group}/offsets/{topic}/{partition}"


# How long a ZooKeeper session may take to start before the ensemble counts as unreachable.
ZOOKEEPER_TIMEOUT_S = 15.0


def start_zookeeper(connect: str, timeout_s: float = ZOOKEEPER_TIMEOUT_S) -> KazooClient:
    """A started kazoo client on ``connect`` (``host:port[,host:port][/chroot]``, Kafka's
    zookeeper.connect: kazoo applies the chroot to every path).

    kazoo is imported here, on first use: it takes ~40 ms, every Spark worker imports this
    module, and only queries that use ZooKeeper need it. A connect string kazoo cannot read is
    a :class:`ConfigurationError`; an ensemble that does not answer within ``timeout_s`` a
    :class:`ZooKeeperError` naming it.
    """
    from kazoo.client import KazooClient  # noqa: PLC0415
    from kazoo.handlers.threading import KazooTimeoutError  # noqa: PLC0415

    try:
        zk = KazooClient(hosts=connect, timeout=timeout_s)
    except ValueError as exc:
        raise ConfigurationError(f"zookeeper.connect {shown(connect)} is not "
                                 f"host:port[,host:port][/chroot]: {exc}") from None
    try:
        with warnings.catch_warnings():
            # kazoo warns of a chroot that does not exist; the callers say so in their errors
            warnings.filterwarnings("ignore", "No chroot path exists", UserWarning)
            zk.start(timeout=timeout_s)
    except KazooTimeoutError:
        zk.close()
        raise ZooKeeperError(
            f"ZooKeeper at {connect} did not answer within {timeout_s:g} s; "
            "check zookeeper.connect and that the ensemble is up and reachable from here"
        ) from None
    return zk


def stop_zookeeper(zk: KazooClient) -> None:
    """End the session (its ephemeral nodes go with it) and the client's threads."""
    zk.stop()
    zk.close()


class ZooKeeperOffsetStore:
    """Reads and writes group offsets on the ensemble named by ``connect`` (host:port list,
    optionally with a chroot path, as in Kafka's zookeeper.connect)."""

    def __init__(self, connect: str, timeout_s: float = ZOOKEEPER_TIMEOUT_S) -> None:
        self.connect = connect
        self.timeout_s = timeout_s
        self._zk: KazooClient | None = None

    def _client(self) -> KazooClient:
        if self._zk is None:
            self._zk = start_zookeeper(self.connect, self.timeout_s)
        return self._zk

    def commit(self, group: str, offsets: Mapping[TopicPartition, int],
               names: Mapping[TopicPartition, str] | None = None) -> None:
        """Write ``offsets``; ``names`` (Kafka 0.7): each partition's node name."""
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (see _client)

        zk = self._client()
        try:
            for (topic, partition), offset in sorted(offsets.items()):
                node = names[(topic, partition)] if names is not None else partition
                path = offset_path(group, topic, node)
                data = str(int(offset)).encode()
                if zk.exists(path):
                    zk.set(path, data)
                else:
                    zk.create(path, data, makepath=True)
        except KazooException as exc:
            raise ZooKeeperError(f"writing offsets of group {group!r} to ZooKeeper at "
                                 f"{self.connect} failed: {exc!r}") from exc

    def fetch(self, group: str, partitions: Iterable[TopicPartition],
              names: Mapping[TopicPartition, str] | None = None) -> dict[TopicPartition, int]:
        """Committed offsets; -1 where there is no node. ``names``: as in :meth:`commit`."""
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see _client)

        zk = self._client()
        out: dict[TopicPartition, int] = {}
        for topic, partition in sorted(set(partitions)):
            node = names[(topic, partition)] if names is not None else partition
            try:
                data, _ = zk.get(offset_path(group, topic, node))
                out[(topic, partition)] = int(data.decode().strip())
            except NoNodeError:
                out[(topic, partition)] = -1
            except (KazooException, ValueError) as exc:
                raise ZooKeeperError(f"reading the offset of {topic}-{partition} for group "
                                     f"{group!r} from ZooKeeper failed: {exc!r}") from exc
        return out

    def topics(self, group: str) -> list[str]:
        """The topics ``group`` has offsets for (the children of its ``offsets`` node)."""
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see _client)

        offset_path(group, "t", 0)  # checks the group name
        zk = self._client()
        try:
            return sorted(zk.get_children(f"/consumers/{group}/offsets"))
        except NoNodeError:
            return []
        except KazooException as exc:
            raise ZooKeeperError(f"listing the topics of group {group!r} in ZooKeeper at "
                                 f"{self.connect} failed: {exc!r}") from exc

    def members(self, group: str) -> dict[str, dict[str, int]]:
        """The live consumers of a ZooKeeper-era group: consumer id -> {topic or pattern: number
        of streams}, from ``/consumers/<group>/ids/<consumer id>`` (ephemeral nodes; the design
        document's "Consumer Id Registry"). 0.8 consumers write
        ``{"version":1,"subscription":{...},"pattern":"static",...}``, 0.7 consumers the
        subscription map alone. A wildcard subscription ("white_list"/"black_list" pattern)
        is kept under its pattern name, ``"*white_list:" + regex``, for the caller to match."""
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see _client)

        offset_path(group, "t", 0)  # checks the group name
        zk = self._client()
        out: dict[str, dict[str, int]] = {}
        try:
            ids = sorted(zk.get_children(f"/consumers/{group}/ids"))
        except NoNodeError:
            return out
        except KazooException as exc:
            raise ZooKeeperError(f"listing the consumers of group {group!r} in ZooKeeper at "
                                 f"{self.connect} failed: {exc!r}") from exc
        for cid in ids:
            try:
                data, _ = zk.get(f"/consumers/{group}/ids/{cid}")
            except NoNodeError:
                continue  # left while we looked
            except KazooException as exc:
                raise ZooKeeperError(f"reading consumer {cid} of group {group!r} from ZooKeeper "
                                     f"failed: {exc!r}") from exc
            out[cid] = parse_registration(data, group, cid)
        return out

    def close(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            stop_zookeeper(zk)

    def __enter__(self) -> ZooKeeperOffsetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_registration(data: bytes, group: str, consumer: str) -> dict[str, int]:
    """A consumer id node's subscription: topic (or ``*<pattern>:<regex>``) -> streams."""
    try:
        value = json.loads(data.decode() or "{}")
        if not isinstance(value, dict):
            raise ValueError("not a JSON object")
        sub = value.get("subscription", value) if "version" in value else value
        pattern = value.get("pattern", "static")
        streams = {str(k): int(v) for k, v in sub.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise ZooKeeperError(f"the registration of consumer {consumer} in group {group!r} is "
                             f"not a subscription ({data[:200]!r}): {exc}") from None
    if pattern in ("white_list", "black_list"):
        return {f"*{pattern}:{k}": v for k, v in streams.items()}
    return streams
