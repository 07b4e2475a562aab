"""Test hosts as Linux network namespaces (issue 31): each host has its own address, its own
ports and, where asked, a private view of a few directories, on one machine.

A run makes one Linux bridge in the root namespace with a private /24 (``10.213.N.0/24``, N
free at start-up, so two runs can coexist), the root namespace taking ``.1`` (pytest's own
oracles reach every host from there), and per host a namespace with a veth pair: one end on
the bridge, the other renamed ``eth0`` inside the namespace with the host's address, ``lo``
up. Nothing is routed beyond the bridge: a host reaches the other hosts and the root
namespace's bridge address, and nothing else.

Every name carries the pid of the process that made it (``kwc-<pid>-<host>`` namespaces,
``kwb<pid>`` bridge, ``kwv<pid>x<i>`` veths; Linux limits an interface name to 15
characters): ``stop`` deletes what its run made, and ``start`` deletes what runs whose process
is gone left behind (a run killed by SIGKILL cannot tidy up).

The file systems stay shared: a command started with ``hide=[...]`` runs in a private mount
namespace (``unshare --mount --propagation private``) with an empty tmpfs over each of those
directories, which is how a path exists on the driver's host only, or the checkout is absent
from the executors' hosts.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: The private range the runs' /24s are taken from (10.213.N.0/24, N in SUBNETS).
NETWORK_PREFIX = "10.213"
SUBNETS = range(1, 255)
NAMESPACE_PREFIX = "kwc-"
BRIDGE_PREFIX = "kwb"
VETH_PREFIX = "kwv"
PEER_PREFIX = "kwp"
#: Our names, with the owning pid: namespaces kwc-<pid>-<host>, links kwb<pid> (bridge),
#: kwv<pid>x<i> and kwp<pid>x<i> (the two ends of host i's veth pair before the rename).
OWNED_NAMESPACE = re.compile(rf"^{NAMESPACE_PREFIX}(\d+)-")
OWNED_LINK = re.compile(rf"^(?:{BRIDGE_PREFIX}|{VETH_PREFIX}|{PEER_PREFIX})(\d+)(?:x\d+)?$")
LOCK = Path("/run/lock/kafkawire-netns.lock") if Path("/run/lock").is_dir() else Path(
    "/tmp/kafkawire-netns.lock")
IP_TIMEOUT_S = 30.0


def unavailable() -> str | None:
    """Why test hosts cannot be made here (the cluster tests skip with it), or None: root is
    needed (namespaces, veths, mounts), and ``ip`` from iproute2 with network namespaces."""
    if os.geteuid() != 0:
        return "test hosts are Linux network namespaces, which only root can make"
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "test hosts need iproute2's ip and util-linux's unshare: apt-get install iproute2"
    probe = f"{NAMESPACE_PREFIX}{os.getpid()}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True,
                          timeout=IP_TIMEOUT_S)
    if made.returncode != 0:
        return f"'ip netns add' is not allowed here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=IP_TIMEOUT_S)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def leftovers(namespaces: Iterable[str], links: Iterable[str],
              alive: Callable[[int], bool] = _alive) -> tuple[list[str], list[str]]:
    """The namespaces and links among these names that a run whose process is gone made:
    names of ours (by their prefix and pid) whose pid ``alive`` says is dead."""

    def dead(match: re.Match[str] | None) -> bool:
        return match is not None and not alive(int(match.group(1)))

    return ([n for n in namespaces if dead(OWNED_NAMESPACE.match(n))],
            [n for n in links if dead(OWNED_LINK.match(n))])


def _namespaces() -> list[str]:
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def _links() -> list[str]:
    """Link names in the root namespace (``ip -o link`` prints ``N: name@peer: ...``)."""
    return [line.split(":")[1].strip().split("@")[0]
            for line in _ip("-o", "link", "show").stdout.splitlines() if ":" in line]


def remove_leftovers() -> tuple[list[str], list[str]]:
    """Delete the namespaces and links of dead runs; what was deleted. Processes still
    running in such a namespace are not ours to end: deleting its name leaves them, and the
    namespace lives on until they exit."""
    namespaces, links = leftovers(_namespaces(), _links())
    for name in namespaces:
        _ip("netns", "del", name, check=False)
    for name in links:
        _ip("link", "del", name, check=False)
    return namespaces, links


def _subnets_in_use() -> set[int]:
    used = set()
    for line in _ip("-o", "-4", "addr", "show").stdout.splitlines():
        match = re.search(rf"inet {re.escape(NETWORK_PREFIX)}\.(\d+)\.\d+/", line)
        if match:
            used.add(int(match.group(1)))
    return used


@dataclass(frozen=True)
class Host:
    """One test host: a network namespace with one address on the run's bridge."""

    name: str
    namespace: str
    address: str

    def command(self, argv: Sequence[str], hide: Sequence[str] = ()) -> list[str]:
        """``argv`` run in this host's namespace; with ``hide``, in a private mount
        namespace where an empty tmpfs covers each of those directories."""
        prefix = ["ip", "netns", "exec", self.namespace]
        if hide:
            mounts = " && ".join(
                f"mount -t tmpfs -o size=1m,mode=0755 kafkawire-hidden {shlex.quote(str(d))}"
                for d in hide)
            prefix += ["unshare", "--mount", "--propagation", "private",
                       "sh", "-c", f'{mounts} && exec "$@"', "sh"]
        return [*prefix, *argv]

    def run(self, argv: Sequence[str], hide: Sequence[str] = (), timeout: float = 60.0,
            env: Mapping[str, str] | None = None,
            cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command on this host to its end; its output as text."""
        return subprocess.run(self.command(argv, hide), capture_output=True, text=True,
                              timeout=timeout, env=dict(env) if env is not None else None,
                              cwd=cwd)

    def popen(self, argv: Sequence[str], hide: Sequence[str] = (),
              **kwargs: object) -> subprocess.Popen[bytes]:
        """Start a command on this host in a session of its own (its process group is its
        pid, so it is stopped by PID: ``ip netns exec``, ``unshare`` and ``sh -c exec`` each
        replace themselves with the next, and the pid ends up the command's own)."""
        kwargs.setdefault("start_new_session", True)
        return subprocess.Popen(self.command(argv, hide), **kwargs)  # type: ignore[call-overload]


@dataclass
class TestNetwork:
    """The bridge and the hosts of one run (``start`` makes them, ``stop`` removes them)."""

    names: Sequence[str]
    pid: int = field(default_factory=os.getpid)
    subnet: int = 0
    hosts: dict[str, Host] = field(default_factory=dict)
    removed_leftovers: tuple[list[str], list[str]] = ([], [])
    _made_namespaces: list[str] = field(default_factory=list)
    _made_links: list[str] = field(default_factory=list)

    __test__ = False  # not a pytest test class despite its name

    @property
    def bridge(self) -> str:
        return f"{BRIDGE_PREFIX}{self.pid}"

    @property
    def root_address(self) -> str:
        """The root namespace's address on the bridge (pytest and its oracles)."""
        return f"{NETWORK_PREFIX}.{self.subnet}.1"

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def start(self) -> TestNetwork:
        if len(self.names) > 250:
            raise ValueError("a /24 holds at most 250 test hosts here")
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        with open(LOCK, "w") as lock:  # two runs starting together pick different subnets
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.removed_leftovers = remove_leftovers()
            used = _subnets_in_use()
            preferred = [n for n in SUBNETS if n >= self.pid % len(SUBNETS) + 1]
            free = [n for n in [*preferred, *SUBNETS] if n not in used]
            if not free:
                raise RuntimeError(f"every {NETWORK_PREFIX}.N.0/24 is in use on this machine")
            self.subnet = free[0]
            try:
                self._make()
            except BaseException:
                self.stop()
                raise
        return self

    def _make(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made_links.append(self.bridge)
        _ip("addr", "add", f"{self.root_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i, name in enumerate(self.names):
            namespace = f"{NAMESPACE_PREFIX}{self.pid}-{name}"
            address = f"{NETWORK_PREFIX}.{self.subnet}.{i + 2}"
            veth, peer = f"{VETH_PREFIX}{self.pid}x{i}", f"{PEER_PREFIX}{self.pid}x{i}"
            _ip("netns", "add", namespace)
            self._made_namespaces.append(namespace)
            _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
            self._made_links.append(veth)
            _ip("link", "set", veth, "master", self.bridge)
            _ip("link", "set", veth, "up")
            _ip("link", "set", peer, "netns", namespace)
            inside = ("netns", "exec", namespace, "ip")
            _ip(*inside, "link", "set", peer, "name", "eth0")
            _ip(*inside, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip(*inside, "link", "set", "eth0", "up")
            _ip(*inside, "link", "set", "lo", "up")
            self.hosts[name] = Host(name, namespace, address)

    def stop(self) -> None:
        """Delete the namespaces, veths and bridge this run made (processes left in a
        namespace keep it alive, nameless: their owners stop them by PID first)."""
        for link in reversed(self._made_links):
            _ip("link", "del", link, check=False)
        for namespace in reversed(self._made_namespaces):
            _ip("netns", "del", namespace, check=False)
        self._made_links.clear()
        self._made_namespaces.clear()
