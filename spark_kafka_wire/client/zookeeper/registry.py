"""Brokers and topics as ZooKeeper-era Kafka clusters register them, read with kazoo.

Before bootstrap servers, Kafka clients found a cluster through ZooKeeper: every broker holds
an ephemeral node ``/brokers/ids/<id>`` for as long as it is up, and every topic a node under
``/brokers/topics`` ("ZooKeeper Directories" in the Kafka design document,
https://kafka.apache.org/documentation/#impl_zookeeper, and in the 0.8.2 documentation,
https://kafka.apache.org/082/documentation.html#impl_zookeeper). ``zookeeper.connect`` given
instead of ``kafka.bootstrap.servers`` uses this to find the brokers, so a query written for
an old consumer's configuration needs no broker list. Two layouts exist:

- Kafka 0.7: ``/brokers/ids/<id>`` holds the text ``creator:host:port``, where 0.7.2's
  KafkaZooKeeper writes creator as ``<host>-<epoch ms>``; ``/brokers/topics/<topic>/<id>``
  holds, as decimal text, how many partitions of the topic that broker serves (partitions
  belong to brokers: broker 3's partition 0 is not broker 7's).
- Kafka 0.8 and later: JSON. ``/brokers/ids/<id>`` is ``{"version":1,"host":...,"port":...}``;
  0.9 added ``"endpoints": ["PLAINTEXT://host:port", "SSL://host:port", ...]`` (host and port
  then describe the PLAINTEXT listener, null and -1 without one), and KIP-103 (0.10.2) named
  listeners freely with ``"listener_security_protocol_map": {"INTERNAL": "SASL_SSL", ...}``
  (https://cwiki.apache.org/confluence/display/KAFKA/KIP-103%3A+Separation+of+Internal+and+External+traffic).
  ``/brokers/topics/<topic>`` is ``{"version":1,"partitions":{"0":[1,2],...}}`` (each
  partition's replicas, the first its preferred leader) and
  ``/brokers/topics/<topic>/partitions/<p>/state`` names the current ``"leader"`` (KIP-4's
  admin layer reads the same nodes).

The parsers are pure functions over a node's bytes, so each layout is tested without a
ZooKeeper; :class:`BrokerRegistry` reads the nodes. Credentials (``zookeeper.ssl.*``,
``zookeeper.sasl.jaas.config``) travel in a :class:`ZooKeeperSecurity`, whose repr hides them;
messages show connect strings, node paths and nodes' first bytes only.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import NamedTuple

from spark_kafka_wire.client.config import format_address
from spark_kafka_wire.client.errors import (
    KAFKA07_UNSUPPORTED,
    BrokerRegistrationError,
    ConfigurationError,
    NoBrokersRegisteredError,
    ZooKeeperError,
)
from spark_kafka_wire.client.zookeeper.consumer_offsets import (
    ZOOKEEPER_TIMEOUT_S,
    ZooKeeperSecurity,
    ZooKeeperSession,
)

log = logging.getLogger(__name__)

BROKER_IDS_PATH = "/brokers/ids"
BROKER_TOPICS_PATH = "/brokers/topics"
NO_LEADER = -1  # a partition state's "leader" while none is elected (LeaderAndIsr.NoLeader)
SHOWN_BYTES = 120  # how much of a broken node an error message shows


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    if not topic or "/" in topic or topic in (".", ".."):
        raise ValueError(f"topic name {topic!r} cannot be a ZooKeeper node name")
    return f"{BROKER_TOPICS_PATH}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{topic_path(topic)}/partitions/{partition}/state"


# ----------------------------------------------------------------------------------- values


class BrokerAddress(NamedTuple):
    host: str
    port: int

    def __str__(self) -> str:
        return format_address(self.host, self.port)


class Endpoint(NamedTuple):
    """One listener a broker registered: its name (``PLAINTEXT``, ``INTERNAL`` ...), the
    security protocol it speaks, and its address."""

    listener: str
    security_protocol: str
    address: BrokerAddress


@dataclass(frozen=True)
class BrokerRegistration:
    """What ``/brokers/ids/<broker_id>`` says. ``kafka07``: registered in 0.7's text layout."""

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    kafka07: bool = False

    def address(self, security_protocol: str) -> BrokerAddress | None:
        """The address of the listener speaking ``security_protocol``: the listener named like
        the protocol when there is one (the only name before KIP-103), else the first one
        registered with that protocol; None when the broker has none."""
        protocol = security_protocol.upper()
        matching = [e for e in self.endpoints if e.security_protocol == protocol]
        named = [e for e in matching if e.listener == protocol]
        chosen = (named or matching)[:1]
        return chosen[0].address if chosen else None

    def listeners(self) -> str:
        """The registered listeners, for messages."""
        return ", ".join(f"{e.listener}://{e.address}" + (
            f" ({e.security_protocol})" if e.listener != e.security_protocol else "")
            for e in self.endpoints)


