"""How a running query gets its input: the driver stages new files (on a feeder thread while
the query runs), and Spark's file source reads the staged Parquet steps in order. The join here
is an interval join, which by default runs as the batch interval join without a Spark streaming
query (lower.batch.batch_sink): these tests name Spark's native join, which reads the steps as a
stream."""

from __future__ import annotations

import time

import pytest
from runtime_helpers import read_output, run_to_end, start, ts, write_jsonl
from streamjoin.io.sources.source import steps_read
from streamjoin.io.sources.staging import Stager
from streamjoin.settings import Settings

DDL = """CREATE STREAM a (k INT, x INT) WITH (connector = 'files', format = 'json', path = '{a}');
CREATE STREAM b (k INT, y INT) WITH (connector = 'files', format = 'json', path = '{b}');
SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS a
  JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS b ON a.k = b.k;
"""
NATIVE = Settings(join_operator="native")


def wait_until(condition, seconds: float = 60) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def all_steps_read(runner) -> bool:
    progress = runner.query.lastProgress
    if not progress:
        return False
    for stager in runner.stagers:
        read = [r for r in (steps_read(runner.checkpoint / "spark", s, stager) for s in progress["sources"]) if r is not None]
        if read != [stager.manifest().steps]:
            return False
    return True


def test_a_file_that_arrives_while_the_query_runs_is_staged_and_joined_without_being_asked(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])
    runner = start(spark, DDL.format(a=a, b=b), tmp_path / "run", settings=NATIVE)
    try:
        write_jsonl(b / "1.json", [{"rowtime": ts(1_500), "k": 1, "y": 7}])
        # no process_available: the feeder thread stages it and the query's trigger reads it
        assert wait_until(lambda: runner.stagers[1].manifest().rows == 1)
        # read: the file source's own log lists b's step (recentProgress is a bounded, racy window)
        assert wait_until(lambda: all_steps_read(runner))
    finally:
        status = runner.stop("stopped")
    assert status["inputs"]["b"]["rows_read"] == 1 and status["inputs"]["b"]["files"] == 1


