# streamjoin: two commands do everything, on a fresh machine.
#   make test   set up .venv, lint, run the tests (make test-quick: the pure-Python ones, make test-long: long variants,
#               make test-ui: the Airflow UI in a real browser)
#   make demo   set up .venv, run the demo
#   make bench  streamjoin vs PyFlink on the same data (docs/benchmarks.md)
#   make airflow   Airflow standalone on this repo's DAGs (Ctrl-C stops it)
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt constraints.txt pyproject.toml | sha1sum | cut -c1-12)

.PHONY: test test-long test-quick test-ui browser demo lint setup class-archive check-java clean airflow bench

setup: $(STAMP) class-archive

# the driver JVM's class archive (spark_apps/streamjoin/runtime/class_archive.py): built once per .venv, about
# two minutes (a few small runs list the classes Spark loads, then one JVM writes them); each run then starts
# 3-4 s sooner. Nothing to do when it is there and current.
class-archive: $(STAMP) check-java
	@$(PY) -m streamjoin.warmup

check-java:
	@command -v java >/dev/null 2>&1 || { echo "streamjoin needs Java 17 or newer (Spark runs on the JVM): install it, e.g. apt-get install openjdk-17-jre-headless" >&2; exit 1; }
	@major=$$(java -version 2>&1 | awk -F'"' '/version/ {split($$2, v, "."); print (v[1] == "1" ? v[2] : v[1])}'); \
	if [ -z "$$major" ] || [ "$$major" -lt 17 ]; then echo "streamjoin needs Java 17 or newer; found: $$(java -version 2>&1 | head -1)" >&2; exit 1; fi

$(STAMP): requirements.txt constraints.txt pyproject.toml | check-java
	@echo "setting up $(VENV) (first run takes a few minutes)"
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -r requirements.txt -c constraints.txt
	@$(PY) -m pip install --quiet --no-deps -e .
	@$(PY) -m pip check
	@$(PY) -c "import pyspark; assert pyspark.__version__ == '4.3.0', pyspark.__version__"
	@rm -f $(VENV)/.installed-*
	@touch $@

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# on TEST_WORKERS processes (pytest-xdist), a file's tests on one worker, each worker with its own
# SparkSession, S3 server, broker and PostgreSQL cluster: the tests wait on Spark's micro-batches
# more than they compute, so two workers on two cores take about half the time; TEST_WORKERS=0: one process
TEST_WORKERS ?= 2
test: setup check-java lint
	$(VENV)/bin/pytest -m "not long and not ui" --durations=25 -n $(TEST_WORKERS) --dist loadfile

# the pure-Python tests alone (dialect, plan, operator engine, reference, CLI check/explain, docs):
# no Spark, Airflow, S3 or PostgreSQL; about half a minute (markers in pyproject.toml, tests/conftest.py)
test-quick: $(STAMP)
	$(VENV)/bin/pytest -m "not long and not spark and not airflow and not s3 and not postgres and not kafka"

# the long variants (tests marked `long`: wide differential sweeps, slow end-to-end runs)
test-long: setup check-java lint
	$(VENV)/bin/pytest -m long --durations=25 -n $(TEST_WORKERS) --dist loadfile

# the operator's first hour in a real browser (tests/ui/): `make airflow`, log in, trigger the report, open it.
# Playwright (pinned in requirements.txt) drives Debian's chromium, installed here when missing (browser
# downloads are not reachable); about 3 minutes. .ci/run runs it after `make test`.
test-ui: setup check-java browser
	$(VENV)/bin/pytest -m ui --durations=5

browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" != 0 ]; then echo "make test-ui needs Debian's chromium: sudo apt-get install chromium" >&2; exit 1; fi; \
	  echo "installing Debian's chromium (apt-get install chromium)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null \
	    || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }; }
	@chromium --version

# streamjoin vs PyFlink (and hand-written PySpark) on the same data: writes docs/benchmarks.md;
# then the Kinesis input's read rate and latency on the embedded server: docs/benchmarks-kinesis.md;
# and the Kafka input's on the embedded broker: docs/benchmarks-kafka.md. bench/hotspots.py profiles the
# workload furthest below its target (docs/benchmarks-profile.md), which the report then links.
# BENCH_ARGS e.g. "--sizes 1,4,16 --rounds 2" (see bench/run.py --help)
BENCH_DEFAULT := --sizes 1 --rounds 2 --implementations --growth-sizes 4,16 --growth-workloads inner-sparse,three-inner --steady 2000,10000 --hourly 1000,10000
bench: setup check-java
	@$(PY) bench/run.py $(or $(BENCH_ARGS),$(BENCH_DEFAULT))
	@$(PY) bench/hotspots.py
	@$(PY) bench/run.py --render docs/benchmarks.json
	@$(PY) bench/kinesis_source.py --report docs/benchmarks-kinesis.md
	@$(PY) bench/kafka_source.py --report docs/benchmarks-kafka.md

demo: setup check-java
	@$(PY) include/demo.py

# Airflow standalone on dags/ with the embedded S3 and local Spark; Ctrl-C stops both
airflow: setup check-java
	@$(PY) include/airflow_local.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
