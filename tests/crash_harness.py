"""The crash-and-restart harness (issue 20): run a query as `streamjoin run` in a process of its
own while its input arrives file by file, kill the process (SIGKILL to its whole process
group: the Python driver and Spark's JVM) at chosen points, start it again on the same
checkpoint, and at the end compare what it committed with an uninterrupted run.

A kill is either a crash point (`streamjoin.faults`, `NAME:N`: the N-th time the process
reaches point NAME it kills itself there: between a sink's file write and its commit, between
the commit and the hour marker, ...) or a time (seconds after the process started: anywhere,
mid-batch included). A point the run never reaches is recorded as not reached (the process is
then stopped with SIGTERM, gracefully). After the last kill, the rest of the input is written
and one more process runs `--until-idle` to the end of input.

Input arrives in rowtime order, per stream, so the reference semantics do not depend on when
a file lands: the uninterrupted run and the interrupted one must commit exactly the same rows.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ARRIVAL_GAP_S = 0.6  # between two arrivals while a process runs
UNREACHED_GRACE_S = 12.0  # after a process's last arrival: how long a crash point may take to be reached


@dataclass
class Kind:
    """One kind of app: its SQL (`{root}` is the run's folder), its input, how to read its output."""

    name: str
    sql: Callable[[Path], str]  # the run's folder -> the query (its inputs and outputs under the folder)
    arrivals: list[dict[str, list[dict]]]  # in order: per arrival, {input folder: rows of one file}
    read: Callable[[Path], object]  # the run's folder -> what it committed (comparable with ==)
    points: list[str]  # the crash points its runs pass through
    env: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[Path], None] = lambda root: None  # tables etc., before the first process


@dataclass(frozen=True)
class Watch:
    """A kill when something is seen from outside: `seen(root)` true (polled every 50 ms while the
    process runs; a new commit in a table's log, say), then SIGKILL to the process group."""

    label: str
    seen: Callable[[Path], bool]
    wait_s: float = 180.0  # after the process's last arrival: how long it may take to be seen (a cluster's executors start slowly)


@dataclass
class Outcome:
    committed: object
    kills: list[str] = field(default_factory=list)  # the kills that happened
    unreached: list[str] = field(default_factory=list)  # crash points no process reached
    launches: int = 0


def write_arrival(root: Path, kind: Kind, i: int) -> None:
    for folder, rows in kind.arrivals[i].items():
        path = root / folder / f"{i:04d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.replace(tmp, path)  # a file lands whole


def _launch(root: Path, kind: Kind, until_idle: bool, crash_at: str | None, log) -> subprocess.Popen:
    (root / "query.sql").write_text(kind.sql(root))
    env = {**os.environ, **kind.env}
    env.pop("STREAMJOIN_CRASH_AT", None)
    if crash_at:
        env["STREAMJOIN_CRASH_AT"] = crash_at
    cmd = [sys.executable, "-m", "streamjoin.cli", "run", str(root / "query.sql"), "--checkpoint", str(root / "checkpoint"),
           "--output", str(root / "out")]
    if until_idle:
        cmd.append("--until-idle")
    return subprocess.Popen(cmd, env=env, stdout=log, stderr=log, start_new_session=True)


def _running(root: Path, proc: subprocess.Popen) -> bool:
    """Whether this process's query runs (its status.json says so, with its pid)."""
    try:
        status = json.loads((root / "checkpoint" / "status.json").read_text())
    except (OSError, ValueError):
        return False
    return status.get("state") == "running" and status.get("pid") == proc.pid


def _kill_group(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def run(kind: Kind, root: Path, kills: list[str | float | Watch]) -> Outcome:
    """Run `kind` under `root` with `kills` (crash points `NAME:N`, seconds, or a `Watch`), then to the end."""
    root.mkdir(parents=True, exist_ok=True)
    kind.prepare(root)
    outcome, arrived = Outcome(None), 0
    quota = -(-len(kind.arrivals) // (len(kills) + 1))  # arrivals per process: some for every one
    with open(root / "runs.log", "ab") as log:
        for kill in kills:
            named = isinstance(kill, str)
            proc = _launch(root, kind, False, kill if named else None, log)
            outcome.launches += 1
            started = last = time.monotonic()
            upto, all_in_since, running = min(arrived + quota, len(kind.arrivals)), None, False
            while proc.poll() is None:
                now = time.monotonic()
                running = running or _running(root, proc)
                if arrived < upto and now - last >= ARRIVAL_GAP_S and running:
                    write_arrival(root, kind, arrived)
                    arrived, last = arrived + 1, now
                if arrived == upto and all_in_since is None:
                    all_in_since = now
                due = _due(kill, root, now - started)
                if due is not None:
                    _kill_group(proc)
                    outcome.kills.append(due)
                    break
                grace = kill.wait_s if isinstance(kill, Watch) else UNREACHED_GRACE_S
                if not isinstance(kill, float | int) and all_in_since is not None and now - all_in_since > grace:
                    proc.send_signal(signal.SIGTERM)  # the point is not on this run's path: stop gracefully
                    proc.wait(60)
                    outcome.unreached.append(kill.label if isinstance(kill, Watch) else kill)
                    break
                time.sleep(0.05)
            proc.wait(60)
            _kill_group(proc)  # whatever is left of the group (the JVM of a driver that killed itself)
            if named and proc.returncode == -signal.SIGKILL:
                if kill in outcome.unreached:  # reached after all, while stopping (a stop releases and saves)
                    outcome.unreached.remove(kill)
                outcome.kills.append(kill)
            elif named and kill not in outcome.unreached:
                raise AssertionError(f"{kind.name}: the run armed at {kill} ended with {proc.returncode}: see {root / 'runs.log'}")
        while arrived < len(kind.arrivals):
            write_arrival(root, kind, arrived)
            arrived += 1
        proc = _launch(root, kind, True, None, log)
        outcome.launches += 1
        if proc.wait(600) != 0:
            raise AssertionError(f"{kind.name}: the last run failed ({proc.returncode}): see {root / 'runs.log'}")
    outcome.committed = kind.read(root)
    return outcome


def _due(kill: str | float | Watch, root: Path, elapsed: float) -> str | None:
    """The kill to make from outside now, if any (a crash point is the process's own)."""
    if isinstance(kill, Watch):
        return kill.label if kill.seen(root) else None
    if isinstance(kill, str):
        return None
    return f"{kill:.1f}s" if elapsed >= kill else None


def uninterrupted(kind: Kind, root: Path, spark) -> object:
    """What `kind` commits with all its input there and one run to the end (in this process's
    Spark session: the same engine, without starting another)."""
    from runtime_helpers import run_to_end, start

    root.mkdir(parents=True, exist_ok=True)
    kind.prepare(root)
    for i in range(len(kind.arrivals)):
        write_arrival(root, kind, i)
    saved = {k: os.environ.get(k) for k in kind.env}
    os.environ.update(kind.env)
    try:
        from streamjoin.settings import Settings

        run_to_end(start(spark, kind.sql(root), root, until_idle=True, settings=Settings.from_env()))
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return kind.read(root)


def read_parts(out: Path) -> list[dict]:
    """A folder output's rows in file order (names sort in emission order)."""
    rows = []
    for part in sorted(out.glob("part-*.jsonl")):
        rows.extend(json.loads(line) for line in part.read_text().splitlines())
    return rows
