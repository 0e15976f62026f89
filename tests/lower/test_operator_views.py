"""A view whose join runs on streamjoin's operator (ROWS windows, ASOF, TUMBLE window joins), read
by another query: the view runs as a part of its own, its rows released in rowtime order once
final with the operator's holds as rowtime bounds (lower.staged_views), and the reading query
reads them as a stream. Its rows are those of the same join written in the reading query."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from runtime_helpers import read_output, run_in_two_parts, run_until_idle, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.lower.explain import explain_text
from streamjoin.plan import compile_sql
from streamjoin.runtime.pipeline import Pipeline

DDL = """
CREATE STREAM a (id INT, k INT, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{a}', format = 'json', rowtime = 'ts');
CREATE STREAM b (id INT, k INT, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{b}', format = 'json', rowtime = 'ts');
"""

# name: (FROM ... ON of the join, the reading query's WHERE over the join's output columns)
JOINS = {
    "tumble-window-join": ("TUMBLE(a, ts, INTERVAL '10' SECOND) AS x JOIN TUMBLE(b, ts, INTERVAL '10' SECOND) AS y "
                           "ON x.k = y.k AND x.window_start = y.window_start", "xv < yv"),
    "left-rows-join": ("a AS x OVER (ROWS CURRENT ROW) LEFT JOIN b AS y OVER (PARTITION BY k ROWS 1 PRECEDING) "
                       "ON x.k = y.k", "xv % 3 <> 0"),
    "asof-left-join": ("a AS x ASOF LEFT JOIN b AS y ON x.k = y.k AND y.ts <= x.ts", "yv IS NULL OR xv > yv"),
}


def rows(rng: random.Random, n: int, t: int = 0) -> list[dict]:
    out = []
    for i in range(n):
        t += rng.choice((0, 300, 700, 1500))
        out.append({"id": i, "k": rng.randint(1, 4), "v": rng.randint(0, 30), "ts": ts(t)})
    return out


def sqls(tmp_path, name: str) -> tuple[str, str]:
    """(the join in a view read by a filtering query, the same join and filter in one query)."""
    join, where = JOINS[name]
    ddl = DDL.format(a=tmp_path / "a", b=tmp_path / "b")
    select = "SELECT STREAM x.id AS xid, y.id AS yid, x.v AS xv, y.v AS yv"
    direct = where.replace("xv", "x.v").replace("yv", "y.v")
    return (ddl + f"CREATE VIEW j AS {select} FROM {join};\nSELECT STREAM ROWTIME AS rt, xid, yid, xv, yv FROM j WHERE {where};",
            ddl + f"{select} FROM {join} WHERE {direct};")


def write(tmp_path, rng, n: int, name: str = "1.json") -> None:
    write_jsonl(tmp_path / "a" / name, rows(rng, n))
    write_jsonl(tmp_path / "b" / name, rows(rng, n))


def ids(found: list[dict]) -> Counter:
    return Counter((r["xid"], r["yid"]) for r in found)


@pytest.mark.parametrize("name", [n if n == "asof-left-join" else pytest.param(n, marks=pytest.mark.long) for n in JOINS])
def test_a_view_joined_on_the_operator_gives_the_rows_of_its_join_written_in_the_query(spark, tmp_path, name):
    write(tmp_path, random.Random(name), 120)
    in_view, direct = sqls(tmp_path, name)
    assert "a view whose join runs on streamjoin's operator" in explain_text(compile_sql(in_view, "v.sql"))
    viewed, status = run_until_idle(spark, in_view, tmp_path / "view")
    expected, _ = run_until_idle(spark, direct, tmp_path / "direct")
    assert status["state"] == "finished" and not status.get("late_rows")
    assert len(expected) > 20 and ids(viewed) == ids(expected)
    times = [r["rt"] for r in viewed]
    assert times == sorted(times)  # the view's rows, released in rowtime order, keep it


def test_a_view_joined_on_the_operator_resumes_after_a_stop_without_losing_or_repeating_rows(spark, tmp_path):
    rng = random.Random("resume")
    write(tmp_path, rng, 80)
    in_view, direct = sqls(tmp_path, "left-rows-join")
    later = (rows(rng, 80, 10 ** 6), rows(rng, 80, 10 ** 6))  # after the first part's rows

    def more():
        write_jsonl(tmp_path / "a" / "2.json", later[0])
        write_jsonl(tmp_path / "b" / "2.json", later[1])

    run_in_two_parts(spark, in_view, tmp_path / "run", more)
    expected, _ = run_until_idle(spark, direct, tmp_path / "direct")
    assert len(expected) > 40 and ids(read_output(tmp_path / "run" / "out")) == ids(expected)


def test_a_view_whose_operator_join_emits_eager_rows_is_refused_naming_it(tmp_path):
    ddl = DDL.format(a=tmp_path / "a", b=tmp_path / "b")
    sql = ddl + ("CREATE VIEW j AS SELECT STREAM x.id AS xid, y.id AS yid FROM a AS x OVER (ROWS CURRENT ROW) "
                 "LEFT JOIN b AS y OVER (ROWS 1 PRECEDING) ON x.k = y.k EMIT EAGER;\nSELECT STREAM * FROM j;")
    with pytest.raises(Unsupported, match="a view whose join emits EMIT EAGER rows"):
        Pipeline.from_sql(sql, "v.sql")