@dataclass(frozen=True)
class PartitionAssignment:
    """A partition of a 0.8+ topic: its replicas (the first the preferred leader) and its
    current leader (None while none is elected or no state is registered)."""

    replicas: tuple[int, ...]
    leader: int | None = None

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None


@dataclass(frozen=True)
class TopicRegistration:
    """A topic as ZooKeeper holds it. 0.8+: ``partitions`` (partition -> assignment). 0.7:
    ``broker_partitions`` (broker id -> number of partitions on that broker)."""

    topic: str
    partitions: dict[int, PartitionAssignment]
    broker_partitions: dict[int, int]
    kafka07: bool = False

    def partitions07(self) -> list[tuple[int, int]]:
        """A 0.7 topic's (broker id, partition) pairs, in numeric order."""
        return [(b, p) for b, n in sorted(self.broker_partitions.items()) for p in range(n)]


# ---------------------------------------------------------------------------------- parsers


def _broken(path: str, data: bytes, why: str) -> BrokerRegistrationError:
    head = data[:SHOWN_BYTES]
    more = f" ... ({len(data)} bytes)" if len(data) > SHOWN_BYTES else ""
    return BrokerRegistrationError(
        f"ZooKeeper node {path} is not a Kafka registration ({why}); it holds {head!r}{more}. "
        "It was written by something other than a Kafka broker, or damaged: check the "
        "zookeeper.connect chroot names the cluster's root")


def _port(value: object, path: str, data: bytes) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise _broken(path, data, f"port {value!r} is not between 1 and 65535")
    return value


def _host(value: object, path: str, data: bytes) -> str:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise _broken(path, data, f"host {value!r} is not a host name")
    return value


def _split_address(text: str, path: str, data: bytes) -> BrokerAddress:
    """``host:port`` or ``[ipv6]:port``."""
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or not rest.startswith(":"):
            raise _broken(path, data, f"address {text!r} is not [host]:port")
        port_text = rest[1:]
    else:
        host, colon, port_text = text.rpartition(":")
        if not colon:
            raise _broken(path, data, f"address {text!r} has no port")
    if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
        raise _broken(path, data, f"the port of {text!r} is not a number")
    return BrokerAddress(_host(host, path, data), _port(int(port_text), path, data))


def parse_endpoint(text: object, protocols: dict[str, str], path: str, data: bytes) -> Endpoint:
    """``LISTENER://host:port``; the listener's security protocol from the KIP-103 map, or
    the listener's own name (0.9 to 0.10.1, where listeners were named by protocol)."""
    if not isinstance(text, str) or "://" not in text:
        raise _broken(path, data, f"endpoint {text!r} is not LISTENER://host:port")
    listener, _, address = text.partition("://")
    listener = listener.strip().upper()
    if not listener:
        raise _broken(path, data, f"endpoint {text!r} names no listener")
    protocol = protocols.get(listener, listener)
    return Endpoint(listener, protocol, _split_address(address, path, data))


