"""SELECT DISTINCT, DISTINCT ON and UNION ALL (corpus risingwave/07): planned as written, run where
`run` can give their meaning (DISTINCT over tables, UNION ALL of streams), refused by name where it
cannot yet (DISTINCT over a stream), never silently read as a plain SELECT (which wrote the
duplicates a DISTINCT removes)."""

from __future__ import annotations

import pytest
from streamjoin.errors import SqlError, Unsupported
from streamjoin.lower.support import checked_plan
from streamjoin.plan import compile_sql
from streamjoin.runtime.pipeline import Pipeline

STREAMS = """CREATE STREAM a (k INT, v INT) WITH (path = '/tmp/a');
CREATE STREAM b (k INT, w INT) WITH (path = '/tmp/b');
"""


def test_distinct_is_a_grouping_by_every_output_column_and_run_refuses_distinct_on_over_a_stream():
    plain = compile_sql(STREAMS + "SELECT STREAM DISTINCT k, v * 2 AS w FROM a;", "d.sql").queries[-1]
    assert plain.distinct is None and [k.sql() for k in plain.aggregation.keys] == ["a.k", "a.v * 2"]
    on = compile_sql(STREAMS + "SELECT STREAM DISTINCT ON (a.k) a.k, a.v FROM a;", "d.sql")
    assert [e.sql() for e in on.queries[-1].distinct] == ["a.k"]
    with pytest.raises(Unsupported, match=r"SELECT DISTINCT ON \(...\) over a stream"):
        Pipeline.from_sql(STREAMS + "SELECT STREAM DISTINCT ON (k) k, v FROM a;", "d.sql")


def test_a_union_all_is_a_view_of_its_branches_named_by_the_first_each_branch_an_input():
    sql = STREAMS + """CREATE VIEW both_sides AS SELECT STREAM k, v AS x FROM a UNION ALL SELECT STREAM k, w FROM b;
SELECT STREAM k, x FROM both_sides;"""
    script = compile_sql(sql, "u.sql")
    union = script.view("both_sides")
    assert union.union_of == ("both_sides__1", "both_sides__2")
    assert [c.name for c in union.output] == ["k", "x"]
    assert [c.name for c in script.view("both_sides__2").output] == ["k", "w"]
    assert [i.relation for i in union.inputs] == ["both_sides__1", "both_sides__2"]  # each branch staged and run
    Pipeline.from_sql(sql, "u.sql")  # runs since 2026-11-29 (tests/lower/test_union_all.py)


@pytest.mark.parametrize(("query", "message", "where"), [
    ("SELECT STREAM k FROM a UNION SELECT STREAM k FROM b", "UNION without ALL removes duplicate rows", (3, 54)),
    ("SELECT STREAM k, v FROM a UNION ALL SELECT STREAM k FROM b", "each branch of a UNION ALL selects the same number", (3, 61)),
])
def test_a_union_that_cannot_be_read_is_refused_at_its_place(query, message, where):
    with pytest.raises(SqlError, match=message) as error:
        compile_sql(STREAMS + f"CREATE VIEW u AS {query};\nSELECT STREAM k FROM u;", "u.sql")
    assert (error.value.line, error.value.col) == where, str(error.value)


def test_distinct_and_distinct_on_over_tables_give_one_row_per_row_or_per_value(spark, tmp_path):
    from runtime_helpers import read_output

    seeded = "create table t (a int, b int);\ninsert into t values (1, 1), (1, 2), (2, 3), (1, 1);\n"
    for view, want in (("select distinct a, b from t", [(1, 1), (1, 2), (2, 3)]), ("select distinct on (a) a, b from t", None)):
        out = tmp_path / view.split()[2]
        Pipeline.from_sql(seeded + f"create materialized view v as {view};", "t.sql", dialect="risingwave").run(
            spark, out / "checkpoint", str(out / "rows"), until_idle=True)
        rows = sorted((r["a"], r["b"]) for r in read_output(out / "rows"))
        if want is not None:
            assert rows == want
        else:  # one row per a, any of its rows
            assert [a for a, _ in rows] == [1, 2] and rows[0] in ((1, 1), (1, 2)) and rows[1] == (2, 3), rows


