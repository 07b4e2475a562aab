"""The cluster tier (issue 31): kafkawire on a real Spark standalone cluster whose hosts are
Linux network namespaces on this machine (tests/support/netns.py): Apache Kafka on one host,
Spark's Master on another, two Workers (2 cores, 1 GiB each) on two more, and the driver,
``spark-submit --master spark://...`` in client mode, on a fifth. The executors' Python is
a virtualenv packed with venv-pack and shipped with ``--archives`` (tests/support/
executor_env.py); the Workers see neither the driver-only directory nor the checkout's
packages (an empty tmpfs over each), so whatever works here does not lean on shared files.

Run by ``make test-cluster`` (``pytest -m cluster tests/cluster``); ``make test`` neither runs
nor imports these modules, so this directory is collected only when the marker expression
names ``cluster``. Without root or ``ip netns`` the tests skip, saying so. The pieces' start-up
times are reported at the end of the run.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from tests.support.kept_logs import logs_kept_on_failure
from tests.support.spark_standalone import (
    MASTER_PORT,
    JobRun,
    RunningJob,
    StandaloneCluster,
    clean_env,
    launch,
)

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parent / "jobs" / "kafkawire_job.py"
HOSTS = ("kafka", "master", "worker1", "worker2", "driver")
#: piece -> seconds it took to start, job -> seconds its spark-submit took (the terminal
#: summary shows them)
STARTS: dict[str, float] = {}
JOB_SECONDS: dict[str, float] = {}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if "cluster" not in (config.option.markexpr or ""):
        return True
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if STARTS:
        terminalreporter.section("test cluster start-up (seconds)")
        for piece, seconds in STARTS.items():
            terminalreporter.write_line(f"{piece:>28}: {seconds:.1f}")
    if JOB_SECONDS:
        terminalreporter.section("spark-submit jobs on the test cluster (seconds)")
        for job, seconds in JOB_SECONDS.items():
            terminalreporter.write_line(f"{job}: {seconds:.1f}")


def _timed(piece: str, start: Callable[[], object]) -> object:
    began = time.monotonic()
    made = start()
    STARTS[piece] = time.monotonic() - began
    return made


@pytest.fixture(scope="session")
def cluster_dir(request) -> Iterator[Path]:
    """The run's directory: every daemon's logs and work directories, the jobs' driver
    directories, and ``driver-only`` (hidden from the Workers). Kept when a test failed."""
    made = Path(tempfile.mkdtemp(prefix="kafkawire-cluster-"))
    (made / "driver-only").mkdir(mode=0o700)
    failed_before = request.session.testsfailed
    yield made
    if request.session.testsfailed > failed_before:
        print(f"\nthe test cluster's logs are kept in {made}")
    else:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(scope="session")
def test_hosts():
    """The run's five test hosts (a bridge and five namespaces), skipped where they cannot
    be made."""
    from tests.support.netns import TestNetwork, unavailable

    why = unavailable()
    if why:
        pytest.skip(f"the cluster tier needs test hosts: {why}")
    network = _timed("test hosts (netns)", lambda: TestNetwork(HOSTS).start())
    assert isinstance(network, TestNetwork)
    try:
        yield network
    finally:
        network.stop()


@pytest.fixture(scope="session")
def cluster_pki(test_hosts):
    """The tests' certificates, the server's also naming the Kafka host's address."""
    from tests.support.certs import make_pki, remove_pki

    made = make_pki(jks=False, hosts=(test_hosts["kafka"].address,))
    yield made
    remove_pki(made)


