"""The batch interval join (lower.batch.batch_join, lower.batch.batch_sink): chosen where it runs the query,
exact results when rows arrive over many micro-batches (pairs across steps, NULL-extended rows
when rows leave the range), exactly once across a stop and a crash, state bounded by the range."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from runtime_helpers import ms, read_output, run_to_end, start, ts, write_jsonl
from streamjoin.lower.strategy import LoweringOptions, batch_reason
from streamjoin.plan.compile import compile_sql
from streamjoin.settings import Settings
from test_differential import CASES_PER_SHAPE, expected, generate_rows, shape_sql

BATCH = Settings(join_operator="batch")
# the tests that hold or break `BatchJoin.step` find the pairs by scanning (a live run's keyed
# probe is `BatchJoin.keyed_rows`, tests/lower/test_batch_keyed_probe.py)
SCAN = Settings(join_operator="batch", batch_probe="scan")


def _shapes():
    shapes = []
    rng = random.Random(20261124)
    for join_type in ("INNER", "LEFT", "RIGHT", "FULL"):
        for condition in ("key", "key+theta", "theta"):
            windows = [(rng.randint(0, 4), 0), (rng.randint(0, 4), 0)]
            if rng.random() < 0.3:
                windows[0] = (4, rng.randint(1, 3))  # a lag: presence starts after the rowtime
            shapes.append((windows, [(join_type, condition, 0)]))
    return shapes


SHAPES = _shapes()


def _rows(rng: random.Random) -> list[list[dict]]:
    """Two inputs over a minute, a few rows per case, in rowtime order up to a 4 s shuffle."""
    return generate_rows(rng, 2, per_case=(2, 12), grid=120, shuffle_ms=4000)


def _got(rows) -> dict:
    got = {c: Counter() for c in range(CASES_PER_SHAPE)}
    for r in rows:
        got[r["c"]][(ms(r["rowtime"]), r["id0"], r["id1"])] += 1
    return got


def _write(streams, dirs, n: int, first_row: int, last_row: int) -> None:
    """File `n` of each input: its rows `first_row` .. `last_row - 1`."""
    for rows, d in zip(streams, dirs, strict=True):
        write_jsonl(d / f"{n:03d}.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[first_row:last_row]])


def _deliver(runner, streams, dirs, chunk: int, first: int, last: int) -> None:
    """Files `first` .. `last - 1` of each input (each `chunk` rows), one micro-batch each."""
    for n in range(first, last):
        _write(streams, dirs, n, n * chunk, (n + 1) * chunk)
        runner.process_available()


@pytest.mark.parametrize("shape", [
    # per join type, the key+theta shape runs in `make test`; the key-only and theta-only ones in `make test-long`
    pytest.param(i, id=f"{s[1][0][0]}.{s[1][0][1]}_w{s[0]}", marks=() if s[1][0][1] == "key+theta" else pytest.mark.long)
    for i, s in enumerate(SHAPES)
])
def test_batch_join_gives_the_reference_result_when_rows_arrive_over_many_micro_batches(spark, tmp_path, shape):
    windows, steps = SHAPES[shape]
    streams = _rows(random.Random(shape))
    dirs = [tmp_path / "in0", tmp_path / "in1"]
    for d in dirs:
        d.mkdir()
    sql = shape_sql(windows, steps, dirs)
    script = compile_sql(sql)
    assert batch_reason(script, script.final, LoweringOptions("batch")) is None
    runner = start(spark, sql, tmp_path / "run", settings=BATCH)
    try:
        chunk = max(len(r) for r in streams) // 8 + 1
        _deliver(runner, streams, dirs, chunk, 0, 9)
        held = runner.sink.status()["operator_state_rows"]
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    rows = read_output(tmp_path / "run" / "out")
    rowtimes = [ms(r["rowtime"]) for r in rows]
    assert rowtimes == sorted(rowtimes), "EMIT FINAL output must come in non-descending rowtime order"
    assert status["late_rows"] == 0
    assert _got(rows) == expected(windows, steps, streams)
    assert held < sum(len(s) for s in streams), "rows out of range are no longer retained"


@pytest.mark.parametrize("join_type", ["INNER", "LEFT", "RIGHT", "FULL"])
def test_a_large_arrival_is_staged_as_several_steps_and_joined_a_slice_at_a_time_with_the_reference_result(
        spark, tmp_path, monkeypatch, join_type):
    from streamjoin.io.sources import staging
    from streamjoin.lower.batch import batch_sink

    monkeypatch.setattr(staging, "STEP_ROWS", 9)  # one file per input becomes many steps
    monkeypatch.setattr(batch_sink, "GROUP_ROWS", 20)  # joined a few steps at a time
    runner, streams = _bounded_run_with_the_reference_result(spark, tmp_path, (join_type, "key", 0), 11, BATCH)
    assert runner.stagers[0].manifest().steps >= len(streams[0]) // 9
    assert runner.sink.state().last_batch > 3, "joined slice by slice, not all at once"
    assert len(list((tmp_path / "run" / "out").glob("part-*"))) > 1, "released slice by slice, not all at the end"


def _bounded_run_with_the_reference_result(spark, tmp_path, step: tuple, seed: int, settings: Settings):
    """A bounded run of one file per input (random rows of `seed`) through `step`'s join, its output
    checked: in rowtime order, nothing late, the reference's rows. (the runner, the inputs' rows)"""
    windows, steps = [(4, 0), (3, 1)], [step]
    streams = _rows(random.Random(seed))
    dirs = [tmp_path / "in0", tmp_path / "in1"]
    for rows, d in zip(streams, dirs, strict=True):
        write_jsonl(d / "all.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows])
    runner = start(spark, shape_sql(windows, steps, dirs), tmp_path / "run", until_idle=True, settings=settings)
    status = run_to_end(runner)
    rows = read_output(tmp_path / "run" / "out")
    assert [ms(r["rowtime"]) for r in rows] == sorted(ms(r["rowtime"]) for r in rows)
    assert status["late_rows"] == 0
    assert _got(rows) == expected(windows, steps, streams)
    return runner, streams


@pytest.mark.parametrize("join_type", ["INNER", "FULL"])
def test_inputs_above_the_broadcast_bound_are_joined_shuffled_with_the_reference_result(spark, tmp_path, monkeypatch, join_type):
    """A bounded run's 1M rows an input are joined with both sides shuffled (lower.batch.batch_join.BROADCAST_ROWS):
    here every side is above a bound of 0, the pairs and the NULL-extended rows as the reference says."""
    from streamjoin.lower.batch import batch_join

    monkeypatch.setattr(batch_join, "BROADCAST_ROWS", 0)
    planned = []
    real = batch_join.BatchJoin._bucket_join
    monkeypatch.setattr(batch_join.BatchJoin, "_bucket_join",
                        lambda self, own, reach, how, broadcast: planned.append(broadcast) or real(self, own, reach, how, broadcast))
    _bounded_run_with_the_reference_result(spark, tmp_path, (join_type, "key+theta", 0), 12, SCAN)
    assert planned and not any(planned), "every join of the step shuffled, none broadcast"


def test_batch_join_is_exactly_once_across_a_stop_and_a_crash_before_a_release(spark, tmp_path, monkeypatch):
    windows, steps = [(2, 0), (3, 0)], [("FULL", "key", 0)]
    streams = _rows(random.Random(7))
    dirs = [tmp_path / "in0", tmp_path / "in1"]
    for d in dirs:
        d.mkdir()
    sql = shape_sql(windows, steps, dirs)
    chunk = max(len(r) for r in streams) // 8 + 1
    runner = start(spark, sql, tmp_path / "run", settings=BATCH)
    try:
        _deliver(runner, streams, dirs, chunk, 0, 3)
    finally:
        runner.stop("stopped")

    # a crash after a micro-batch's rows are recorded, before they are written
    from streamjoin.lower.batch.batch_sink import BatchJoinSink

    original = BatchJoinSink._release
    crashed = []

    def crash_once(self, threshold):
        if not crashed:
            crashed.append(threshold)
            raise RuntimeError("killed before the release")
        return original(self, threshold)

    monkeypatch.setattr(BatchJoinSink, "_release", crash_once)
    runner = start(spark, sql, tmp_path / "run", settings=BATCH)
    try:
        with pytest.raises(Exception):  # noqa: B017 - the query fails, whatever Spark wraps it in
            _deliver(runner, streams, dirs, chunk, 3, 4)
    finally:
        runner.stop("failed")
    assert crashed
    monkeypatch.setattr(BatchJoinSink, "_release", original)

    runner = start(spark, sql, tmp_path / "run", settings=BATCH)
    try:
        _deliver(runner, streams, dirs, chunk, 4, 9)
        runner.end_of_input()
    finally:
        runner.stop("finished")
    assert _got(read_output(tmp_path / "run" / "out")) == expected(windows, steps, streams)


def test_auto_picks_the_batch_join_for_bounded_runs_short_ranges_and_keys_the_probe_takes():
    def reason(window: str, bounded: bool, on: str = "a.k = b.k", probe: str = "auto"):
        sql = ("CREATE STREAM a (k INT) WITH (connector = 'files', path = '/a');"
               "CREATE STREAM b (k INT) WITH (connector = 'files', path = '/b');"
               f"SELECT STREAM a.k FROM a OVER (RANGE INTERVAL {window} PRECEDING) AS a JOIN b ON {on};")
        script = compile_sql(sql)
        return batch_reason(script, script.final, LoweringOptions(bounded=bounded, batch_probe=probe))

    assert reason("'1' MINUTE", bounded=False) is None
    assert reason("'1' HOUR", bounded=True) is None
    assert reason("'1' HOUR", bounded=False) is None  # the keyed probe: a micro-batch costs its new rows
    assert "long" in reason("'1' HOUR", bounded=False, on="a.k + 1 = b.k")  # an expression: the scan would re-read the hour
    assert "long" in reason("'1' HOUR", bounded=False, probe="scan")
    assert reason("'1' MINUTE", bounded=False, on="a.k + 1 = b.k") is None
    script = compile_sql("CREATE STREAM a (k INT) WITH (connector = 'files', path = '/a');"
                         "CREATE STREAM b (k INT) WITH (connector = 'files', path = '/b');"
                         "SELECT STREAM a.k FROM a OVER (ROWS 3 PRECEDING) AS a JOIN b ON a.k = b.k;")
    assert batch_reason(script, script.final, LoweringOptions("batch")) is not None


def test_rows_are_final_once_the_staged_clocks_pass_them_before_the_join_that_moved_the_clocks():
    from types import SimpleNamespace

    from streamjoin.lower.batch.batch_join import BatchJoin, Clocks
    from streamjoin.plan.model import JoinType

    def batch(join_type):
        return BatchJoin(None, SimpleNamespace(join_type=join_type), None, None, -60_000, 60_000)

    joined, staged = Clocks(100_000_000, 99_000_000), Clocks(103_000_000, 102_000_000)
    inner = batch(JoinType.INNER)
    # nothing staged beyond the joined steps: what the join itself would release
    assert inner.final_below(joined, joined, None) == inner.release_below(joined) == 99_000_000
    # staged, not joined: up to the slower staged clock, or the lowest row those steps hold
    assert inner.final_below(joined, staged, None) == 102_000_000
    assert inner.final_below(joined, staged, 101_500_000) == 101_500_000
    # an outer join's rows that leave by the joined clocks may still be NULL-extended
    left = batch(JoinType.LEFT)
    assert left.final_below(joined, staged, None) == min(102_000_000, left.leave_left(joined)) == 39_000_000
    full = batch(JoinType.FULL)
    assert full.final_below(joined, staged, None) == min(39_000_000, full.leave_right(joined))
    assert inner.final_below(Clocks(None, 5), staged, None) == 102_000_000  # a clock unknown until staged
    assert inner.final_below(Clocks(None, 5), Clocks(None, 5), None) < 0



def test_a_staged_step_releases_the_rows_it_makes_final_while_the_join_of_it_is_still_running(spark, tmp_path, monkeypatch):
    import threading
    import time

    from streamjoin.lower.batch.batch_join import BatchJoin

    windows, steps = [(4, 0), (4, 0)], [("INNER", "key", 0)]
    streams = _rows(random.Random(5))
    dirs = [tmp_path / "in0", tmp_path / "in1"]
    for d in dirs:
        d.mkdir()
    original, joining, go = BatchJoin.step, threading.Event(), threading.Event()
    hold = []

    def held_step(self, *args, **kwargs):
        if hold:
            joining.set()
            go.wait(60)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BatchJoin, "step", held_step)
    runner = start(spark, shape_sql(windows, steps, dirs), tmp_path / "run", settings=SCAN)
    try:
        chunk = max(len(r) for r in streams) // 8 + 1
        _deliver(runner, streams, dirs, chunk, 0, 4)
        done, emitted = runner.sink.state().join["done"], runner.sink.state().rows_emitted
        hold.append(True)
        _write(streams, dirs, 4, 4 * chunk, 5 * chunk)  # the feeder stages it; the join of it waits
        assert joining.wait(30), "the step's join started"
        deadline = time.time() + 20
        while runner.sink.state().rows_emitted == emitted and time.time() < deadline:
            time.sleep(0.1)
        released = runner.sink.state()
        assert released.join["done"] == done, "the join of the new step has not committed"
        assert released.rows_emitted > emitted, "rows below the staged clocks were written before that join ended"
        hold.clear()
        go.set()
        _deliver(runner, streams, dirs, chunk, 5, 9)
        runner.end_of_input()
    finally:
        go.set()
        status = runner.stop("finished")
    rows = read_output(tmp_path / "run" / "out")
    rowtimes = [ms(r["rowtime"]) for r in rows]
    assert rowtimes == sorted(rowtimes)
    assert status["late_rows"] == 0
    assert _got(rows) == expected(windows, steps, streams)


def test_a_join_that_fails_fails_the_query_with_its_reason_whichever_thread_started_it(spark, tmp_path, monkeypatch):
    """A join starts beside the feeder (BatchJoinSink.staged) or in a micro-batch: either way
    its error stops the query, and the runner says why (no rows lost silently)."""
    import time

    from streamjoin.lower.batch.batch_join import BatchJoin

    windows, steps = [(4, 0), (4, 0)], [("INNER", "key", 0)]
    streams = _rows(random.Random(6))
    dirs = [tmp_path / "in0", tmp_path / "in1"]
    for d in dirs:
        d.mkdir()
    original, broken = BatchJoin.step, []

    def step(self, *args, **kwargs):
        if broken:
            raise OSError("disk gone while joining")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(BatchJoin, "step", step)
    runner = start(spark, shape_sql(windows, steps, dirs), tmp_path / "run", settings=SCAN)
    try:
        chunk = max(len(r) for r in streams) // 8 + 1
        _deliver(runner, streams, dirs, chunk, 0, 3)
        broken.append(True)
        _write(streams, dirs, 3, 3 * chunk, 5 * chunk)  # the clocks pass the rows of file 3
        _write(streams, dirs, 4, 6 * chunk, 7 * chunk)
        deadline = time.time() + 30
        while runner.feed_error is None and runner.query.exception() is None and time.time() < deadline:
            time.sleep(0.2)
        with pytest.raises(Exception, match="disk gone while joining"):
            runner.process_available()
    finally:
        runner.fail(RuntimeError("test"))
