"""Running an app: `include/apps/<name>/` = its SQL (`query.sql`) plus `app.toml`.

This is what `spark-submit spark_apps/run_app.py include/apps/<name>` runs, and what the
Airflow DAGs deploy. The app runs its query from its checkpoint and obeys requests an operator
(or a DAG) leaves in `<checkpoint>/control/`:

- `stop`: finish the running micro-batch, stop, exit 0 (a graceful stop, not a kill);
- `restart`: finish the running micro-batch, stop, and start the query again from its
  checkpoint in the same process, which takes new snapshots of its tables (SEMANTICS §7: the
  only refresh there is); the request is removed once the query runs again.

While it runs it keeps `<checkpoint>/control/heartbeat` fresh (every second: time, pid, and since
when the current micro-batch has been running), so a supervisor can tell a hung app from an idle
one. `status.json` (see `runtime.status`) says which snapshots the query uses.

App configuration (`app.toml`): `name`, `query`, `[paths]`: each key but `checkpoint` becomes the
environment variable `<KEY>_PATH` the SQL reads (`${SALES_PATH}`), unless already set; relative
paths are relative to the repository root (`STREAMJOIN_HOME`, default: the parent of `include/`).
`CHECKPOINT_PATH` overrides `[paths] checkpoint`. `env_prefix = "KDA_"` names them `KDA_<KEY>_PATH`
(and KDA_CHECKPOINT_PATH), so that two apps in one environment do not share an output. `[inputs.NAME]` and `[reference.NAME]` declare
the query's input stream and tables outside its SQL, as KDA's configuration did (plan.inputs).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from streamjoin.faults import crash_point

log = logging.getLogger("streamjoin.app")


@dataclass(frozen=True)
class App:
    name: str
    dir: Path
    config: dict
    root: Path  # the repository root paths are relative to

    @classmethod
    def load(cls, where: str | Path) -> App:
        """An app directory, or an app name under `<root>/include/apps/`."""
        path = Path(where)
        root = Path(os.environ.get("STREAMJOIN_HOME") or Path(__file__).resolve().parents[3])
        if not (path / "app.toml").exists():
            path = root / "include" / "apps" / str(where)
        if not (path / "app.toml").exists():
            raise ValueError(f"no app at '{where}': an app is a folder with app.toml and its SQL (include/apps/<name>)")
        config = tomllib.loads((path / "app.toml").read_text())
        if (path.resolve().parent.parent.name == "include") and "STREAMJOIN_HOME" not in os.environ:
            root = path.resolve().parent.parent.parent
        return cls(config.get("name", path.name), path.resolve(), config, root)

    def path(self, value: str) -> str:
        if "://" in value or os.path.isabs(value):
            return value
        return str(self.root / value)

    @property
    def checkpoint(self) -> Path:
        return Path(self.path(os.environ.get(f"{self.env_prefix}CHECKPOINT_PATH") or self.config["paths"]["checkpoint"]))

    @property
    def env_prefix(self) -> str:
        """Before each variable its `[paths]` give (`KDA_` -> KDA_OUTPUT_PATH): apps that share
        one environment (a stack) keep apart."""
        return self.config.get("env_prefix", "")

    @property
    def declared(self) -> tuple[tuple[str, str], ...]:
        """The inputs `[inputs.NAME]` / `[reference.NAME]` declare outside the SQL (plan.inputs)."""
        from streamjoin.plan.inputs import declarations

        return declarations(self.config, str(self.dir / "app.toml"))

    @property
    def dialect(self) -> str | None:
        """`dialect = "kda"` (a profile, dialect.profiles): how the app's SQL reads; None: detected."""
        return self.config.get("dialect")

    @property
    def query_file(self) -> Path:
        return self.dir / self.config.get("query", "query.sql")

    def export_paths(self) -> dict[str, str]:
        """Set `<KEY>_PATH` for each `[paths]` key (not overriding the environment); returns them."""
        exported = {}
        for key, value in self.config.get("paths", {}).items():
            if key == "checkpoint":
                continue
            name = f"{self.env_prefix}{key.upper()}_PATH"
            os.environ.setdefault(name, self.path(value))
            exported[name] = os.environ[name]
        return exported


