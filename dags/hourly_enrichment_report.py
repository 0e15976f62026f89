"""Validate each hour of an app's enriched output and publish the hour's report.

Every hour, for the hour H that just ended:

1. `resolve_hour`: the app and H (the `hour` param, else the last hour ended by the run's
   data interval end), and where H's completeness marker is (`<output>/_complete/hour=H.json`).
2. `wait_for_complete_hour`: waits for the marker in S3 (the app's output must be an `s3://`
   prefix), poking in reschedule mode (the worker slot is free between pokes). It fails at once,
   saying why and what to do, when the marker cannot come: H has not ended yet, the app's
   complete hours start after H, or the app's input has ended without H; after 10 min when no
   input for H has reached the app (its status.json clock is before H, or it never ran); and
   after 2 h in any case (`include.ops.report.hour_ready`).
3. `check_and_publish`: runs the quality checkpoint on H (verdict under `<output>/_quality/hour=H/`,
   an e-mail/webhook alert when it fails), then publishes the report to `<reports>/<app>/hour=H/`:
   `index.html` (a row per city, a chart of sales by region, the verdict), `cities.csv`,
   `sales_by_region.png`, `quality.json`. A failed hour's report says NOT VALIDATED and the task
   fails without retrying (retrying would not change the data, and the alert is out).

Trigger it from the UI with params to (re)check a chosen hour of a chosen app (`hour` empty: the
hour that just ended). The DAG starts paused, and a paused DAG runs nothing, triggered runs
included: keep the trigger form's "Unpause on trigger" box ticked; unpausing also starts the
hourly schedule (pause it again to run once).
Operator's guide: docs/operations.md.
"""

from __future__ import annotations

import datetime as dt
import os

from airflow.sdk import Param, PokeReturnValue, dag, task
from airflow.sdk.exceptions import AirflowFailException

POKE_SECONDS = float(os.environ.get("STREAMJOIN_MARKER_POKE_SECONDS", "120"))  # how often to look for the marker
# how long to wait for it when no input for the hour has reached the app (default 10 min), and at most (2 h)
NO_INPUT_WAIT_SECONDS = float(os.environ.get("STREAMJOIN_REPORT_NO_INPUT_WAIT_SECONDS", "600"))
MAX_WAIT_SECONDS = float(os.environ.get("STREAMJOIN_REPORT_MAX_WAIT_SECONDS", "7200"))


@dag(
    schedule="@hourly",
    start_date=dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
    catchup=False,
    doc_md=__doc__,
    tags=["streamjoin", "quality", "report", "hourly_city_sales"],
    default_args={"owner": "streamjoin", "retries": 2, "retry_delay": dt.timedelta(minutes=5)},
    max_active_runs=4,
    params={
        "app": Param("hourly_city_sales", type="string", minLength=1, title="App",
                     description="The app whose output to check and report: its name under include/apps/."),
        # optional: Airflow's trigger form requires every field whose type does not allow null
        "hour": Param(None, type=["null", "string"], title="Hour (UTC)",
                      pattern=r"^$|^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}(:\d{2}(:\d{2})?)?\s*$",
                      description="The hour to check and report, YYYY-MM-DDTHH in UTC (e.g. 2024-01-01T02). "
                                  "Empty: the hour that just ended."),
    },
)
def hourly_enrichment_report():
    @task(multiple_outputs=True)
    def resolve_hour(params=None, data_interval_end=None, dag_run=None) -> dict:
        from include.ops.report import resolve

        return resolve(params["app"], params["hour"], data_interval_end or dag_run.run_after)

    @task
    def check_and_publish(app: str, hour: str) -> dict:
        from include.ops.report import DataQualityFailed, check_and_publish

        try:
            return check_and_publish(app, hour)
        except DataQualityFailed as failed:
            raise AirflowFailException(str(failed)) from failed

    @task.sensor(poke_interval=POKE_SECONDS, mode="reschedule", timeout=MAX_WAIT_SECONDS + 2 * POKE_SECONDS + 60)
    def wait_for_complete_hour(app: str, hour: str, marker: str, dag_run=None) -> PokeReturnValue:
        from include.ops.report import HourCannotComplete, hour_ready

        now = dt.datetime.now(dt.UTC)
        started = getattr(dag_run, "start_date", None) or now
        try:
            ready = hour_ready(app, hour, now, (now - started).total_seconds(), MAX_WAIT_SECONDS, NO_INPUT_WAIT_SECONDS)
        except HourCannotComplete as cannot:
            raise AirflowFailException(f"{cannot} (marker: {marker})") from cannot
        return PokeReturnValue(is_done=ready)

    target = resolve_hour()
    wait = wait_for_complete_hour(target["app"], target["hour"], target["marker"])
    wait >> check_and_publish(target["app"], target["hour"])


hourly_enrichment_report()
