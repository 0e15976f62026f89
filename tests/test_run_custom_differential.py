"""Differential test of streamjoin's own join operator (ROWS windows, mixed windows, EAGER,
CHANGES, ASOF, TUMBLE/HOP) on Spark against the plain-Python reference (tests/reference.py).

Cases of one shape share one Spark run: every condition joins on the case number `c`, and every
ROWS window is partitioned by `c` at least, so cases never meet. A window PARTITION BY c alone with
keys (c, k) runs as ONE group (the "one ordered sequence" path); PARTITION BY (c, k) runs grouped
by the keys. STREAMJOIN_DIFF_SEED changes the generated data."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
import reference as ref
from runtime_helpers import ms, run_until_idle, ts, write_jsonl
from test_run_differential import generate_rows

SEED = int(os.environ.get("STREAMJOIN_DIFF_SEED", "20261123"))
CASES = 14


def key(a, b):
    return a["k"] == b["k"]


def key_theta(a, b):
    return a["k"] == b["k"] and a["v"] <= b["v"] + 1


# name: (left window SQL, left ref window, right window SQL, right ref window, join, ON beyond c, predicate, emit)
SHAPES = {
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


@pytest.mark.parametrize("name", list(SHAPES))
def test_custom_operator_equals_the_reference_for_generated_window_joins(spark, tmp_path, name):
    lsql, lwin, rsql, rwin, join_type, on, predicate, emit = SHAPES[name]
    rng = random.Random(f"{SEED}-{name}")
    streams = generate(rng)
    dirs = write_inputs(tmp_path, streams, rng)
    sql = ddl(dirs) + f"{SELECT} FROM in0 {lsql} AS s0 {join_type} JOIN in1 {rsql} AS s1 ON s0.c = s1.c {on} EMIT {emit};"
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["late_rows"] == 0
    expected = {}
    for c in range(CASES):
        left = [r for r in streams[0] if r["c"] == c]
        right = [r for r in streams[1] if r["c"] == c]
        result = ref.two_way(ref.Side("s0", left, lwin), ref.Side("s1", right, rwin), join_type, predicate, emit)
        expected[c] = as_ids(result, left, right)
    compare(rows, emit, expected)


@pytest.mark.parametrize("name", list(ASOF_SHAPES))
def test_custom_operator_equals_the_reference_for_generated_asof_joins(spark, tmp_path, name):
    join_type, op, emit = ASOF_SHAPES[name]
    rng = random.Random(f"{SEED}-{name}")
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
    rng = random.Random(f"{SEED}-{name}")
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
