"""Aggregates OVER windows of rows (lower.analytic): s-Server's and KDA's windowed aggregates.

Each row gets the aggregate over the rows of its partition in its frame that came up to and
including it (never a later row, even one with its own rowtime). The runs are compared with a
brute-force reference written here from that sentence: for each row, scan every earlier row."""

from __future__ import annotations

import math
import random
import re
from collections import Counter

import pytest
from runtime_helpers import read_output, run_in_two_parts, run_until_idle, start, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.runtime.pipeline import Pipeline

SQL = """
CREATE STREAM ticks (id INT, k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{path}', format = 'json', rowtime = 'ts');
SELECT STREAM id, {columns}
FROM ticks {where}
{window};
"""

# (output column, SQL, reference function over (frame values, the row's index in the frame))
FUNCTIONS = [
    ("n", "COUNT(*) OVER w", lambda xs: len(xs)),
    ("nv", "COUNT(v) OVER w", lambda xs: sum(x is not None for x in xs)),
    ("s", "SUM(v) OVER w", lambda xs: sum(x for x in xs if x is not None) if any(x is not None for x in xs) else None),
    ("a", "AVG(v) OVER w", lambda xs: _mean([x for x in xs if x is not None])),
    ("lo", "MIN(v) OVER w", lambda xs: min((x for x in xs if x is not None), default=None)),
    ("hi", "MAX(v) OVER w", lambda xs: max((x for x in xs if x is not None), default=None)),
    ("f", "FIRST_VALUE(v) OVER w", lambda xs: xs[0]),
    ("l", "LAST_VALUE(v) OVER w", lambda xs: xs[-1]),
    ("nth", "NTH_VALUE(v, 2) FROM LAST OVER w", lambda xs: xs[-2] if len(xs) >= 2 else None),
    ("p1", "LAG(v) OVER w", lambda xs: xs[-2] if len(xs) >= 2 else None),
    ("p2", "LAG(v, 2, -1) OVER w", lambda xs: xs[-3] if len(xs) >= 3 else -1),
    ("sd", "STDDEV_SAMP(v) OVER w", lambda xs: _stddev([x for x in xs if x is not None])),
    # computed row by row (lower.analytic.row_by_row), the others by numpy and pandas' rolling windows
    ("fi", "FIRST_VALUE(v) IGNORE NULLS OVER w", lambda xs: next((x for x in xs if x is not None), None)),
]


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def _stddev(xs):
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def reference(rows: list[dict], frame: tuple, partitioned: bool, keep=lambda r: True) -> Counter:
    """`rows` in input order (rowtime, then as written): each kept row's id and values."""
    kind, size = frame
    kept = [r for r in rows if keep(r)]
    out = Counter()
    for i, row in enumerate(kept):
        earlier = [r for r in kept[: i + 1] if not partitioned or r["k"] == row["k"]]
        if kind == "range":
            earlier = [r for r in earlier if r["ms"] >= row["ms"] - size * 1000]
        elif kind == "rows":
            earlier = earlier[-(size + 1):]
        xs = [r["v"] for r in earlier]
        out[(row["id"], *(_round(f(xs)) for _, _, f in FUNCTIONS))] += 1
    return out


def _round(value):
    return round(value, 6) if isinstance(value, float) else value


def got(rows: list[dict]) -> Counter:
    return Counter((r["id"], *(_round(r[name]) for name, _, _ in FUNCTIONS)) for r in rows)


def generate(rng: random.Random, count: int) -> list[dict]:
    """Rows in rowtime order, rowtimes often shared (a row never sees a later one of its rowtime)."""
    rows, clock = [], 0
    for n in range(count):
        clock += rng.choice([0, 0, 1000, 2000, 5000])
        rows.append({"id": n, "k": rng.choice("abc"), "v": rng.choice([None, *range(-3, 10)]), "ms": clock})
    return rows


def sql_for(path, frame: tuple, partitioned: bool, where: str = "") -> str:
    kind, size = frame
    spec = {"range": f"RANGE INTERVAL '{size}' SECOND PRECEDING", "rows": f"ROWS {size} PRECEDING",
            "unbounded": "ROWS UNBOUNDED PRECEDING"}[kind]
    window = f"WINDOW w AS ({'PARTITION BY k ' if partitioned else ''}{spec})"
    columns = ", ".join(f"{text} AS {name}" for name, text, _ in FUNCTIONS)
    return SQL.format(path=path, columns=columns, where=where, window=window)


def _write(folder, n: int, rows: list[dict]) -> None:
    write_jsonl(folder / f"{n:03d}.json", [{k: v for k, v in r.items() if k != "ms"} | {"ts": ts(r["ms"])} for r in rows])


FRAMES = [(("range", 7), True), (("rows", 2), True), (("unbounded", 0), False), (("range", 0), False)]


@pytest.mark.parametrize(("frame", "partitioned"), [pytest.param(*case, marks=pytest.mark.long) if n in (1, 3) else case
                                                   for n, case in enumerate(FRAMES)],
                         ids=[f"{f[0]}{f[1]}{'-partitioned' * p}" for f, p in FRAMES])