def parse_broker_json(broker_id: int, data: bytes, path: str) -> BrokerRegistration:
    """A 0.8+ registration (JSON, versions 1 to 5)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _broken(path, data, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise _broken(path, data, "not a JSON object")
    endpoints = value.get("endpoints")
    if endpoints:
        if not isinstance(endpoints, list):
            raise _broken(path, data, "endpoints is not a list")
        raw_map = value.get("listener_security_protocol_map") or {}
        if not isinstance(raw_map, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in raw_map.items()):
            raise _broken(path, data, "listener_security_protocol_map is not a map of names")
        protocols = {k.strip().upper(): v.strip().upper() for k, v in raw_map.items()}
        return BrokerRegistration(broker_id, tuple(
            parse_endpoint(e, protocols, path, data) for e in endpoints))
    # version 1 (0.8): host and port alone, a PLAINTEXT listener
    if value.get("host") is None and value.get("port") in (None, -1):
        raise _broken(path, data, "neither host and port nor endpoints")
    address = BrokerAddress(_host(value.get("host"), path, data),
                            _port(value.get("port"), path, data))
    return BrokerRegistration(broker_id, (Endpoint("PLAINTEXT", "PLAINTEXT", address),))


# creator:host:port, creator being "<host>-<epoch ms>" (0.7.2 KafkaZooKeeper); the host may
# hold ':' (an IPv6 address), so the creator is recognised by its "-<digits>" end.
_KAFKA07_REGISTRATION = re.compile(r"^(?P<creator>.*-\d+):(?P<host>.+):(?P<port>\d{1,5})$")


def parse_broker07(broker_id: int, data: bytes, path: str) -> BrokerRegistration:
    """A 0.7 registration: ``creator:host:port`` text (the design document's older
    ``host:port`` is accepted too)."""
    try:
        text = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise _broken(path, data, "neither JSON nor 0.7's creator:host:port text") from None
    match = _KAFKA07_REGISTRATION.match(text)
    if match is not None:
        host, port_text = match["host"], match["port"]
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        raise _broken(path, data, "neither JSON nor 0.7's creator:host:port text")
    if not port_text.isdigit():
        raise _broken(path, data, f"port {port_text!r} is not a number")
    address = BrokerAddress(_host(host, path, data), _port(int(port_text), path, data))
    return BrokerRegistration(broker_id, (Endpoint("PLAINTEXT", "PLAINTEXT", address),),
                              kafka07=True)


def parse_broker(broker_id: int, data: bytes, path: str | None = None) -> BrokerRegistration:
    """Either layout, told apart by the JSON object's opening brace."""
    where = path or broker_path(broker_id)
    if data.lstrip()[:1] == b"{":
        return parse_broker_json(broker_id, data, where)
    return parse_broker07(broker_id, data, where)


def parse_topic_json(topic: str, data: bytes, path: str | None = None,
                     ) -> dict[int, tuple[int, ...]]:
    """A 0.8+ topic node: partition -> replica ids (the first the preferred leader)."""
    where = path or topic_path(topic)
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _broken(where, data, f"not JSON: {exc}") from None
    partitions = value.get("partitions") if isinstance(value, dict) else None
    if not isinstance(partitions, dict):
        raise _broken(where, data, "no partitions map")
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in partitions.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit()):
            raise _broken(where, data, f"partition {key!r} is not a number")
        if not isinstance(replicas, list) or not all(
                isinstance(r, int) and not isinstance(r, bool) for r in replicas):
            raise _broken(where, data, f"the replicas of partition {key} are not broker ids")
        out[int(key)] = tuple(replicas)
    return dict(sorted(out.items()))


def parse_partition_state(data: bytes, path: str) -> int | None:
    """The ``leader`` of a partition state node; None for NoLeader (-1)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _broken(path, data, f"not JSON: {exc}") from None
    leader = value.get("leader") if isinstance(value, dict) else None
    if isinstance(leader, bool) or not isinstance(leader, int):
        raise _broken(path, data, "no leader")
    return None if leader == NO_LEADER else leader


def parse_partition_count07(data: bytes, path: str) -> int:
    """A 0.7 ``/brokers/topics/<topic>/<broker id>`` node: the broker's partition count."""
    text = data.decode("utf-8", "replace").strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 10):
        raise _broken(path, data, "not 0.7's partition count (decimal text)")
    return int(text)


