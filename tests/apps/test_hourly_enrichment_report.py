"""The hourly enrichment report (issue 7): the report and the task steps without Airflow, then the
`hourly_enrichment_report` DAG end to end with `airflow dags test` on the embedded S3 server.

Hours are written without Spark (tests/hour_fixtures.py): a 10-city hour, good or broken on purpose.
"""

import base64
import csv
import datetime as dt
import io
import json
import sqlite3
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest
from airflow_helpers import airflow_home, dags_test
from hour_fixtures import (
    ALERT_VARIABLES,
    CITIES,
    HOUR,
    a_duplicate_key,
    good_rows,
    smtp_server,
    webhook_receiver,
    write_hour,
)
from streamjoin.io.storage import s3

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # include/ imports as a package from the repository root, as in the DAG

from include.ops import apps  # noqa: E402
from include.ops.report import (  # noqa: E402
    DataQualityFailed,
    HourCannotComplete,
    OutputNotOnS3,
    check_and_publish,
    hour_ready,
    marker_key,
    resolve,
    resolve_hour,
)
from include.reports import hourly_city_sales as report_module  # noqa: E402

DAG_ID = "hourly_enrichment_report"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
REPORT_FILES = ["cities.csv", "sales_by_region.png", "quality.json", "index.html"]


@pytest.fixture(autouse=True)
def no_alert_channels_nor_paths(monkeypatch):
    for name in (*ALERT_VARIABLES, "OUTPUT_PATH", "REPORTS_PATH"):
        monkeypatch.delenv(name, raising=False)


def hour_table(rows: list[dict]) -> pa.Table:
    """The hour as read_hour_arrow returns it: without the partition column."""
    from hour_fixtures import SCHEMA

    return pa.Table.from_pylist(rows, SCHEMA).drop_columns(["hour"])


def a_verdict(status: str, failed: list[dict] = ()) -> dict:
    return {"status": status, "app": "hourly_city_sales", "hour": HOUR, "rows": CITIES, "expected_rows": CITIES,
            "expectations": 11, "failed": list(failed), "verdict": "s3://b/out/_quality/hour=2024-01-01T10/verdict.json",
            "docs_page": "s3://b/out/_quality/hour=2024-01-01T10/docs/validations/x.html", "checked_at": "2024-01-01T11:05:00+00:00"}


DUPLICATE_CITY = {"check": "key_unique", "expectation": "expect_column_values_to_be_unique", "column": "city",
                  "expected": "every value unique", "observed": '2 of 10 rows unexpected, e.g. "city-1", "city-1"',
                  "offending_rows": [{"city": "city-1", "region": "region-2", "store_name": "Store 2"}]}


def city_rows(index_html: str) -> list[str]:
    return [line for line in index_html.splitlines() if line.startswith('<tr class="city">')]


# --- the report, without Airflow ---------------------------------------------------------------


def test_a_report_shows_the_hours_input_and_silent_share_beside_the_hours_before_and_its_late_rows(tmp_path):
    """Issue 43: the trend the quality gate compared (its verdict's `trailing`), as a chart and a
    table, and the late rows the hour had when it was checked."""
    config = apps.load_app("hourly_city_sales").config
    verdict = {**a_verdict("passed"), "late_rows": 7,
               "trailing": {"volumes": [45.0, 40.0], "silent_shares": [0.1, 0.2]}}  # newest first
    report = report_module.build_report(config, HOUR, hour_table(good_rows()), verdict)
    written = report_module.publish(report, str(tmp_path / "hour"))
    assert [Path(w).name for w in written] == ["cities.csv", "sales_by_region.png", "input_trend.png", "quality.json",
                                               "index.html"]
    assert Path(written[2]).read_bytes().startswith(PNG_SIGNATURE)
    page = Path(written[-1]).read_text()
    assert 'id="trend"' in page and "7 late rows of the hour set aside" in page
    trend = page[page.index('id="trend-table"'):]
    assert ("<tr><td>-2h</td><td class=\"num\">40</td><td class=\"num\">20%</td></tr>"
            "<tr><td>-1h</td><td class=\"num\">45</td><td class=\"num\">10%</td></tr>"
            "<tr><td>this hour</td><td class=\"num\">45</td><td class=\"num\">10%</td></tr>") in trend


