"""The batch interval join's keyed probe (lower.batch.batch_join.keyed_rows, lower.batch.interval_probe):
chosen for live runs whose keys are plain columns of one type and whose condition is only keys and
the time range; on rows arriving over many micro-batches it writes what the scan of the retained
steps writes, for every join type and plain column type, NULL keys included, across a stop and a
change of its number of tasks. The batch join runs no Spark streaming query: each join is
reported as a micro-batch."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest
from runtime_helpers import read_output, run_to_end, run_until_idle, start, ts, write_jsonl
from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.batch import batch_join
from streamjoin.lower.batch.keyed_probe import arrow_output
from streamjoin.lower.columns import flat
from streamjoin.lower.explain import explain_text
from streamjoin.lower.probe_keys import keyed_sides
from streamjoin.plan.compile import compile_sql
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.settings import Settings
from test_run_asof_columns import canonical, ddl, rows

KEYED = Settings(join_operator="batch", batch_probe="keyed")  # on the tests' local master: in the driver
TASKS = Settings(join_operator="batch", batch_probe="keyed", probe_in="tasks")
SCAN = Settings(join_operator="batch", batch_probe="scan")

QUERY = ("SELECT STREAM ROWTIME, l.id AS lid, r.id AS rid, l.k AS k, r.n AS rn, r.x AS rx, r.ok AS rok, r.seen AS rseen, "
         "l.seen AS lseen FROM l {how} JOIN r ON l.k = r.k AND l.n = r.n "
         "AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' SECOND AND l.ROWTIME + INTERVAL '2' SECOND;")


def _files(rng: random.Random, parts: int) -> list[tuple[list[dict], list[dict]]]:
    """`parts` files per input, each later in rowtime than the one before (within the lateness)."""
    out = []
    for part in range(parts):
        pair = []
        for _ in range(2):
            chunk = rows(rng, 30, first_id=100 * part)
            for row in chunk:
                row["rowtime"] = ts(part * 2000 + rng.randrange(0, 8) * 500)
            pair.append(sorted(chunk, key=lambda row: row["rowtime"]))
        out.append((pair[0], pair[1]))
    return out


@pytest.mark.parametrize("how", ["INNER", "FULL", pytest.param("LEFT", marks=pytest.mark.long),
                                 pytest.param("RIGHT", marks=pytest.mark.long)])
@pytest.mark.parametrize("place", ["driver", "tasks"])
def test_the_keyed_probe_writes_what_the_scan_writes_over_many_micro_batches_and_a_stop(spark, tmp_path, how, place):
    _keyed_against_scan(spark, tmp_path, how, KEYED if place == "driver" else TASKS)


@pytest.mark.parametrize("where", ["", "WHERE r.n > 1 OR l.k IS NULL"])
def test_the_keyed_probe_in_the_driver_computes_output_expressions_as_spark_does(spark, tmp_path, where):
    # ROWTIME and plain columns are taken in Arrow; an expression or a WHERE goes through Spark
    query = ("SELECT STREAM ROWTIME, l.id + r.id AS ids, UPPER(l.k) AS k, l.SEEN AS lseen, r.x * 2 AS x2 "
             f"FROM l FULL JOIN r ON l.k = r.k AND l.n = r.n "
             f"AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' SECOND AND l.ROWTIME + INTERVAL '2' SECOND {where};")
    sql = ddl(tmp_path / "l", tmp_path / "r", "3 SECONDS") + query
    runner = start(spark, sql, tmp_path / "run", settings=KEYED)
    try:
        for n, (left, right) in enumerate(_files(random.Random(f"driver-{where}"), 4)):
            write_jsonl(tmp_path / "l" / f"{n:02d}.json", left)
            write_jsonl(tmp_path / "r" / f"{n:02d}.json", right)
            runner.process_available()
    finally:
        runner.stop("stopped")
    _, driver, scanned = _to_the_end_and_scanned(spark, sql, tmp_path, KEYED)
    assert len(driver) > 20 and canonical(driver) == canonical(scanned)
    assert any(r["ids"] is None for r in driver) and any(r["x2"] is not None for r in driver)


def test_a_plain_projection_over_the_keyed_probe_in_the_driver_starts_no_spark_job(spark, tmp_path):
    sql = ddl(tmp_path / "l", tmp_path / "r", "3 SECONDS") + QUERY.format(how="FULL")
    runner = start(spark, sql, tmp_path / "run", settings=KEYED)
    tracker = spark.sparkContext.statusTracker()
    jobs = []
    try:
        for n, (left, right) in enumerate(_files(random.Random("no-job"), 4)):
            write_jsonl(tmp_path / "l" / f"{n:02d}.json", left)
            write_jsonl(tmp_path / "r" / f"{n:02d}.json", right)
            before = len(tracker.getJobIdsForGroup(None))
            runner.process_available()
            jobs.append(len(tracker.getJobIdsForGroup(None)) - before)
        assert runner.sink.state().last_batch >= 3
    finally:
        runner.stop("stopped")
    assert jobs == [0, 0, 0, 0], jobs
    assert len(read_output(tmp_path / "run" / "out")) > 0


def test_the_keyed_probe_writes_the_same_rows_when_its_window_grows_past_one_task(spark, tmp_path, monkeypatch):
    # a few rows per task: each part of the run starts with one task and goes to two (every
    # worker's index of the one-task split is dropped and the two-task split read anew)
    monkeypatch.setattr(batch_join, "PROBE_TASK_ROWS", 100)
    tasks = _keyed_against_scan(spark, tmp_path, "FULL", TASKS)
    assert tasks == [1, 2] and spark.sparkContext.defaultParallelism >= 2


def _to_the_end_and_scanned(spark, sql: str, tmp_path, settings: Settings) -> tuple[dict, list[dict], list[dict]]:
    """The stopped run started again and run to the end of its input (its status and rows), and the
    scan's rows of the same input."""
    status = run_to_end(start(spark, sql, tmp_path / "run", settings=settings))
    scanned, _ = run_until_idle(spark, sql, tmp_path / "scan", settings=SCAN)
    return status, read_output(tmp_path / "run" / "out"), scanned


