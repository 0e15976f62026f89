"""Airflow in tests: an isolated AIRFLOW_HOME and `airflow dags test` run end to end as a subprocess.

    from airflow_helpers import dags_test
    run = dags_test("hourly_enrichment_report", conf={"hour": "2024-01-01T10"}, env={"OUTPUT_PATH": ...})
    assert run.state == "success", run.tail()
    assert run.task_states["check_and_publish"] == "success"

`airflow_home()` makes one AIRFLOW_HOME per test process (a temporary folder, removed at exit):
a SQLite metadata DB migrated once (`airflow db migrate`, about 4 s), DAGS_FOLDER = this
repository's `dags/`, no example DAGs. `airflow_env()` is the environment of an `airflow` command
there: the test process's environment, those settings, STREAMJOIN_HOME, and, when `AWS_ENDPOINT_URL`
is set (the `s3_server` fixture sets it), the `aws_default` connection pointing at that server.

How `airflow dags test` (3.3.2) runs and reports a run, as observed:
- It creates a manual run (logical date: now, data interval [now, now]; a given LOGICAL_DATE
  gets the timetable's manual interval) and runs the tasks one at a time inside its own process
  (no scheduler, executor or triggerer): environment variables given to it reach the tasks.
  Task logs go to its stdout. It parses the whole DAGs folder as well (to store the DAGs).
- A deferred task's trigger runs inline and the task resumes (`[DAG TEST] running trigger in line`);
  the trigger must be importable and runnable here (the Amazon S3 trigger needs aiobotocore, not
  installed: a deferrable S3KeySensor fails with `No module named 'aiobotocore'`).
  A sensor in reschedule mode is poked again once its reschedule date has passed (the loop waits
  1 s at a time); a failed task with retries left is retried after its `retry_delay` (also waited
  out, so keep it short, or fail with AirflowFailException, which does not retry).
- A run that fails: exit code 1 and `DagRun failed` last on stderr. A successful run: exit code 0.
  Either way a log line `DagRun Finished: dag_id=..., run_id=..., state=failed|success, ...`
  names the run. A DAG that cannot be found or parsed exits 1 with no such line (the traceback
  ends with `AirflowException: Dag '...' could not be found; either it does not exist or it failed to parse.`).
`dags_test` returns a `DagTestRun` with the exit code, the output, the run's final state (from
that line; None when there is none) and each task's final state (from the metadata DB).

`probe_dag_file(path)` parses one DAG file in a fresh process (what the DAG-integrity test checks):
its import errors, its DAGs' settings, and the heavy modules its import adds to `import airflow.sdk`.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DAGS = REPO / "dags"
AIRFLOW = Path(sys.executable).parent / "airflow"
HEAVY_MODULES = ("pyspark", "pandas", "great_expectations", "matplotlib", "deltalake")
FINISHED = re.compile(r"DagRun Finished: dag_id=(?P<dag_id>[^,]+), .*?run_id=(?P<run_id>[^,]+), .*?\bstate=(?P<state>\w+)")

_home: Path | None = None


@dataclass
class DagTestRun:
    dag_id: str
    returncode: int
    output: str  # stdout and stderr, interleaved
    state: str | None  # the run's final state: success | failed; None when no run finished
    run_id: str | None
    task_states: dict[str, str | None] = field(default_factory=dict)  # task_id -> final state

    @property
    def succeeded(self) -> bool:
        return self.returncode == 0 and self.state == "success"

    def tail(self, lines: int = 80) -> str:
        """The end of the output, for assertion messages."""
        return "\n".join(self.output.splitlines()[-lines:])


def airflow_home() -> Path:
    """This process's AIRFLOW_HOME, created and migrated on first use."""
    global _home
    if _home is None:
        home = Path(tempfile.mkdtemp(prefix="streamjoin-airflow-"))
        atexit.register(shutil.rmtree, home, True)
        _home = home  # before migrating: airflow_env() needs it
        try:
            _airflow(["db", "migrate"], airflow_env(), timeout=300)
        except BaseException:
            _home = None
            raise
    return _home


def airflow_settings(home: Path) -> dict[str, str]:
    """The settings of an isolated, unit-test-friendly Airflow in `home`."""
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT": "120",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(home / "matplotlib"),
    }


def aws_connection(endpoint_url: str | None, access_key: str | None, secret_key: str | None, region: str) -> str:
    """`AIRFLOW_CONN_AWS_DEFAULT` (JSON) for an S3-compatible server (the embedded one, MinIO)."""
    extra = {"region_name": region}
    if endpoint_url:
        extra["endpoint_url"] = endpoint_url
    return json.dumps({"conn_type": "aws", "login": access_key, "password": secret_key, "extra": extra})


