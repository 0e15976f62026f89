"""s-Server's streaming `ORDER BY ROWTIME, c1 [DESC], ...` (no WITHIN): rows leave in rowtime order,
and the rows of one rowtime in the order of the later keys. In a view the order is what a
windowed aggregate reading it sees (its frame is the rows up to and including each row); in the
final query it is the order of the written rows."""

from __future__ import annotations

import random
import re

import pytest
from runtime_helpers import ms, run_until_idle, ts, write_jsonl
from streamjoin.errors import Unsupported
from streamjoin.lower.explain import explain_text
from streamjoin.plan import compile_sql
from streamjoin.runtime.pipeline import Pipeline

DDL = ("CREATE STREAM s (id INT, k VARCHAR, v INT, ts TIMESTAMP) WITH (connector = 'files', path = '{path}', "
       "format = 'json', rowtime = 'ts');\n")


def rows(seed: str, n: int = 90) -> list[dict]:
    rng = random.Random(seed)  # few rowtimes, many rows each: the order within a rowtime matters
    values = rng.sample(range(1000), n)  # distinct: the order is total
    times = sorted(rng.randint(0, 5) * 1000 for _ in range(n))  # in rowtime order: none late
    return [{"id": i, "k": rng.choice("abc"), "v": values[i], "ts": ts(times[i])} for i in range(n)]


def test_a_view_ordered_within_its_rowtime_is_read_in_that_order_by_a_windowed_aggregate(spark, tmp_path):
    data = rows("view")
    write_jsonl(tmp_path / "in" / "1.json", data)
    sql = DDL.format(path=tmp_path / "in") + (
        "CREATE VIEW o AS SELECT STREAM * FROM s ORDER BY s.ROWTIME, k DESC, v;\n"
        "SELECT STREAM id, SUM(v) OVER (RANGE INTERVAL '0' SECOND PRECEDING) AS running FROM o;")
    assert "a view that orders the rows of one rowtime" in explain_text(compile_sql(sql, "o.sql"))
    out, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["state"] == "finished", status
    expected, total, at = {}, 0, None
    for r in sorted(data, key=lambda r: (ms(r["ts"]), -ord(r["k"]), r["v"])):
        total = total + r["v"] if r["ts"] == at else r["v"]
        at = r["ts"]
        expected[r["id"]] = total
    assert {r["id"]: r["running"] for r in out} == expected


def test_the_final_query_ordered_within_its_rowtime_writes_its_rows_in_that_order(spark, tmp_path):
    data = rows("final")
    write_jsonl(tmp_path / "in" / "1.json", data)
    sql = DDL.format(path=tmp_path / "in") + "SELECT STREAM ROWTIME AS t, k, v, id FROM s WHERE v > 100 ORDER BY ROWTIME, k, v DESC;"
    out, _ = run_until_idle(spark, sql, tmp_path / "run")
    keys = [(r["t"], r["k"], -r["v"]) for r in out]
    assert len(out) == sum(r["v"] > 100 for r in data) and keys == sorted(keys)


@pytest.mark.parametrize(("order", "message"), [
    ("ORDER BY ROWTIME DESC", "ORDER BY ROWTIME DESC"),  # not a stream's order
    ("ORDER BY k, ROWTIME", "ORDER BY k, ROWTIME"),
    ("ORDER BY ROWTIME, v + 1", "ORDER BY ROWTIME, v + 1"),  # not an output column
])
def test_an_order_by_that_is_not_the_rowtime_then_output_columns_is_refused_naming_it(tmp_path, order, message):
    sql = DDL.format(path=tmp_path) + f"SELECT STREAM k, v FROM s {order};"
    with pytest.raises(Unsupported, match=re.escape(message)):
        Pipeline.from_sql(sql, "o.sql")


def test_order_by_the_rowtime_by_its_output_name_is_the_rowtime_order_and_an_alias_of_another_column_is_refused(tmp_path):
    """`ORDER BY ts` where ts is the declared rowtime (selected as itself) orders by the rowtime,
    which rows leave in anyway; `ORDER BY n` where n is another output column is refused naming it."""
    streams = f"CREATE STREAM a (k INT, ts TIMESTAMP) WITH (path = '{tmp_path}/a', rowtime = 'ts');\n"
    assert compile_sql(streams + "SELECT STREAM k, ts FROM a ORDER BY ts;", "o.sql").final.order_within == ()
    Pipeline.from_sql(streams + "SELECT STREAM k, ts FROM a ORDER BY ts;", "o.sql")  # accepted by run
    with pytest.raises(Unsupported, match="ORDER BY n"):
        Pipeline.from_sql(streams + "SELECT STREAM k AS n, ts FROM a ORDER BY n;", "o.sql")