def _keyed_against_scan(spark, tmp_path, how: str, settings: Settings) -> list[int]:
    """Runs the keyed probe on 8 files per input, stopping after 4, and compares its rows with
    the scan's; returns the probe's tasks at the first join and at the stop."""
    rng = random.Random(f"keyed-{how}")
    files = _files(rng, 8)
    sql = ddl(tmp_path / "l", tmp_path / "r", "3 SECONDS") + QUERY.format(how=how)
    runner = start(spark, sql, tmp_path / "run", settings=settings)
    assert runner.lowered.batch.keyed == (("k", "n"), ("k", "n"))
    tasks = []
    try:
        for n, (left, right) in enumerate(files[:4]):
            write_jsonl(tmp_path / "l" / f"{n:02d}.json", left)
            write_jsonl(tmp_path / "r" / f"{n:02d}.json", right)
            runner.process_available()
            tasks = tasks or [runner.lowered.batch._tasks]
    finally:
        runner.stop("stopped")
    tasks.append(runner.lowered.batch._tasks)
    for n, (left, right) in enumerate(files[4:], start=4):
        write_jsonl(tmp_path / "l" / f"{n:02d}.json", left)
        write_jsonl(tmp_path / "r" / f"{n:02d}.json", right)
    status, keyed, scanned = _to_the_end_and_scanned(spark, sql, tmp_path, settings)
    assert status["late_rows"] == 0 and len(keyed) > 40
    assert canonical(keyed) == canonical(scanned)
    assert any(r["rseen"] is not None for r in keyed) and any(r["rx"] is not None for r in keyed)
    if how != "INNER":
        assert any(r["rid"] is None or r["lid"] is None for r in keyed)
    return tasks


def test_a_batch_join_runs_no_spark_streaming_query_and_reports_each_join_as_a_micro_batch(spark, tmp_path):
    files = _files(random.Random("reported"), 3)
    sql = ddl(tmp_path / "l", tmp_path / "r", "3 SECONDS") + QUERY.format(how="INNER")
    runner = start(spark, sql, tmp_path / "run", settings=KEYED)
    try:
        for n, (left, right) in enumerate(files):
            write_jsonl(tmp_path / "l" / f"{n:02d}.json", left)
            write_jsonl(tmp_path / "r" / f"{n:02d}.json", right)
            runner.process_available()
        assert runner.name not in [q.name for q in spark.streams.active]
        status = json.loads((runner.checkpoint / "status.json").read_text())
        # every join is a batch; the watermark is the joined clocks' minimum, here the join clock
        assert status["batch"] == runner.sink.state().last_batch >= 1
        assert status["watermark"] == status["join_clock"] is not None and status["last_batch_ms"] is not None
        assert status["rows_emitted"] > 0 and status["state_rows"] > 0
    finally:
        final = runner.stop("stopped")
    assert final["state"] == "stopped" and not (runner.checkpoint / "spark").exists()


def _spec(alias: str, fields: dict[str, pa.DataType]) -> InputSpec:
    schema = pa.schema([*fields.items(), ("rowtime", pa.timestamp("us", tz="UTC"))])
    return InputSpec(alias, "/in", "json", schema, "rowtime", 0, "/state", "/late")


def test_the_keyed_probe_runs_only_on_plain_keys_of_one_type_without_another_condition(tmp_path):
    def sides(condition: str, left=None, right=None):
        sql = ddl(tmp_path / "l", tmp_path / "r") + (
            f"SELECT STREAM l.id AS lid FROM l JOIN r ON {condition} "
            "AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' SECOND AND l.ROWTIME;")
        join = compile_sql(sql).final.joins[0]
        plain = {"id": pa.int32(), "k": pa.string(), "n": pa.int64(), "x": pa.float64()}
        return keyed_sides(join, _spec("l", left or plain), _spec("r", right or plain))

    assert sides("l.k = r.k AND r.n = l.n") == (("k", "n"), ("k", "n"))
    assert sides("l.k = r.k AND l.x > r.x") is None  # another condition
    assert sides("UPPER(l.k) = r.k") is None  # a key that is not a column
    assert sides("l.x = r.x") is None  # floating keys (0.0 = -0.0, NaN = NaN in Spark)
    assert sides("l.n = r.n", right={"id": pa.int32(), "k": pa.string(), "n": pa.int32(), "x": pa.float64()}) is None
    assert sides("l.n = r.n", left={"id": pa.int32(), "k": pa.string(), "n": pa.int64(), "x": pa.list_(pa.int64())}) is None


