"""The batch interval join of a chain (lower.batch.chain_join, issue 42): three and four streams joined
INNER with time ranges, on the anchors the SQL names, give the reference result whether rows
arrive over many micro-batches or at once in slices, and keep only the rows a future row can
still meet."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from runtime_helpers import ms, read_output, run_to_end, run_until_idle, start, ts, write_jsonl
from streamjoin.lower.strategy import LoweringOptions, batch_reason
from streamjoin.plan.compile import compile_sql
from streamjoin.plan.conditions import chain_reach
from streamjoin.settings import Settings
from test_differential import CASES_PER_SHAPE, expected, generate_rows, shape_sql

BATCH = Settings(join_operator="batch")


def _shapes():
    """INNER chains of 3-4 inputs, each join on a random earlier input (windows as (size, lag) s)."""
    shapes, rng = [], random.Random(20261127)
    for n in (3, 3, 4, 4):
        windows = [(rng.randint(0, 4), 0) for _ in range(n)]
        if rng.random() < 0.5:
            windows[0] = (4, rng.randint(1, 3))  # a lag: presence starts after the rowtime
        steps = [("INNER", rng.choice(["key", "key+theta", "theta"]), rng.randrange(i)) for i in range(1, n)]
        shapes.append((windows, steps))
    return shapes


SHAPES = _shapes()


def _got(rows, n: int) -> dict:
    got = {c: Counter() for c in range(CASES_PER_SHAPE)}
    for r in rows:
        got[r["c"]][(ms(r["rowtime"]), *(r[f"id{i}"] for i in range(n)))] += 1
    return got


def _dirs(tmp_path, n: int) -> list:
    dirs = [tmp_path / f"in{i}" for i in range(n)]
    for d in dirs:
        d.mkdir()
    return dirs


@pytest.mark.parametrize("shape", [pytest.param(i, id=f"{len(s[0])}streams-" + "-".join(f"{c}.s{a}" for _, c, a in s[1]),
                                                marks=() if i == 0 else pytest.mark.long)
                                   for i, s in enumerate(SHAPES)])
def test_a_chain_gives_the_reference_result_when_rows_arrive_over_many_micro_batches(spark, tmp_path, monkeypatch, shape):
    from streamjoin.lower.batch import chain_join

    # both ways of finding a micro-batch's results: a chain per input's new rows (shape 0), one
    # chain over all rows less the retained rows' results (shape 2), chosen by the rows (others)
    monkeypatch.setattr(chain_join, "ALL_AT_ONCE", {0: float("inf"), 2: 0.0}.get(shape, chain_join.ALL_AT_ONCE))
    windows, steps = SHAPES[shape]
    three = len(windows) == 3  # four inputs meet less often: more rows, closer in time
    streams = generate_rows(random.Random(shape), len(windows), per_case=(4, 14) if three else (8, 18),
                            grid=40 if three else 12, shuffle_ms=4000)
    dirs = _dirs(tmp_path, len(windows))
    sql = shape_sql(windows, steps, dirs)
    script = compile_sql(sql)
    assert batch_reason(script, script.final, LoweringOptions("batch")) is None
    runner = start(spark, sql, tmp_path / "run", settings=BATCH)
    chunk = max(len(r) for r in streams) // 8 + 1
    try:
        for n in range(9):  # a file per input per micro-batch: results across files and inputs
            for rows, d in zip(streams, dirs, strict=True):
                write_jsonl(d / f"{n:03d}.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[n * chunk:(n + 1) * chunk]])
            runner.process_available()
        held = runner.sink.status()["operator_state_rows"]
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    assert runner.sink.state().last_batch > 3, "joined as the files came, not all at the end"
    rows = read_output(tmp_path / "run" / "out")
    rowtimes = [ms(r["rowtime"]) for r in rows]
    assert rowtimes == sorted(rowtimes), "EMIT FINAL output must come in non-descending rowtime order"
    assert status["late_rows"] == 0
    want = expected(windows, steps, streams)
    assert sum(sum(c.values()) for c in want.values()) > 20, "the shape must produce results to compare"
    assert _got(rows, len(windows)) == want
    if three:  # (four inputs' rows span 6 s, less than the 10 s lateness: every row stays in range)
        assert held < sum(len(s) for s in streams), "rows no future row can meet are no longer retained"


def test_a_large_arrival_on_a_chain_is_joined_a_slice_at_a_time_with_the_reference_result(spark, tmp_path, monkeypatch):
    from streamjoin.io.sources import staging
    from streamjoin.lower.batch import batch_sink

    monkeypatch.setattr(staging, "STEP_ROWS", 9)  # one file per input becomes many steps
    monkeypatch.setattr(batch_sink, "GROUP_ROWS", 30)  # joined a few steps at a time
    windows, steps = [(3, 0), (2, 0), (4, 0)], [("INNER", "key", 0), ("INNER", "key+theta", 1)]
    streams = generate_rows(random.Random(5), 3, per_case=(4, 14), grid=40, shuffle_ms=4000)
    dirs = _dirs(tmp_path, 3)
    for rows, d in zip(streams, dirs, strict=True):
        write_jsonl(d / "all.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows])
    runner = start(spark, shape_sql(windows, steps, dirs), tmp_path / "run", until_idle=True)  # auto: bounded
    assert type(runner.sink.batch).__name__ == "ChainJoin"
    status = run_to_end(runner)
    assert runner.sink.state().last_batch > 3, "joined slice by slice, not all at once"
    rows = read_output(tmp_path / "run" / "out")
    assert [ms(r["rowtime"]) for r in rows] == sorted(ms(r["rowtime"]) for r in rows)
    assert status["late_rows"] == 0
    assert _got(rows, 3) == expected(windows, steps, streams)


def test_a_chain_bounded_on_its_first_stream_gives_what_sparks_chained_joins_give(spark, tmp_path):
    """The bench's three-inner shape: both BETWEEN conditions on l's rowtime, m and r otherwise
    unrelated (their range to each other is implied), against Spark's native chain."""
    rng = random.Random(3)
    dirs = _dirs(tmp_path, 3)
    for d in dirs:
        write_jsonl(d / "a.json", [{"id": i, "k": rng.randint(0, 5), "rowtime": ts(rng.randint(0, 600) * 500)} for i in range(150)])
    sql = "".join(f"CREATE STREAM {s} (id INT, k INT) WITH (connector = 'files', format = 'json', path = '{d}', "
                  "lateness = '5 MINUTES');\n" for s, d in zip("lmr", dirs, strict=True))
    sql += ("SELECT STREAM ROWTIME, l.id AS li, m.id AS mi, r.id AS ri FROM l "
            "JOIN m ON l.k = m.k AND m.ROWTIME BETWEEN l.ROWTIME - INTERVAL '10' SECOND AND l.ROWTIME + INTERVAL '10' SECOND "
            "JOIN r ON l.k = r.k AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '10' SECOND AND l.ROWTIME + INTERVAL '10' SECOND;")
    script = compile_sql(sql)
    assert chain_reach(script.final)[1][2] == 20_000  # r - m <= (r - l) + (l - m) = 10 + 10 s
    runs = {}
    for operator in ("batch", "native"):
        rows, status = run_until_idle(spark, sql, tmp_path / operator, Settings(join_operator=operator))
        assert status["late_rows"] == 0
        runs[operator] = Counter((r["rowtime"], r["li"], r["mi"], r["ri"]) for r in rows)
    assert sum(runs["native"].values()) > 50, "the shape must produce results to compare"
    assert runs["batch"] == runs["native"]


