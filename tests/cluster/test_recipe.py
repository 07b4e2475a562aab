"""docs/spark-connect-and-clusters.md's standalone recipe ("A standalone cluster, step by step",
issue 46 item 2) run as the page gives it (tests/cluster/recipe.py reads its blocks): the
tier's Master and Workers are already the page's ``spark-class`` lines; here the page's
environment block packs the executors' Python in a directory of its own, with the tools of
this test run's virtualenv first on PATH (a user's activated one: pip, venv-pack, pyspark's
``spark-submit`` and ``find_spark_home.py``), and the page's submit block runs on the
driver's host in that directory, ``job.py`` being the page's job.

The page's job runs without ``register()`` (kafkawire found by Spark's lookup of installed
``pyspark_*`` data sources) and then, in the same application, with the two lines the page
says to add: both read every record of the topic, and their tasks ran on the Workers, which
see neither the checkout nor the driver's pyarrow, so that a task run by the driver's Python
(what ``PYSPARK_DRIVER_PYTHON=python`` did to the auto-discovered source) fails there.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

from tests.cluster.recipe import env_script, job, submit_script
from tests.support.librdkafka import create_topic, produce_numbered
from tests.support.spark_standalone import clean_env

#: The page's topic (its job reads ``events``), and what the test writes to it.
TOPIC = "events"
PARTITIONS, PER_PARTITION = 4, 50
ENV_TIMEOUT_S = 900.0
SUBMIT_TIMEOUT_S = 420.0


def _user_env(**extra: str) -> dict[str, str]:
    """A shell of a user whose virtualenv (this test run's) is activated: its bin first on
    PATH, and no SPARK_HOME (the page's submit block finds it)."""
    env = clean_env(**extra)
    env.pop("SPARK_HOME", None)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def test_the_standalone_recipe_as_the_page_gives_it(test_hosts, spark_cluster, cluster_kafka,
                                                    cluster_dir) -> None:
    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    create_topic(conf, TOPIC, PARTITIONS)
    produce_numbered(conf, TOPIC, PARTITIONS, PER_PARTITION)
    records = PARTITIONS * PER_PARTITION

    work = cluster_dir / f"recipe-{uuid.uuid4().hex[:8]}"
    work.mkdir()
    built = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", env_script()], cwd=work,
                           env=_user_env(), capture_output=True, text=True,
                           timeout=ENV_TIMEOUT_S)
    assert built.returncode == 0, (built.stdout[-3000:], built.stderr[-3000:])
    assert (work / "environment" / "bin" / "python").exists()

    # the page's job as it is, then with register(): one application, one driver
    (work / "job.py").write_text(job(cluster_kafka.bootstrap()) + "\n\n"
                                 + job(cluster_kafka.bootstrap(), registered=True))
    driver = test_hosts["driver"]
    done = driver.run(["bash", "-e", "-o", "pipefail", "-c", submit_script(spark_cluster.url)],
                      env=_user_env(SPARK_LOCAL_IP=driver.address), cwd=str(work),
                      timeout=SUBMIT_TIMEOUT_S)
    counts = re.findall(r"^(\d+) records in events$", done.stdout, re.M)
    assert done.returncode == 0 and counts == [str(records)] * 2, (
        f"spark-submit exited {done.returncode}; stdout:\n{done.stdout[-3000:]}\n"
        f"stderr:\n{done.stderr[-6000:]}\nexecutors:\n{spark_cluster.executor_logs()[-6000:]}")