def airflow_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an `airflow` command in this process's AIRFLOW_HOME: os.environ, the
    isolated settings, STREAMJOIN_HOME, the aws_default connection (from the AWS_* variables), then `env`."""
    merged = {**os.environ, **airflow_settings(_home or airflow_home()), "STREAMJOIN_HOME": str(REPO), **(env or {})}
    merged = {k: v for k, v in merged.items() if v is not None}
    if merged.get("AWS_ENDPOINT_URL") and "AIRFLOW_CONN_AWS_DEFAULT" not in (env or {}):
        merged["AIRFLOW_CONN_AWS_DEFAULT"] = aws_connection(
            merged["AWS_ENDPOINT_URL"], merged.get("AWS_ACCESS_KEY_ID"), merged.get("AWS_SECRET_ACCESS_KEY"),
            merged.get("AWS_REGION") or "us-east-1")
    return merged


def dags_test(dag_id: str, conf: dict | None = None, logical_date: str | None = None, env: dict[str, str] | None = None,
              timeout: float = 300, dag_file: Path | None = None) -> DagTestRun:
    """Run `airflow dags test DAG_ID [LOGICAL_DATE] [--conf JSON]` to the end; `env` is added to
    `airflow_env()` (None values remove a variable). The DAG is read from `dags/<dag_id>.py` when
    that file exists (else from the whole dags folder). Raises AssertionError after `timeout` s."""
    home = airflow_home()
    args = ["dags", "test", dag_id] + ([logical_date] if logical_date else [])
    args += ["--conf", json.dumps(conf)] if conf is not None else []
    dag_file = dag_file or DAGS / f"{dag_id}.py"
    args += ["--dagfile-path", str(dag_file)] if dag_file.is_file() else []
    removed = {k for k, v in (env or {}).items() if v is None}
    run_env = {k: v for k, v in airflow_env({k: v for k, v in (env or {}).items() if v is not None}).items() if k not in removed}
    returncode, output = _airflow(args, run_env, timeout, check=False)
    finished = FINISHED.findall(output)
    run_id, state = (finished[-1][1], finished[-1][2]) if finished else (None, None)
    return DagTestRun(dag_id, returncode, output, state, run_id, task_states(home, dag_id, run_id) if run_id else {})


def task_states(home: Path, dag_id: str, run_id: str) -> dict[str, str | None]:
    """task_id -> state of a run's task instances, from the metadata DB."""
    with sqlite3.connect(home / "airflow.db") as db:
        rows = db.execute("SELECT task_id, state FROM task_instance WHERE dag_id = ? AND run_id = ?", (dag_id, run_id))
        return dict(rows.fetchall())


def _airflow(args: list[str], env: dict[str, str], timeout: float, check: bool = True) -> tuple[int, str]:
    """Run `airflow ARGS` in its own process group (killed whole on timeout); (exit code, output)."""
    process = subprocess.Popen([str(AIRFLOW), *args], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        raise AssertionError(f"airflow {' '.join(args)} did not finish in {timeout} s:\n" + "\n".join(output.splitlines()[-60:])) from None
    if check and process.returncode != 0:
        raise AssertionError(f"airflow {' '.join(args)} exited {process.returncode}:\n" + "\n".join(output.splitlines()[-60:]))
    return process.returncode, output


def probe_dag_file(path: Path, timeout: float = 120) -> dict:
    """Parse a DAG file in a fresh process: {"heavy_baseline": the HEAVY_MODULES `import airflow.sdk`
    loads, "heavy_added": those the file's import adds, "import_error": the import's exception or None,
    "import_errors": DagBag's, "dags": [{"dag_id", "fileloc", "tags", "retries", "catchup", "doc_md", "params": {name: {"default", "description", "schema"}}}]}."""
    process = subprocess.run([sys.executable, __file__, "--probe", str(path)], env=airflow_env(), cwd=REPO,
                             capture_output=True, text=True, timeout=timeout)
    lines = process.stdout.strip().splitlines()
    if process.returncode != 0 or not lines:
        raise AssertionError(f"probing {path} failed (exit {process.returncode}):\n{process.stderr[-3000:]}")
    return json.loads(lines[-1])


def _probe(path: str) -> dict:
    """Runs in the fresh process (a script, not `python -c`: pyspark exits a process whose main
    module has no file when it is imported)."""
    import importlib.util

    def heavy() -> set[str]:
        return {m for m in HEAVY_MODULES if m in sys.modules}

    import airflow.sdk  # noqa: F401 - the baseline every DAG file pays

    baseline = heavy()
    import_error = None
    try:
        spec = importlib.util.spec_from_file_location(f"probed_dag_{Path(path).stem}", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except Exception as error:  # noqa: BLE001 - reported, not raised
        import_error = f"{type(error).__name__}: {error}"
    added = heavy() - baseline
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=path, safe_mode=False)
    dags = [{"dag_id": dag.dag_id, "fileloc": dag.fileloc, "tags": sorted(dag.tags or []),
             "retries": (dag.default_args or {}).get("retries"), "catchup": dag.catchup, "doc_md": dag.doc_md,
             "params": {name: _param(dag.params.get_param(name)) for name in dag.params}}
            for dag in bag.dags.values()]
    return {"heavy_baseline": sorted(baseline), "heavy_added": sorted(added), "import_error": import_error,
            "import_errors": {str(k): v for k, v in bag.import_errors.items()}, "dags": dags}


def _param(param) -> dict:
    return {"default": param.value if param.has_value else None, "description": param.description or "", "schema": param.schema}


if __name__ == "__main__" and sys.argv[1:2] == ["--probe"]:
    print(json.dumps(_probe(sys.argv[2]), default=str))