def app_names(root: Path | None = None, deployed_only: bool = False) -> list[str]:
    """The apps under `<root>/include/apps/` (default: this repository's); `deployed_only`: those
    the DAGs run by default (`[deploy] enabled`, default true; the others run when picked)."""
    root = Path(root or os.environ.get("STREAMJOIN_HOME") or Path(__file__).resolve().parents[3])
    names = sorted(p.parent.name for p in (root / "include" / "apps").glob("*/app.toml"))
    if deployed_only:
        names = [n for n in names
                 if tomllib.loads((root / "include" / "apps" / n / "app.toml").read_text()).get("deploy", {}).get("enabled", True)]
    return names


def take_snapshots(app: App, only_missing: bool = False) -> list[dict]:
    """Export each `[[snapshots]]` table of the app (`table`, its declaring `source` SQL file, the
    snapshot root `path`) as a new version; with `only_missing`, only where none exists yet."""
    from streamjoin.env import expand
    from streamjoin.io.formats.types import arrow_schema
    from streamjoin.io.sources import snapshots
    from streamjoin.io.sources.kafka_catalog import topic_columns
    from streamjoin.io.sources.postgres import catalog_columns
    from streamjoin.io.sources.tables import read_table
    from streamjoin.plan import compile_sql

    app.export_paths()
    taken = []
    for entry in app.config.get("snapshots", []):
        root = app.path(expand(entry["path"]))
        if only_missing and snapshots.latest(root) is not None:
            continue
        source_file = app.dir / entry["source"]
        script = compile_sql(source_file.read_text(), str(source_file), catalog=catalog_columns, topics=topic_columns)
        relation = next((r for r in script.relations if r.name == entry["table"]), None)
        if relation is None:
            raise ValueError(f"{source_file} declares no table '{entry['table']}'")
        read = read_table(relation.name, dict(relation.options), arrow_schema(relation.columns))
        meta = snapshots.export(read.rows, root, read.source)
        log.info("%s: snapshot of %s: version %s, %s rows", app.name, entry["table"], meta["version"], meta["rows"])
        taken.append({"table": entry["table"], "root": root, **meta})
    return taken


class Control:
    """The requests folder of a running app: `<checkpoint>/control/`."""

    def __init__(self, checkpoint: Path):
        self.dir = checkpoint / "control"
        self.dir.mkdir(parents=True, exist_ok=True)

    def requested(self, what: str) -> bool:
        return (self.dir / what).exists()

    def request(self, what: str, reason: str = "") -> None:
        _write(self.dir / what, json.dumps({"at": _now(), "reason": reason}))

    def clear(self, what: str) -> None:
        (self.dir / what).unlink(missing_ok=True)

    def lock(self, name: str):
        """The open file `name` under an exclusive lock (released when it is closed), or None when
        another process holds the lock."""
        import fcntl

        handle = open(self.dir / name, "a+")  # held open while locked: the caller closes it
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        return handle

    def heartbeat(self, trigger_active_since: float | None) -> None:
        _write(self.dir / "heartbeat", json.dumps({"at": time.time(), "pid": os.getpid(),
                                                   "trigger_active_since": trigger_active_since}))

    def read_heartbeat(self) -> dict | None:
        path = self.dir / "heartbeat"
        try:
            return json.loads(path.read_text())
        except (FileNotFoundError, ValueError):
            return None


def run_app(app: App, run_for_s: float | None = None, until_idle: bool = False, spark=None) -> dict:
    """Run the app's query until stopped (signal, `stop` request, end of `run_for_s`) or, with
    `until_idle`, until its input is processed; restart it in place on a `restart` request."""
    app.export_paths()
    control = Control(app.checkpoint)
    held = _refuse_to_share(control, app.checkpoint)
    try:
        return _run(app, control, run_for_s, until_idle, spark)
    finally:
        held.close()


