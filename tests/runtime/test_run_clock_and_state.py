"""Late rows, rowtime bounds, bounded state, and stopping on a signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from runtime_helpers import read_output, run_until_idle, start, ts, write_jsonl
from streamjoin.io.sources.staging import BOUND, END_US, Manifest, Stager

pytestmark = [pytest.mark.spark]  # runs, in the session and as `streamjoin run`

DDL = """CREATE STREAM a (k INT, x INT) WITH (connector = 'files', format = 'json', path = '{a}', lateness = '{lateness}');
CREATE STREAM b (k INT, y INT) WITH (connector = 'files', format = 'json', path = '{b}');
SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS a
  LEFT JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS b ON a.k = b.k;
"""


def test_late_rows_are_counted_and_written_to_the_late_rows_output(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(10_000), "k": 1, "x": 1}])
    write_jsonl(b / "1.json", [{"rowtime": ts(10_000), "k": 1, "y": 7}])
    runner = start(spark, DDL.format(a=a, b=b, lateness="2 SECONDS"), tmp_path / "run")
    try:
        runner.process_available()
        # a's clock is now 10 s - 2 s lateness = 8 s: 9 s is on time, 7 s is late
        write_jsonl(a / "2.json", [{"rowtime": ts(9_000), "k": 1, "x": 2}, {"rowtime": ts(7_000), "k": 1, "x": 3}])
        runner.process_available()
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    assert status["late_rows"] == 1 and status["inputs"]["a"]["late_rows"] == 1
    late = [json.loads(line) for f in sorted((tmp_path / "run" / "out" / "late" / "a").glob("*.jsonl")) for line in f.read_text().splitlines()]
    assert late == [{"k": 1, "x": 3, "rowtime": ts(7_000)}]
    rows = read_output(tmp_path / "run" / "out")
    assert sorted((r["x"], r["y"]) for r in rows) == [(1, 7), (2, 7)]


def test_a_rowtime_bound_releases_final_rows_without_new_data(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])  # matches nothing
    write_jsonl(b / "1.json", [{"rowtime": ts(1_000), "k": 2, "y": 5}])
    runner = start(spark, DDL.format(a=a, b=b, lateness="0 SECONDS"), tmp_path / "run")
    try:
        runner.process_available()
        assert read_output(tmp_path / "run" / "out") == []  # a's row may still find a match
        write_jsonl(a / "2.json", [{"rowtime": ts(60_000), "_bound": True}])
        write_jsonl(b / "2.json", [{"rowtime": ts(60_000), "_bound": True}])
        deadline = time.time() + 120  # the bound moves the watermark; a no-data batch evicts and releases
        rows = []
        while not rows and time.time() < deadline:
            runner.process_available()
            time.sleep(0.5)
            rows = read_output(tmp_path / "run" / "out")
    finally:
        runner.stop("stopped")
    assert rows == [{"rowtime": ts(1_000), "k": 1, "x": 1, "y": None}]


def test_an_until_idle_run_reads_joins_and_flushes_its_input_in_two_micro_batches(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}, {"rowtime": ts(2_000), "k": 2, "x": 2}])
    write_jsonl(b / "1.json", [{"rowtime": ts(1_500), "k": 1, "y": 5}])
    from runtime_helpers import run_to_end
    from streamjoin.settings import Settings

    # Spark's native join (the batch interval join reads, joins and flushes in one micro-batch)
    runner = start(spark, DDL.format(a=a, b=b, lateness="0 SECONDS"), tmp_path / "run", until_idle=True,
                   settings=Settings(join_operator="native"))
    status = run_to_end(runner)
    rows = read_output(tmp_path / "run" / "out")
    # the unmatched row of a is only known at end of input: the flush is in the second batch
    assert rows == [{"rowtime": ts(1_500), "k": 1, "x": 1, "y": 5}, {"rowtime": ts(2_000), "k": 2, "x": 2, "y": None}]
    # batch 0 reads the rows with the end of input; batch 1 is Spark's no-data batch at +infinity
    assert status["batch"] == 1
    for alias in ("a", "b"):
        m = Manifest.load(tmp_path / "run" / "checkpoint" / "sources" / alias / "manifest.json")
        assert (m.steps, m.ended, m.bound_us) == (1, True, END_US)


def test_end_of_input_is_staged_with_the_last_rows_read_and_nothing_is_read_after_it(tmp_path):
    from streamjoin.lower.inputs import input_specs
    from streamjoin.plan import compile_sql

    a, b = tmp_path / "a", tmp_path / "b"
    script = compile_sql(DDL.format(a=a, b=b, lateness="0 SECONDS"))
    spec = input_specs(script, script.final, tmp_path / "checkpoint", tmp_path / "late")[0]
    stager = Stager(spec)
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])
    assert stager.advance() == 1  # no end asked for: rows only
    write_jsonl(a / "2.json", [{"rowtime": ts(2_000), "k": 2, "x": 2}])
    (stager.dir / "END").touch()
    assert stager.advance() == 2
    import pyarrow.parquet as pq

    step = pq.read_table(stager.step_path(1)).to_pylist()
    assert [(r["x"], r[BOUND]) for r in step] == [(2, False), (None, True)]
    assert int(step[1]["rowtime"].timestamp() * 1_000_000) == END_US
    write_jsonl(a / "3.json", [{"rowtime": ts(3_000), "k": 3, "x": 3}])  # arrives after the end
    assert stager.advance() == 2
    m = stager.manifest()
    assert (m.ended, m.files, m.rows) == (True, ["1.json", "2.json"], 2)


def test_a_manifest_from_before_the_one_step_end_of_input_still_loads(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"files": ["1.json"], "steps": 3, "rows": 1, "late_rows": 0, "max_rowtime_us": 1,
                                "bound_us": END_US, "end_seen": True, "ended": True, "flushed": True}))
    m = Manifest.load(path)
    assert (m.files, m.steps, m.ended, m.bound_us) == (["1.json"], 3, True, END_US)


def test_state_stops_growing_once_the_windows_are_full(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    runner = start(spark, DDL.format(a=a, b=b, lateness="0 SECONDS"), tmp_path / "run")
    state = []
    try:
        for step in range(12):  # 12 steps of 2 s, 20 rows per input per step
            base = step * 2_000
            write_jsonl(a / f"{step:03d}.json", [{"rowtime": ts(base + i * 100), "k": i % 5, "x": i} for i in range(20)])
            write_jsonl(b / f"{step:03d}.json", [{"rowtime": ts(base + i * 100), "k": i % 5, "y": i} for i in range(20)])
            runner.process_available()
            state.append(runner.status.write(runner.query)["state_rows"])
    finally:
        runner.stop("stopped")
    # the windows hold about one second of rows; later steps never hold more than early ones
    assert min(state) > 0, state  # a state counter stuck at 0 would pass the bounds below (issue 44)
    assert max(state[6:]) <= max(state[2:6])
    assert max(state) < 12 * 40 / 3


def test_run_without_until_idle_stops_cleanly_on_sigterm(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])
    write_jsonl(b / "1.json", [{"rowtime": ts(1_000), "k": 1, "y": 2}])
    query = tmp_path / "q.sql"
    query.write_text(DDL.format(a=a, b=b, lateness="0 SECONDS"))
    checkpoint = tmp_path / "checkpoint"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamjoin.cli", "run", str(query), "--output", str(tmp_path / "out"), "--checkpoint", str(checkpoint)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    status_file = checkpoint / "status.json"
    deadline = time.time() + 240
    while time.time() < deadline and not (status_file.exists() and json.loads(status_file.read_text()).get("batch") is not None):
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert json.loads(status_file.read_text())["state"] == "stopped"
    assert err.strip().splitlines()[-1].startswith("streamjoin: stopped:")


CUSTOM = """CREATE STREAM a (k INT, x INT) WITH (connector = 'files', format = 'json', path = '{a}');
CREATE STREAM b (k INT, y INT) WITH (connector = 'files', format = 'json', path = '{b}');
SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER ({wa}) AS a
  FULL JOIN b OVER ({wb}) AS b ON a.k = b.k EMIT CHANGES;