def test_a_validated_hours_report_has_a_row_per_city_a_png_chart_and_the_verdict(tmp_path):
    config = apps.load_app("hourly_city_sales").config
    report = report_module.build_report(config, HOUR, hour_table(good_rows()), a_verdict("passed"))
    written = report_module.publish(report, str(tmp_path / "hour=2024-01-01T10"))
    assert written == [str(tmp_path / "hour=2024-01-01T10" / name) for name in REPORT_FILES]  # index.html last

    page = Path(written[3]).read_text()
    assert len(city_rows(page)) == CITIES
    assert '<tr class="city"><td>city-1</td><td>region-1</td><td>Store 1</td><td class="num">10.50</td><td class="num">1</td></tr>' in page
    assert '<tr class="city"><td>city-0</td><td>region-0</td><td>Store 0</td><td class="null">NULL</td><td class="null">NULL</td></tr>' in page
    assert "<strong>VALIDATED</strong>" in page and "NOT VALIDATED" not in page
    assert "11 of 11 expectations met" in page
    assert Path(written[1]).read_bytes().startswith(PNG_SIGNATURE)
    assert json.loads(Path(written[2]).read_text()) == a_verdict("passed")
    with open(written[0], newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == ["city", "region", "store_name", "total_sales", "sales"]
    assert table[1] == ["city-0", "region-0", "Store 0", "", ""] and table[2] == ["city-1", "region-1", "Store 1", "10.50", "1"]
    assert len(table) == CITIES + 1


def test_the_chart_sums_total_sales_per_region_leaving_null_out():
    report = report_module.build_report(apps.load_app("hourly_city_sales"), HOUR, hour_table(good_rows()), a_verdict("passed"))
    # region-0: city-0 (NULL), city-3, city-6, city-9; region-1: 1, 4, 7; region-2: 2, 5, 8
    assert report.totals == {"region-0": Decimal("181.50"), "region-1": Decimal("121.50"), "region-2": Decimal("151.50")}


def test_a_failed_hours_report_says_not_validated_and_lists_each_failed_expectation(tmp_path):
    config = apps.load_app("hourly_city_sales").config
    rows = good_rows()
    a_duplicate_key(rows)
    report = report_module.build_report(config, HOUR, hour_table(rows), a_verdict("failed", [DUPLICATE_CITY]))
    page = Path(report_module.publish(report, str(tmp_path))[-1]).read_text()
    assert "<strong>NOT VALIDATED: failed quality checks</strong>" in page
    assert "10 of 11 expectations met" in page
    assert ('<tr class="failed"><td>key_unique</td><td>expect_column_values_to_be_unique</td><td>city</td>'
            "<td>every value unique</td><td>2 of 10 rows unexpected, e.g. &quot;city-1&quot;, &quot;city-1&quot;</td>") in page
    assert len(city_rows(page)) == CITIES  # a failed hour keeps its data, and its report shows it


def test_a_report_from_a_pandas_frame_equals_the_one_from_arrow_with_integers_and_nulls_kept():
    config = apps.load_app("hourly_city_sales").config
    table = hour_table(good_rows())
    from_arrow = report_module.render(report_module.build_report(config, HOUR, table, a_verdict("passed")))
    from_pandas = report_module.render(report_module.build_report(config, HOUR, table.to_pandas(), a_verdict("passed")))
    assert from_pandas["cities.csv"] == from_arrow["cities.csv"]
    assert from_pandas["index.html"] == from_arrow["index.html"]


def test_an_hour_never_checked_is_not_validated():
    report = report_module.build_report(apps.load_app("hourly_city_sales"), HOUR, hour_table(good_rows()), None)
    assert not report.validated and report.status == "NOT VALIDATED: not checked"


# --- the task steps, without Airflow -----------------------------------------------------------

@pytest.mark.parametrize("params_hour, interval_end, hour", [
    ("", dt.datetime(2024, 1, 1, 11, tzinfo=dt.UTC), "2024-01-01T10"),        # @hourly's 11:00 run (CronTriggerTimetable)
    (None, dt.datetime(2024, 1, 1, 11, 23, 5, tzinfo=dt.UTC), "2024-01-01T10"),  # a manual run at 11:23
    ("", dt.datetime(2024, 1, 1, 0, tzinfo=dt.UTC), "2023-12-31T23"),
    ("2024-01-01 10:00:00", dt.datetime(2024, 6, 1, tzinfo=dt.UTC), "2024-01-01T10"),  # the hour chosen in the trigger form
    (" 2024-01-01T07 ", None, "2024-01-01T07"),
    ("", dt.datetime(2024, 1, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=2))), "2024-01-01T09"),  # hours are UTC
])
def test_the_run_checks_the_hour_given_or_else_the_last_hour_ended_by_its_data_interval(params_hour, interval_end, hour):
    assert resolve_hour(params_hour, interval_end) == hour


