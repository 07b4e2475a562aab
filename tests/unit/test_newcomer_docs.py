"""What a newcomer reads first says what is true: the Makefile checks Java before the long
install, the API table (docs/compatibility.md) lists every API kafkawire speaks with its versions, generated
files stay out of git, and conf/ and docker/ describe what they hold."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from spark_kafka_wire.protocol.messages import ALL_APIS
from tests.support.docs_pages import all_text, page

ROOT = Path(__file__).resolve().parents[2]
COMPATIBILITY = page("compatibility.md").read_text()  # the API table, moved from the README
SECURITY = page("security.md").read_text()  # the Security model, moved from the README


@pytest.mark.parametrize("target", ["demo", "test"])
def test_make_checks_java_before_installing(target) -> None:
    if subprocess.run(["make", "--version"], capture_output=True).returncode != 0:
        pytest.skip("make is not installed")
    plan = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True,
                          text=True, timeout=60).stdout.splitlines()
    java = next(i for i, line in enumerate(plan) if "check_java.py" in line)
    install = next(i for i, line in enumerate(plan) if "pip install" in line)
    assert java < install, plan


def test_docs_api_table_lists_every_api_and_its_versions() -> None:
    rows = {}
    for line in COMPATIBILITY.splitlines():
        m = re.match(r"\| ((?:\w+ \(\d+\)(?: / )?)+) \| ([\d–/ ]+) \|", line)
        if m:
            names = re.findall(r"(\w+) \((\d+)\)", m[1])
            ranges = [r.strip() for r in m[2].split("/")]
            assert len(names) == len(ranges), line
            for (name, key), versions in zip(names, ranges, strict=True):
                rows[int(key)] = (name, versions)
    for key, spec in ALL_APIS.items():
        assert key in rows, f"the API table lacks {spec.name} ({key})"
        assert rows[key] == (spec.name, f"{spec.min_version}–{spec.max_version}"), spec.name
    assert "a later release" not in all_text(), "the docs still promise a feature that exists"


def test_generated_files_stay_out_of_git() -> None:
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "docker/certs/" in ignored  # made by docker/scripts/make-certs.sh, keys included


def test_local_properties_says_where_it_points() -> None:
    text = (ROOT / "conf" / "local.properties").read_text()
    servers = re.search(r"^bootstrap\.servers=(\S+)", text, re.M)[1]
    comment = " ".join(line for line in text.splitlines() if line.startswith("#"))
    assert servers in comment
    assert "embedded" not in comment or "free port" in comment


def test_compose_comments_match_the_notebooks_variable() -> None:
    text = (ROOT / "docker" / "compose.yaml").read_text()
    jupyter = yaml.safe_load(text)["services"]["jupyter"]["environment"]
    assert "KAFKAWIRE_SPARK_CONNECT" in jupyter
    assert "SPARK_REMOTE" not in text, "the notebooks read KAFKAWIRE_SPARK_CONNECT"


def _security_section() -> str:
    return SECURITY.split("## Security model", 1)[1].split("\n## ", 1)[0]


def test_security_model_names_real_operator_settings() -> None:
    """Every ``spark.kafkawire.*`` setting the Security model names is read by the code, and
    its environment variable is the one operator.env_name derives."""
    from spark_kafka_wire.client.operator import env_name

    section = _security_section()
    pairs = re.findall(r"`(spark\.kafkawire\.[\w.]+)` \(`(KAFKAWIRE_\w+)`\)", section)
    assert len(pairs) >= 4, pairs
    code = "\n".join(p.read_text() for p in (ROOT / "spark_kafka_wire").rglob("*.py"))
    for setting, env in pairs:
        assert env == env_name(setting), setting
        assert f'"{setting}"' in code, f"{setting} is named in the docs but read nowhere"


def test_security_model_spark_settings_exist() -> None:
    """The Spark settings it recommends to operators are Spark's (strings in its jars)."""
    from tests.unit.test_conf_dir import _spark_jar_strings

    keys = set(re.findall(r"`(spark\.(?!kafkawire)[\w.]+)(?:=\w+)?`", _security_section()))
    assert {"spark.authenticate", "spark.io.encryption.enabled"} <= keys
    blob = _spark_jar_strings()
    for key in keys:
        assert key.rstrip(".*").encode() in blob or key.endswith(".*"), key