def test_steps_are_read_in_order_whole_and_once_across_batches_and_a_restart(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    sql = DDL.format(a=a, b=b)
    run = tmp_path / "run 100%"  # Spark's file-source log names files by escaped URI
    runner = start(spark, sql, run, settings=NATIVE)
    try:
        for n in range(3):  # one step per input per round, each its own batch
            write_jsonl(a / f"{n}.json", [{"rowtime": ts(n * 10_000 + i), "k": i, "x": n} for i in range(50)])
            write_jsonl(b / f"{n}.json", [{"rowtime": ts(n * 10_000 + i), "k": i, "y": n} for i in range(50)])
            runner.process_available()
            for stager in runner.stagers:
                sources = runner.query.lastProgress["sources"]
                assert [r for r in (steps_read(runner.checkpoint / "spark", s, stager) for s in sources) if r is not None] \
                    == [stager.manifest().steps]
        # a temporary step file (as the stager writes it before the rename) is not read
        (runner.stagers[0].steps_dir / ".00000099.parquet.tmp").write_bytes(b"not parquet")
        runner.process_available()
    finally:
        runner.stop("stopped")
    write_jsonl(a / "9.json", [{"rowtime": ts(90_000), "k": 1, "x": 9}])
    write_jsonl(b / "9.json", [{"rowtime": ts(90_000), "k": 1, "y": 9}])
    status = run_to_end(start(spark, sql, run, settings=NATIVE))  # same checkpoint: resumes after step 3
    rows = read_output(run / "out")
    assert sorted((r["k"], r["x"], r["y"]) for r in rows) == sorted(
        [(i, n, n) for n in range(3) for i in range(50)] + [(1, 9, 9)])
    assert status["inputs"]["a"]["rows_read"] == 151


def test_a_file_that_cannot_be_staged_while_the_query_runs_fails_it_with_the_reason(spark, tmp_path):
    """With on_error = 'fail' (by default such a row is a dead letter: tests/runtime/test_dead_letters.py)."""
    a, b = tmp_path / "a", tmp_path / "b"
    write_jsonl(a / "1.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])
    ddl = DDL.format(a=a, b=b).replace(f"path = '{b}')", f"path = '{b}', on_error = 'fail')")
    runner = start(spark, ddl, tmp_path / "run")
    write_jsonl(b / "1.json", [{"rowtime": ts(1_000), "k": "not a number", "y": 7}])
    deadline = time.time() + 60
    failure = None
    try:
        runner.wait_for_signal(until=lambda: time.time() > deadline)  # ends when the feeder thread fails
    except Exception as error:  # noqa: BLE001 - the failure under test
        failure = error
        runner.fail(error)
    else:
        runner.stop("stopped")
    assert isinstance(failure, ValueError)
    assert str(failure) == f'{b / "1.json"}:1: column k: "not a number" does not read as int32'
    assert runner.status.final == "failed"
    assert 'column k: "not a number" does not read as int32' in runner.status.error


def test_a_checkpoint_of_the_former_python_source_is_refused_with_a_clear_error(spark, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    offsets = tmp_path / "run" / "checkpoint" / "spark" / "offsets"
    offsets.mkdir(parents=True)
    (offsets / "0").write_text('v1\n{"batchWatermarkMs":0}\n{"steps": 1}\n{"steps": 1}\n')
    with pytest.raises(ValueError, match="start this query on a new checkpoint"):
        start(spark, DDL.format(a=a, b=b), tmp_path / "run")


def test_a_step_is_a_parquet_file_with_row_groups_spark_can_split(tmp_path):
    import pyarrow.parquet as pq
    from streamjoin.io.sources.staging import STEP_CHUNK
    from streamjoin.lower.inputs import input_specs
    from streamjoin.plan import compile_sql

    a, b = tmp_path / "a", tmp_path / "b"
    script = compile_sql(DDL.format(a=a, b=b))
    stager = Stager(input_specs(script, script.final, tmp_path / "checkpoint", tmp_path / "late")[0])
    write_jsonl(a / "1.json", [{"rowtime": ts(i), "k": i, "x": i} for i in range(STEP_CHUNK + 10)])
    assert stager.advance() == 1
    step = pq.ParquetFile(stager.step_path(0))
    assert step.metadata.num_row_groups == 2 and step.metadata.num_rows == STEP_CHUNK + 10
    assert [p.name for p in stager.steps_dir.iterdir()] == ["00000000.parquet"]  # no temporary file left


def test_a_stateless_query_releases_what_it_has_read_once_every_staged_step_is_processed(spark, tmp_path):
    """A stream-table join keeps no state, so Spark runs no batch just to move its watermark:
    the runner releases by the inputs' clocks once the query has read every staged step."""
    events, table = tmp_path / "events", tmp_path / "animals"
    write_jsonl(events / "1.json", [{"id": i, "animal_id": i % 2, "rowtime": ts(1_000 * i)} for i in range(6)])
    table.mkdir()
    (table / "animals.csv").write_text("animal_id,name\n0,cow\n1,cat\n")
    sql = f"""CREATE STREAM e (id INT, animal_id INT) WITH (connector = 'files', format = 'json', path = '{events}');
CREATE TABLE a (animal_id INT PRIMARY KEY, name VARCHAR(8)) WITH (connector = 'files', format = 'csv', path = '{table}');
SELECT STREAM e.id, a.name FROM e JOIN a ON e.animal_id = a.animal_id;
"""
    runner = start(spark, sql, tmp_path / "run")
    try:
        runner.process_available()  # no end of input: only the clocks release
        rows = read_output(tmp_path / "run" / "out")
    finally:
        runner.stop("stopped")
    # the clock is 5 s (the latest rowtime, lateness 0): the row at 5 s waits, since another row
    # with that rowtime may still come; every older row is released
    assert [(r["id"], r["name"]) for r in rows] == [(i, ("cow", "cat")[i % 2]) for i in range(5)]


def test_a_file_that_changes_after_it_was_read_is_reported_as_a_dead_letter_never_silently_ignored(tmp_path):
    """Issue 43: a generator that wrote `sales-00000.jsonl` again, over a file the app had read,
    lost its rows with no word. The file is read once, by name; a change is a dead letter naming
    it and saying what changed, counted in the manifest (status.json's `changed_files`)."""
    import json as jsonlib
    import os

    from streamjoin.lower.inputs import input_specs
    from streamjoin.plan import compile_sql

    a, b = tmp_path / "a", tmp_path / "b"
    script = compile_sql(DDL.format(a=a, b=b))
    stager = Stager(input_specs(script, script.final, tmp_path / "checkpoint", tmp_path / "late")[0])
    write_jsonl(a / "sales-00000.json", [{"rowtime": ts(1_000), "k": 1, "x": 1}])
    stager.advance()
    assert stager.manifest().rows == 1
    write_jsonl(a / "sales-00000.json", [{"rowtime": ts(9_000), "k": 2, "x": 2}, {"rowtime": ts(9_500), "k": 3, "x": 3}])
    os.utime(a / "sales-00000.json", ns=(1, 10**18))  # a different time even where the clock is coarse
    write_jsonl(a / "sales-00001.json", [{"rowtime": ts(2_000), "k": 4, "x": 4}])
    stager.advance()
    m = stager.manifest()
    assert (m.rows, m.changed_files) == (2, 1)  # the new file read, the changed one reported once
    (dead,) = [jsonlib.loads(line) for f in sorted(stager.rejected_dir.glob("rejected-changed-*.jsonl"))
               for line in f.read_text().splitlines()]
    assert dead["source"].endswith("sales-00000.json") and "changed after it was read" in dead["reason"]
    stager._changes_checked = -1e9
    stager.advance()
    assert stager.manifest().changed_files == 1  # not reported again while it stays as it is


def test_staging_a_large_read_gives_the_memory_parsing_kept_back_and_a_small_one_does_not(tmp_path, monkeypatch):
    """A bounded run's peak memory is what each stage keeps: Arrow's allocator kept ~200 MB after
    parsing a 55 MB file (io.storage.memory). Every read says its size; one of LARGE_ROWS rows or more
    hands the memory back (Arrow's pool and glibc's heap), a smaller one leaves it."""
    from streamjoin.io.sources import staging
    from streamjoin.io.storage import memory
    from streamjoin.lower.inputs import input_specs
    from streamjoin.plan import compile_sql

    calls, real = [], memory.give_back
    monkeypatch.setattr(memory, "LARGE_ROWS", 100)
    monkeypatch.setattr(staging, "give_back", lambda rows=None: calls.append(rows) or real(rows))
    a, b = tmp_path / "a", tmp_path / "b"
    script = compile_sql(DDL.format(a=a, b=b))
    stager = Stager(input_specs(script, script.final, tmp_path / "checkpoint", tmp_path / "late")[0])
    write_jsonl(a / "1.json", [{"rowtime": ts(i), "k": i, "x": i} for i in range(99)])
    stager.advance()
    write_jsonl(a / "2.json", [{"rowtime": ts(100 + i), "k": i, "x": i} for i in range(100)])
    stager.advance()
    assert calls == [99, 100] and stager.manifest().rows == 199
    given = []
    monkeypatch.setattr(memory, "_libc", type("Libc", (), {"malloc_trim": staticmethod(lambda pad: given.append(pad))})())
    memory.give_back(99)
    memory.give_back(100)
    assert given == [0]  # a small read gives nothing back, a large one trims the heap