@pytest.fixture(scope="session")
def cluster_kdc(test_hosts, cluster_dir):
    """A real MIT KDC (tests/support/kdc.py) on this machine's address on the test network,
    which every test host reaches, with ``kafka/<the Kafka host's address>`` among its
    service principals; its database and keytabs in the driver-only directory (the Workers
    do not see it). None where MIT Kerberos or gssapi is missing here."""
    from tests.support.kdc import kerberos_missing, start_kdc

    if kerberos_missing() is not None:
        yield None
        return
    kdc = _timed("MIT KDC", lambda: start_kdc(
        address=test_hosts.root_address, service_hosts=(test_hosts["kafka"].address,),
        parent=str(cluster_dir / "driver-only")))
    try:
        yield kdc
    finally:
        kdc.stop()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def cluster_kafka(request, test_hosts, cluster_pki, cluster_kdc):
    """Apache Kafka 4 on the ``kafka`` host, listening on and advertising its address; with
    a GSSAPI listener where the KDC runs."""
    from tests.support.apache_kafka import ApacheKafka, Kerberos, missing_tools
    from tests.support.kdc import SERVICE

    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    host = test_hosts["kafka"]
    kerberos = None
    if cluster_kdc is not None:
        kerberos = Kerberos(krb5_conf=cluster_kdc.krb5_conf, keytab=cluster_kdc.service_keytab,
                            principal=f"{SERVICE}/{host.address}@{cluster_kdc.realm}",
                            realm=cluster_kdc.realm, service=SERVICE)
    broker = ApacheKafka(pki=cluster_pki, host=host.address, command_prefix=host.command([]),
                         authorizer=False, heap_mb=384, kerberos=kerberos)
    _timed("Apache Kafka", broker.start)
    with logs_kept_on_failure(request, broker.stop, "Apache Kafka", lambda: broker.directory):
        yield broker


def hidden_from_workers(cluster_dir: Path) -> list[str]:
    """What the Workers (and so the executors) must not see: the driver-only directory, the
    checkout's packages and the driver's pyarrow (an executor finding them would not prove
    the shipped environment works: a task that ran the driver's Python fails with ``No
    module named 'pyarrow'``, as on a node without the driver's virtualenv)."""
    import pyarrow

    return [str(cluster_dir / "driver-only"), str(ROOT / "spark_kafka_wire"),
            str(ROOT / "pyspark_kafkawire"), str(Path(pyarrow.__file__).parent)]


@pytest.fixture(scope="session")
def spark_cluster(request, test_hosts, cluster_dir) -> Iterator[StandaloneCluster]:
    """Spark's Master and two Workers, started by the command lines of the docs' recipe
    (tests/cluster/recipe.py: ``spark-class`` of pip's pyspark)."""
    from tests.cluster.recipe import daemon_argv

    master = test_hosts["master"]
    master_argv, worker_argv = daemon_argv(master.address,
                                           f"spark://{master.address}:{MASTER_PORT}")
    cluster = StandaloneCluster(master, [test_hosts["worker1"], test_hosts["worker2"]],
                                cluster_dir / "spark", hide=hidden_from_workers(cluster_dir),
                                master_argv=master_argv, worker_argv=worker_argv)
    _timed("Spark master and 2 workers", cluster.start)

    def stop(keep_logs: bool) -> None:
        cluster.stop()

    with logs_kept_on_failure(request, stop, "Spark's master and workers",
                              lambda: cluster.directory):
        yield cluster


@pytest.fixture(scope="session")
def executor_env(cluster_dir):
    """kafkawire's wheel and its dependencies, packed for the executors (cached); with the
    ``kerberos`` extra's (gssapi) where this machine runs the GSSAPI test."""
    from tests.support.executor_env import ExecutorEnv, packed_env
    from tests.support.kdc import kerberos_missing

    extras = ("kerberos",) if kerberos_missing() is None else ()
    made = _timed("executor env (wheel, venv-pack)",
                  lambda: packed_env(cluster_dir / "build", extras=extras))
    assert isinstance(made, ExecutorEnv)
    return made


@pytest.fixture(scope="session")
def deps_only_env(cluster_dir):
    """kafkawire's dependencies without kafkawire, packed for the executors (cached): the
    archive ``executor_env``'s is made from (the same extras), so a run packs one."""
    from tests.support.executor_env import ExecutorEnv, packed_env
    from tests.support.kdc import kerberos_missing

    extras = ("kerberos",) if kerberos_missing() is None else ()
    made = _timed("deps-only env (venv-pack)",
                  lambda: packed_env(cluster_dir / "build-deps", deps_only=True, extras=extras))
    assert isinstance(made, ExecutorEnv)
    return made


RunJob = Callable[..., dict]
StartJob = Callable[..., RunningJob]