def test_an_hour_that_is_not_an_hour_is_refused():
    with pytest.raises(ValueError, match="is not an hour"):
        resolve_hour("yesterday", None)


def test_an_apps_paths_come_from_its_config_relative_to_the_repository_unless_the_environment_says_otherwise(monkeypatch):
    app = apps.load_app("hourly_city_sales")
    assert (app.name, app.dir) == ("hourly_city_sales", REPO / "include" / "apps" / "hourly_city_sales")
    assert app.output == str(REPO / "data" / "hourly_city_sales" / "output")
    assert app.checkpoint == str(REPO / "data" / "hourly_city_sales" / "checkpoint")
    assert app.reports == str(REPO / "data" / "reports")
    assert marker_key(app, "2024-01-01 10:00") == f"{REPO}/data/hourly_city_sales/output/_complete/hour=2024-01-01T10.json"
    monkeypatch.setenv("OUTPUT_PATH", "s3a://bucket/apps/x/output/")
    monkeypatch.setenv("REPORTS_PATH", "s3://bucket/reports")
    app = apps.load_app(str(REPO / "include" / "apps" / "hourly_city_sales"))
    assert (app.output, app.reports) == ("s3://bucket/apps/x/output", "s3://bucket/reports")
    assert marker_key(app, HOUR) == ("bucket", "apps/x/output/_complete/hour=2024-01-01T10.json")


def test_the_repository_root_is_streamjoin_home_when_set(monkeypatch, tmp_path):
    (tmp_path / "include" / "apps" / "demo").mkdir(parents=True)
    (tmp_path / "include" / "apps" / "demo" / "app.toml").write_text('name = "demo"\n[paths]\noutput = "out"\n')
    monkeypatch.setenv("STREAMJOIN_HOME", str(tmp_path))
    app = apps.load_app("demo")
    assert (app.output, app.checkpoint, app.reports) == (str(tmp_path / "out"), None, str(tmp_path / "data" / "reports"))
    with pytest.raises(LookupError, match="no app 'hourly_city_sales'"):
        apps.load_app("hourly_city_sales")


def test_the_sensor_needs_the_output_on_s3():
    with pytest.raises(OutputNotOnS3, match="local folder"):
        resolve("hourly_city_sales", HOUR, None)


def test_resolve_names_the_marker_the_sensor_waits_for(monkeypatch):
    monkeypatch.setenv("OUTPUT_PATH", "s3://streamjoin/apps/hourly_city_sales/output")
    assert resolve("hourly_city_sales", "", dt.datetime(2024, 1, 1, 11, tzinfo=dt.UTC)) == {
        "app": "hourly_city_sales", "hour": HOUR, "output": "s3://streamjoin/apps/hourly_city_sales/output",
        "marker": "s3://streamjoin/apps/hourly_city_sales/output/_complete/hour=2024-01-01T10.json"}


def test_check_and_publish_publishes_a_failed_hour_as_not_validated_then_raises(s3_prefix, monkeypatch):
    monkeypatch.setenv("OUTPUT_PATH", f"{s3_prefix}/output")
    monkeypatch.setenv("REPORTS_PATH", f"{s3_prefix}/reports")
    rows = good_rows()
    a_duplicate_key(rows)
    write_hour(f"{s3_prefix}/output", rows)
    with pytest.raises(DataQualityFailed, match="failed 1 of 11 quality expectations \\(key_unique\\)") as failed:
        check_and_publish("hourly_city_sales", HOUR)
    outcome = failed.value.outcome
    where = f"{s3_prefix}/reports/hourly_city_sales/hour={HOUR}"
    assert outcome["files"] == [f"{where}/{name}" for name in REPORT_FILES]
    assert (outcome["status"], outcome["validated"], outcome["failed"]) == ("failed", False, ["key_unique"])
    assert "NOT VALIDATED: failed quality checks" in s3.read_bytes(outcome["report"]).decode()


