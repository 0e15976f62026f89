"""One SparkSession for the whole test session (created only by tests that ask for it)."""

import pytest


@pytest.fixture(scope="session")
def spark():
    from streamjoin.runtime.session import spark_session

    session = spark_session("streamjoin-tests", master="local[2]")
    yield session
    session.stop()
