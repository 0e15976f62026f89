"""UNION ALL of streams (corpus risingwave/07's merged alerts; KDA and s-Server programs merge
streams so too): every row of each branch, columns named by the first branch and of the branches'
common type; one stream, whose rows leave in rowtime order (EMIT FINAL) as every branch's clock
passes them, in a view read by a join or as the query itself, across micro-batches and a restart."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import read_output, run_to_end, start, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.runtime.pipeline import Pipeline

pytestmark = [pytest.mark.spark]

STREAMS = """CREATE STREAM a (k INT, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{d}/a', rowtime = 'ts', lateness = '1 SECOND');
CREATE STREAM b (k INT, w DOUBLE, ts TIMESTAMP) WITH (connector = 'files', path = '{d}/b', rowtime = 'ts', lateness = '1 SECOND');
"""


def _rows(rng: random.Random, start_ms: int, n: int, column: str) -> list[dict]:
    """In rowtime order but for a few rows up to 0.8 s back: within the lateness, none late."""
    out, t = [], start_ms
    for _ in range(n):
        t += rng.randint(0, 700)
        out.append({"k": rng.randint(1, 3), column: rng.randint(0, 9) if column == "v" else rng.randint(0, 90) / 10,
                    "ms": max(start_ms, t - (rng.randint(0, 800) if rng.random() < 0.2 else 0))})
    return out


def _write(d, name: str, n: int, rows: list[dict]) -> None:
    write_jsonl(d / name / f"{n}.json", [{**{k: v for k, v in r.items() if k != "ms"}, "ts": ts(r["ms"])} for r in rows])


def _in_batches(spark, sql: str, tmp_path, batches: list[dict[str, list[dict]]]) -> tuple[list[dict], dict]:
    """Each batch's files landed and processed; a restart from the checkpoint after the second."""
    runner = start(spark, sql, tmp_path)
    for n, batch in enumerate(batches):
        for name, rows in batch.items():
            _write(tmp_path, name, n, rows)
        if n == len(batches) - 1:
            status = run_to_end(runner)
            return read_output(tmp_path / "out"), status
        runner.process_available()
        if n == 1:
            runner.stop("stopped")
            runner = start(spark, sql, tmp_path)
    raise AssertionError("no batches")


def test_a_union_all_query_writes_every_row_of_each_branch_in_rowtime_order_across_a_restart(spark, tmp_path):
    rng = random.Random("union")
    batches = [{"a": _rows(rng, 10_000 * n, 12, "v"), "b": _rows(rng, 10_000 * n, 9, "w")} for n in range(3)]
    sql = STREAMS.format(d=tmp_path) + "SELECT STREAM ROWTIME, k, v AS x FROM a WHERE v > 2 UNION ALL SELECT STREAM ROWTIME, k, w FROM b;"
    rows, status = _in_batches(spark, sql, tmp_path, batches)
    a = [r for b in batches for r in b["a"]]
    b = [r for b in batches for r in b["b"]]
    want = sorted([(r["ms"], r["k"], float(r["v"])) for r in a if r["v"] > 2] + [(r["ms"], r["k"], r["w"]) for r in b])
    got = [(r["rowtime"], r["k"], r["x"]) for r in rows]
    assert status["late_rows"] == 0, status["inputs"]
    assert sorted((ts(t), k, x) for t, k, x in want) == sorted(got)
    assert [t for t, _, _ in got] == sorted(t for t, _, _ in got), "rows leave in rowtime order"
    assert all(isinstance(x, float) for _, _, x in got), "an INT branch and a DOUBLE one: DOUBLE"


def test_a_union_all_view_joined_with_a_stream_joins_the_rows_of_both_branches(spark, tmp_path):
    rng = random.Random("union-joined")
    batches = [{"a": _rows(rng, 10_000 * n, 10, "v"), "b": _rows(rng, 10_000 * n, 8, "w"),
                "c": [{"k": k, "label": f"c{n}{k}", "ms": 10_000 * n + 2000 * k + rng.randint(0, 1500)} for k in (1, 2, 3)]}
               for n in range(3)]
    sql = STREAMS.format(d=tmp_path) + f"""CREATE STREAM c (k INT, label VARCHAR, ts TIMESTAMP)
  WITH (connector = 'files', path = '{tmp_path}/c', rowtime = 'ts', lateness = '1 SECOND');
CREATE VIEW merged AS SELECT STREAM k, v AS x, 'a' AS side FROM a UNION ALL SELECT STREAM k, w, 'b' FROM b;
SELECT STREAM m.k, m.x, m.side, c.label
FROM merged AS m JOIN c OVER (RANGE INTERVAL '3' SECOND PRECEDING) AS c ON m.k = c.k;"""
    rows, status = _in_batches(spark, sql, tmp_path, batches)
    merged = ([(r["ms"], r["k"], float(r["v"]), "a") for b in batches for r in b["a"]]
              + [(r["ms"], r["k"], r["w"], "b") for b in batches for r in b["b"]])
    labels = [r for b in batches for r in b["c"]]
    want = sorted((k, x, side, c["label"]) for t, k, x, side in merged for c in labels
                  if c["k"] == k and c["ms"] <= t <= c["ms"] + 3000)
    assert status["late_rows"] == 0, status["inputs"]
    assert want, "the shape joins nothing: pick another seed"
    assert sorted((r["k"], r["x"], r["side"], r["label"]) for r in rows) == want


def test_a_kda_pump_inserts_a_union_all_into_its_stream(spark, tmp_path):
    rows_a = [{"k": 1, "v": 5, "ms": 1000}, {"k": 2, "v": 1, "ms": 3000}]
    rows_b = [{"k": 3, "w": 2.5, "ms": 2000}]
    _write(tmp_path, "a", 0, rows_a)
    _write(tmp_path, "b", 0, rows_b)
    sql = STREAMS.format(d=tmp_path) + """CREATE OR REPLACE STREAM merged (k INT, x DOUBLE);
CREATE OR REPLACE PUMP p AS INSERT INTO merged
  SELECT STREAM k, v FROM a UNION ALL SELECT STREAM k, w FROM b;"""
    run_to_end(start(spark, sql, tmp_path, until_idle=True))
    assert [(r["k"], r["x"]) for r in read_output(tmp_path / "out")] == [(1, 5.0), (3, 2.5), (2, 1.0)]


def test_a_union_all_of_a_branch_whose_rows_change_is_refused_naming_the_branch():
    sql = STREAMS.format(d="/tmp") + """CREATE VIEW u AS SELECT STREAM k, v FROM a
  UNION ALL SELECT STREAM k, COUNT(*) FROM b GROUP BY k;
SELECT STREAM k, v FROM u;"""
    with pytest.raises(Unsupported, match="branch 'u__2' writes a changelog"):
        Pipeline.from_sql(sql, "u.sql", dialect="risingwave")


def test_a_branch_that_selects_its_rowtime_where_the_first_names_a_column_keeps_every_row(spark, tmp_path):
    """The first branch's rowtime is implicit, the second selects ROWTIME as a column: by position it
    fills `t`, and it is the union's rowtime too (a review found the second branch's rows dropped)."""
    _write(tmp_path, "a", 0, [{"k": 1, "v": 5, "ms": 1000}, {"k": 2, "v": 1, "ms": 3000}])
    _write(tmp_path, "b", 0, [{"k": 3, "w": 2.5, "ms": 2000}])
    sql = STREAMS.format(d=tmp_path) + "SELECT STREAM k, ROWTIME AS t FROM a UNION ALL SELECT STREAM k, ROWTIME FROM b;"
    run_to_end(start(spark, sql, tmp_path, until_idle=True))
    assert [(r["k"], r["t"]) for r in read_output(tmp_path / "out")] == [(1, ts(1000)), (3, ts(2000)), (2, ts(3000))]
