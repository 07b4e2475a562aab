"""kafkawire on a Spark standalone cluster of test hosts (tests/cluster/conftest.py): batch
writes and reads, 64 partitions over the four executor cores, mutual TLS with stores only the
driver has, kafkawire shipped as a wheel by ``--py-files``, a stream's checkpoint on a shared
directory resumed by a new driver, and group offsets committed then started from.

Every test proves it ran on the cluster: the tasks that read or wrote report the address of
their host (the two Workers' addresses, both of them) and where ``spark_kafka_wire`` was
imported from (the archive unpacked in the executor's work directory, or the wheel given by
``--py-files``; never the checkout, which the Workers cannot see). librdkafka, from pytest, is
the oracle of what reached Kafka.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import pytest

from tests.cluster.checks import assert_ran_on_the_workers, oracle_rows, workers
from tests.support.librdkafka import create_topic, produce_numbered

ROWS = 2000



def _write_read_spec(cluster_kafka, *, listener: str, options: dict,
                     probe: str | None = None, more: dict | None = None) -> dict:
    """The write-read job's spec on a new 4-partition topic."""
    topic = f"cluster-{uuid.uuid4().hex[:10]}"
    create_topic({"bootstrap.servers": cluster_kafka.bootstrap()}, topic, 4)
    return {"mode": "write-read", "bootstrap": cluster_kafka.bootstrap(listener),
            "topic": topic, "rows": ROWS, "options": options, "probe": probe, **(more or {})}


def _check_write_read(result: dict, spec: dict, cluster_kafka, test_hosts, spark_cluster,
                      shipped: str = "archive") -> dict:
    """The write-read job's results checked against librdkafka: every row written once,
    read back exactly, on both Workers."""
    assert "error" not in result, result.get("error")
    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    oracle, messages = oracle_rows(conf, spec["topic"])
    assert sorted(r[:2] for r in oracle) == sorted([f"k{i}", f"v{i}"] for i in range(ROWS))
    assert sorted(result["read"]) == oracle
    written_by = {dict(m.headers())["written-by"].decode() for m in messages}
    assert_ran_on_the_workers(written_by, test_hosts, spark_cluster, shipped)
    assert_ran_on_the_workers(result["read_where"], test_hosts, spark_cluster, shipped)
    assert len(result["executors"]) == 3, result["executors"]  # the driver and two executors
    return result


@dataclass(frozen=True)
class Scenario:
    spec: dict
    result: dict


@pytest.fixture(scope="module")
def one_application(module_run_job, cluster_kafka, cluster_pki, cluster_kdc, executor_env,
                    cluster_dir) -> dict[str, Scenario]:
    """The scenarios that kill nothing and ship the same archive run as ONE spark-submit
    application (one driver, one pair of executors), one after the other, instead of one
    application each (issue 44: about a minute and a half of JVM and executor start-ups
    saved per scenario): a plain write and read, 64 partitions over the four executor cores,
    mutual TLS with stores only on the driver, and GSSAPI with a keytab only on the driver
    (where MIT Kerberos runs here). Each test below checks its scenario's results; a
    scenario that raised reports its traceback to its test only. The Kerberos settings
    (``KRB5_CONFIG`` for the driver and the executors, a krb5.conf on the shared directory)
    are the application's: they name a file, and the other scenarios use no Kerberos."""
    specs: dict[str, dict] = {}
    specs["plaintext"] = _write_read_spec(cluster_kafka, listener="PLAINTEXT", options={})

    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    topic64 = f"cluster64-{uuid.uuid4().hex[:10]}"
    create_topic(conf, topic64, 64)
    produce_numbered(conf, topic64, 64, 40)
    specs["64-partitions"] = {"mode": "read", "bootstrap": cluster_kafka.bootstrap(),
                              "topic": topic64, "read_options": {"minPartitions": "4"}}

    truststore = cluster_dir / "driver-only" / "truststore.p12"
    keystore = cluster_dir / "driver-only" / "client.p12"
    shutil.copyfile(cluster_pki.ca_p12, truststore)
    shutil.copyfile(cluster_pki.client.p12, keystore)
    specs["mtls"] = _write_read_spec(cluster_kafka, listener="MTLS", probe=str(keystore), options={
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.location": str(truststore),
        "kafka.ssl.truststore.type": "PKCS12",
        "kafka.ssl.truststore.password": cluster_pki.store_password,
        "kafka.ssl.keystore.location": str(keystore),
        "kafka.ssl.keystore.type": "PKCS12",
        "kafka.ssl.keystore.password": cluster_pki.store_password})

    spark_conf: dict[str, str] = {}
    driver_env: dict[str, str] = {}
    if cluster_kdc is not None:  # left out only where Kerberos cannot run here
        keytab = cluster_dir / "driver-only" / "alice.keytab"
        shutil.copyfile(cluster_kdc.client_keytab, keytab)
        krb5_conf = cluster_dir / "shared" / "krb5.conf"
        krb5_conf.parent.mkdir(exist_ok=True)
        shutil.copyfile(cluster_kdc.krb5_conf, krb5_conf)
        spark_conf["spark.executorEnv.KRB5_CONFIG"] = str(krb5_conf)
        driver_env["KRB5_CONFIG"] = str(krb5_conf)
        specs["gssapi"] = _write_read_spec(
            cluster_kafka, listener="GSSAPI", probe=str(keytab),
            more={"env_probe": ["KRB5_CONFIG", "KRB5CCNAME", "KRB5_CLIENT_KTNAME"]},
            options={"kafka.security.protocol": "SASL_PLAINTEXT",
                     "kafka.sasl.mechanism": "GSSAPI",
                     "kafka.sasl.kerberos.service.name": "kafka",
                     "kafka.sasl.jaas.config":
                         "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                         f'storeKey=true keyTab="{keytab}" '
                         f'principal="{cluster_kdc.client_principal}";'})

    results = module_run_job(list(specs.values()), executor_env.archive, conf=spark_conf,
                             driver_env=driver_env, timeout=600.0)
    assert isinstance(results, list) and len(results) == len(specs), results
    return {name: Scenario(spec, result)
            for (name, spec), result in zip(specs.items(), results, strict=True)}