def _broker_id(child: str, parent: str) -> int:
    if not (child.isascii() and child.isdigit() and len(child) <= 10):
        raise BrokerRegistrationError(
            f"ZooKeeper node {parent}/{child} is not a broker id (a number); check the "
            "zookeeper.connect chroot names the cluster's root")
    return int(child)


# ---------------------------------------------------------------------------------- reading


class BrokerRegistry(ZooKeeperSession):
    """Reads the brokers and topics registered on the ensemble of its session (one, opened
    on first use and ended by :meth:`close`, a context manager)."""

    def _failed(self, operation: str, path: str, exc: Exception) -> ZooKeeperError:
        """``operation`` (listing, reading) of the node ``path`` failed."""
        return ZooKeeperError.of(ZooKeeperError.condition, operation=operation, path=path,
                                 connect=self.connect, error=repr(exc))

    def _children(self, path: str) -> list[str] | None:
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see zookeeper.py)

        try:
            return list(self.session().get_children(path))
        except NoNodeError:
            return None
        except KazooException as exc:
            raise self._failed("listing", path, exc) from exc

    def _get(self, path: str) -> bytes | None:
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see zookeeper.py)

        try:
            data, _ = self.session().get(path)
        except NoNodeError:
            return None
        except KazooException as exc:
            raise self._failed("reading", path, exc) from exc
        return bytes(data or b"")

    def brokers(self) -> dict[int, BrokerRegistration]:
        """Every registered broker, by id. A broker that deregisters while we read is left
        out; none at all is a :class:`NoBrokersRegisteredError`."""
        ids = self._children(BROKER_IDS_PATH)
        out: dict[int, BrokerRegistration] = {}
        for child in sorted(ids or []):
            broker_id = _broker_id(child, BROKER_IDS_PATH)
            data = self._get(broker_path(broker_id))
            if data is not None:
                out[broker_id] = parse_broker(broker_id, data)
        if not out:
            raise NoBrokersRegisteredError(
                f"no Kafka broker is registered in ZooKeeper at {self.connect} (no children "
                f"of {BROKER_IDS_PATH}{'' if ids is not None else ', which does not exist'}): "
                "the brokers are down, or zookeeper.connect lacks the cluster's chroot "
                "(host:port/chroot, as in the brokers' own zookeeper.connect)")
        return dict(sorted(out.items()))

    def topics(self) -> list[str]:
        """The registered topic names."""
        return sorted(self._children(BROKER_TOPICS_PATH) or [])

    def topic(self, topic: str) -> TopicRegistration | None:
        """A topic's partitions in either layout (the node's data tells: 0.8+ JSON, or an
        empty parent of 0.7's per-broker counts); None when it is not registered."""
        path = topic_path(topic)
        data = self._get(path)
        if data is None:
            return None
        if data.strip():
            replicas = parse_topic_json(topic, data, path)
            partitions: dict[int, PartitionAssignment] = {}
            for p, reps in replicas.items():
                state_path = partition_state_path(topic, p)
                state = self._get(state_path)
                leader = parse_partition_state(state, state_path) if state else None
                partitions[p] = PartitionAssignment(reps, leader)
            return TopicRegistration(topic, partitions, {})
        counts: dict[int, int] = {}
        for child in sorted(self._children(path) or []):
            if child == "partitions":  # a 0.8+ topic whose own node lost its data
                raise _broken(path, data, "empty, with 0.8's partitions child")
            broker_id = _broker_id(child, path)
            count = self._get(f"{path}/{child}")
            if count is not None:  # None: the broker went while we read
                counts[broker_id] = parse_partition_count07(count, f"{path}/{child}")
        return TopicRegistration(topic, {}, counts, kafka07=True)


