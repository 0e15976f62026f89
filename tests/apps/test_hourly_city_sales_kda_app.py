"""The reference app written as a Kinesis Data Analytics application
(include/apps/hourly_city_sales_kda: pumps, its input stream and reference table declared by
app.toml), reading its sales from a Kinesis stream of two shards on the embedded server: the same
rows as the reference app, one per city per hour, through the app runner the DAGs deploy."""

from __future__ import annotations

import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

APPS = Path(__file__).resolve().parents[2] / "include" / "apps"
sys.path.insert(0, str(APPS / "hourly_city_sales_kda"))

from load import load  # noqa: E402


def test_the_kda_form_of_the_hourly_app_reads_kinesis_and_gives_one_row_per_city_per_hour(spark, s3_server, tmp_path,
                                                                                          monkeypatch):
    from generate import expected_totals
    from streamjoin.io.formats.jsonlines import format_value
    from streamjoin.io.sinks.hours import complete_hours, read_hour_arrow
    from streamjoin.runtime.app import App, app_names, run_app

    stream = f"sales-{uuid.uuid4().hex[:8]}"
    for key, value in {"KDA_SALES_STREAM": stream, "CITY_INFO_PATH": tmp_path / "city_info", "KDA_OUTPUT_PATH": tmp_path / "output",
                       "KDA_CITY_INFO_SNAPSHOTS_PATH": tmp_path / "snapshots", "KDA_CHECKPOINT_PATH": tmp_path / "checkpoint",
                       "OUTPUT_PATH": tmp_path / "not-this-apps-output"}.items():
        monkeypatch.setenv(key, str(value))
    g = load(tmp_path, stream, cities=60, hours=3, sales_per_hour=600, late_rows=3)
    status = run_app(App.load(APPS / "hourly_city_sales_kda"), until_idle=True, spark=spark)

    rows = []
    for hour in complete_hours(str(tmp_path / "output")):
        rows += [{k: format_value(v) for k, v in r.items()} for r in read_hour_arrow(str(tmp_path / "output"), hour).to_pylist()]
    hours = sorted({r["sales_hour"] for r in rows})
    assert len(hours) == 3 and all(sum(r["sales_hour"] == h for r in rows) == 60 for h in hours)
    expected = expected_totals(g)
    for r in rows:
        hour = r["sales_hour"][:19]
        if r["city"] in g.silent[hour]:
            assert r["total_sales"] is None and r["sales"] is None
        else:
            assert Decimal(str(r["total_sales"])) == expected[(hour, r["city"])], (hour, r["city"])
    assert sum(r["sales"] or 0 for r in rows) == len(g.sales)  # no on-time sale lost or counted twice
    assert status["late_rows"] == 3 and status["snapshots"][0]["rows"] == 60
    from streamjoin.quality import check_hour

    verdict = check_hour(APPS / "hourly_city_sales_kda", "2024-01-01T01", alert=False)  # the same quality gate
    assert verdict.passed, verdict.summary()
    assert not (tmp_path / "not-this-apps-output").exists()  # the reference app's variable is not this app's
    assert "hourly_city_sales_kda" in app_names() and "hourly_city_sales_kda" not in app_names(deployed_only=True)


@pytest.mark.long
@pytest.mark.airflow
@pytest.mark.spark
def test_streaming_join_apps_deploys_the_kda_app_when_picked_and_it_writes_the_closed_hours(s3_server, tmp_path, monkeypatch):
    from airflow_helpers import dags_test
    from app_helpers import SPARK
    from streamjoin.io.sinks.hours import complete_hours

    stream = f"sales-{uuid.uuid4().hex[:8]}"
    for key, value in {"KDA_SALES_STREAM": stream, "CITY_INFO_PATH": tmp_path / "city_info", "KDA_OUTPUT_PATH": tmp_path / "output",
                       "KDA_CITY_INFO_SNAPSHOTS_PATH": tmp_path / "snapshots", "KDA_CHECKPOINT_PATH": tmp_path / "checkpoint",
                       "OUTPUT_PATH": tmp_path / "not-this-apps-output"}.items():
        monkeypatch.setenv(key, str(value))
    load(tmp_path, stream, cities=20, hours=3, sales_per_hour=200, late_rows=0)
    run = dags_test("streaming_join_apps", conf={"run_seconds": 75, "apps": ["hourly_city_sales_kda"]}, env=SPARK, timeout=600)
    assert run.succeeded, run.tail()
    assert run.task_states["run_hourly_city_sales_kda"] == "success"
    assert run.task_states["selected_hourly_city_sales"] == "success"  # evaluated, and short-circuits: not picked
    assert run.task_states["run_hourly_city_sales"] == "skipped"
    # a bounded run is not the end of input: every hour but the last one (its clock) is closed
    assert complete_hours(str(tmp_path / "output")) == ["2024-01-01T00", "2024-01-01T01"]
