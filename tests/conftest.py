"""Session-wide fixtures: one SparkSession, one embedded S3 server (each created only by the
tests that ask for it); the markers of what a test needs (pyproject.toml), so that
`pytest -m "not spark and not airflow and not s3 and not postgres and not kafka"` runs the pure-Python
front-end and engine tests alone, in seconds."""

import contextlib
import os
import sys

import pytest

# a pytest-xdist worker's __main__ (execnet's bootstrap) has neither a spec nor a file, which
# pyspark.sql.connect takes for a doctest run without its dependencies: it calls sys.exit(0) on
# import (Great Expectations imports it), ending the worker. Give that module a file name.
_main = sys.modules.get("__main__")
if _main is not None and getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
    _main.__file__ = "<pytest-xdist worker>"

# every Spark driver the tests start (their session, `streamjoin run` subprocesses, apps) compiles
# with the JVM's quick tier only and collects with one thread: the tests are short runs on small
# data on two busy cores, where C2's compilations and parallel GC threads cost more than they win
# (a sample of Spark tests: 234 s against 325 s, 2026-11-29). Spark runs of users keep the defaults.
os.environ.setdefault("STREAMJOIN_DRIVER_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

# a fixture a test uses -> the markers it gets
FIXTURE_MARKS = {"spark": ("spark",), "s3_server": ("s3",), "s3_prefix": ("s3",), "app_env": ("s3", "spark"),
                 "kafka_broker": ("kafka",), "kafka_topic": ("kafka",), "lenses_topics": ("kafka",),
                 "logical_postgres": ("postgres",), "cdc_database": ("postgres",)}


def pytest_collection_modifyitems(items):
    for item in items:
        for fixture in item.fixturenames:
            for mark in FIXTURE_MARKS.get(fixture, ()):
                item.add_marker(mark)


@contextlib.contextmanager
def environment(values: dict[str, str]):
    """`values` in os.environ while the block runs; each variable as it was afterwards."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def spark():
    from streamjoin.runtime.session import spark_session

    session = spark_session("streamjoin-tests", master="local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_server():
    """The embedded S3 server (moto) on a free port, with the standard AWS variables pointing at
    it for the whole session. Tests keep apart by writing under their own prefix (`s3_prefix`)."""
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3

    server = EmbeddedS3(port=0)
    server.start()
    with environment(server.env()):
        yield server
    server.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real Kafka-compatible broker (Tansu, io.storage.kafka_broker) on a free port, topics in memory,
    with STREAMJOIN_KAFKA_BOOTSTRAP pointing every program at it for the whole session. Tests keep
    apart by their own topic names (`kafka_topic`)."""
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka
    from streamjoin.io.storage.kafka_client import BOOTSTRAP_ENV

    broker = EmbeddedKafka(port=0, log_path=str(tmp_path_factory.mktemp("kafka") / "tansu.log"))
    broker.start()
    with environment({BOOTSTRAP_ENV: broker.servers}):
        yield broker
    broker.stop()


@pytest.fixture(scope="session")
def logical_postgres():
    """A PostgreSQL cluster of the session's own with wal_level = logical (pg_helpers), with
    STREAMJOIN_CDC_URL pointing every postgres-cdc declaration at it. Tests keep apart by their
    own databases (`cdc_database`)."""
    import shutil
    import tempfile

    from pg_helpers import LogicalPostgres
    from streamjoin.io.sources.pg_cdc import URL_ENV

    root = tempfile.mkdtemp(prefix="streamjoin-pg-")
    server = LogicalPostgres(root).start()
    with environment({URL_ENV: f"postgresql://postgres@127.0.0.1:{server.port}"}):
        yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def cdc_database(logical_postgres, request):
    """A fresh database on the logical cluster, named for the test."""
    import re

    name = "t_" + re.sub(r"\W", "_", request.node.name.lower())[-50:]
    logical_postgres.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    logical_postgres.execute(f'CREATE DATABASE "{name}"')
    return name


@pytest.fixture
def kafka_topic(kafka_broker):
    """A fresh topic name's prefix on the session's broker (the topics are made by the test)."""
    import uuid

    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def s3_prefix(s3_server, request):
    """A fresh s3://streamjoin/<test name>/ prefix on the embedded server."""
    import hashlib

    node = request.node.name
    name = node.replace("[", "-").replace("]", "").lower()[:50]
    return f"s3://streamjoin/tests/{name}-{hashlib.sha1(node.encode()).hexdigest()[:8]}-{os.getpid()}"


@pytest.fixture
def app_env(tmp_path, monkeypatch, s3_server):
    """The hourly app on local inputs, with its output and snapshots on the embedded S3."""
    from app_helpers import CITIES, write_cities
    from streamjoin.runtime.app import App

    paths = {
        "SALES_PATH": tmp_path / "sales", "CITY_INFO_PATH": tmp_path / "cities",
        "CHECKPOINT_PATH": tmp_path / "checkpoint",
    }
    for name, path in paths.items():
        monkeypatch.setenv(name, str(path))
    prefix = f"s3://streamjoin/tests/ops-{tmp_path.name}"
    monkeypatch.setenv("OUTPUT_PATH", f"{prefix}/output")
    monkeypatch.setenv("CITY_INFO_SNAPSHOTS_PATH", f"{prefix}/snapshots/city_info")
    paths["SALES_PATH"].mkdir()
    write_cities(paths["CITY_INFO_PATH"], CITIES)
    return App.load("hourly_city_sales")