@pytest.mark.parametrize(("clause", "named"), [
    ("ORDER BY k", "ORDER BY k"),
    ("LIMIT 5", "LIMIT 5"),
    ("QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY k) = 1", "QUALIFY ROW_NUMBER()"),
])
def test_clauses_run_cannot_carry_out_are_refused_by_name_never_dropped(clause, named):
    sql = STREAMS + "SELECT STREAM k FROM a " + clause + ";"
    assert compile_sql(sql, "c.sql").queries[-1].unrun  # `check` reads it
    with pytest.raises(Unsupported, match=named.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        Pipeline.from_sql(sql, "c.sql")


def test_having_is_in_the_plan_and_needs_group_by():
    sql = STREAMS + "SELECT STREAM k, COUNT(*) AS n FROM a GROUP BY FLOOR(a.ROWTIME TO MINUTE), k HAVING COUNT(*) > 1;"
    assert compile_sql(sql, "h.sql").queries[-1].having.sql() == "COUNT(*) > 1"
    Pipeline.from_sql(sql, "h.sql")  # runs (tests/lower/test_aggregate_clauses.py)
    with pytest.raises(SqlError, match="HAVING needs GROUP BY"):
        compile_sql(STREAMS + "SELECT STREAM k FROM a HAVING k > 1;", "h.sql")


def test_ordering_by_the_rowtime_is_the_order_rows_leave_in_and_runs():
    sql = STREAMS + "SELECT STREAM k FROM a ORDER BY a.ROWTIME;"
    assert compile_sql(sql, "o.sql").queries[-1].unrun == ()
    Pipeline.from_sql(sql, "o.sql")


@pytest.mark.parametrize(("query", "join_type"), [
    ("SELECT STREAM a.k FROM a LEFT SEMI JOIN b ON a.k = b.k", "LEFT SEMI"),
    ("SELECT STREAM a.k FROM a LEFT ANTI JOIN b ON a.k = b.k", "LEFT ANTI"),
    ("SELECT STREAM k FROM a WHERE k IN (SELECT k FROM b)", "LEFT SEMI"),
])
def test_a_semi_join_of_two_streams_is_planned_on_streamjoins_operator(query, join_type):
    """Before 2026-11-27 a SEMI join was read as an outer join (every match written) and a
    subquery in WHERE failed inside Spark; since issue 67 both are semi / anti joins (of two
    streams: on streamjoin's operator, tests/lower/test_subquery_joins_run.py)."""
    query_plan = compile_sql(STREAMS + query + ";", "s.sql").queries[-1]
    assert [j.join_type for j in query_plan.joins] == [join_type]
    assert [c.name for c in query_plan.output] == ["k"]  # no column of the right input
    pipeline = Pipeline.from_sql(STREAMS + query + ";", "s.sql")
    assert checked_plan(pipeline.script, pipeline.query).joins[0].engine == "operator"


def test_a_right_semi_join_is_refused_where_written():
    with pytest.raises(SqlError, match="RIGHT SEMI JOIN is not supported") as error:
        compile_sql(STREAMS + "SELECT STREAM b.k FROM a RIGHT SEMI JOIN b ON a.k = b.k;", "s.sql")
    assert error.value.line == 3 and error.value.col > 1, str(error.value)


def test_a_table_view_with_a_clause_run_cannot_carry_out_is_refused_not_dropped():
    sql = STREAMS + """CREATE TABLE t (k INT, w INT) WITH (path = '/tmp/t');
CREATE VIEW first_t AS SELECT t.k, t.w FROM t ORDER BY t.w LIMIT 1;
SELECT STREAM a.k, f.w FROM a JOIN first_t AS f ON a.k = f.k;"""
    with pytest.raises(Unsupported, match="table view 'first_t': LIMIT 1 is not carried out"):
        Pipeline.from_sql(sql, "v.sql")