def test_explain_says_how_the_batch_join_finds_its_pairs(tmp_path):
    sql = ddl(tmp_path / "l", tmp_path / "r") + QUERY.format(how="INNER")
    from streamjoin.lower.strategy import LoweringOptions

    script = Pipeline.from_sql(sql, "q.sql", Settings(join_operator="batch")).script
    assert "pairs: by key in an index of the retained rows that the driver keeps" in explain_text(script)  # a live run
    assert "probe: keyed, in the driver" in explain_text(script)  # (its plan)
    tasks = explain_text(script, LoweringOptions(probe_in="tasks"))
    assert "that each task's Python worker keeps" in tasks and "probe: keyed, in the tasks" in tasks
    bounded = explain_text(script, LoweringOptions(bounded=True))  # `explain --until-idle`: auto scans a bounded run
    assert "pairs: by scanning the retained steps" in bounded and "probe: scan" in bounded


def test_the_keyed_probe_carries_dates_and_decimals_as_the_scan_does(spark, tmp_path):
    ddl_ = "".join(
        f"CREATE STREAM {s} (id INT, k BIGINT, d DATE, m DECIMAL(12, 2)) "
        f"WITH (connector = 'files', format = 'json', path = '{tmp_path / s}', lateness = '3 SECONDS');\n" for s in ("l", "r"))
    sql = ddl_ + ("SELECT STREAM ROWTIME, l.id AS lid, r.id AS rid, l.d AS ld, r.m AS rm FROM l LEFT JOIN r ON l.k = r.k "
                  "AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' SECOND AND l.ROWTIME + INTERVAL '1' SECOND;")
    rng = random.Random("keyed-dates")
    runner = start(spark, sql, tmp_path / "run", settings=KEYED)
    assert runner.lowered.batch.keyed == (("k",), ("k",))
    try:
        for part in range(3):
            for s in ("l", "r"):
                rows_ = [{"id": 100 * part + i, "k": rng.choice([1, 2, None]), "d": rng.choice(["2024-02-29", None]),
                          "m": rng.choice(["12.50", "-0.01", None]), "rowtime": ts(part * 2000 + i * 100)} for i in range(15)]
                write_jsonl(tmp_path / s / f"{part}.json", rows_)
            runner.process_available()
    finally:
        runner.stop("stopped")
    _, keyed, scanned = _to_the_end_and_scanned(spark, sql, tmp_path, KEYED)
    assert canonical(keyed) == canonical(scanned)
    assert any(r["ld"] == "2024-02-29" for r in keyed) and any(r["rm"] is not None for r in keyed)


def test_the_driver_takes_plain_output_columns_in_arrow_and_leaves_expressions_to_spark(tmp_path):
    us = pa.timestamp("us", tz="UTC")

    def output(select: str, where: str = ""):
        sql = ddl(tmp_path / "l", tmp_path / "r") + (
            f"SELECT STREAM {select} FROM l LEFT JOIN r ON l.k = r.k "
            f"AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' SECOND AND l.ROWTIME {where};")
        specs = [_spec(a, {"id": pa.int32(), "k": pa.string(), "SEEN" if a == "l" else "seen": us}) for a in ("l", "r")]
        return arrow_output(compile_sql(sql).final, ["l", "r"], {flat(s.alias, f.name) for s in specs for f in s.schema})

    joined = pa.table({"l__id": [1, 2], "l__k": ["a", "b"], "l__SEEN": pa.array([None, 5], us), "l__rowtime": pa.array([10, 20], us),
                       "r__id": [7, None], "r__k": ["a", None], "r__seen": pa.array([3, None], us),
                       "r__rowtime": pa.array([15, None], us)})
    plain = output("ROWTIME AS t, l.id AS lid, r.id AS rid, l.seen AS ls")  # (l.seen: Spark finds l__SEEN too)
    assert plain is not None
    rows = plain(joined).to_pylist()
    # ROWTIME: the later rowtime of the two, the only one of a NULL-extended row
    assert [r["t"] for r in rows] == [r["__rowtime"] for r in rows] == joined["r__rowtime"].to_pylist()[:1] + [rows[1]["t"]]
    assert rows[1]["t"] == joined["l__rowtime"].to_pylist()[1] and [r["rid"] for r in rows] == [7, None]
    assert [r["ls"] for r in rows] == joined["l__SEEN"].to_pylist()
    assert output("l.id + 1 AS lid") is None and output("UPPER(l.k) AS k") is None
    assert output("l.id AS lid", "WHERE r.id > 1") is None
