"""The executors' Python environment, shipped the way Spark's "Python Package Management" page
tells users to ship one (issue 31): a virtualenv packed with ``venv-pack`` into a tar.gz, given
as ``--archives env.tar.gz#environment`` with ``PYSPARK_PYTHON=./environment/bin/python``.

The environment holds kafkawire's wheel (``pip wheel . --no-deps`` of this checkout) and its
runtime dependencies, read from the wheel's own metadata, except pyspark: executors take
pyspark from SPARK_HOME's ``python/lib/pyspark.zip``, as on a real cluster. ``deps_only``
leaves kafkawire out (the ``--py-files`` test ships the wheel itself).

Archives are cached under ``$KAFKAWIRE_CACHE`` (``~/.cache/kafkawire``) in two layers keyed by
what each depends on (issue 44): the dependencies' archive (a virtualenv, pip and venv-pack:
the slow part) by the dependency list and the interpreter alone, so a commit that changes only
kafkawire's code reuses it; kafkawire's archive is that one with the wheel's files added to
its site-packages (a pure-Python wheel installs by unpacking: its console scripts are not
needed by executors), keyed by the dependencies' key and the wheel's contents, made in
seconds. Both tests share one dependencies' archive: the ``--py-files`` test's holds the same
extras as kafkawire's.

venv-pack does not pack the interpreter: ``bin/python`` stays a link to the base Python the
virtualenv was made from, which must exist at the same path where the archive is unpacked
(on this machine's test hosts it does, the file systems being shared; a real cluster needs
the same Python at the same path on every node, or conda-pack, which packs the interpreter).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.support.java_process import cache_dir

ROOT = Path(__file__).resolve().parents[2]
PIP_TIMEOUT_S = 900.0
#: Distributions the executors get from elsewhere: pyspark from SPARK_HOME (pyspark.zip).
NOT_SHIPPED = {"pyspark"}


@dataclass(frozen=True)
class ExecutorEnv:
    """A packed environment: ``archive`` (give it as ``archive#environment``), the wheel it
    was made with (for ``--py-files``), the requirements installed in it."""

    archive: Path
    wheel: Path
    requirements: tuple[str, ...]
    with_kafkawire: bool


def build_wheel(directory: Path) -> Path:
    """kafkawire's wheel of this checkout, built into ``directory`` (pip, no dependencies)."""
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                           "--wheel-dir", str(directory), str(ROOT)],
                          capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"pip wheel of {ROOT} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    wheels = sorted(directory.glob("spark_kafka_wire-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one kafkawire wheel in {directory}, found {wheels}")
    return wheels[0]


def runtime_requirements(wheel: Path, extras: Sequence[str] = ()) -> tuple[str, ...]:
    """The wheel's ``Requires-Dist`` of no extra and of ``extras`` (their markers dropped),
    leaving out NOT_SHIPPED."""
    with zipfile.ZipFile(wheel) as zf:
        metadata = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(metadata).decode()
    found = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        spec = line.split(":", 1)[1].strip()
        if "extra ==" in spec:
            extra = re.search(r"""extra\s*==\s*["']([^"']+)["']""", spec)
            if not extra or extra.group(1) not in extras:
                continue
            spec = spec.split(";", 1)[0].strip()
        name = re.split(r"[\s<>=!~;\[(]", spec, maxsplit=1)[0].lower().replace("_", "-")
        if name not in NOT_SHIPPED:
            found.append(spec)
    return tuple(found)


def wheel_digest(wheel: Path) -> str:
    """A hash of the wheel's members (names and bytes), not of the zip file, whose
    timestamps change with every build of the same code."""
    digest = hashlib.sha256()
    with zipfile.ZipFile(wheel) as zf:
        for name in sorted(zf.namelist()):
            digest.update(name.encode() + b"\0" + zf.read(name) + b"\0")
    return digest.hexdigest()


def base_python() -> str:
    """The interpreter the executors' virtualenv is made from: the base Python of the one
    running the tests (a virtualenv of a virtualenv would link to this checkout's venv)."""
    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


def packed_env(work: Path, deps_only: bool = False, extras: Sequence[str] = ()) -> ExecutorEnv:
    """The packed executor environment for this checkout with the dependencies of kafkawire's
    ``extras`` too (``kerberos``: gssapi, built against the machine's MIT Kerberos), from the
    cache or made now; the wheel is built into ``work``."""
    wheel = build_wheel(work / "wheel")
    requirements = runtime_requirements(wheel, extras)
    deps_key = hashlib.sha256("\n".join([*requirements, base_python(), sys.version])
                              .encode()).hexdigest()[:20]
    deps = _cached(cache_dir() / "executor-env" / f"deps-{deps_key}",
                   lambda partial: _pack_dependencies(requirements, partial))
    if deps_only:
        return ExecutorEnv(deps, wheel, requirements, with_kafkawire=False)
    key = hashlib.sha256(f"{deps_key}\n{wheel_digest(wheel)}".encode()).hexdigest()[:20]
    archive = _cached(cache_dir() / "executor-env" / f"kafkawire-{key}",
                      lambda partial: add_wheel(deps, wheel, partial))
    return ExecutorEnv(archive, wheel, requirements, with_kafkawire=True)