def test_batch_write_then_read(one_application, cluster_kafka, test_hosts, spark_cluster):
    """kafkawire's sink writes 2000 rows from four tasks over both Workers, librdkafka reads
    them all once, and a kafkawire batch read on the executors returns exactly those records
    at their partitions and offsets."""
    ran = one_application["plaintext"]
    _check_write_read(ran.result, ran.spec, cluster_kafka, test_hosts, spark_cluster)


def test_64_partitions_read_by_the_four_executor_cores(one_application, cluster_kafka,
                                                       test_hosts, spark_cluster):
    """64 partitions of 40 records each (librdkafka writes them), read by one batch read
    planned into four tasks (``minPartitions=4``, one per executor core): every record of
    every partition, on both Workers."""
    ran = one_application["64-partitions"]
    result = ran.result
    assert "error" not in result, result.get("error")
    oracle, _ = oracle_rows({"bootstrap.servers": cluster_kafka.bootstrap()}, ran.spec["topic"])
    assert len(oracle) == 64 * 40
    assert sorted(result["read"]) == oracle
    assert sorted({r[2] for r in result["read"]}) == list(range(64))
    assert result["read_tasks"] == 4
    assert_ran_on_the_workers(result["read_where"], test_hosts, spark_cluster, "archive")


def test_mutual_tls_stores_only_on_the_driver(one_application, cluster_kafka, test_hosts,
                                              spark_cluster):
    """docs/spark-connect-and-clusters.md says TLS stores are read on the driver and travel
    with the plan: a PKCS12 truststore and a PKCS12 client keystore in a directory the
    Workers do not have (an empty tmpfs covers it there; the tasks check) serve a write and a
    read over Kafka's MTLS listener (client certificate required), whose certificate names
    the Kafka host's address."""
    ran = one_application["mtls"]
    result = _check_write_read(ran.result, ran.spec, cluster_kafka, test_hosts, spark_cluster)
    for where in result["read_where"]:
        assert json.loads(where)["probe_exists"] is False, where


def test_gssapi_with_a_keytab_only_on_the_driver(one_application, cluster_kafka, cluster_kdc,
                                                 test_hosts, spark_cluster, cluster_dir):
    """docs/spark-connect-and-clusters.md says a GSSAPI keytab named in the JAAS config is
    read on the driver and travels with the plan: alice's keytab, in a directory the Workers
    do not have (the tasks check), serves a write and a read over Kafka's GSSAPI listener
    (Kafka 4's own Kerberos acceptor, ``kafka/<its address>``). Only ``krb5.conf`` is on
    every host (``spark.executorEnv.KRB5_CONFIG``), as for any Kerberos client. The KDC's
    log shows both Workers asking for alice's tickets themselves, with the keys they were
    sent."""
    if cluster_kdc is None:  # the KDC is left out only where Kerberos cannot run here
        from tests.support.kdc import kerberos_missing

        pytest.skip(f"{kerberos_missing()}")
    ran = one_application["gssapi"]
    result = _check_write_read(ran.result, ran.spec, cluster_kafka, test_hosts, spark_cluster)
    krb5_conf = cluster_dir / "shared" / "krb5.conf"
    assert result["executor_env"] == [{
        "env": {"KRB5_CONFIG": str(krb5_conf), "KRB5CCNAME": None, "KRB5_CLIENT_KTNAME": None},
        "exists": {"KRB5_CONFIG": True, "KRB5CCNAME": False, "KRB5_CLIENT_KTNAME": False}}]
    for where in result["read_where"]:
        assert json.loads(where)["probe_exists"] is False, where
    log = Path(cluster_kdc.log_path).read_text(errors="replace")
    for worker in workers(test_hosts):
        assert re.search(rf"AS_REQ .* {re.escape(worker)}: ISSUE: .*"
                         rf"{re.escape(cluster_kdc.client_principal)} for krbtgt/", log), \
            f"no ticket of alice's asked from {worker}:\n{log[-3000:]}"


