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
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from spark_kafka_wire.client.errors import (
    INVALID_VALUE,
    ConfigurationError,
    ZooKeeperAuthError,
    ZooKeeperError,
    ZooKeeperTlsError,
)
from spark_kafka_wire.client.metadata.cluster import TopicPartition
from spark_kafka_wire.client.security.tls import (
    TlsConfig,
    VerifyAdvice,
    context_for,
    explain_verify_failure,
    peer_certificate,
)
from spark_kafka_wire.client.zookeeper.security import DIGEST_MD5, ZooKeeperSecurity
from spark_kafka_wire.protocol.errors import shown

__all__ = ["ZOOKEEPER_TIMEOUT_S", "ZooKeeperError", "ZooKeeperOffsetStore", "ZooKeeperSecurity",
           "ZooKeeperSession", "offset_path", "parse_offset", "parse_registration",
           "start_zookeeper", "stop_zookeeper"]

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
_ADVICE = VerifyAdvice(
    peer="ZooKeeper server",
    reached_by="the host names of zookeeper.connect",
    no_hostname_check="zookeeper.ssl.endpoint.identification.enable=false",
    truststore="zookeeper.ssl.truststore.*")


class _Attempts:
    """What the connection attempts of one session start met, shared with kazoo's thread:
    whether any TCP connection was made, and the first TLS failure (which ends the start at
    once: another attempt meets the same certificate)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reached = False
        self.tls_failure: ZooKeeperTlsError | None = None

    def failed(self, error: ZooKeeperTlsError) -> None:
        with self.lock:
            if self.tls_failure is None:
                self.tls_failure = error


def _handler(tls: TlsConfig | None, attempts: _Attempts) -> Any:
    """A kazoo threading handler whose connections are made here: plain TCP, or TLS with the
    context of ``tls`` (:func:`context_for`, shared with the broker connections).

    kazoo's own TLS takes file paths and builds a context at every connection attempt, always
    adding the system's CAs to the given one (so a truststore would not limit trust, as it
    does in Java) and retrying a refused certificate until the session timeout. Making the
    socket here keeps the truststore exact, leaves no key file on disk, and lets a refused
    certificate end the start at once with what to check.
    """
    from kazoo.handlers import utils  # noqa: PLC0415 (kazoo on first use, see start_zookeeper)
    from kazoo.handlers.threading import SequentialThreadingHandler  # noqa: PLC0415

    context = context_for(tls) if tls is not None else None

    class Handler(SequentialThreadingHandler):
        def create_connection(self, address: tuple[str, int], hostname: str | None = None,
                              timeout: float | None = None, **_kazoo_tls: object
                              ) -> socket.socket:
            # _kazoo_tls: kazoo's own TLS arguments, unused (use_ssl is never set)
            raw = utils.create_tcp_connection(socket, address, timeout=timeout)
            attempts.reached = True
            if context is None:
                return raw
            host = hostname or address[0]
            where = f"{host}:{address[1]}"
            try:
                return context.wrap_socket(raw, server_hostname=host)
            except ssl.SSLCertVerificationError as exc:
                raw.close()
                cert = peer_certificate(address[0], address[1], timeout or 5.0)
                attempts.failed(ZooKeeperTlsError(
                    f"TLS handshake with ZooKeeper at {where} failed "
                    f"(zookeeper.ssl.client.enable=true): "
                    f"{explain_verify_failure(exc, host, cert, _ADVICE)}"))
                raise
            except ssl.SSLError as exc:
                raw.close()
                reason = exc.reason or exc.strerror or str(exc)
                plaintext = "WRONG_VERSION_NUMBER" in str(reason).upper()
                attempts.failed(ZooKeeperTlsError(
                    f"TLS handshake with ZooKeeper at {where} failed "
                    f"(zookeeper.ssl.client.enable=true): {reason}. " + (
                        "The port does not speak TLS: name ZooKeeper's secureClientPort in "
                        "zookeeper.connect, or leave zookeeper.ssl.client.enable unset for "
                        "its plaintext clientPort" if plaintext else
                        "Check that this is ZooKeeper's secureClientPort and, if it requires "
                        "client certificates (ssl.clientAuth=need), set "
                        "zookeeper.ssl.keystore.*")))
                raise

    return Handler()


def start_zookeeper(connect: str, timeout_s: float = ZOOKEEPER_TIMEOUT_S,
                    security: ZooKeeperSecurity | None = None) -> KazooClient:
    """A started kazoo client on ``connect`` (``host:port[,host:port][/chroot]``, Kafka's
    zookeeper.connect: kazoo applies the chroot to every path), over TLS and logged in as
    ``security`` says. Every ZooKeeper session kafkawire opens starts here (broker discovery,
    offsets, the Kafka 0.7 cluster view, the CLI), so the settings apply everywhere.

    kazoo is imported here, on first use: it takes ~40 ms, every Spark worker imports this
    module, and only queries that use ZooKeeper need it. A connect string kazoo cannot read is
    a :class:`ConfigurationError`; an ensemble that does not answer within ``timeout_s`` a
    :class:`ZooKeeperError` naming it; a refused certificate a :class:`ZooKeeperTlsError`; a
    refused (or missing, where required) login a :class:`ZooKeeperAuthError`. The session is
    checked with one request before it is returned, because kazoo reports a session as
    connected before its SASL login has been answered.
    """
    from kazoo.client import KazooClient  # noqa: PLC0415

    security = security or ZooKeeperSecurity()
    attempts = _Attempts()
    try:
        zk = KazooClient(hosts=connect, timeout=timeout_s,
                         handler=_handler(security.tls, attempts),
                         sasl_options=security.sasl_options())
    except ValueError as exc:
        raise ConfigurationError.of(
            INVALID_VALUE, "ZOOKEEPER_CONNECT", connect=shown(connect), exc=str(exc)) from None
    if security.sasl_user is not None:
        _refusal_ends_session(zk)
    try:
        live = zk.start_async()
        deadline = time.monotonic() + timeout_s
        while not live.wait(0.05):
            if attempts.tls_failure is not None:
                raise attempts.tls_failure
            if time.monotonic() >= deadline:
                raise _silent(connect, timeout_s, attempts, security)
        _check_session(zk, connect, security)
    except BaseException:
        stop_zookeeper(zk)
        raise
    return zk


def _refusal_ends_session(zk: KazooClient) -> None:
    """Make a refused login end the session as kazoo means it to (state AUTH_FAILED, no
    reconnection), also where the server refuses it by closing the session.

    kazoo handles ``AuthFailedError`` from its SASL exchange, but a ZooKeeper that requires
    SASL (``sessionRequireClientSASLAuth``) answers a wrong password with
    ``SessionClosedRequireSaslError``, which kazoo lets escape its connection thread: a
    traceback on stderr and a session that is merely lost. The exchange is kazoo's (a private
    method, hence the guard: a kazoo without it keeps its own behaviour, and the session check
    still reports the refusal)."""
    from kazoo.exceptions import (  # noqa: PLC0415 (see start_zookeeper)
        AuthFailedError,
        SessionClosedRequireSaslError,
    )

    connection = getattr(zk, "_connection", None)
    exchange = getattr(connection, "_authenticate_with_sasl", None)
    if connection is None or exchange is None:
        return

    def authenticate(host: str, timeout: float) -> None:
        try:
            exchange(host, timeout)
        except SessionClosedRequireSaslError as exc:
            raise AuthFailedError("the server closed the session during the SASL login") from exc

    connection._authenticate_with_sasl = authenticate


def _silent(connect: str, timeout_s: float, attempts: _Attempts,
            security: ZooKeeperSecurity) -> ZooKeeperError:
    """The error of a start that timed out, saying what the attempts met."""
    message = (f"ZooKeeper at {connect} did not answer within {timeout_s:g} s; "
               "check zookeeper.connect and that the ensemble is up and reachable from here")
    if attempts.reached and security.tls is None:
        message = (f"ZooKeeper at {connect} accepted connections but started no session within "
                   f"{timeout_s:g} s: if this is ZooKeeper's TLS port (secureClientPort), set "
                   "zookeeper.ssl.client.enable=true and zookeeper.ssl.truststore.*; else check "
                   "that the ensemble is healthy")
    elif attempts.reached:
        message = (f"ZooKeeper at {connect} completed the TLS handshake but started no session "
                   f"within {timeout_s:g} s: if it requires client certificates "
                   "(ssl.clientAuth=need), set zookeeper.ssl.keystore.* to one it trusts; else "
                   "check that the ensemble is healthy")
    return ZooKeeperError(message)


def _check_session(zk: KazooClient, connect: str, security: ZooKeeperSecurity) -> None:
    """One request, answered only once the SASL login (if any) has been: a refused login and
    a session ZooKeeper closes for want of one (``sessionRequireClientSASLAuth``) are told
    apart here, not at the first real read."""
    from kazoo.exceptions import (  # noqa: PLC0415 (see start_zookeeper)
        AuthFailedError,
        ConnectionClosedError,
        ConnectionLoss,
        KazooException,
        SessionClosedRequireSaslError,
    )
    from kazoo.protocol.states import KeeperState  # noqa: PLC0415

    user = security.sasl_user
    refused = (f"ZooKeeper at {connect} refused the SASL {DIGEST_MD5} login of user {user!r}: "
               "wrong password or unknown user; check the username and password in "
               "zookeeper.sasl.jaas.config (the ensemble's JAAS Server section names the users)")
    try:
        with warnings.catch_warnings():
            # kazoo warns of a chroot that does not exist; the callers say so in their errors
            warnings.filterwarnings("ignore", "No chroot path exists", UserWarning)
            zk.exists("/")
    except SessionClosedRequireSaslError:
        if user is not None:
            raise ZooKeeperAuthError(refused) from None
        raise ZooKeeperAuthError(
            f"ZooKeeper at {connect} requires a SASL login (sessionRequireClientSASLAuth) and "
            "closed the session: set zookeeper.sasl.jaas.config to "
            'org.apache.zookeeper.server.auth.DigestLoginModule required username="..." '
            'password="...";') from None
    except AuthFailedError:
        raise ZooKeeperAuthError(refused) from None
    except (ConnectionLoss, ConnectionClosedError) as exc:
        if user is not None and zk.client_state in (KeeperState.AUTH_FAILED,
                                                     KeeperState.CLOSED):
            # the login ended the session (kazoo without _refusal_ends_session's hook)
            raise ZooKeeperAuthError(refused) from None
        raise ZooKeeperError(f"ZooKeeper at {connect} ended the session at its first request: "
                             f"{exc!r}") from None
    except KazooException as exc:
        raise ZooKeeperError(f"ZooKeeper at {connect} refused its first request: {exc!r}"
                             ) from None


def stop_zookeeper(zk: KazooClient) -> None:
    """End the session (its ephemeral nodes go with it) and the client's threads."""
    zk.stop()
    zk.close()