def _cached(target: Path, make: Callable[[Path], None]) -> Path:
    """``target/env.tar.gz``, made by ``make(partial)`` under a lock the first time (processes
    of parallel test runs wait for one another rather than building twice)."""
    archive = target / "env.tar.gz"
    if archive.exists():
        return archive
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not archive.exists():
            partial = target / "env.tar.gz.partial"
            make(partial)
            partial.rename(archive)
    return archive


def _pack_dependencies(requirements: Sequence[str], output: Path) -> None:
    """A virtualenv of ``requirements`` (kafkawire not among them), packed to ``output``."""
    with tempfile.TemporaryDirectory(prefix="kafkawire-executor-venv-") as scratch:
        venv = Path(scratch) / "venv"
        _run([base_python(), "-m", "venv", str(venv)], "making the executors' virtualenv")
        python = str(venv / "bin" / "python")
        _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              *requirements], "installing kafkawire's dependencies for the executors")
        found = _run([python, "-c", "import importlib.util as u; "
                      "s = u.find_spec('spark_kafka_wire'); print(s and s.origin)"],
                     "looking for kafkawire in the executors' virtualenv").strip()
        if found.startswith(str(venv)):
            raise RuntimeError(f"the executors' dependencies {venv} should not hold kafkawire; "
                               f"spark_kafka_wire is {found}")
        import venv_pack

        venv_pack.pack(prefix=str(venv), output=str(output), format="tar.gz", force=True,
                       compress_level=1)


def site_packages(archive: Path) -> str:
    """The site-packages folder inside a packed virtualenv (``lib/pythonX.Y/site-packages``),
    found by where pip put its own package."""
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if "site-packages" in parts:
                return "/".join(parts[:parts.index("site-packages") + 1])
    raise RuntimeError(f"{archive} holds no site-packages folder: not a packed virtualenv")


def add_wheel(deps: Path, wheel: Path, output: Path) -> None:
    """``deps`` with the pure-Python ``wheel`` unpacked into its site-packages, written to
    ``output``: what ``pip install --no-deps`` puts there, less the console scripts
    (kafkawire's CLI), which executors never run. A wheel with anything to install elsewhere
    (a ``.data`` folder) or compiled code is refused rather than half installed."""
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        odd = [n for n in names if ".data/" in n or n.endswith((".so", ".pyd"))]
        if odd:
            raise RuntimeError(f"{wheel.name} is not a pure-Python wheel without data: {odd[:5]}")
        where = site_packages(deps)
        with tarfile.open(deps, "r:gz") as source, \
                tarfile.open(output, "w:gz", compresslevel=1) as target:
            for member in source:
                if member.name.startswith(f"{where}/spark_kafka_wire"):
                    raise RuntimeError(f"{deps} already holds kafkawire ({member.name})")
                target.addfile(member, source.extractfile(member) if member.isfile() else None)
            for info in whl.infolist():
                if info.is_dir():
                    continue
                data = whl.read(info)
                member = tarfile.TarInfo(f"{where}/{info.filename}")
                member.size = len(data)
                member.mode = 0o644
                member.mtime = int(datetime(*info.date_time).timestamp())
                target.addfile(member, io.BytesIO(data))
            # who installed it (PEP 376), as pip would write "pip"
            installer = tarfile.TarInfo(f"{where}/{_dist_info(names)}/INSTALLER")
            installer.size, installer.mode = len(INSTALLER), 0o644
            target.addfile(installer, io.BytesIO(INSTALLER))


#: The dist-info INSTALLER line of the wheels add_wheel installs.
INSTALLER = b"kafkawire-tests\n"


def _dist_info(names: Sequence[str]) -> str:
    found = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(found) != 1:
        raise RuntimeError(f"expected one .dist-info folder in the wheel, found {sorted(found)}")
    return found.pop()


#: Variables that would show the virtualenv's pip this process' packages: with the checkout
#: on PYTHONPATH, pip takes kafkawire (its egg-info there) as installed and skips the wheel.
NOT_INHERITED = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PIP_TARGET",
                 "PIP_PREFIX", "PIP_USER")


def _run(argv: list[str], what: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                          env=env, cwd="/")
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({' '.join(argv[:4])} ...):\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def unpacked_for_the_driver(cluster_dir: Path, archive: Path) -> Path:
    """The archive unpacked once for the driver's host, which needs ``./environment`` in its
    working directory too: Spark runs a Python data source's planning on the driver with
    ``PYSPARK_PYTHON`` (UserDefinedPythonDataSource through PythonPlannerRunner) from the
    driver JVM's working directory, whereas it unpacks ``--archives`` on the driver into
    SparkFiles' directory, so ``./environment/bin/python`` is not found there (``Cannot run
    program "./environment/bin/python": error=2``) in client mode. Users of client mode do
    the same (in cluster mode the driver runs where the archive is unpacked)."""
    target = cluster_dir / "driver-env" / archive.parent.name
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        partial.mkdir(parents=True)
        subprocess.run(["tar", "-xzf", str(archive), "-C", str(partial)], check=True,
                       timeout=300)
        partial.rename(target)
    return target


def remove_wheel_dir(work: Path) -> None:
    shutil.rmtree(work / "wheel", ignore_errors=True)