def an_app(output: str, checkpoint, clock: str | None = None) -> apps.AppConfig:
    """hourly_city_sales writing to `output`, with its checkpoint at `checkpoint` holding a
    status.json whose input clock is `clock` (none when None)."""
    import dataclasses

    if clock is not None:
        checkpoint.mkdir(parents=True, exist_ok=True)
        (checkpoint / "status.json").write_text(json.dumps({"inputs": {"s": {"clock": clock}}}))
    return dataclasses.replace(apps.load_app("hourly_city_sales"), output=output, checkpoint=str(checkpoint))


AFTER_HOUR = dt.datetime(2024, 1, 1, 11, 5, tzinfo=dt.UTC)  # five minutes after HOUR ended


def test_the_report_refuses_at_once_an_hour_that_has_not_ended(tmp_path):
    app = an_app("s3://streamjoin/nowhere", tmp_path / "ck")
    with pytest.raises(HourCannotComplete, match="hour 2024-01-01T10 has not ended yet .*leave `hour` empty"):
        hour_ready(app, HOUR, dt.datetime(2024, 1, 1, 10, 59, tzinfo=dt.UTC), waited_s=0)


def test_the_report_refuses_at_once_an_hour_before_the_apps_complete_hours(s3_prefix, tmp_path):
    write_hour(f"{s3_prefix}/output", good_rows())
    app = an_app(f"{s3_prefix}/output", tmp_path / "ck", clock="2024-01-01 11:30:00.000")
    assert hour_ready(app, HOUR, AFTER_HOUR, waited_s=0) is True
    with pytest.raises(HourCannotComplete, match="complete hours after it \\(2024-01-01T10 to 2024-01-01T10\\) but not it"):
        hour_ready(app, "2024-01-01T09", AFTER_HOUR, waited_s=0)


def test_the_report_gives_up_after_a_short_wait_when_no_input_for_the_hour_reached_the_app(s3_prefix, tmp_path):
    never_ran = an_app(f"{s3_prefix}/output", tmp_path / "none")
    assert hour_ready(never_ran, HOUR, AFTER_HOUR, waited_s=0, no_input_wait_s=600) is False  # it may be starting
    with pytest.raises(HourCannotComplete, match="no input for hour 2024-01-01T10 has reached app hourly_city_sales after 10 min "
                                                 "\\(the app has not run.*generate.py"):
        hour_ready(never_ran, HOUR, AFTER_HOUR, waited_s=600, no_input_wait_s=600)
    behind = an_app(f"{s3_prefix}/output", tmp_path / "behind", clock="2024-01-01 04:58:00.000")
    with pytest.raises(HourCannotComplete, match="the app's input clock is at 2024-01-01 04:58:00"):
        hour_ready(behind, HOUR, AFTER_HOUR, waited_s=600, no_input_wait_s=600)


def test_the_report_waits_while_the_apps_input_is_in_the_hour_up_to_the_longest_wait(s3_prefix, tmp_path, caplog):
    app = an_app(f"{s3_prefix}/output", tmp_path / "ck", clock="2024-01-01 10:59:00.000")
    with caplog.at_level("INFO", logger="include.ops.report"):
        assert hour_ready(app, HOUR, AFTER_HOUR, waited_s=3600, max_wait_s=7200, no_input_wait_s=600) is False
    # each poke says what it waits for: the hour, the marker's key, the app's clock, what moves it (issue 43)
    (said,) = [r.getMessage() for r in caplog.records if r.name == "include.ops.report"]
    assert f"waiting for hour {HOUR} of app hourly_city_sales: no marker at s3://" in said
    assert f"_complete/hour={HOUR}.json" in said and "2024-01-01 10:59:00" in said and "60 of at most 120 min" in said
    assert "once the clock passes 2024-01-01 11:00 UTC" in said
    with pytest.raises(HourCannotComplete, match="still not complete after 120 min"):
        hour_ready(app, HOUR, AFTER_HOUR, waited_s=7200, max_wait_s=7200)


