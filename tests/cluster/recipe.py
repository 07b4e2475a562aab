"""The standalone-cluster recipe of docs/spark-connect-and-clusters.md ("A standalone cluster,
step by step", issue 46 item 2), as the cluster tier runs it: its marked blocks
(``<!-- example:cluster-* -->``, tests/support/docs_pages.py) read from the page, with only
the page's host names replaced by the test hosts' addresses.

- ``cluster-daemons``: the ``spark-class`` command lines that start the tier's Master and
  Workers (tests/cluster/conftest.py's ``spark_cluster``);
- ``cluster-env``: the executors' environment, packed in a directory of its own (``.`` of
  ``pip wheel`` standing for the clone);
- ``cluster-job``: ``job.py``, with ``broker:9092`` standing for the Kafka host;
- ``cluster-submit``: run by bash on the driver's host in that directory.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.support.docs_pages import examples

ROOT = Path(__file__).resolve().parents[2]
#: The page's names for the master's host and the broker.
MASTER = "master"
BROKER = "broker:9092"
#: The page's master URL (Spark's default port, which the tier's Master listens on).
MASTER_URL = "spark://master:7077"
#: The lines the page tells a user to add after ``getOrCreate()`` to register the source.
REGISTER = ("from spark_kafka_wire import KafkaWireDataSource",
            "spark.dataSource.register(KafkaWireDataSource)")


def block(name: str, lang: str) -> str:
    """The page's block ``cluster-<name>``, which must be a ``lang`` block."""
    found = examples().get(f"cluster-{name}")
    assert found, f"docs/spark-connect-and-clusters.md has no block marked cluster-{name}"
    assert found[0] == lang, f"cluster-{name} is a {found[0]} block, not {lang}"
    return found[1]


def daemon_argv(master_address: str, master_url: str) -> tuple[list[str], list[str]]:
    """The Master's and a Worker's class and arguments after ``spark-class``, as the page's
    ``cluster-daemons`` lines give them (their comments dropped), the master's host name and
    URL replaced by the test master's."""
    lines = [shlex.split(line, comments=True) for line in block("daemons", "sh").splitlines()]
    lines = [argv for argv in lines if argv]
    assert [argv[0] for argv in lines] == ["spark-class", "spark-class"], lines
    assert [argv[1] for argv in lines] == ["org.apache.spark.deploy.master.Master",
                                           "org.apache.spark.deploy.worker.Worker"], lines
    swap = {MASTER: master_address, MASTER_URL: master_url}
    master, worker = ([swap.get(a, a) for a in argv[1:]] for argv in lines)
    assert master_url in worker, f"the worker's line names no {MASTER_URL}: {lines[1]}"
    return master, worker


def env_script() -> str:
    """The ``cluster-env`` block with ``pip wheel``'s ``.`` (the clone) replaced by the
    checkout's path, so that it runs in a directory of its own."""
    script, n = re.subn(r"^(pip wheel [^#\n]*) \.(?=\s)", rf"\1 {ROOT}", block("env", "sh"),
                        flags=re.M)
    assert n == 1, "the recipe's `pip wheel ... .` line (the wheel of the clone) is gone"
    return script


def job(bootstrap: str, registered: bool = False) -> str:
    """``job.py`` as the page gives it, the broker's address replaced; ``registered``: with
    the two lines registering kafkawire after the line calling ``getOrCreate()``."""
    code = block("job", "python")
    assert BROKER in code, f"the job names no {BROKER}"
    code = code.replace(BROKER, bootstrap)
    if registered:
        code, n = re.subn(r"^(.*getOrCreate\(\).*)$", lambda m: "\n".join([m[1], *REGISTER]),
                          code, count=1, flags=re.M)
        assert n == 1, "the job has no getOrCreate() line to register kafkawire after"
    return code


def submit_script(master_url: str) -> str:
    """The ``cluster-submit`` block, the page's master URL replaced by the test master's."""
    script = block("submit", "sh")
    assert MASTER_URL in script, f"the submit line names no {MASTER_URL}"
    return script.replace(MASTER_URL, master_url)