def _run(app: App, control: Control, run_for_s: float | None, until_idle: bool, spark) -> dict:
    from streamjoin.runtime.pipeline import Pipeline
    from streamjoin.runtime.session import spark_session

    checkpoint = app.checkpoint
    if not until_idle and any((checkpoint / "sources").glob("*/END")):
        raise ValueError(f"{checkpoint} has reached end of input (an --until-idle run): its clocks are at +infinity "
                         "and every new row would be late; give this run a new checkpoint (CHECKPOINT_PATH)")
    take_snapshots(app, only_missing=True)  # a first start needs a snapshot to load
    control.clear("stop")  # a request left by an earlier run is not for this one
    deadline = time.time() + run_for_s if run_for_s else None
    spark = spark or spark_session(f"streamjoin-{app.name}")
    late = checkpoint / "late"
    starts = 0
    while True:
        restarting = control.requested("restart")
        control.clear("restart")  # before the snapshots are taken: a later request restarts again
        pipeline = Pipeline.from_file(app.query_file, declared=app.declared, dialect=app.dialect,
                                      chosen_by=f"dialect in {app.dir / 'app.toml'}")
        # the output goes to the app's sink; late rows beside it, under the checkpoint
        runner = pipeline.runner(spark, checkpoint, str(late), until_idle=until_idle, late_root=late, name=app.name)  # takes the snapshots
        starts += 1
        if restarting:
            log.warning("%s: restarted from its checkpoint with new snapshots: %s", app.name,
                        ", ".join(f"{s['alias']} {s.get('version', s['taken_at'])}" for s in runner.status.snapshots))
        try:
            runner.start()
            if until_idle:
                runner.end_of_input()
                return runner.stop("finished")
            runner.wait_for_signal(until=lambda: _asked(control, deadline), tick=_Heartbeat(runner, control))
        except Exception as error:
            runner.fail(error)
            raise
        if control.requested("restart") and not control.requested("stop") and (deadline is None or time.time() < deadline):
            runner.stop("restarting")
            crash_point("app.restarting")
            continue
        control.clear("stop")
        return runner.stop("stopped")


def _refuse_to_share(control: Control, checkpoint: Path):
    """One app per checkpoint: a lock on `control/app.lock` held while it runs (returned: the open
    file), taken before it writes anything (two apps starting together used to both take the
    snapshots into it), and a fresh heartbeat from another live process (one without the lock)."""
    held = control.lock("app.lock")  # held while the app runs: run_app closes it
    if held is None:
        raise RuntimeError(f"another run is using {checkpoint}: stop it first (touch {control.dir / 'stop'})")
    beat = control.read_heartbeat()
    if beat is None or beat.get("pid") == os.getpid() or time.time() - beat["at"] > 10:
        return held
    try:
        os.kill(beat["pid"], 0)
    except (ProcessLookupError, PermissionError):
        return held
    held.close()
    raise RuntimeError(f"another run (pid {beat['pid']}) is using {checkpoint}: stop it first "
                       f"(touch {control.dir / 'stop'})")


def _asked(control: Control, deadline: float | None) -> bool:
    return control.requested("stop") or control.requested("restart") or (deadline is not None and time.time() >= deadline)


class _Heartbeat:
    """Every second: the heartbeat, with since when the current micro-batch has been running."""

    def __init__(self, runner, control: Control):
        self.runner, self.control, self.active_since, self.batch = runner, control, None, None

    def __call__(self) -> None:
        active = self.runner.query.status.get("isTriggerActive")
        batch = (self.runner.query.lastProgress or {}).get("batchId")
        if not active or batch != self.batch:  # back-to-back batches are progress, not one long batch
            self.active_since = time.time() if active else None
        self.batch = batch
        self.control.heartbeat(self.active_since)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="run_app", description="Run a streamjoin app (include/apps/<name>) on Spark.")
    parser.add_argument("app", help="the app's folder (include/apps/<name>) or its name")
    parser.add_argument("--run-for", type=float, help="stop gracefully after this many seconds (a bounded run)")
    parser.add_argument("--until-idle", action="store_true", help="process what is there, flush as end of input, exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(levelname)s: %(message)s", stream=sys.stderr)
    logging.getLogger("py4j").setLevel(logging.WARNING)  # the summary line stays last
    from streamjoin.errors import one_line_reason

    try:
        app = App.load(args.app)
        status = run_app(app, args.run_for, args.until_idle)
    except Exception as error:  # noqa: BLE001 - the entry point: the last line says why, as for `streamjoin run`
        print(f"run_app: {one_line_reason(error)}", file=sys.stderr)
        return 1
    from streamjoin.runtime.status import summary

    print(f"run_app: {app.name} {summary(status)}", file=sys.stderr)
    return 0


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