_Session = TypeVar("_Session", bound="ZooKeeperSession")


class ZooKeeperSession:
    """One ZooKeeper session on the ensemble named by ``connect`` (host:port list, optionally
    with a chroot path, as in Kafka's zookeeper.connect), over TLS and logged in as
    ``security`` says: started by :func:`start_zookeeper` on first use (:meth:`session`),
    ended by :meth:`close` (a context manager). What reads or writes ZooKeeper is one of
    these (the offset store, the broker registry), so every session starts, times out and
    logs in alike, and is ended the same way."""

    def __init__(self, connect: str, timeout_s: float = ZOOKEEPER_TIMEOUT_S,
                 security: ZooKeeperSecurity | None = None) -> None:
        self.connect = connect
        self.timeout_s = timeout_s
        self.security = security
        self._zk: KazooClient | None = None

    def session(self) -> KazooClient:
        """The started session (started now if it is not yet)."""
        if self._zk is None:
            self._zk = start_zookeeper(self.connect, self.timeout_s, self.security)
        return self._zk

    def close(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            stop_zookeeper(zk)

    def __enter__(self: _Session) -> _Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ZooKeeperOffsetStore(ZooKeeperSession):
    """Reads and writes group offsets on the ensemble of its session."""

    def commit(self, group: str, offsets: Mapping[TopicPartition, int],
               names: Mapping[TopicPartition, str] | None = None) -> None:
        """Write ``offsets``; ``names`` (Kafka 0.7): each partition's node name."""
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (see start_zookeeper)

        zk = self.session()
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
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see start_zookeeper)

        zk = self.session()
        out: dict[TopicPartition, int] = {}
        for topic, partition in sorted(set(partitions)):
            node = names[(topic, partition)] if names is not None else partition
            path = offset_path(group, topic, node)
            try:
                data, _ = zk.get(path)
            except NoNodeError:
                out[(topic, partition)] = -1
                continue
            except KazooException as exc:
                raise ZooKeeperError(f"reading the offset of {topic}-{partition} for group "
                                     f"{group!r} from ZooKeeper failed: {exc!r}") from exc
            out[(topic, partition)] = parse_offset(data, path, self.connect)
        return out

    def topics(self, group: str) -> list[str]:
        """The topics ``group`` has offsets for (the children of its ``offsets`` node)."""
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see start_zookeeper)

        offset_path(group, "t", 0)  # checks the group name
        zk = self.session()
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
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see start_zookeeper)

        offset_path(group, "t", 0)  # checks the group name
        zk = self.session()
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

    def groups(self) -> list[str]:
        """Every group ZooKeeper-era consumers made: the children of ``/consumers`` (a group
        appears there with its first registered consumer or offset, as Kafka's old
        ``ConsumerGroupCommand --zookeeper --list`` saw them)."""
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see start_zookeeper)

        zk = self.session()
        try:
            return sorted(zk.get_children("/consumers"))
        except NoNodeError:
            return []
        except KazooException as exc:
            raise ZooKeeperError(f"listing the groups under /consumers in ZooKeeper at "
                                 f"{self.connect} failed: {exc!r}") from exc

    def delete_group(self, group: str) -> bool:
        """Remove ``/consumers/<group>`` and everything under it (its offsets, owners and
        ids); False where there was no such node. Refused while a consumer is registered
        under ``ids``: a live ZooKeeper-era consumer would recreate its nodes and commit over
        the deletion (Kafka's old tool refused the same)."""
        from kazoo.exceptions import KazooException, NoNodeError  # noqa: PLC0415 (see start_zookeeper)

        offset_path(group, "t", 0)  # checks the group name
        members = self.members(group)
        if members:
            raise ConfigurationError.of(
                INVALID_VALUE, "GROUP_HAS_ZOOKEEPER_CONSUMERS_2", group=group,
                members_count=len(members), connect=self.connect, value=', '.join(sorted(members)))
        zk = self.session()
        try:
            if zk.exists(f"/consumers/{group}") is None:
                return False
            zk.delete(f"/consumers/{group}", recursive=True)
        except NoNodeError:
            return False
        except KazooException as exc:
            raise ZooKeeperError(f"deleting group {group!r} from ZooKeeper at {self.connect} "
                                 f"failed: {exc!r}") from exc
        return True


def parse_offset(data: bytes | None, path: str, connect: str) -> int:
    """An offset node's decimal text, as ZooKeeper-era consumers wrote it. A node without
    data (kazoo's None: ZooKeeper's null, which Kafka's own ZooKeeper shell writes for
    ``create <path>`` without a value) or with anything else is a ZooKeeperError naming the
    node: the old consumers failed on it too (``toLong`` of null), and guessing an offset
    would read from somewhere nobody committed."""
    text = (data or b"").decode("utf-8", "replace").strip()
    try:
        return int(text)
    except ValueError:
        pass
    held = "no data" if data is None else shown(text)
    raise ZooKeeperError(
        f"ZooKeeper node {path} on {connect} holds {held}, not an offset (the decimal text "
        "ZooKeeper-era consumers write): set it to an offset or delete it (then the group "
        "has no offset for that partition)")


def parse_registration(data: bytes | None, group: str, consumer: str) -> dict[str, int]:
    """A consumer id node's subscription: topic (or ``*<pattern>:<regex>``) -> streams; a
    node without data (kazoo's None, ZooKeeper's null) subscribes to nothing, as an empty
    one does."""
    data = data or b""
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