def test_a_chain_retains_a_row_while_a_future_row_of_any_input_can_still_meet_it():
    from streamjoin.lower.batch.batch_join import Clocks
    from streamjoin.lower.batch.chain_join import ChainJoin

    script = compile_sql(
        "CREATE STREAM l (k INT) WITH (connector = 'files', path = '/l');"
        "CREATE STREAM m (k INT) WITH (connector = 'files', path = '/m');"
        "CREATE STREAM r (k INT) WITH (connector = 'files', path = '/r');"
        "SELECT STREAM l.k FROM l "
        "JOIN m ON l.k = m.k AND m.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' MINUTE AND l.ROWTIME + INTERVAL '2' MINUTE "
        "JOIN r ON l.k = r.k AND r.ROWTIME BETWEEN l.ROWTIME - INTERVAL '1' MINUTE AND l.ROWTIME + INTERVAL '2' MINUTE;")
    reach = chain_reach(script.final)
    # m - l and r - l in [-60, 120] s: r - m and m - r at most 180 s
    assert reach == ((0, 120_000, 120_000), (60_000, 0, 180_000), (60_000, 180_000, 0))
    chain = ChainJoin(script.final, (None, None, None), reach)
    s = 1_000_000
    retain = chain.retain_from(Clocks(1000 * s, 900 * s, 800 * s))
    # l: a future m (>= 900 s) needs l >= 900, a future r (>= 800 s) l >= 800 - 120
    assert retain[0] == 680 * s
    # m: a future l (>= 1000 s) needs m >= 940, a future r (>= 800 s) m >= 800 - 180
    assert retain[1] == 620 * s
    # r: a future l (>= 1000 s) needs r >= 940, a future m (>= 900 s) r >= 900 - 180
    assert retain[2] == 720 * s
    assert chain.final_below(Clocks(1000 * s, 900 * s, 800 * s), Clocks(1000 * s, 950 * s, 850 * s), 820 * s) == 820 * s


