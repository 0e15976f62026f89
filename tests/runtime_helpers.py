"""Running a SQL text end to end in the test session, and reading what it wrote."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

from streamjoin.runtime.pipeline import Pipeline
from streamjoin.runtime.runner import Runner

BASE = dt.datetime(2024, 1, 1)


def ts(ms: int) -> str:
    return (BASE + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def ms(text: str) -> int:
    return round((dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f") - BASE).total_seconds() * 1000)


def streamjoin(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    """The `streamjoin` command line in a process of its own (output captured as text)."""
    return subprocess.run([sys.executable, "-m", "streamjoin.cli", *map(str, args)], capture_output=True, text=True, timeout=timeout)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    """The rows as a JSON Lines file that lands whole (written aside under a dot name, which no
    input reads, then renamed): a running query's feeder never reads half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.replace(tmp, path)


def start(spark, sql: str, workdir: Path, until_idle: bool = False, settings=None) -> Runner:
    """The query of `sql`, started on `workdir/checkpoint`, writing to `workdir/out`."""
    checkpoint, output = workdir / "checkpoint", workdir / "out"
    runner = Pipeline.from_sql(sql, "test.sql", settings).runner(spark, checkpoint, str(output), until_idle=until_idle)
    try:
        return runner.start()
    except Exception as error:
        runner.fail(error)
        raise


def run_until_idle(spark, sql: str, workdir: Path, settings=None) -> tuple[list[dict], dict]:
    status = run_to_end(start(spark, sql, workdir, until_idle=True, settings=settings))
    return read_output(workdir / "out"), status


def run_to_end(runner: Runner) -> dict:
    """Process what is there, end the input, stop; the final status (a failure is recorded)."""
    try:
        runner.process_available()
        runner.end_of_input()
    except Exception as error:
        runner.fail(error)
        raise
    return runner.stop("finished")


def read_output(out: Path) -> list[dict]:
    rows = []
    for part in sorted(out.glob("part-*.jsonl")):
        rows.extend(json.loads(line) for line in part.read_text().splitlines())
    return rows


def run_in_two_parts(spark, sql: str, workdir: Path, between, settings=(None, None)) -> tuple[dict, dict]:
    """Process what is there and stop; call `between()` (change a table, add input); start again
    from the same checkpoint and run to the end. `settings`: of the first run and the second.
    Returns the two final statuses."""
    runner = start(spark, sql, workdir, settings=settings[0])
    try:
        runner.process_available()
    finally:
        before = runner.stop("stopped")
    between()
    return before, run_to_end(start(spark, sql, workdir, settings=settings[1]))  # the same checkpoint: the query resumes


def resume_with_other_settings(spark, sql: str, tmp_path: Path, first: tuple[list, list], later: tuple[list, list],
                               before, after, whole_with=...) -> tuple[dict, list[dict], list[dict]]:
    """Inputs `l` and `r` under tmp_path: `first` (a.json each) processed with settings `before`,
    stop; `later` (b.json) added; the same checkpoint resumed with `after` to the end. Returns the
    status at the stop, the resumed query's rows, and the rows of one uninterrupted run (with
    settings `whole_with`; by default `before`)."""
    def write(name: str, part: tuple[list, list]) -> None:
        write_jsonl(tmp_path / "l" / name, part[0])
        write_jsonl(tmp_path / "r" / name, part[1])

    write("a.json", first)
    stopped, _ = run_in_two_parts(spark, sql, tmp_path / "run", lambda: write("b.json", later), (before, after))
    whole, _ = run_until_idle(spark, sql, tmp_path / "whole", settings=before if whole_with is ... else whole_with)
    return stopped, read_output(tmp_path / "run" / "out"), whole