def test_the_report_refuses_at_once_an_hour_the_apps_ended_input_did_not_hold(s3_prefix, tmp_path):
    app = an_app(f"{s3_prefix}/output", tmp_path / "ck", clock="end of input")
    with pytest.raises(HourCannotComplete, match="input has ended .* without hour 2024-01-01T10"):
        hour_ready(app, HOUR, AFTER_HOUR, waited_s=0)


# --- the DAG, end to end -----------------------------------------------------------------------

def report_objects(prefix: str) -> dict[str, tuple[str, bytes]]:
    """name -> (Content-Type, body) of the hour's report objects."""
    client = s3.S3Settings.from_env().client()
    bucket, key = s3.split(f"{prefix}/reports/hourly_city_sales/hour={HOUR}")
    listed = client.list_objects_v2(Bucket=bucket, Prefix=key + "/").get("Contents", [])
    objects = {}
    for entry in listed:
        got = client.get_object(Bucket=bucket, Key=entry["Key"])
        objects[entry["Key"].rsplit("/", 1)[1]] = (got["ContentType"], got["Body"].read())
    return objects


@pytest.mark.airflow
def test_the_dag_publishes_a_good_hour_as_validated(s3_prefix):
    write_hour(f"{s3_prefix}/output", good_rows())
    run = dags_test(DAG_ID, conf={"app": "hourly_city_sales", "hour": HOUR},
                    env={"OUTPUT_PATH": f"{s3_prefix}/output", "REPORTS_PATH": f"{s3_prefix}/reports",
                         **dict.fromkeys(ALERT_VARIABLES)})
    assert run.returncode == 0 and run.state == "success", run.tail()
    assert run.task_states == {"resolve_hour": "success", "wait_for_complete_hour": "success", "check_and_publish": "success"}
    objects = report_objects(s3_prefix)
    assert sorted(objects) == sorted(REPORT_FILES)
    kind, page = objects["index.html"]
    assert kind.startswith("text/html") and "<strong>VALIDATED</strong>" in page.decode()
    assert len(city_rows(page.decode())) == CITIES
    assert objects["sales_by_region.png"][0] == "image/png" and objects["sales_by_region.png"][1].startswith(PNG_SIGNATURE)
    # the page stands alone (a presigned URL or a copy shows it whole): the same chart and CSV inside it
    assert f'src="data:image/png;base64,{base64.b64encode(objects["sales_by_region.png"][1]).decode()}"' in page.decode()
    assert base64.b64encode(objects["cities.csv"][1]).decode() in page.decode()
    assert json.loads(objects["quality.json"][1])["status"] == "passed"
    assert len(list(csv.reader(io.StringIO(objects["cities.csv"][1].decode())))) == CITIES + 1


@pytest.mark.airflow
def test_the_dag_fails_on_a_corrupted_hour_alerts_once_and_publishes_it_as_not_validated(s3_prefix):
    rows = good_rows()
    a_duplicate_key(rows)
    write_hour(f"{s3_prefix}/output", rows)
    with smtp_server() as (port, inbox), webhook_receiver() as (url, received):
        run = dags_test(DAG_ID, conf={"app": "hourly_city_sales", "hour": HOUR}, env={
            "OUTPUT_PATH": f"{s3_prefix}/output", "REPORTS_PATH": f"{s3_prefix}/reports",
            "STREAMJOIN_SMTP_HOST": "127.0.0.1", "STREAMJOIN_SMTP_PORT": str(port),
            "STREAMJOIN_SMTP_FROM": "gate@streamjoin.test", "STREAMJOIN_ALERT_EMAIL_TO": "oncall@streamjoin.test",
            "STREAMJOIN_ALERT_WEBHOOK_URL": url})
    assert run.returncode == 1 and run.state == "failed", run.tail()
    assert run.output.rstrip().endswith("DagRun failed")
    assert run.task_states == {"resolve_hour": "success", "wait_for_complete_hour": "success", "check_and_publish": "failed"}
    assert "AirflowFailException" in run.output and "failed 1 of 11 quality expectations (key_unique)" in run.output

    (recipients, message), = inbox.messages  # once: a failed check is not retried
    assert recipients == ["oncall@streamjoin.test"]
    subject = message["Subject"].replace("\r\n", "")  # unfolded
    assert f"hourly_city_sales hour {HOUR} failed its quality check" in subject
    (path, kind, payload), = received
    for text in (message.get_payload(decode=True).decode(), payload["text"]):
        assert f"app hourly_city_sales, hour {HOUR}" in text
        assert "key_unique: expect_column_values_to_be_unique on city" in text

    objects = report_objects(s3_prefix)
    assert sorted(objects) == sorted(REPORT_FILES)
    page = objects["index.html"][1].decode()
    assert "<strong>NOT VALIDATED: failed quality checks</strong>" in page and "<td>key_unique</td>" in page
    assert json.loads(objects["quality.json"][1])["status"] == "failed"


