"""No secret leaves where it was given (issue 20, item 5): an S3 secret key and a PostgreSQL
password, given only through the environment, appear in no output, log, status, checkpoint or
sink file of a run, nor in `explain`, whether the run succeeds or fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from pg_helpers import PG_URL, pg_execute
from streamjoin.io.storage import s3

S3_SECRET = "s3-secret-MARKER-7f3a9c"
PG_PASSWORD = "pg-password-MARKER-51be02"


@pytest.fixture
def city_table():
    name = f"secrets_cities_{uuid.uuid4().hex[:8]}"
    pg_execute(f"CREATE TABLE {name} (city text PRIMARY KEY, region text); "
               f"INSERT INTO {name} VALUES ('Berlin', 'north'), ('Lima', 'south');")
    yield name
    pg_execute(f"DROP TABLE IF EXISTS {name};")


def with_password(url: str, password: str) -> str:
    scheme, rest = url.split("://", 1)
    user, _, host = rest.rpartition("@")
    return f"{scheme}://{user or 'postgres'}:{password}@{host}"


def query(prefix: str, table: str) -> str:
    return f"""
CREATE STREAM sales (id INT, city VARCHAR, amount INT)
  WITH (connector = 's3', format = 'json', path = '{prefix}/landing/sales/');
CREATE TABLE cities (city VARCHAR PRIMARY KEY, region VARCHAR)
  WITH (connector = 'postgres', url = '${{SECRET_PG_URL}}', table = '{table}');
CREATE SINK enriched WITH (connector = 's3', path = '{prefix}/enriched', format = 'delta', partitioned_by = 'hour');
INSERT INTO enriched
SELECT STREAM ROWTIME AS sale_time, s.id, c.region, s.amount FROM sales AS s JOIN cities AS c ON s.city = c.city;
"""


def every_text(root: Path) -> dict[str, str]:
    """Every file under `root`, as text (bytes decoded leniently: Parquet and logs alike)."""
    return {str(p): p.read_bytes().decode("utf-8", errors="replace") for p in root.rglob("*") if p.is_file()}


def leaks(texts: dict[str, str]) -> list[str]:
    return [f"{where}: {secret}" for where, text in texts.items() for secret in (S3_SECRET, PG_PASSWORD) if secret in text]


@pytest.mark.postgres
@pytest.mark.spark
def test_a_run_with_secrets_in_the_environment_writes_them_nowhere(s3_prefix, tmp_path, city_table):
    for i, (city, amount) in enumerate([("Berlin", 5), ("Lima", 7), ("Oslo", 9)]):
        s3.write_bytes(f"{s3_prefix}/landing/sales/{i:02d}.json",
                       json.dumps({"id": i, "city": city, "amount": amount, "rowtime": f"2024-01-01 10:0{i}:00"}).encode())
    sql = tmp_path / "q.sql"
    sql.write_text(query(s3_prefix, city_table))
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": S3_SECRET, "SECRET_PG_URL": with_password(PG_URL, PG_PASSWORD),
           "PYSPARK_PYTHON": sys.executable}

    def streamjoin(*args):
        return subprocess.run([sys.executable, "-m", "streamjoin.cli", *map(str, args)], capture_output=True, text=True,
                              env=env, timeout=600)

    run = streamjoin("run", sql, "--until-idle", "--checkpoint", tmp_path / "ck")
    assert run.returncode == 0, run.stderr[-3000:]
    explained = streamjoin("explain", sql)
    explained_json = streamjoin("explain", sql, "--format", "json")
    assert explained.returncode == 0 and explained_json.returncode == 0, explained.stderr[-2000:]
    # and a run that fails (PostgreSQL unreachable): its error and status must not carry the password either
    env["SECRET_PG_URL"] = with_password("postgresql://postgres@127.0.0.1:1/test", PG_PASSWORD)
    failed = streamjoin("run", sql, "--until-idle", "--checkpoint", tmp_path / "ck-failed")
    assert failed.returncode != 0
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/test" in failed.stderr.strip().splitlines()[-1]
    assert run.stderr.strip().splitlines()[-1] == "streamjoin: finished: 2 rows emitted, 0 late rows"  # Oslo has no city

    texts = every_text(tmp_path)
    texts.update({"run stdout": run.stdout, "run stderr": run.stderr, "explain": explained.stdout + explained.stderr,
                  "explain json": explained_json.stdout, "failed run stderr": failed.stderr})
    objects = s3.list_files(s3_prefix, recursive=True)
    assert any("/enriched/_delta_log/" in o for o in objects)  # the sink was written, so was scanned
    texts.update({o: (s3.read_bytes(o) or b"").decode("utf-8", errors="replace") for o in objects})
    assert leaks(texts) == []
    assert any("status.json" in where for where in texts)  # the checkpoint's status was among them