def test_auto_runs_a_bounded_inner_chain_on_the_batch_join_and_leaves_the_rest_on_sparks_joins():
    def reason(joins: str, bounded: bool = True, operator: str = "auto"):
        sql = "".join(f"CREATE STREAM {s} (k INT) WITH (connector = 'files', path = '/{s}');" for s in "abc")
        sql += f"SELECT STREAM a.k FROM a OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a {joins};"
        script = compile_sql(sql)
        return batch_reason(script, script.final, LoweringOptions(operator, bounded=bounded))

    inner = "JOIN b OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS b ON a.k = b.k JOIN c ON b.k = c.k"
    assert reason(inner) is None
    assert "bounded" in reason(inner, bounded=False)
    assert reason(inner, bounded=False, operator="batch") is None
    assert "INNER" in reason(inner.replace("JOIN c", "LEFT JOIN c"))


@pytest.mark.parametrize("first", ["live", pytest.param("batch", marks=pytest.mark.long)])
def test_a_resumed_chain_keeps_the_operator_that_ran_it_and_joins_each_row_once(spark, tmp_path, first):
    """A live run of a chain runs on Spark's joins, a bounded one on the batch join: resuming a
    checkpoint one of them made with the other's options keeps the first (the other would join
    the staged input again from its first step: every row twice)."""
    windows, steps = [(2, 0), (3, 0), (2, 0)], [("INNER", "key", 0), ("INNER", "key", 1)]
    streams = generate_rows(random.Random(9), 3, per_case=(4, 14), grid=40, shuffle_ms=4000)
    dirs = _dirs(tmp_path, 3)
    sql = shape_sql(windows, steps, dirs)
    half = [len(rows) // 2 for rows in streams]
    for rows, d, h in zip(streams, dirs, half, strict=True):
        write_jsonl(d / "a.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[:h]])
    runner = start(spark, sql, tmp_path / "run", settings=BATCH if first == "batch" else None)  # live
    try:
        runner.process_available()
        runner.process_available()
    finally:
        runner.stop("stopped")
    for rows, d, h in zip(streams, dirs, half, strict=True):
        write_jsonl(d / "b.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[h:]])
    resumed = start(spark, sql, tmp_path / "run", until_idle=first == "live")  # auto: the other operator, were it new
    assert (type(resumed.sink).__name__ == "BatchJoinSink") == (first == "batch")
    status = run_to_end(resumed)
    assert status["late_rows"] == 0
    assert _got(read_output(tmp_path / "run" / "out"), 3) == expected(windows, steps, streams)
