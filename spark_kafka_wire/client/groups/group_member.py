"""A member of a classic consumer group (``kafkawire consume --group``): join, get partitions
assigned, stay alive, commit, leave, the way Kafka's consumers do it with the coordinator.

The classic group protocol (Kafka's "consumer" protocol type): FindCoordinator, then JoinGroup
until the coordinator has heard from every member (a first join of v4+ is answered
MEMBER_ID_REQUIRED with the id to join again with, KIP-394); the member the coordinator names
leader receives every member's subscription, assigns the partitions with the assignor the
group agreed on (client/groups/assignment.py: ``range``, ``roundrobin`` or ``cooperative-sticky``,
the names Java's and librdkafka's consumers use, so they can share a group with kafkawire) and
hands the assignments out in its SyncGroup; the others send an empty one and receive theirs.
Heartbeats keep the membership alive; a REBALANCE_IN_PROGRESS (or a generation the coordinator
no longer knows) answered to one means: commit what was consumed and join again. ``range`` and
``roundrobin`` are eager: a rebalance takes every partition away and hands them out again, so
a member commits all it consumed before rejoining and reads the committed offsets after.
``cooperative-sticky`` (KIP-429) keeps a member's partitions where balance allows and hands
the moving ones over in a second rebalance (``join``).

Heartbeats go from a thread of their own, so a member whose output is slow (a pipe, a table
printed whole) is not thrown out of the group; it and the caller's commits share the
coordinator connection under one lock. The thread outlives whatever a heartbeat meets: a lost
connection or a malformed answer is logged and the heartbeat tried again on a new connection
after a backoff; once none has been answered for a whole session timeout the coordinator has
dropped the member, so the caller is told to join again (a coordinator still unusable then
fails that join with its typed error). What no retry helps (an error code such as an
authorization failure, a TLS alert, a refused SASL re-authentication, which retried could lock
the account) and anything unexpected is raised to the caller by ``needs_rejoin``, as Java's
consumer raises its heartbeat thread's failure from poll(); heartbeats go on if it carries on. The member has a client of its own (connections
apart from the fetches'), whose request timeout exceeds the rebalance timeout: a JoinGroup is
answered only when the group has rejoined.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from spark_kafka_wire.client.errors import BrokerConnectionError, CoordinatorMovedError
from spark_kafka_wire.client.groups.assignment import COOPERATIVE, RANGE, assign
from spark_kafka_wire.client.groups.group_offsets import (
    check_coordinated,
    commit_offsets,
    coordinated,
    fetch_committed,
    find_coordinator,
)
from spark_kafka_wire.client.metadata.cluster import KafkaClient, TopicPartition
from spark_kafka_wire.client.wire.connection import BrokerConnection
from spark_kafka_wire.protocol.bodies import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponseMembers,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupRequestAssignments,
)
from spark_kafka_wire.protocol.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    MAX_VERSION,
    decode_assignment,
    decode_member_subscription,
    encode_assignment,
    encode_subscription,
)
from spark_kafka_wire.protocol.errors import ErrorCode, KafkaError, KafkaWireError, shown
from spark_kafka_wire.protocol.messages import HEARTBEAT, JOIN_GROUP, LEAVE_GROUP, SYNC_GROUP

log = logging.getLogger(__name__)

#: The subscription version kafkawire writes: v1 carries the partitions owned (KIP-429);
#: every consumer since Kafka 2.4 (and librdkafka 1.6) reads it. A cooperative member writes
#: v2, whose generation tells a leader which of two claims to a partition is current.
SUBSCRIPTION_VERSION = 1
COOPERATIVE_SUBSCRIPTION_VERSION = 2
#: Answers that mean "this generation is over: join again" (the member id still holds).
_REJOIN = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION}
#: Answers that mean "the coordinator forgot this member: join again as a new one".
_FORGOTTEN = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}
#: How many dropped partitions a warning names (the rest are counted).
_SHOWN = 10
_MOVED = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
          ErrorCode.NOT_COORDINATOR}


@dataclass(frozen=True)
class MemberSettings:
    """How a member joins. The session timeout is 10 s, the Java consumer's default before
    Kafka 3.0 (KIP-735 raised it to 45 s for consumers on flaky cloud networks): a member
    that vanished without leaving holds its partitions that long, and a coordinator may hold
    every JoinGroup for part of it (Tansu, ``kafkawire broker``, for half of it: 23 s at 45 s,
    the wait that made ``consume -G`` look hung), while kafkawire leaves on every exit,
    Ctrl-C and SIGTERM included, and heartbeats from a thread of its own every 3 s (Java's
    heartbeat.interval.ms). The rebalance timeout bounds how long a JoinGroup waits for the
    other members (Java's max.poll.interval.ms, which kafkawire need not allow for: it
    rejoins within one heartbeat interval and one fetch)."""

    group: str
    topics: tuple[str, ...]
    assignor: str = RANGE
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 60_000
    heartbeat_interval_ms: int = 3_000


class GroupMember:
    """One member of ``settings.group``. ``join()`` returns the partitions assigned;
    ``needs_rejoin`` turns true when the group rebalances (the caller commits, then joins
    again); ``leave()`` stops the heartbeats and leaves, so the others get the partitions at
    once instead of after the session timeout."""

    def __init__(self, client: KafkaClient, settings: MemberSettings) -> None:
        config = client.config
        timeout = max(config.request_timeout_ms, settings.rebalance_timeout_ms + 5_000)
        self.client = KafkaClient(replace(config, request_timeout_ms=timeout))
        self.settings = settings
        self.member_id = ""
        self.generation = -1
        self.assignment: list[TopicPartition] = []
        self.leader = False
        self._lock = threading.Lock()  # the coordinator connection: heartbeats vs the rest
        self._rejoin = threading.Event()
        self._stop = threading.Event()
        self._failure: Exception | None = None  # a heartbeat's error, raised to the caller
        self._answered = 0.0  # when the coordinator last answered this member (monotonic)
        self._coordinator: BrokerConnection | None = None
        self._thread: threading.Thread | None = None

    # -- what the caller asks ---------------------------------------------------------------
    @property
    def needs_rejoin(self) -> bool:
        """True once a heartbeat learnt the group rebalances; raises what a heartbeat could
        not handle (an authorization error, the coordinator gone for a session)."""
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        return self._rejoin.is_set()

    def join(self) -> list[TopicPartition]:
        """Join (or rejoin) the group and return the partitions assigned to this member.
        Under a cooperative assignor a member whose assignment lost partitions must join
        again at once (KIP-429: the second rebalance gives them to their new owner), so
        ``needs_rejoin`` is then already true."""
        before = set(self.assignment)
        what = f"joining {coordinated(self.settings.group)}"
        deadline = time.monotonic() + max(self.client.config.request_timeout_ms / 1000, 60)
        with self._lock:
            while True:
                try:
                    if self._join_and_sync():
                        break
                except (CoordinatorMovedError, BrokerConnectionError) as exc:
                    self._coordinator = None
                    if time.monotonic() > deadline:
                        raise
                    log.info("%s: %s; trying again", what, exc)
                    time.sleep(self.client.config.retry_backoff_ms / 1000)
        self._answered = time.monotonic()
        self._rejoin.clear()
        if self.settings.assignor in COOPERATIVE and before - set(self.assignment):
            self._rejoin.set()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._heartbeats, daemon=True,
                                            name=f"kafkawire-heartbeat-{self.settings.group}")
            self._thread.start()
        return list(self.assignment)

    def committed(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets (-1: none)."""
        return fetch_committed(self.client, self.settings.group, partitions)

    def commit(self, offsets: Mapping[TopicPartition, int]) -> bool:
        """Commit ``offsets`` as a member of the current generation; False if the group had
        moved on (the generation ended: another member may own the partitions now and reads
        from the last commit that held)."""
        if not offsets or not self.member_id:
            return not offsets
        with self._lock:
            try:
                commit_offsets(self.client, self.settings.group, offsets,
                               member=(self.generation, self.member_id), retry=False)
                return True
            except CoordinatorMovedError:
                self._coordinator = None
                commit_offsets(self.client, self.settings.group, offsets,
                               member=(self.generation, self.member_id), retry=False)
                return True
            except KafkaError as exc:
                if exc.spec.code in _REJOIN | _FORGOTTEN:
                    log.warning("commit of %s not accepted (%s): the group rebalanced",
                                coordinated(self.settings.group), exc.spec.name)
                    self._rejoin.set()
                    if exc.spec.code in _FORGOTTEN:
                        self._forget()
                    return False
                raise

    def leave(self) -> None:
        """Stop heartbeating and leave the group (LeaveGroup), then close the connections.
        Leaving is a courtesy: if it fails, the coordinator drops the member after the
        session timeout."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        try:
            with self._lock:
                if self.member_id:
                    self._leave()
        except (KafkaError, BrokerConnectionError) as exc:
            log.info("leaving %s failed: %s", coordinated(self.settings.group), exc)
        finally:
            self.member_id = ""
            self.client.close()

    # -- the protocol ------------------------------------------------------------------------
    def _conn(self) -> BrokerConnection:
        if self._coordinator is None:
            self._coordinator = self.client.retry(
                lambda: find_coordinator(self.client, self.settings.group),
                f"FindCoordinator for {coordinated(self.settings.group)}")
        return self._coordinator

    def _check(self, code: int, conn: BrokerConnection, context: str) -> None:
        check_coordinated(code, coordinated(self.settings.group), None, None, conn, context,
                          group=self.settings.group)

    def _join_and_sync(self) -> bool:
        """One JoinGroup and SyncGroup; True when an assignment came, False to join again."""
        s = self.settings
        conn = self._conn()
        subscription = encode_subscription(
            sorted(s.topics), self.assignment, self.generation,
            COOPERATIVE_SUBSCRIPTION_VERSION if s.assignor in COOPERATIVE
            else SUBSCRIPTION_VERSION)
        body: JoinGroupRequest = {
            "group_id": s.group, "session_timeout_ms": s.session_timeout_ms,
            "rebalance_timeout_ms": s.rebalance_timeout_ms, "member_id": self.member_id,
            "group_instance_id": None, "protocol_type": CONSUMER_PROTOCOL_TYPE,
            "protocols": [{"name": s.assignor, "metadata": subscription}], "reason": None,
        }
        joined = conn.request(JOIN_GROUP, body)
        code = joined["error_code"]
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = joined["member_id"]  # KIP-394: join again with this id
            return False
        if code in _FORGOTTEN:
            self._forget()
            return False
        if code in _REJOIN:
            return False
        self._check(code, conn, "JoinGroup")
        self.member_id, self.generation = joined["member_id"], joined["generation_id"]
        protocol = joined["protocol_name"] or s.assignor
        self.leader = joined["leader"] == self.member_id
        assignments: list[SyncGroupRequestAssignments] = []
        if self.leader:
            assignments = self._assign(protocol, joined["members"])
        sync: SyncGroupRequest = {
            "group_id": s.group, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": None, "protocol_type": CONSUMER_PROTOCOL_TYPE,
            "protocol_name": protocol, "assignments": assignments,
        }
        synced = conn.request(SYNC_GROUP, sync)
        code = synced["error_code"]
        if code in _FORGOTTEN:
            self._forget()
            return False
        if code in _REJOIN:
            return False
        self._check(code, conn, "SyncGroup")
        self.assignment = self._subscribed(decode_assignment(synced["assignment"]))
        log.info("joined %s, generation %d (%s): %s", coordinated(s.group), self.generation,
                 "leader" if self.leader else "follower", self.assignment)
        return True

    def _subscribed(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        """The partitions of the leader's assignment that this member subscribed to, sorted.
        The leader is another client, whichever joined first, so its assignment is data: a
        partition of a topic not subscribed to is dropped with a warning naming it, never
        fetched or committed. Java's consumer instead takes none of such an assignment and
        rejoins (ConsumerCoordinator.onJoinComplete: "received assignment ... does not match
        the current subscription"), which suits its case, a subscription changed since the
        join; kafkawire's topics are fixed when it starts, so a leader that assigned them
        once would assign them again at every rejoin, and the group would rebalance without
        end while no member read anything."""
        topics = set(self.settings.topics)
        kept = sorted({tp for tp in assigned if tp[0] in topics})
        dropped = sorted({tp for tp in assigned if tp[0] not in topics})
        if dropped:
            # quoted and cut: a name from another client may hold anything (line breaks)
            names = ", ".join(f"{shown(t, 60)} partition {p}" for t, p in dropped[:_SHOWN])
            more = f" and {len(dropped) - _SHOWN} more" if len(dropped) > _SHOWN else ""
            log.warning("the leader of %s assigned this member %d partitions of topics it did "
                        "not subscribe to (%s%s); they are not read and no offset of theirs "
                        "is committed. Subscribed: %s. Check the group's other members",
                        coordinated(self.settings.group), len(dropped), names, more,
                        ", ".join(sorted(topics)))
        return kept

    def _forget(self) -> None:
        """The coordinator no longer knows this member: it owns nothing and joins as new."""
        self.member_id, self.generation, self.assignment = "", -1, []

    def _assign(self, protocol: str, members: list[JoinGroupResponseMembers]
                ) -> list[SyncGroupRequestAssignments]:
        """The leader's part: every member's partitions, by the group's assignor, each
        written at the version its member subscribed with."""
        subs = {m["member_id"]: decode_member_subscription(m["metadata"]) for m in members}
        topics = sorted({t for sub in subs.values() for t in sub.topics})
        md = self.client.fetch_metadata(topics)
        partitions = {t: sorted(md.topics[t].partitions) for t in topics
                      if t in md.topics and md.topics[t].error_code == 0}
        plan = assign(protocol, {m: sub.topics for m, sub in subs.items()}, partitions,
                      {m: (sub.generation_id, sub.owned) for m, sub in subs.items()})
        return [{"member_id": m, "assignment": encode_assignment(
            plan[m], min(subs[m].version, MAX_VERSION))} for m in sorted(subs)]

    def _leave(self) -> None:
        conn = self._conn()
        body: LeaveGroupRequest = {
            "group_id": self.settings.group, "member_id": self.member_id,
            "members": [{"member_id": self.member_id, "group_instance_id": None,
                         "reason": "the kafkawire consumer is closing"}],
        }
        resp = conn.request(LEAVE_GROUP, body)
        code = resp["error_code"] or next(
            (m["error_code"] for m in resp.get("members", []) if m["error_code"]), 0)
        if code not in _FORGOTTEN:
            self._check(code, conn, "LeaveGroup")

    def _heartbeats(self) -> None:
        """The heartbeat thread: every heartbeat interval while the member is in a
        generation; what it learns goes to ``needs_rejoin``. Nothing a heartbeat meets ends
        it (module docstring): only ``leave``."""
        interval = self.settings.heartbeat_interval_ms / 1000
        wait, failures = interval, 0
        while not self._stop.wait(wait):
            wait = interval
            if self._rejoin.is_set() or not self.member_id or self._failure is not None:
                failures = 0
                continue
            with self._lock:
                if self._stop.is_set():
                    return
                try:
                    self._heartbeat()
                    self._answered, failures = time.monotonic(), 0
                except KafkaWireError as exc:
                    if not getattr(exc, "retriable", True):
                        # an error code no retry helps, a refused certificate or SASL login
                        # (retried, a wrong password may lock the account): the caller's
                        self._failure = exc
                        continue
                    failures += 1  # the connection, its answer, a coordinator that moved
                    wait = self._heartbeat_failed(exc, failures, interval)
                except Exception as exc:  # a bug: raised to the caller, not retried blindly
                    log.exception("heartbeat of %s failed", coordinated(self.settings.group))
                    self._failure = exc

    def _heartbeat_failed(self, exc: Exception, failures: int, interval: float) -> float:
        """After a heartbeat that got no usable answer: the coordinator is looked up again on a
        new connection after the returned wait (retry.backoff.ms doubled per failure, up to
        retry.backoff.max.ms and the heartbeat interval); once none was answered for the
        session timeout, the caller is told to join again."""
        self._coordinator = None
        what = coordinated(self.settings.group)
        silent_ms = (time.monotonic() - self._answered) * 1000
        if silent_ms >= self.settings.session_timeout_ms:
            log.warning("no heartbeat of %s answered for %.0f ms, more than the session "
                        "timeout (%d ms): the coordinator has dropped this member; joining "
                        "again. Last failure: %s", what, silent_ms,
                        self.settings.session_timeout_ms, exc)
            self._rejoin.set()
            return interval
        config = self.client.config
        backoff = min(config.retry_backoff_ms * 2 ** min(failures - 1, 30),
                      config.retry_backoff_max_ms) / 1000
        (log.warning if failures == 1 else log.info)(
            "heartbeat to %s failed: %s; trying again on a new connection", what, exc)
        return min(backoff, interval)

    def _heartbeat(self) -> None:
        conn = self._conn()
        body: HeartbeatRequest = {"group_id": self.settings.group,
                                  "generation_id": self.generation,
                                  "member_id": self.member_id, "group_instance_id": None}
        code = conn.request(HEARTBEAT, body)["error_code"]
        if code in _REJOIN | _FORGOTTEN:
            if code in _FORGOTTEN:
                self._forget()
            self._rejoin.set()
            return
        if code in _MOVED:
            self._coordinator = None
            return
        self._check(code, conn, "Heartbeat")