def bootstrap_addresses(brokers: dict[int, BrokerRegistration], security_protocol: str,
                        where: str) -> tuple[BrokerAddress, ...]:
    """The address of each broker's listener for ``security_protocol``, in broker id order.
    Brokers without such a listener are left out (the client learns every broker's address
    on that listener from Metadata); none with one at all is a :class:`NoBrokersRegisteredError`
    listing what they offer. ``where`` names the ensemble in messages."""
    found: list[BrokerAddress] = []
    missing: list[BrokerRegistration] = []
    for registration in brokers.values():
        address = registration.address(security_protocol)
        if address is None:
            missing.append(registration)
        else:
            found.append(address)
    if not found:
        offered = "; ".join(f"broker {b.broker_id}: {b.listeners()}" for b in missing)
        raise NoBrokersRegisteredError(
            f"no broker registered in ZooKeeper at {where} has a {security_protocol.upper()} "
            f"listener ({offered}); set kafka.security.protocol to the protocol of a listener "
            "this client may use")
    if missing:
        log.warning("ZooKeeper at %s: brokers %s have no %s listener and are not used to "
                    "bootstrap", where, ", ".join(str(b.broker_id) for b in missing),
                    security_protocol)
    return tuple(found)


def discover_brokers(connect: str, timeout_s: float = ZOOKEEPER_TIMEOUT_S,
                     security: ZooKeeperSecurity | None = None,
                     ) -> dict[int, BrokerRegistration]:
    """Every broker registered on ``connect``, read in one short ZooKeeper session (none
    is kept open: a Spark driver plans many queries, and executors never need one)."""
    with BrokerRegistry(connect, timeout_s, security) as registry:
        return registry.brokers()


def find_cluster(connect: str, security_protocol: str = "PLAINTEXT",
                 timeout_s: float = ZOOKEEPER_TIMEOUT_S,
                 zookeeper_security: ZooKeeperSecurity | None = None,
                 ) -> tuple[tuple[tuple[str, int], ...], bool]:
    """The brokers registered on ``connect`` as (addresses, whether they are Kafka 0.7
    brokers). For 0.8+ brokers the addresses are each one's listener for
    ``security_protocol``, to bootstrap from (leaders and every broker's address then come
    from Metadata, as with bootstrap servers given); 0.7 brokers (0.7's text registrations)
    have no Metadata request, and their addresses are those they registered."""
    brokers = discover_brokers(connect, timeout_s, zookeeper_security)
    old = [b for b in brokers.values() if b.kafka07]
    if old:
        if len(old) < len(brokers):
            newer = next(b for b in brokers.values() if not b.kafka07)
            raise BrokerRegistrationError(
                f"ZooKeeper at {connect} registers Kafka 0.7 brokers ({broker_path(old[0].broker_id)}"
                f" holds 0.7's creator:host:port text) and 0.8+ brokers "
                f"({broker_path(newer.broker_id)} holds JSON) together: no client speaks to "
                "both as one cluster; check the zookeeper.connect chroot")
        found = [b.address("PLAINTEXT") for b in old]
        return tuple((a.host, a.port) for a in found if a is not None), True
    return tuple((a.host, a.port) for a in bootstrap_addresses(brokers, security_protocol,
                                                               connect)), False


def bootstrap_from_zookeeper(connect: str, security_protocol: str = "PLAINTEXT",
                             timeout_s: float = ZOOKEEPER_TIMEOUT_S,
                             zookeeper_security: ZooKeeperSecurity | None = None,
                             ) -> tuple[tuple[str, int], ...]:
    """The bootstrap servers of the 0.8+ cluster whose ZooKeeper is ``connect`` (see
    :func:`find_cluster`). Kafka 0.7 brokers are a :class:`ConfigurationError`: nothing
    bootstraps from them."""
    addresses, kafka07 = find_cluster(connect, security_protocol, timeout_s, zookeeper_security)
    if kafka07:
        raise ConfigurationError.of(
            KAFKA07_UNSUPPORTED, "NO_METADATA", connect=connect)
    return addresses
