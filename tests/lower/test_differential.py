"""Differential tests: generated joins on Spark against the plain-Python reference of SEMANTICS.md
(tests/reference.py), one suite for every way `run` runs a join.

- Stream-stream RANGE joins (windows, join types, conditions, chains cut at outer joins) on each
  operator: `auto` (what `run` picks: the batch interval join for a bounded two-stream run), Spark's
  native join, and streamjoin's own operator (`STREAMJOIN_JOIN_OPERATOR`). `make test` runs `auto`
  for 8 of the 12 random shapes and every cut shape, and the other operators for one two-stream
  FULL join; `make test-long` runs every shape, every two-stream shape on every operator.
- What only streamjoin's own operator runs (ROWS windows, mixed windows, EAGER, CHANGES, ASOF,
  TUMBLE/HOP): a window PARTITION BY c alone with keys (c, k) runs as ONE group (the "one ordered
  sequence" path); PARTITION BY (c, k) runs grouped by the keys.

Cases of one shape share one Spark run: every condition also joins on the case number `c` (every
ROWS window is partitioned by `c` at least), which keeps cases apart. STREAMJOIN_DIFF_SEED changes
the generated data."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
import reference as ref
from reference import JoinStep, Stream, join_chain
from runtime_helpers import ms, run_until_idle, ts, write_jsonl
from streamjoin.settings import Settings

SEED = int(os.environ.get("STREAMJOIN_DIFF_SEED", "20261122"))
CASES_PER_SHAPE = 10
CONDITIONS = {
    "key": ("{l}.k = {r}.k", lambda a, b: a["k"] == b["k"]),
    "key+theta": ("{l}.k = {r}.k AND {l}.v < {r}.v", lambda a, b: a["k"] == b["k"] and a["v"] < b["v"]),
    "theta": ("{l}.v <= {r}.v", lambda a, b: a["v"] <= b["v"]),
    "cross": (None, None),
}
SHAPE_COUNT = 12
QUICK_SHAPES = 8  # of the random shapes, the ones `make test` runs on `auto`; make test-long runs all


def random_shape(rng: random.Random):
    """Windows as (size s, lag s) per input; steps as (join type, condition, left input).
    Only the last join may be outer here; random_cut_shape makes chains with outer joins before it."""
    n = 3 if rng.random() < 0.35 else 2
    windows = []
    for _ in range(n):
        size = rng.randint(0, 4)
        windows.append((size, rng.randint(1, size) if size and rng.random() < 0.25 else 0))
    steps = []
    for i in range(1, n):
        last = i == n - 1
        join_type = rng.choice(["INNER", "LEFT", "RIGHT", "FULL", "CROSS"] if last else ["INNER", "INNER", "CROSS"])
        condition = "cross" if join_type == "CROSS" else rng.choice(["key", "key+theta", "theta"])
        steps.append((join_type, condition, rng.randrange(i)))
    return windows, steps


def random_cut_shape(rng: random.Random):
    """3 or 4 inputs where a join before the last is outer: `run` cuts such a chain into one
    Spark query per part (docs/runtime.md, "Outer joins inside a chain")."""
    n = 4 if rng.random() < 0.3 else 3
    windows, _ = random_shape(rng)
    windows = [windows[i] if i < len(windows) else (rng.randint(0, 4), 0) for i in range(n)]
    steps = []
    for i in range(1, n):
        join_type = rng.choice(["INNER", "LEFT", "RIGHT", "FULL", "CROSS"])
        condition = "cross" if join_type == "CROSS" else rng.choice(["key", "key+theta", "theta"])
        steps.append((join_type, condition, rng.randrange(i)))
    if not any(t in ("LEFT", "RIGHT", "FULL") for t, _, _ in steps[:-1]):
        cut = rng.randrange(n - 2)
        steps[cut] = (rng.choice(["LEFT", "RIGHT", "FULL"]), rng.choice(["key", "key+theta"]), steps[cut][2])
    return windows, steps


CUT_SHAPE_COUNT = 4
SHAPES = [random_shape(random.Random(SEED * 1000 + i)) for i in range(SHAPE_COUNT)]
SHAPES += [random_cut_shape(random.Random(SEED * 2000 + i)) for i in range(CUT_SHAPE_COUNT)]


def window_sql(size: int, lag: int) -> str:
    if lag:
        return f"OVER (RANGE BETWEEN INTERVAL '{size}' SECOND AND INTERVAL '{lag}' SECOND PRECEDING)"
    return f"OVER (RANGE INTERVAL '{size}' SECOND PRECEDING)" if size else ""


def generate_rows(rng: random.Random, n_inputs: int, per_case: tuple[int, int] = (0, 6), grid: int = 16,
                  cases: int = CASES_PER_SHAPE, shuffle_ms: int = 0) -> list[list[dict]]:
    """Rows of every input for all cases: `per_case` rows per case, rowtimes on a coarse grid of
    `grid` half seconds, so ties across inputs occur; `shuffle_ms`: each input's rows in rowtime
    order up to that much disorder (else in case order)."""
    streams = []
    for _ in range(n_inputs):
        rows = []
        for c in range(cases):
            for _ in range(rng.randint(*per_case)):
                rows.append({"id": len(rows), "c": c, "k": rng.randint(0, 2), "v": rng.randint(0, 3), "rowtime": rng.randint(0, grid) * 500})
        if shuffle_ms:
            rows.sort(key=lambda r: r["rowtime"] + rng.randint(0, shuffle_ms))
        streams.append(rows)
    return streams


def shape_sql(windows, steps, dirs) -> str:
    n = len(windows)
    ddl = "".join(
        # the rows are out of rowtime order (the grid spans 8 s): a lateness keeps every one on time
        f"CREATE STREAM in{i} (id INT, c INT, k INT, v INT) WITH (connector = 'files', format = 'json', path = '{dirs[i]}', "
        "lateness = '10 SECONDS');\n"
        for i in range(n)
    )
    aliases = [f"s{i}" for i in range(n)]
    parts = [f"in0 {window_sql(*windows[0])} AS s0"]
    for i, (join_type, cond, left) in enumerate(steps, start=1):
        item = f"in{i} {window_sql(*windows[i])} AS s{i}"
        template = CONDITIONS[cond][0]
        if join_type == "CROSS":
            parts.append(f"CROSS JOIN {item}")
            continue
        on = f"s{left}.c = s{i}.c" + (f" AND {template.format(l=f's{left}', r=f's{i}')}" if template else "")
        parts.append(f"{join_type} JOIN {item} ON {on}")
    cross = [f"s{left}.c = s{i}.c" for i, (join_type, _, left) in enumerate(steps, start=1) if join_type == "CROSS"]
    where = f" WHERE {' AND '.join(cross)}" if cross else ""
    c_expr = f"COALESCE({', '.join(f'{a}.c' for a in aliases)})"
    ids = ", ".join(f"{a}.id AS id{i}" for i, a in enumerate(aliases))
    return ddl + f"SELECT STREAM ROWTIME, {c_expr} AS c, {ids} FROM {' '.join(parts)}{where};"


def expected(windows, steps, streams) -> dict:
    out = {}
    for c in range(CASES_PER_SHAPE):
        inputs = [
            Stream(f"s{i}", [r for r in streams[i] if r["c"] == c], windows[i][0] * 1000, windows[i][1] * 1000)
            for i in range(len(windows))
        ]
        join_steps = []
        for i, (join_type, cond, left) in enumerate(steps, start=1):
            test = CONDITIONS[cond][1]
            join_steps.append(
                JoinStep(inputs[i], join_type, (lambda combo, t=test, a=f"s{left}", b=f"s{i}": combo[a] is not None and t(combo[a], combo[b])) if test else (lambda combo: True))
            )
        # the WHERE that keeps CROSS joins' cases apart also filters after the joins (SEMANTICS §5)
        where = [(f"s{left}", f"s{i}") for i, (t, _, left) in enumerate(steps, start=1) if t == "CROSS"]
        out[c] = Counter(
            (interval[0], *(combo[a]["id"] if combo[a] else None for a in sorted(combo)))
            for combo, interval in join_chain(inputs[0], join_steps)
            if all(combo[a] is not None and combo[b] is not None and combo[a]["c"] == combo[b]["c"] for a, b in where)
        )
    return out


def shape_id(windows, steps) -> str:
    joins = "-".join(f"{t}.{c}.s{left}" for t, c, left in steps)
    return f"{joins}_windows" + "_".join(f"{size}.{lag}" for size, lag in windows)


def engine_cases():
    """(shape, operator) pairs: `auto` for every shape; Spark's native join for the two-stream
    shapes (with three or more streams `run` has no choice to make; our operator no longer runs an
    EMIT FINAL RANGE join, lower.strategy.custom_reason): in `make test` for the first two-stream
    FULL join, in `make test-long` for every two-stream shape."""
    two_stream = [i for i, (windows, _) in enumerate(SHAPES) if len(windows) == 2]
    quick = next((i for i in two_stream if SHAPES[i][1][0][0] == "FULL"), two_stream[0])
    for i, shape in enumerate(SHAPES):
        # the last four plain random shapes in make test-long (make test's time on a busy machine, 2026-11-29)
        yield pytest.param(i, "auto", id=f"auto-{shape_id(*shape)}",
                           marks=pytest.mark.long if QUICK_SHAPES <= i < SHAPE_COUNT and i != quick else ())
        if i in two_stream:
            for operator in ("native",):
                marks = () if i == quick else pytest.mark.long
                yield pytest.param(i, operator, id=f"{operator}-{shape_id(*shape)}", marks=marks)


@pytest.mark.parametrize(("shape", "operator"), list(engine_cases()))
def test_engine_output_equals_the_reference_for_generated_streams(spark, tmp_path, shape, operator):
    windows, steps = SHAPES[shape]
    rng = random.Random(SEED * 100 + shape)
    streams = generate_rows(rng, len(windows))
    dirs = []
    for i, rows in enumerate(streams):
        d = tmp_path / f"in{i}"
        rng.shuffle(rows)
        half = len(rows) // 2  # two files per input, rows out of rowtime order
        write_jsonl(d / "a.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[:half]])
        write_jsonl(d / "b.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[half:]])
        dirs.append(d)
    settings = Settings.from_env({**os.environ, "STREAMJOIN_JOIN_OPERATOR": operator})
    rows, status = run_until_idle(spark, shape_sql(windows, steps, dirs), tmp_path / "run", settings)

    rowtimes = [ms(r["rowtime"]) for r in rows]
    assert rowtimes == sorted(rowtimes), "EMIT FINAL output must come in non-descending rowtime order"
    assert status["late_rows"] == 0
    got = {c: Counter() for c in range(CASES_PER_SHAPE)}
    for r in rows:
        got[r["c"]][(ms(r["rowtime"]), *(r[f"id{i}"] for i in range(len(windows))))] += 1
    assert got == expected(windows, steps, streams)


# --------------------------------------------------------------- what only our operator runs

OPERATOR_SEED = SEED + 1  # the operator cases' data (20261123 by default)
CASES = 14


def key(a, b):
    return a["k"] == b["k"]


def key_theta(a, b):
    return a["k"] == b["k"] and a["v"] <= b["v"] + 1


# name: (left window SQL, left ref window, right window SQL, right ref window, join, ON beyond c, predicate, emit)
OPERATOR_SHAPES = {
    "rows-one-group-left-final": (
        "OVER (PARTITION BY c ROWS 1 PRECEDING)", ("rows", 1, ("c",)),
        "OVER (PARTITION BY c ROWS CURRENT ROW)", ("rows", 0, ("c",)),
        "LEFT", "AND s0.k = s1.k", key, "FINAL"),
    "rows-by-key-full-changes": (
        "OVER (PARTITION BY c, k ROWS 2 PRECEDING)", ("rows", 2, ("c", "k")),
        "OVER (RANGE INTERVAL '2' SECOND PRECEDING)", ("range", 2000, 0),
        "FULL", "AND s0.k = s1.k AND s0.v <= s1.v + 1", key_theta, "CHANGES"),
    "range-lag-right-eager": (
        "OVER (RANGE INTERVAL '2' SECOND PRECEDING)", ("range", 2000, 0),
        "OVER (RANGE BETWEEN INTERVAL '3' SECOND AND INTERVAL '1' SECOND PRECEDING)", ("range", 3000, 1000),
        "RIGHT", "AND s0.k = s1.k", key, "EAGER"),
    "mixed-inner-final": (
        "OVER (PARTITION BY c ROWS 3 PRECEDING)", ("rows", 3, ("c",)),
        "OVER (RANGE INTERVAL '1' SECOND PRECEDING)", ("range", 1000, 0),
        "INNER", "AND s0.v < s1.v", lambda a, b: a["v"] < b["v"], "FINAL"),
    # (an INNER join's EAGER rows are FINAL's: a bounded run of it is on the batch interval join)
    "range-lag-inner-eager": (
        "OVER (RANGE INTERVAL '2' SECOND PRECEDING)", ("range", 2000, 0),
        "OVER (RANGE BETWEEN INTERVAL '3' SECOND AND INTERVAL '1' SECOND PRECEDING)", ("range", 3000, 1000),
        "INNER", "AND s0.k = s1.k", key, "EAGER"),
    "rows-left-eager": (
        "OVER (PARTITION BY c, k ROWS 1 PRECEDING)", ("rows", 1, ("c", "k")),
        "OVER (PARTITION BY c ROWS 2 PRECEDING)", ("rows", 2, ("c",)),
        "LEFT", "AND s0.k = s1.k", key, "EAGER"),
    "range-full-changes": (
        "OVER (RANGE INTERVAL '1' SECOND PRECEDING)", ("range", 1000, 0),
        "", ("range", 0, 0),
        "FULL", "AND s0.k = s1.k", key, "CHANGES"),
}
ASOF_SHAPES = {
    "asof-left-le-changes": ("LEFT", "<=", "CHANGES"),
    "asof-inner-lt-final": ("INNER", "<", "FINAL"),
    "asof-left-ge-final": ("LEFT", ">=", "FINAL"),
    "asof-inner-gt-changes": ("INNER", ">", "CHANGES"),
}
WINDOW_SHAPES = {  # function, size, slide, join type, offset (ms), the window column the ON joins on
    "tumble-left": ("TUMBLE", 2000, 2000, "LEFT", 0, "window_start"),
    "hop-full": ("HOP", 3000, 1000, "FULL", 0, "window_start"),
    "tumble-offset-full-on-window-end": ("TUMBLE", 2000, 2000, "FULL", 1000, "window_end"),
    "hop-negative-offset-left": ("HOP", 3000, 2000, "LEFT", -1000, "window_start"),
}


def generate(rng: random.Random) -> list[list[dict]]:
    """Rows of both inputs for all cases, rowtimes on a coarse grid (ties across and within inputs)."""
    return generate_rows(rng, 2, per_case=(0, 7), cases=CASES)


def write_inputs(tmp_path, streams, rng) -> list:
    """Two files per input, rows out of rowtime order; the input's order (§2) is a.json then b.json."""
    dirs, ordered = [], []
    for i, rows in enumerate(streams):
        rng.shuffle(rows)
        half = len(rows) // 2
        d = tmp_path / f"in{i}"
        write_jsonl(d / "a.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[:half]])
        write_jsonl(d / "b.json", [{**r, "rowtime": ts(r["rowtime"])} for r in rows[half:]])
        dirs.append(d)
        ordered.append(rows)
    return dirs


def ddl(dirs) -> str:
    return "".join(
        # the rows are out of rowtime order: a lateness beyond their spread keeps every one on time
        f"CREATE STREAM in{i} (id INT, c INT, k INT, v INT) WITH (connector = 'files', format = 'json', path = '{d}', "
        "lateness = '1 MINUTE');\n"
        for i, d in enumerate(dirs)
    )


def got_rows(rows, changes: bool) -> dict[int, list]:
    out = {c: [] for c in range(CASES)}
    for r in rows:
        out[r["c"]].append((r["op"] if changes else "+I", ms(r["rowtime"]), r["id0"], r["id1"]))
    return out


def as_ids(result, left_rows, right_rows) -> list:
    return [(op, t, None if li is None else left_rows[li]["id"], None if ri is None else right_rows[ri]["id"])
            for op, t, li, ri, *_ in result]


def compare(rows, emit, expected_by_case):
    if emit == "FINAL":
        rowtimes = [ms(r["rowtime"]) for r in rows]
        assert rowtimes == sorted(rowtimes), "EMIT FINAL output must come in non-descending rowtime order"
    got = got_rows(rows, emit == "CHANGES")
    for c in range(CASES):
        if emit == "CHANGES":
            assert ref.fold(got[c]) == ref.fold(expected_by_case[c]), f"case {c}"
        else:
            assert Counter(got[c]) == Counter(expected_by_case[c]), f"case {c}"


SELECT = "SELECT STREAM ROWTIME, COALESCE(s0.c, s1.c) AS c, s0.id AS id0, s1.id AS id1"


@pytest.mark.parametrize("name", list(OPERATOR_SHAPES))
def test_custom_operator_equals_the_reference_for_generated_window_joins(spark, tmp_path, name):
    lsql, lwin, rsql, rwin, join_type, on, predicate, emit = OPERATOR_SHAPES[name]
    rng = random.Random(f"{OPERATOR_SEED}-{name}")
    streams = generate(rng)
    dirs = write_inputs(tmp_path, streams, rng)
    sql = ddl(dirs) + f"{SELECT} FROM in0 {lsql} AS s0 {join_type} JOIN in1 {rsql} AS s1 ON s0.c = s1.c {on} EMIT {emit};"
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["late_rows"] == 0
    compare(rows, emit, two_way_by_case(streams, lwin, rwin, join_type, predicate, emit))


def two_way_by_case(streams, lwin, rwin, join_type, predicate, emit) -> dict[int, list]:
    """The reference's rows of `in0 AS s0 JOIN in1 AS s1`, per case `c`, as input ids."""
    expected = {}
    for c in range(CASES):
        left = [r for r in streams[0] if r["c"] == c]
        right = [r for r in streams[1] if r["c"] == c]
        result = ref.two_way(ref.Side("s0", left, lwin), ref.Side("s1", right, rwin), join_type, predicate, emit)
        expected[c] = as_ids(result, left, right)
    return expected


@pytest.mark.parametrize("name", list(ASOF_SHAPES))
def test_custom_operator_equals_the_reference_for_generated_asof_joins(spark, tmp_path, name):
    join_type, op, emit = ASOF_SHAPES[name]
    rng = random.Random(f"{OPERATOR_SEED}-{name}")
    streams = generate(rng)
    dirs = write_inputs(tmp_path, streams, rng)
    how = "ASOF LEFT JOIN" if join_type == "LEFT" else "ASOF JOIN"
    sql = ddl(dirs) + (f"{SELECT} FROM in0 AS s0 {how} in1 AS s1 ON s0.c = s1.c AND s0.k = s1.k "
                       f"AND s1.rowtime {op} s0.rowtime EMIT {emit};")
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    expected = {}
    for c in range(CASES):
        left = [r for r in streams[0] if r["c"] == c]
        right = [r for r in streams[1] if r["c"] == c]
        result = ref.asof(ref.Side("s0", left, ("range", 0, 0)), ref.Side("s1", right, ("range", 0, 0)), key, op,
                          join_type == "LEFT", emit)
        expected[c] = as_ids(result, left, right)
    compare(rows, emit, expected)


@pytest.mark.parametrize("name", list(WINDOW_SHAPES))
def test_custom_operator_equals_the_reference_for_generated_window_function_joins(spark, tmp_path, name):
    function, size, slide, join_type, offset, on = WINDOW_SHAPES[name]
    rng = random.Random(f"{OPERATOR_SEED}-{name}")
    streams = generate(rng)
    dirs = write_inputs(tmp_path, streams, rng)

    def tvf(i):
        extra = f", INTERVAL '{offset // 1000}' SECOND" if offset else ""
        if function == "TUMBLE":
            return f"TUMBLE(in{i}, rowtime, INTERVAL '{size // 1000}' SECOND{extra})"
        return f"HOP(in{i}, rowtime, INTERVAL '{slide // 1000}' SECOND, INTERVAL '{size // 1000}' SECOND{extra})"

    sql = ddl(dirs) + (
        f"{SELECT}, COALESCE(s0.window_start, s1.window_start) AS ws FROM {tvf(0)} AS s0 {join_type} JOIN {tvf(1)} AS s1 "
        f"ON s0.c = s1.c AND s0.k = s1.k AND s0.{on} = s1.{on};"
    )
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    rowtimes = [ms(r["rowtime"]) for r in rows]
    assert rowtimes == sorted(rowtimes), "EMIT FINAL output must come in non-descending rowtime order"
    for c in range(CASES):
        left = [r for r in streams[0] if r["c"] == c]
        right = [r for r in streams[1] if r["c"] == c]
        result = ref.window_join(ref.Side("s0", left, ("range", 0, 0)), ref.Side("s1", right, ("range", 0, 0)),
                                 function, size, slide, join_type, key, offset)
        expected = Counter((*row, ws) for row, (*_, ws) in zip(as_ids(result, left, right), result, strict=True))
        got = Counter(("+I", ms(r["rowtime"]), r["id0"], r["id1"], ms(r["ws"])) for r in rows if r["c"] == c)
        assert got == expected, f"case {c}"
