"""The documentation's examples run as written, in the order a newcomer meets them, on a fresh
broker of their own (no topic exists yet): the README's landing example, the Quick start
(docs/getting-started.md), the command-line walk-through (docs/cli.md), the exactly-once write
(docs/exactly-once.md), the Reading, Streaming and Writing pages' examples and the Avro
example (docs/schema-registry.md). A block is marked ``<!-- example:NAME -->`` on the line
before its fence, in the README or any page of docs/; ``localhost:9092`` in it stands for the
broker, and the only other substitutions are the Avro example's registry URL and the Streaming
example's checkpoint directory (a fresh one per run)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.docs_pages import PLACEHOLDER, README, examples

pytestmark = [pytest.mark.spark, pytest.mark.broker]

#: Examples whose names start so are the standalone-cluster recipe, run by the cluster tier
#: (tests/cluster/test_recipe.py) on its test hosts with their own placeholders, not here.
CLUSTER_EXAMPLES = "cluster-"


def test_the_marked_examples_exist() -> None:
    found = examples()
    assert {"landing", "quickstart", "reading", "streaming", "writing", "cli", "exactly-once",
            "avro"} <= set(found), sorted(found)
    assert "<!-- example:landing -->" in README.read_text(), "the README's own example moved"
    for name, (_, code) in found.items():
        if name.startswith(CLUSTER_EXAMPLES):
            continue
        assert PLACEHOLDER in code, f"{name}: no {PLACEHOLDER} to point at the test broker"


@pytest.fixture(scope="module")
def fresh_broker():
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS"):
        pytest.skip("the documentation's examples create topics with fixed names: they run on a fresh "
                    "embedded broker, not on the external cluster of KAFKA_BOOTSTRAP_SERVERS")
    from spark_kafka_wire.testing.embedded import EmbeddedBroker

    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


def _python(code: str, namespace: dict, servers: str, capsys) -> str:
    exec(compile(code.replace(PLACEHOLDER, servers), "<docs example>", "exec"), namespace)
    return capsys.readouterr().out


def test_readme_examples_in_order(spark, fresh_broker, tmp_path, capsys) -> None:
    found = examples()
    namespace: dict = {"spark": spark}

    # the README's landing example: written, then read back as the table it shows
    out = _python(found["landing"][1], {"spark": spark}, fresh_broker, capsys)
    assert "hello" in out and "world" in out and "alice" in out, out

    out = _python(found["quickstart"][1], namespace, fresh_broker, capsys)
    assert "2 apples" in out and "a gift" in out, out
    upper = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", fresh_broker)
             .option("subscribe", "orders-upper").load()
             .selectExpr("cast(value as string) v").collect())
    assert sorted(r.v for r in upper) == ["1 PEAR", "2 APPLES", "A GIFT"]

    _reading_streaming_writing(spark, found, fresh_broker, tmp_path, capsys)

    lang, script = found["cli"]
    assert lang == "sh"
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                 os.environ.get("PATH", "")])}
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c",
                           script.replace(PLACEHOLDER, fresh_broker)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "3 records written to orders" in done.stdout + done.stderr

    out = _python(found["exactly-once"][1], namespace, fresh_broker, capsys)
    assert re.search(r"^\d+ records, each once$", out, re.M), out
    count = int(out.split()[0])
    assert count == namespace["df"].count() > 0


#: The Streaming example's checkpoint directory (docs/streaming.md), a fresh one per test run.
CHECKPOINT_PLACEHOLDER = "/tmp/kafkawire-checkpoints"


def _reading_streaming_writing(spark, found, servers: str, tmp_path: Path, capsys) -> None:
    """The Reading, Streaming and Writing pages' examples, each in a namespace of its own (a
    reader may open any page first), after the Quick start wrote its three orders."""
    out = _python(found["reading"][1], {"spark": spark}, servers, capsys)
    assert "2 apples" in out and "a gift" in out and re.search(r"^3 records$", out, re.M), out

    lang, code = found["streaming"]
    assert lang == "python" and CHECKPOINT_PLACEHOLDER in code
    for marker in ("readStream", "writeStream", "checkpointLocation", "availableNow=True"):
        assert marker in code, marker
    code = code.replace(CHECKPOINT_PLACEHOLDER, str(tmp_path / "checkpoints"))
    out = _python(code, {"spark": spark}, servers, capsys)
    assert re.search(r"^3 records this run$", out, re.M), out
    shouted = (spark.read.format("kafkawire").option("kafka.bootstrap.servers", servers)
               .option("subscribe", "orders-shouted").load()
               .selectExpr("cast(value as string) v").collect())
    assert sorted(r.v for r in shouted) == ["1 PEAR", "2 APPLES", "A GIFT"]
    # run again on its checkpoint, as the page says: nothing new arrived, nothing is read again
    out = _python(code, {"spark": spark}, servers, capsys)
    assert re.search(r"^0 records this run$", out, re.M), out

    out = _python(found["writing"][1], {"spark": spark}, servers, capsys)
    rows = re.findall(r"^\|(\w+)\s*\|(\{.*?\})\s*\|(\d+)\s*\|(\w+)\s*\|$", out, re.M)
    assert [(key, source) for key, _, _, source in rows] == [
        ("alice", "web"), ("alice", "web"), ("bob", "shop")], out
    assert rows[0][2] == rows[1][2], "one key, one partition"


#: The Avro example (docs/schema-registry.md) names its Schema Registry at this URL (Confluent's default port).
REGISTRY_PLACEHOLDER = "http://localhost:8081"


def test_readme_avro_example(spark, fresh_broker, schema_registry, capsys) -> None:
    """The Avro example against the tests' registry: written, registered, read back typed."""
    code = examples()["avro"][1]
    assert REGISTRY_PLACEHOLDER in code
    out = _python(code.replace(REGISTRY_PLACEHOLDER, schema_registry), {"spark": spark},
                  fresh_broker, capsys)
    assert "|-- value: struct" in out and "|    |-- item: string" in out, out
    assert re.search(r"\|\s*1\|apples\|\s*2\.5\|", out) and "pears" in out, out