def test_wheel_by_py_files_with_dependencies_in_the_archive(run_job, cluster_kafka,
                                                            deps_only_env, test_hosts,
                                                            spark_cluster, cluster_dir):
    """Executors whose shipped Python has kafkawire's dependencies but not kafkawire get its
    wheel by ``--py-files`` and write and read as with the full environment. The wheel goes
    under a ``.zip`` name: PySpark puts only ``.zip``, ``.egg`` and ``.jar`` py-files on the
    executors' Python path (SparkContext.PACKAGE_EXTENSIONS); a ``.whl`` is shipped to every
    executor and never importable there (``No module named 'spark_kafka_wire'``). A wheel is
    a zip file and kafkawire is pure Python, so the renamed wheel imports as it is."""
    as_zip = cluster_dir / "py-files" / deps_only_env.wheel.with_suffix(".zip").name
    as_zip.parent.mkdir(exist_ok=True)
    shutil.copyfile(deps_only_env.wheel, as_zip)
    spec = _write_read_spec(cluster_kafka, listener="PLAINTEXT", options={})
    result = run_job(spec, deps_only_env.archive, py_files=(str(as_zip),))
    _check_write_read(result, spec, cluster_kafka, test_hosts, spark_cluster,
                      shipped="py-files")


def _new_rows(oracle: list, before: list) -> list:
    old = {tuple(r) for r in before}
    return [r for r in oracle if tuple(r) not in old]


def test_stream_batches_commits_to_its_group_then_a_new_query_starts_there(
        run_job, cluster_kafka, executor_env, test_hosts, spark_cluster, cluster_dir):
    """An availableNow stream with maxOffsetsPerTrigger=300 over 4 partitions of 250 records
    runs Spark's proportional micro-batches (300, 300, 300, 100) on the executors, its
    checkpoint and parquet sink in a directory every host shares, and with
    ``commitOffsets=kafka`` commits what it read to its group (librdkafka reads the group's
    offsets back). A new query (a new spark-submit) on a new checkpoint with
    ``startingOffsets=group`` starts there and reads only the 500 records written since, in
    (300, 200). A new driver resuming the same checkpoint is
    test_faults_on_a_cluster.py::test_driver_killed_mid_stream_then_restarted_on_its_checkpoint."""
    conf = {"bootstrap.servers": cluster_kafka.bootstrap()}
    topic = f"cluster-group-{uuid.uuid4().hex[:10]}"
    group = f"g-{topic}"
    create_topic(conf, topic, 4)
    produce_numbered(conf, topic, 4, 250)
    options = {"kafka.group.id": group, "commitOffsets": "kafka"}
    base = cluster_dir / "shared" / topic

    first = run_job({"mode": "stream", "bootstrap": cluster_kafka.bootstrap(), "topic": topic,
                     "shared": str(base / "a"), "options": options,
                     "read_options": {"startingOffsets": "earliest",
                                      "maxOffsetsPerTrigger": "300"}}, executor_env.archive)
    oracle, _ = oracle_rows(conf, topic)
    assert sorted(first["read"]) == oracle
    assert [b for b in first["batches"] if b] == [300, 300, 300, 100]
    assert_ran_on_the_workers(first["read_where"], test_hosts, spark_cluster, "archive")
    consumer = confluent_kafka.Consumer({**conf, "group.id": group})
    try:
        committed = consumer.committed([confluent_kafka.TopicPartition(topic, p)
                                        for p in range(4)], timeout=30)
    finally:
        consumer.close()
    assert [(c.partition, c.offset) for c in committed] == [(p, 250) for p in range(4)]

    produce_numbered(conf, topic, 4, 125, 250)
    second = run_job({"mode": "stream", "bootstrap": cluster_kafka.bootstrap(), "topic": topic,
                      "shared": str(base / "b"), "options": options,
                      "read_options": {"startingOffsets": "group",
                                       "maxOffsetsPerTrigger": "300"}}, executor_env.archive)
    now, _ = oracle_rows(conf, topic)
    assert sorted(second["read"]) == _new_rows(now, oracle)
    assert len(second["read"]) == 500
    assert [b for b in second["batches"] if b] == [300, 200]
    assert_ran_on_the_workers(second["read_where"], test_hosts, spark_cluster, "archive")