def test_windowed_aggregates_equal_a_scan_of_the_earlier_rows_over_micro_batches_and_a_restart(spark, tmp_path, frame, partitioned):
    rows = generate(random.Random(str(frame)), 90)
    folder = tmp_path / "in"
    folder.mkdir()
    sql = sql_for(folder, frame, partitioned)
    third = len(rows) // 3
    runner = start(spark, sql, tmp_path / "run")
    try:
        for n in range(2):  # two micro-batches, then a restart from the checkpoint: state kept
            _write(folder, n, rows[n * third:(n + 1) * third])
            runner.process_available()
    finally:
        runner.stop("stopped")
    _, status = run_in_two_parts(spark, sql, tmp_path / "run", lambda: _write(folder, 2, rows[2 * third:]))
    assert status["state"] == "finished", status
    output = read_output(tmp_path / "run" / "out")
    assert got(output) == reference(rows, frame, partitioned)
    rowtimes = [rows[r["id"]]["ms"] for r in output]
    assert rowtimes == sorted(rowtimes), "rows leave in rowtime order"


def test_where_filters_the_rows_before_the_window_counts_them(spark, tmp_path):
    rows = generate(random.Random(7), 40)
    folder = tmp_path / "in"
    folder.mkdir()
    _write(folder, 0, rows)
    output, _ = run_until_idle(spark, sql_for(folder, ("range", 5), True, "WHERE v IS NOT NULL AND v > 2"), tmp_path / "run")
    assert got(output) == reference(rows, ("range", 5), True, keep=lambda r: r["v"] is not None and r["v"] > 2)


VIEW_SQL = """
CREATE STREAM ticks (id INT, k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{path}', format = 'json', rowtime = 'ts');
CREATE TABLE names (k VARCHAR, name VARCHAR) WITH (connector = 'files', path = '{names}', format = 'csv');
CREATE VIEW moving AS
  SELECT STREAM t.id, t.k, n.name, AVG(t.v) OVER (PARTITION BY t.k RANGE INTERVAL '7' SECOND PRECEDING) AS a
  FROM ticks AS t LEFT JOIN names AS n ON t.k = n.k;
SELECT STREAM id, name, a FROM moving WHERE a IS NOT NULL;
"""


def test_a_view_of_windowed_aggregates_after_a_table_join_runs_as_a_part_its_reader_filters(spark, tmp_path):
    rows = generate(random.Random(11), 50)
    folder, names = tmp_path / "in", tmp_path / "names"
    folder.mkdir()
    names.mkdir()
    (names / "names.csv").write_text("k,name\na,alpha\nb,beta\n")
    _write(folder, 0, rows)
    output, _ = run_until_idle(spark, VIEW_SQL.format(path=folder, names=names), tmp_path / "run")
    want = Counter()
    for i, row in enumerate(rows):
        xs = [r["v"] for r in rows[: i + 1] if r["k"] == row["k"] and r["ms"] >= row["ms"] - 7000 and r["v"] is not None]
        if xs:
            want[(row["id"], {"a": "alpha", "b": "beta"}.get(row["k"]), _round(sum(xs) / len(xs)))] += 1
    assert Counter((r["id"], r["name"], _round(r["a"])) for r in output) == want


@pytest.mark.parametrize(("select", "message"), [
    ("SELECT STREAM a.id, COUNT(*) OVER (PARTITION BY a.k RANGE INTERVAL '1' MINUTE PRECEDING) AS n "
     "FROM ticks AS a JOIN ticks AS b OVER (RANGE INTERVAL '1' MINUTE PRECEDING) ON a.k = b.k",
     "computed over one stream (joined with tables at most)"),
    ("SELECT STREAM id, COUNT(*) OVER (PARTITION BY k ROWS 2 PRECEDING) AS n, SUM(v) OVER (ROWS 2 PRECEDING) AS s FROM ticks",
     "different PARTITION BY in one query"),
    # (ORDER BY v ascending is computed: a changelog, tests/lower/test_changing_over_windows.py)
    ("SELECT STREAM id, SUM(v) OVER (ORDER BY v DESC ROWS 2 PRECEDING) AS s FROM ticks", "by one column, ascending"),
    ("SELECT STREAM id, LEAD(v) OVER (ROWS 2 PRECEDING) AS s FROM ticks", "LEAD OVER a window is not computed"),
    ("SELECT STREAM id, SUM(v) OVER (ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS s FROM ticks", "FOLLOWING"),
])
def test_what_run_cannot_compute_of_a_window_is_refused_naming_it(tmp_path, select, message):
    sql = ("CREATE STREAM ticks (id INT, k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', "
           f"path = '{tmp_path}', format = 'json', rowtime = 'ts');\n{select};")
    with pytest.raises(Unsupported, match=re.escape(message)):
        Pipeline.from_sql(sql, "test.sql")
