"""`SupervisedSparkSubmitOperator`: SparkSubmitOperator for a streaming app, supervised.

The app is submitted exactly as SparkSubmitOperator submits it (its SparkSubmitHook, the
`spark_default` connection), once per start of a bounded run; `include.ops.supervise` watches
it and restarts it from its checkpoint when it dies or stalls. Imported by the DAG file: keep
module-level imports light (no pyspark).
"""

from __future__ import annotations

from dataclasses import asdict

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from streamjoin.runtime.app import App
from streamjoin.runtime.session import driver_java_options
from streamjoin.settings import Settings

from include.ops.supervise import RUN_APP, HookLaunch, supervise


class SupervisedSparkSubmitOperator(SparkSubmitOperator):
    template_fields = (*SparkSubmitOperator.template_fields, "app_name", "run_seconds")

    def __init__(self, *, app_name: str, run_seconds: int | str = 0, **kwargs):
        kwargs.setdefault("conn_id", "spark_default")
        super().__init__(application=RUN_APP, name=f"streamjoin-{app_name}", **kwargs)
        self.app_name, self.run_seconds = app_name, run_seconds

    def execute(self, context) -> dict:
        app = App.load(self.app_name)
        deploy = app.config.get("deploy", {})
        window = int(self.run_seconds or 0) or int(deploy.get("run_minutes", 55)) * 60

        def launch(run_for_s: float) -> HookLaunch:
            self.application_args = [str(app.dir), "--run-for", f"{run_for_s:.0f}"]
            if java_options := driver_java_options(Settings.from_env(), bounded=False):  # (docs/deployment.md)
                self.conf = {**(self.conf or {}), "spark.driver.extraJavaOptions": java_options}
            self._hook = self._get_hook()  # a fresh spark-submit per start
            return HookLaunch(self._hook)

        run_type = getattr(context.get("dag_run"), "run_type", "") if hasattr(context, "get") else ""
        result = supervise(app, launch, window, stall_s=float(deploy.get("stall_minutes", 10)) * 60,
                           max_restarts=int(deploy.get("max_restarts", 3)),
                           manual=str(getattr(run_type, "value", run_type)).lower() == "manual")
        return asdict(result)
