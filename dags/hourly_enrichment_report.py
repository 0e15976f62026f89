"""Validate each hour of an app's enriched output and publish the hour's report.

Every hour, for the hour H that just ended:

1. `resolve_hour`: the app and H (the `hour` param, else the last hour ended by the run's
   data interval end), and where H's completeness marker is (`<output>/_complete/hour=H.json`).
2. `wait_for_complete_hour`: waits for the marker in S3 (the app's output must be an `s3://`
   prefix). Deferrable when aiobotocore is installed (the S3 trigger needs it); otherwise it
   pokes in reschedule mode, which frees the worker slot between pokes.
3. `check_and_publish`: runs the quality checkpoint on H (verdict under `<output>/_quality/hour=H/`,
   an e-mail/webhook alert when it fails), then publishes the report to `<reports>/<app>/hour=H/`:
   `index.html` (a row per city, a chart of sales by region, the verdict), `cities.csv`,
   `sales_by_region.png`, `quality.json`. A failed hour's report says NOT VALIDATED and the task
   fails without retrying (retrying would not change the data, and the alert is out).

Trigger it from the UI with params to (re)check a chosen hour of a chosen app.
Operator's guide: docs/operations.md.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import sys
from pathlib import Path

from airflow.providers.amazon.aws.sensors.s3 import S3KeySensor
from airflow.sdk import Param, dag, task
from airflow.sdk.exceptions import AirflowFailException

ROOT = os.environ.get("STREAMJOIN_HOME") or str(Path(__file__).resolve().parents[1])
sys.path[:0] = [] if ROOT in sys.path else [ROOT]  # the tasks import include.ops from the repository root

# S3KeySensor's trigger runs on aiobotocore (the Amazon provider's [aiobotocore] extra).
DEFERRABLE = importlib.util.find_spec("aiobotocore") is not None
POKE_SECONDS = float(os.environ.get("STREAMJOIN_MARKER_POKE_SECONDS", "120"))  # how often to look for the marker


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
        "hour": Param("", type="string", title="Hour (UTC)", pattern=r"^$|^\d{4}-\d{2}-\d{2}[T ]\d{2}(:\d{2}(:\d{2})?)?$",
                      description="The hour to check and report, YYYY-MM-DDTHH in UTC (e.g. 2024-01-01T10). "
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

    target = resolve_hour()
    wait = S3KeySensor(
        task_id="wait_for_complete_hour", bucket_key=target["marker"], aws_conn_id="aws_default",
        deferrable=DEFERRABLE, mode="poke" if DEFERRABLE else "reschedule",
        poke_interval=POKE_SECONDS, timeout=6 * 3600,
    )
    wait >> check_and_publish(target["app"], target["hour"])


hourly_enrichment_report()
