"""Session-wide fixtures: one SparkSession, one embedded S3 server (each created only by the
tests that ask for it)."""

import os

import pytest


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
    from streamjoin.io.embedded_s3 import EmbeddedS3

    server = EmbeddedS3(port=0)
    server.start()
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    yield server
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


@pytest.fixture
def s3_prefix(s3_server, request):
    """A fresh s3://streamjoin/<test name>/ prefix on the embedded server."""
    import hashlib

    node = request.node.name
    name = node.replace("[", "-").replace("]", "").lower()[:50]
    return f"s3://streamjoin/tests/{name}-{hashlib.sha1(node.encode()).hexdigest()[:8]}-{os.getpid()}"
