"""Differential test: generated stream-stream joins on Spark against the plain-Python reference
of SEMANTICS.md (tests/reference.py). Cases of one shape (windows, join types, conditions) share
one Spark run: every condition also joins on the case number `c`, which keeps cases apart.
STREAMJOIN_DIFF_SEED changes the generated data."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
from reference import JoinStep, Stream, join_chain
from runtime_helpers import ms, run_until_idle, ts, write_jsonl

SEED = int(os.environ.get("STREAMJOIN_DIFF_SEED", "20261122"))
CASES_PER_SHAPE = 10
CONDITIONS = {
    "key": ("{l}.k = {r}.k", lambda a, b: a["k"] == b["k"]),
    "key+theta": ("{l}.k = {r}.k AND {l}.v < {r}.v", lambda a, b: a["k"] == b["k"] and a["v"] < b["v"]),
    "theta": ("{l}.v <= {r}.v", lambda a, b: a["v"] <= b["v"]),
    "cross": (None, None),
}
SHAPE_COUNT = 12


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


@pytest.mark.parametrize("shape", range(len(SHAPES)), ids=[shape_id(*s) for s in SHAPES])
def test_engine_output_equals_the_reference_for_generated_streams(spark, tmp_path, shape):
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
    rows, status = run_until_idle(spark, shape_sql(windows, steps, dirs), tmp_path / "run")

    rowtimes = [ms(r["rowtime"]) for r in rows]
    assert rowtimes == sorted(rowtimes), "EMIT FINAL output must come in non-descending rowtime order"
    assert status["late_rows"] == 0
    got = {c: Counter() for c in range(CASES_PER_SHAPE)}
    for r in rows:
        got[r["c"]][(ms(r["rowtime"]), *(r[f"id{i}"] for i in range(len(windows))))] += 1
    assert got == expected(windows, steps, streams)
