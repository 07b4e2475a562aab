"""A Spark standalone cluster on test hosts (issue 31): Spark's own Master and Workers from the
installed pyspark (``bin/spark-class``), each in a network namespace of its own
(tests/support/netns.py), and drivers started there by pyspark's own ``bin/spark-submit``.

Each daemon runs in the foreground in a session of its own and is stopped by PID (SIGTERM to
its process group, SIGKILL after a bounded wait); its log and, for a Worker, its executors'
work directories (``app-*/<id>/stdout``/``stderr``) are under ``directory``, kept when a test
failed. A Worker has its own work directory, local directories and TMPDIR, an environment
without PYTHONPATH and anything else of the test process' Python, and an empty tmpfs over the
directories it must not see (``hide``: the driver-only directory, the checkout's packages), so
an executor finds nothing of the driver's files.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.netns import Host

MASTER_PORT = 7077
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0
#: What a job prints before its one line of JSON results on stdout.
RESULT_MARKER = "KAFKAWIRE-CLUSTER-RESULT "
#: Environment variables a Spark daemon keeps from the test process: the rest (PYTHONPATH,
#: VIRTUAL_ENV, PYSPARK_*, SPARK_*, ...) would hand executors the test process' Python.
KEPT_ENV = ("PATH", "HOME", "JAVA_HOME", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of a process on a test host: KEPT_ENV from this one, and ``extra``."""
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    env["SPARK_HOME"] = str(spark_home())
    env.update(extra)
    return env


