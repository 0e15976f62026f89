"""`make airflow` (include/airflow_local.py): a laptop tool that listens on this machine only and
says how to reach its embedded S3."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hour_fixtures import free_port

from include import airflow_local

pytestmark = [pytest.mark.airflow]  # the local Airflow launcher

S3_ENV = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ACCESS_KEY_ID": "streamjoin",
          "AWS_SECRET_ACCESS_KEY": "streamjoin-secret", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


def test_the_api_server_listens_on_127_0_0_1_unless_airflow_api_host_says_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__HOST", raising=False)
    env = airflow_local.airflow_env(tmp_path, S3_ENV, 8080)
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    # Airflow itself reads it so (standalone starts `airflow api-server` with the configured host)
    airflow = Path(sys.executable).parent / "airflow"
    got = subprocess.run([str(airflow), "config", "get-value", "api", "host"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert got.stdout.strip() == "127.0.0.1", got.stderr[-2000:]
    monkeypatch.setenv("AIRFLOW__API__HOST", "0.0.0.0")
    assert airflow_local.airflow_env(tmp_path, S3_ENV, 8080)["AIRFLOW__API__HOST"] == "0.0.0.0"


def test_make_airflow_prints_the_ui_login_and_the_embedded_s3_endpoint_and_credentials(monkeypatch):
    monkeypatch.delenv("AIRFLOW__API__HOST", raising=False)
    monkeypatch.delenv("REPORTS_PATH", raising=False)
    text = "\n".join(airflow_local.banner("http://127.0.0.1:8080", "secret-pw", S3_ENV))
    assert "http://127.0.0.1:8080" in text and "admin / secret-pw" in text and "this machine only" in text
    assert "objects kept as files under data/s3/" in text  # what `make demo` wrote, kept across restarts
    assert "(reports: data/s3/streamjoin/reports/)" in text
    for name, value in S3_ENV.items():
        assert f"export {name}={value}" in text
    # and where the DAGs keep the data, so `streamjoin report` in that shell finds it (issue 43)
    for name in ("OUTPUT_PATH", "REPORTS_PATH", "CITY_INFO_SNAPSHOTS_PATH"):
        assert f"export {name}={airflow_local.data_env()[name]}" in text


def test_the_banner_points_at_the_reports_folder_reports_path_names(monkeypatch, tmp_path):
    monkeypatch.setenv("REPORTS_PATH", "s3://streamjoin/team/reports")
    text = "\n".join(airflow_local.banner("http://127.0.0.1:8080", "pw", S3_ENV, tmp_path / "s3"))
    assert f"(reports: {tmp_path}/s3/streamjoin/team/reports/)" in text


def test_the_banner_exports_the_embedded_kafka_broker_when_it_runs():
    text = "\n".join(airflow_local.banner("http://127.0.0.1:8080", "pw", S3_ENV, kafka="127.0.0.1:9092"))
    assert "  export STREAMJOIN_KAFKA_BOOTSTRAP=127.0.0.1:9092" in text
    assert "STREAMJOIN_KAFKA_BOOTSTRAP" not in "\n".join(airflow_local.banner("http://127.0.0.1:8080", "pw", S3_ENV))


def test_make_airflow_starts_the_embedded_kafka_broker_and_skips_it_saying_why_when_its_port_is_taken(capsys):
    broker = airflow_local.start_kafka(free_port())
    try:
        from confluent_kafka.admin import AdminClient

        assert AdminClient({"bootstrap.servers": broker.servers}).list_topics(timeout=10).brokers  # a broker answers
        assert airflow_local.start_kafka(broker.port) is None
        assert f"port {broker.port} on 127.0.0.1 is in use" in capsys.readouterr().out
    finally:
        broker.stop()
    assert airflow_local.start_kafka(0) is None


def test_airflow_waits_30_s_for_sqlites_lock_and_a_database_of_another_kind_gets_no_sqlite_argument(tmp_path, monkeypatch):
    monkeypatch.delenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", raising=False)
    env = airflow_local.airflow_env(tmp_path, S3_ENV, 8080)
    # Airflow imports the arguments by name, as its settings do (the UI's unpause and trigger race on SQLite)
    got = subprocess.run([sys.executable, "-c", "from airflow.configuration import conf; "
                          "print(conf.getimport('database', 'sql_alchemy_connect_args'))"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert "{'timeout': 30" in got.stdout.strip().splitlines()[-1], got.stderr[-2000:]  # (Airflow adds check_same_thread)
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "postgresql+psycopg2://airflow@db/airflow")
    assert "AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS" not in airflow_local.airflow_env(tmp_path, S3_ENV, 8080)
