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
from tests.support.spark_standalone import JobRun, StandaloneCluster, clean_env, submit

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
def cluster_kafka(request, test_hosts, cluster_pki):
    """Apache Kafka 4 on the ``kafka`` host, listening on and advertising its address."""
    from tests.support.apache_kafka import ApacheKafka, missing_tools

    missing = missing_tools()
    if missing:
        pytest.skip(missing)
    host = test_hosts["kafka"]
    broker = ApacheKafka(pki=cluster_pki, host=host.address, command_prefix=host.command([]),
                         authorizer=False, heap_mb=384)
    _timed("Apache Kafka", broker.start)
    with logs_kept_on_failure(request, broker.stop, "Apache Kafka", lambda: broker.directory):
        yield broker


def hidden_from_workers(cluster_dir: Path) -> list[str]:
    """What the Workers (and so the executors) must not see: the driver-only directory and
    the checkout's packages (an executor finding them would not prove the shipped
    environment works)."""
    return [str(cluster_dir / "driver-only"), str(ROOT / "spark_kafka_wire"),
            str(ROOT / "pyspark_kafkawire")]


@pytest.fixture(scope="session")
def spark_cluster(request, test_hosts, cluster_dir) -> Iterator[StandaloneCluster]:
    cluster = StandaloneCluster(test_hosts["master"],
                                [test_hosts["worker1"], test_hosts["worker2"]],
                                cluster_dir / "spark", hide=hidden_from_workers(cluster_dir))
    _timed("Spark master and 2 workers", cluster.start)

    def stop(keep_logs: bool) -> None:
        cluster.stop()

    with logs_kept_on_failure(request, stop, "Spark's master and workers",
                              lambda: cluster.directory):
        yield cluster


@pytest.fixture(scope="session")
def executor_env(cluster_dir):
    """kafkawire's wheel and its dependencies, packed for the executors (cached)."""
    from tests.support.executor_env import ExecutorEnv, packed_env

    made = _timed("executor env (wheel, venv-pack)", lambda: packed_env(cluster_dir / "build"))
    assert isinstance(made, ExecutorEnv)
    return made


@pytest.fixture(scope="session")
def deps_only_env(cluster_dir):
    """kafkawire's dependencies without kafkawire, packed for the executors (cached)."""
    from tests.support.executor_env import ExecutorEnv, packed_env

    made = _timed("deps-only env (venv-pack)",
                  lambda: packed_env(cluster_dir / "build-deps", deps_only=True))
    assert isinstance(made, ExecutorEnv)
    return made


RunJob = Callable[..., dict]


@pytest.fixture
def run_job(request, test_hosts, spark_cluster, cluster_kafka, cluster_dir) -> RunJob:
    """Run tests/cluster/jobs/kafkawire_job.py with a spec on the driver's host through
    ``spark-submit``; its JSON results. The driver's Python is this venv's with the checkout
    on PYTHONPATH; the executors' is ``./environment/bin/python`` of the archive given."""
    from tests.support.executor_env import unpacked_for_the_driver

    driver = test_hosts["driver"]

    def run(spec: dict, archive: Path, py_files: Sequence[str] = ()) -> dict:
        import json

        name = f"{request.node.name}-{len(JOB_SECONDS)}"
        directory = cluster_dir / "jobs" / name
        directory.mkdir(parents=True)
        (directory / "environment").symlink_to(unpacked_for_the_driver(cluster_dir, archive))
        env = clean_env(PYSPARK_PYTHON="./environment/bin/python",
                        PYSPARK_DRIVER_PYTHON=sys.executable, PYTHONPATH=str(ROOT),
                        SPARK_LOCAL_IP=driver.address)
        full = {"broker_host": test_hosts["kafka"].address, **spec}
        done: JobRun = submit(driver, spark_cluster, JOB, [json.dumps(full)],
                              directory=directory,
                              archives=[f"{archive}#environment"], py_files=py_files, env=env)
        JOB_SECONDS[name] = done.seconds
        if done.returncode != 0:
            log = done.stderr_path.read_text(errors="replace")
            pytest.fail(f"spark-submit exited {done.returncode} after {done.seconds:.0f} s; "
                        f"driver log {done.stderr_path}:\n{log[-6000:]}\n"
                        f"driver stdout:\n{done.stdout[-3000:]}\n"
                        f"executors:\n{spark_cluster.executor_logs()[-6000:]}")
        return done.result()

    return run

