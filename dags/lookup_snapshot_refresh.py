"""### lookup_snapshot_refresh

Refreshes each app's lookup-table snapshots the only way the seeds allow: by restarting the query.

For each app with `[[snapshots]]` in its `app.toml`: export every lookup table as a new
immutable snapshot version, ask the running query to stop after its current micro-batch and
start again from its checkpoint (a graceful restart, not a kill), then check from its status
that it runs on the new versions. An app that is not running just gets the new versions (its
next start loads them). Schedule: hourly at half past (the apps' bounded runs start on the hour,
so at :30 they run; each app's `[deploy] refresh_schedule` documents its intent). Param `apps` limits a manual run.
See docs/operations.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import Param, dag, task
from streamjoin.runtime.app import app_names

APPS = app_names()  # a task each
DEPLOYED = app_names(deployed_only=True)  # the default selection ([deploy] enabled)


@dag(
    schedule="30 * * * *",  # mid-hour: the apps' bounded runs start on the hour, so they are running now
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["streamjoin", "snapshots"],
    doc_md=__doc__,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=1)},
    params={
        "apps": Param(DEPLOYED, type="array", description="which apps to refresh (default: those [deploy] enabled)"),
        "timeout_seconds": Param(600, type="integer", minimum=10, description="how long to wait for the restarted query"),
    },
)
def lookup_snapshot_refresh():
    @task
    def refresh(app: str, params=None) -> dict:
        from streamjoin.runtime.app import App

        from include.ops.refresh import refresh as refresh_app

        if app not in (params or {}).get("apps", DEPLOYED):
            return {"app": app, "outcome": "not selected"}
        return refresh_app(App.load(app), timeout_s=float((params or {}).get("timeout_seconds", 600)))

    refresh.expand(app=APPS)


lookup_snapshot_refresh()