"""


def test_the_custom_operator_state_stops_growing_on_a_long_input(spark, tmp_path):
    # ROWS (per key) on one side and RANGE on the other: both run on streamjoin's operator
    a, b = tmp_path / "a", tmp_path / "b"
    sql = CUSTOM.format(a=a, b=b, wa="PARTITION BY k ROWS 2 PRECEDING", wb="RANGE INTERVAL '1' SECOND PRECEDING")
    runner = start(spark, sql, tmp_path / "run")
    state, emitted = [], []
    try:
        for step in range(10):  # 10 steps of 2 s, 20 rows per input per step, 5 keys
            base = step * 2_000
            write_jsonl(a / f"{step:03d}.json", [{"rowtime": ts(base + i * 100), "k": i % 5, "x": i} for i in range(20)])
            write_jsonl(b / f"{step:03d}.json", [{"rowtime": ts(base + i * 100), "k": i % 5, "y": i} for i in range(20)])
            runner.process_available()
            snap = runner.status.write(runner.query)
            state.append(snap["state_rows"])
            emitted.append(snap["rows_emitted"])
    finally:
        runner.stop("stopped")
    # a holds 3 rows per key (15), b about one second of rows (~10-30), plus the last step's
    # buffered rows: bounded, and later steps never hold more than early ones
    assert state[3] > 0 and emitted[-1] > emitted[3] > 0
    assert max(state[7:]) <= max(state[2:7])
    assert max(state) < 120


def test_at_end_of_input_status_json_says_end_of_input_for_every_clock_and_the_watermark(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])
    write_jsonl(b / "1.json", [{"rowtime": ts(1_000), "k": 1, "y": 2}])
    _, status = run_until_idle(spark, DDL.format(a=a, b=b, lateness="2 SECONDS"), tmp_path / "run")
    written = json.loads((tmp_path / "run" / "checkpoint" / "status.json").read_text())
    for snap in (status, written):
        assert snap["join_clock"] == "end of input" and snap["watermark"] == "end of input"
        assert {i["clock"] for i in snap["inputs"].values()} == {"end of input"}
        text = json.dumps(snap)
        assert not any(year in text for year in ("7999-", "8000-", "9000-", "9999-")), text