def _job_starter(request, test_hosts, spark_cluster, cluster_dir) -> StartJob:
    """Start tests/cluster/jobs/kafkawire_job.py with a spec (or a list of specs: one
    application) on the driver's host through ``spark-submit``, without waiting
    (``RunningJob.wait``, ``.kill``). The driver's Python is this venv's with the checkout on
    PYTHONPATH; the executors' is ``./environment/bin/python`` of the archive given. ``conf``:
    more Spark settings; ``driver_env``: more of the driver's environment."""
    from tests.support.executor_env import unpacked_for_the_driver

    driver = test_hosts["driver"]

    def start(spec: dict | list[dict], archive: Path, py_files: Sequence[str] = (),
              conf: dict[str, str] | None = None,
              driver_env: dict[str, str] | None = None) -> RunningJob:
        import json

        name = f"{request.node.name}-{len(JOB_SECONDS)}-{time.monotonic_ns() % 10**6}"
        directory = cluster_dir / "jobs" / name
        directory.mkdir(parents=True)
        (directory / "environment").symlink_to(unpacked_for_the_driver(cluster_dir, archive))
        env = clean_env(PYSPARK_PYTHON="./environment/bin/python",
                        PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=str(ROOT),
                        SPARK_LOCAL_IP=driver.address, **(driver_env or {}))
        host = {"broker_host": test_hosts["kafka"].address}
        full = ([{**host, **one} for one in spec] if isinstance(spec, list)
                else {**host, **spec})
        return launch(driver, spark_cluster, JOB, [json.dumps(full)], directory=directory,
                      archives=[f"{archive}#environment"], py_files=py_files, env=env,
                      conf=conf)

    return start


def _job_runner(start_job: StartJob, spark_cluster) -> RunJob:
    """``start_job`` and wait: the job's JSON results; the test fails with the driver's and
    the executors' logs when spark-submit does not exit 0."""

    def run(spec: dict | list[dict], archive: Path, py_files: Sequence[str] = (),
            conf: dict[str, str] | None = None, driver_env: dict[str, str] | None = None,
            timeout: float = 420.0) -> dict:
        done: JobRun = start_job(spec, archive, py_files, conf, driver_env).wait(timeout)
        JOB_SECONDS[done.stderr_path.parent.name] = done.seconds
        if done.returncode != 0:
            log = done.stderr_path.read_text(errors="replace")
            pytest.fail(f"spark-submit exited {done.returncode} after {done.seconds:.0f} s; "
                        f"driver log {done.stderr_path}:\n{log[-6000:]}\n"
                        f"driver stdout:\n{done.stdout[-3000:]}\n"
                        f"executors:\n{spark_cluster.executor_logs()[-6000:]}")
        return done.result()

    return run


@pytest.fixture
def start_job(request, test_hosts, spark_cluster, cluster_kafka, cluster_dir) -> StartJob:
    """A test's job starter (``_job_starter``)."""
    return _job_starter(request, test_hosts, spark_cluster, cluster_dir)


@pytest.fixture
def run_job(start_job, spark_cluster) -> RunJob:
    """A test's job runner (``_job_runner``)."""
    return _job_runner(start_job, spark_cluster)


@pytest.fixture(scope="module")
def module_run_job(request, test_hosts, spark_cluster, cluster_kafka, cluster_dir) -> RunJob:
    """A job runner for a module's fixture: one application shared by the module's tests
    whose scenarios kill nothing (one spark-submit instead of one per test)."""
    return _job_runner(_job_starter(request, test_hosts, spark_cluster, cluster_dir),
                       spark_cluster)


@pytest.fixture(scope="module")
def connect_server(request, test_hosts, spark_cluster, executor_env, cluster_dir):
    """pyspark's own ``start-connect-server.sh`` on the master's host against the cluster
    (tests/support/connect_cluster.py), with the executors' packed environment shipped by
    ``--archives`` and unpacked as ``./environment`` in its working directory (where a
    stream's source is planned); a client adds it to its session too (``addArtifacts``),
    for batch queries. It sees neither the checkout's packages nor the driver-only
    directory. Module scope: it holds every executor core while it runs, so it ends with
    the module that uses it."""
    from tests.support.connect_cluster import ClusterConnectServer
    from tests.support.executor_env import unpacked_for_the_driver

    server = ClusterConnectServer(
        test_hosts["master"], spark_cluster, cluster_dir / "connect-server",
        executor_env.archive, unpacked_for_the_driver(cluster_dir, executor_env.archive),
        hide=hidden_from_workers(cluster_dir))
    _timed("Spark Connect server", server.start)

    def stop(keep_logs: bool) -> None:
        server.stop()

    with logs_kept_on_failure(request, stop, "The Spark Connect server",
                              lambda: server.log_path):
        yield server