def when_the_sensor_waits(task_id: str, then, timeout: float = 120) -> threading.Thread:
    """Calls `then()` once the task is waiting (up_for_reschedule or deferred) in the metadata DB."""
    def watch():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with sqlite3.connect(airflow_home() / "airflow.db", timeout=5) as db:
                    waiting = db.execute("SELECT 1 FROM task_instance WHERE dag_id = ? AND task_id = ? AND state IN "
                                         "('up_for_reschedule', 'deferred')", (DAG_ID, task_id)).fetchone()
            except sqlite3.OperationalError:  # locked by the run for a moment
                waiting = None
            if waiting:
                then()
                return
            time.sleep(0.2)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.airflow
def test_the_dag_waits_for_the_hours_completeness_marker_then_checks_the_hour(s3_prefix):
    airflow_home()
    watcher = when_the_sensor_waits("wait_for_complete_hour", lambda: write_hour(f"{s3_prefix}/output", good_rows()))
    run = dags_test(DAG_ID, conf={"app": "hourly_city_sales", "hour": HOUR},
                    env={"OUTPUT_PATH": f"{s3_prefix}/output", "REPORTS_PATH": f"{s3_prefix}/reports",
                         "STREAMJOIN_MARKER_POKE_SECONDS": "2", **dict.fromkeys(ALERT_VARIABLES)})
    watcher.join(timeout=1)
    assert run.succeeded, run.tail()
    assert "Rescheduling task, marking task as UP_FOR_RESCHEDULE" in run.output or "running trigger in line" in run.output
    assert "<strong>VALIDATED</strong>" in report_objects(s3_prefix)["index.html"][1].decode()


@pytest.mark.airflow
def test_the_dag_fails_at_once_with_the_reason_when_asked_for_an_hour_that_has_not_ended(s3_prefix):
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).strftime("%Y-%m-%dT%H")
    started = time.monotonic()
    run = dags_test(DAG_ID, conf={"app": "hourly_city_sales", "hour": future},
                    env={"OUTPUT_PATH": f"{s3_prefix}/output", "REPORTS_PATH": f"{s3_prefix}/reports",
                         **dict.fromkeys(ALERT_VARIABLES)})
    assert run.state == "failed", run.tail()
    assert run.task_states["wait_for_complete_hour"] == "failed" and run.task_states["check_and_publish"] == "upstream_failed"
    assert f"hour {future} has not ended yet" in run.output
    assert time.monotonic() - started < 240  # no retries, no waiting


@pytest.mark.airflow
def test_the_dags_hour_is_optional_and_an_hour_without_input_fails_after_the_short_wait_with_what_to_do(s3_prefix):
    def just_ended() -> str:
        return (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H")

    before = just_ended()
    run = dags_test(DAG_ID, conf={"app": "hourly_city_sales"},  # no hour: the hour that just ended
                    env={"OUTPUT_PATH": f"{s3_prefix}/output", "REPORTS_PATH": f"{s3_prefix}/reports",
                         "STREAMJOIN_REPORT_NO_INPUT_WAIT_SECONDS": "0", **dict.fromkeys(ALERT_VARIABLES)})
    assert run.state == "failed", run.tail()
    assert run.task_states["resolve_hour"] == "success" and run.task_states["wait_for_complete_hour"] == "failed"
    assert any(f"no input for hour {hour} has reached app hourly_city_sales" in run.output
               for hour in (before, just_ended())), run.tail()
    assert "include/apps/hourly_city_sales/generate.py" in run.output
