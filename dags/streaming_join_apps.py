"""### streaming_join_apps

Deploys every app under `include/apps/` with spark-submit and keeps it up.

Each DAG run owns one **bounded run** per app (`[deploy] run_minutes` of its `app.toml`, default
55): the app runs from its checkpoint and stops itself gracefully at the end of the window; the
next run (hourly) starts it again from the same checkpoint, so nothing is lost between runs.
While it runs, the task watches the app's heartbeat and `status.json` and restarts it from its
checkpoint when it dies or stalls; after `max_restarts` restarts it alerts and fails.

Params: `run_seconds` overrides the window (0: each app's own); `apps` limits the run to some apps.
A manually triggered run is not queued behind the scheduled one: it asks the running apps to stop
gracefully and runs them itself; a scheduled run waits for a running app to end. See
docs/operations.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import Param, dag, task
from streamjoin.runtime.app import App, app_names

from include.ops.spark_submit import SupervisedSparkSubmitOperator

MAX_RUN_SECONDS = 3 * 3600  # the run_seconds param's ceiling (the task's timeout leaves room for it)
APPS = app_names()  # a task each
DEPLOYED = app_names(deployed_only=True)  # the default selection ([deploy] enabled)


def _alert_app_down(context) -> None:
    from streamjoin.alerts import deliver

    ti = context["task_instance"]
    deliver(f"streamjoin: app down: {ti.task_id.removeprefix('run_')}",
            f"{ti.task_id} failed in DAG run {context['run_id']}: {context.get('exception')}\n"
            "The app could not be kept up; see its status.json and app log.")


@dag(
    schedule="@hourly",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    # a manual run beside the scheduled one: it takes the apps over (include/ops/supervise.hand_over)
    max_active_runs=2,
    tags=["streamjoin", "apps"],
    doc_md=__doc__,
    default_args={"retries": 1, "retry_delay": timedelta(minutes=1), "on_failure_callback": _alert_app_down},
    params={
        "run_seconds": Param(0, type="integer", minimum=0, maximum=MAX_RUN_SECONDS,
                             description="length of this bounded run in seconds (0: each app's run_minutes)"),
        "apps": Param(DEPLOYED, type="array", description="which apps to run (default: those [deploy] enabled)"),
    },
)
def streaming_join_apps():
    @task.short_circuit
    def selected(app: str, params=None) -> bool:
        return app in (params or {}).get("apps", DEPLOYED)

    for name in APPS:
        deploy = App.load(name).config.get("deploy", {})
        run = SupervisedSparkSubmitOperator(
            task_id=f"run_{name}",
            app_name=name,
            run_seconds="{{ params.run_seconds }}",
            driver_memory=deploy.get("driver_memory"),
            execution_timeout=timedelta(minutes=max(int(deploy.get("run_minutes", 55)), MAX_RUN_SECONDS // 60) + 15),
        )
        selected.override(task_id=f"selected_{name}")(name) >> run


streaming_join_apps()