def reachable(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


@dataclass
class Daemon:
    """One Master or Worker JVM on its host."""

    role: str
    host: Host
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.role}.log"

    def start(self, argv: Sequence[str], env: Mapping[str, str], hide: Sequence[str] = ()) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = self.host.popen(
                [str(spark_home() / "bin" / "spark-class"), *argv], hide=hide,
                env=dict(env), cwd=str(self.directory), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        stop_group(self.process)


def stop_group(process: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM the process group of ``process`` (started in a session of its own), SIGKILL
    after STOP_TIMEOUT_S."""
    if process is None or process.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=STOP_TIMEOUT_S)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class StandaloneCluster:
    """A Master on ``master`` and one Worker per host of ``workers`` (``cores`` and
    ``memory`` each); ``hide``: directories the Workers and their executors must not see.
    ``master_argv``, ``worker_argv``: each daemon's class and arguments as a user gives them
    to ``spark-class`` (the cluster tier's are the docs' recipe, tests/cluster/recipe.py);
    the cluster adds its ports, each Worker's address, cores, memory and work directory."""

    master: Host
    workers: Sequence[Host]
    directory: Path
    hide: Sequence[str] = ()
    cores: int = 2
    memory: str = "1g"
    master_argv: Sequence[str] = ()
    worker_argv: Sequence[str] = ()
    daemons: list[Daemon] = field(default_factory=list)
    started_s: float = 0.0

    @property
    def url(self) -> str:
        return f"spark://{self.master.address}:{MASTER_PORT}"

    def worker_dir(self, host: Host) -> Path:
        return self.directory / host.name

    def start(self) -> StandaloneCluster:
        began = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - began
        return self

    def _start(self) -> None:
        daemon_env = {"SPARK_DAEMON_MEMORY": "384m"}
        master = Daemon("master", self.master, self.directory / self.master.name)
        self.daemons.append(master)
        master.start([*(self.master_argv or ["org.apache.spark.deploy.master.Master", "--host",
                                             self.master.address]),
                      "--port", str(MASTER_PORT), "--webui-port", "8080"],
                     clean_env(SPARK_LOCAL_IP=self.master.address,
                               SPARK_LOG_DIR=str(master.directory), **daemon_env))
        self._wait(lambda: reachable(self.master.address, MASTER_PORT), master,
                   f"the Spark master did not listen on {self.url}")
        for host in self.workers:
            base = self.worker_dir(host)
            work, local, tmp = base / "work", base / "local", base / "tmp"
            for d in (work, local, tmp):
                d.mkdir(parents=True, exist_ok=True)
            worker = Daemon("worker", host, base)
            self.daemons.append(worker)
            worker.start([*(self.worker_argv or ["org.apache.spark.deploy.worker.Worker",
                                                 self.url]), "--host",
                          host.address, "--cores", str(self.cores), "--memory", self.memory,
                          "--work-dir", str(work), "--webui-port", "8081"],
                         clean_env(SPARK_LOCAL_IP=host.address, SPARK_LOCAL_DIRS=str(local),
                                   SPARK_WORKER_DIR=str(work), TMPDIR=str(tmp),
                                   SPARK_LOG_DIR=str(base), **daemon_env),
                         hide=self.hide)
        for host in self.workers:
            pattern = re.compile(rf"Registering worker {re.escape(host.address)}:\d+")
            self._wait(lambda p=pattern: bool(p.search(master.log())), master,
                       f"the worker on {host.address} did not register with the master")

    def _wait(self, ready: Callable[[], bool], watched: Daemon, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            for daemon in self.daemons:
                if not daemon.alive():
                    raise RuntimeError(f"Spark's {daemon.role} on {daemon.host.address} "
                                       f"exited; log {daemon.log_path}:\n{daemon.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} within {START_TIMEOUT_S:.0f} s; log "
                                   f"{watched.log_path}:\n{watched.log()[-3000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        for daemon in reversed(self.daemons):
            daemon.stop()

    def executor_logs(self) -> str:
        """Every executor's stderr (the workers' ``work/app-*/<id>/stderr``), for errors."""
        out = []
        for host in self.workers:
            for path in sorted((self.worker_dir(host) / "work").glob("app-*/*/stderr")):
                out.append(f"--- {path}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(out)


@dataclass
class JobRun:
    """What one ``spark-submit`` of a job printed and returned."""

    returncode: int
    stdout: str
    stderr_path: Path
    seconds: float

    def result(self) -> dict:
        """The job's JSON results (its line after RESULT_MARKER)."""
        for line in self.stdout.splitlines():
            if line.startswith(RESULT_MARKER):
                return json.loads(line[len(RESULT_MARKER):])
        raise AssertionError(f"the job printed no result (exit {self.returncode}); stdout:\n"
                             f"{self.stdout[-3000:]}\nstderr: {self.stderr_path}")


def driver_settings(driver: Host, cluster: StandaloneCluster) -> dict[str, str]:
    """The settings of a driver on ``driver`` against ``cluster``, which every driver of the
    tier gets (a spark-submit job or the Connect server): it listens on its host's address,
    waits for every executor before its first job so that tasks land on both Workers, and a
    failed task fails the job."""
    return {
        "spark.driver.host": driver.address,
        "spark.driver.bindAddress": driver.address,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # every executor before the first job, so that tasks can land on both workers (the
        # ratio is of spark.cores.max in standalone mode: unset, nothing is waited for)
        "spark.cores.max": str(cluster.cores * len(cluster.workers)),
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "240s",
        "spark.executor.memory": "768m",
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.session.timeZone": "UTC",
        # a failed task fails the job: a retry could hide what went wrong on an executor
        # (the fault tests allow retries)
        "spark.task.maxFailures": "1",
    }


def _submit_argv(driver: Host, cluster: StandaloneCluster, job: Path, args: Sequence[str],
                 archives: Sequence[str], py_files: Sequence[str],
                 conf: Mapping[str, str] | None) -> list[str]:
    settings = {**driver_settings(driver, cluster), **(conf or {})}
    argv = [str(spark_home() / "bin" / "spark-submit"), "--master", cluster.url,
            "--deploy-mode", "client"]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    if archives:
        argv += ["--archives", ",".join(archives)]
    if py_files:
        argv += ["--py-files", ",".join(py_files)]
    return [*argv, str(job), *args]


@dataclass
class RunningJob:
    """A driver started on a test host (``launch``'s spark-submit, or the Connect tier's
    client): wait for it, or kill its whole process group (spark-submit's JVM, the job's
    Python driver) with SIGKILL, as a crash would. Its stdout is kept beside its stderr
    (``<name>.log`` -> ``<name>.out``)."""

    process: subprocess.Popen[bytes]
    stderr_path: Path
    began: float

    def wait(self, timeout: float = 420.0) -> JobRun:
        """The run's outcome once it ended (killed after ``timeout``)."""
        try:
            out, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(self.process)
            out, _ = self.process.communicate()
        self.stderr_path.with_suffix(".out").write_bytes(out or b"")
        return JobRun(self.process.returncode, (out or b"").decode(errors="replace"),
                      self.stderr_path, time.monotonic() - self.began)

    def kill(self) -> None:
        """SIGKILL to every process of the driver (no shutdown hook runs, as on a crash)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launch(driver: Host, cluster: StandaloneCluster, job: Path, args: Sequence[str], *,
           directory: Path, archives: Sequence[str] = (), py_files: Sequence[str] = (),
           env: Mapping[str, str], conf: Mapping[str, str] | None = None) -> RunningJob:
    """Start ``spark-submit --master <cluster> --deploy-mode client`` of ``job`` on the
    driver's host, its working directory ``directory``, in a session of its own; ``env`` is
    the driver's whole environment. Its stderr goes to ``directory/driver.log``."""
    directory.mkdir(parents=True, exist_ok=True)
    argv = _submit_argv(driver, cluster, job, args, archives, py_files, conf)
    with open(directory / "driver.log", "wb") as err:
        process = driver.popen(argv, env=dict(env), cwd=str(directory), stdout=subprocess.PIPE,
                               stderr=err, stdin=subprocess.DEVNULL)
    return RunningJob(process, directory / "driver.log", time.monotonic())


def submit(driver: Host, cluster: StandaloneCluster, job: Path, args: Sequence[str], *,
           directory: Path, archives: Sequence[str] = (), py_files: Sequence[str] = (),
           env: Mapping[str, str], conf: Mapping[str, str] | None = None,
           timeout: float = 420.0) -> JobRun:
    """``launch`` and wait: the job's outcome once it ended (killed after ``timeout``)."""
    return launch(driver, cluster, job, args, directory=directory, archives=archives,
                  py_files=py_files, env=env, conf=conf).wait(timeout)
