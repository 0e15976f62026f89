"""Queries over tables only (RisingWave's e2e tests: tables seeded and changed by the file's
INSERT, UPDATE and DELETE; views of them): one batch over the tables as they stand at the end of
the file, written once (runtime.pipeline.run_table_query): joins, GROUP BY, TUMBLE / HOP over a
table, ORDER BY and LIMIT."""

from __future__ import annotations

import pytest
from runtime_helpers import read_output
from streamjoin.runtime.pipeline import Pipeline

# ---------------------------------------------------------------------------- RisingWave's DML tests

DML_SCRIPT = """
create table t1 (k int primary key, v int);
create table t2 (k int primary key, w int);
insert into t1 values (1, 10), (2, 20), (3, 30);
insert into t2 values (1, 100), (3, 300), (4, 400);
create materialized view mv as select t1.k as k1, t1.v, t2.k as k2, t2.w from t1 full join t2 on t1.k = t2.k;
update t2 set w = w + 1 where k = 1;
update t1 set v = 0 where v > 25;
delete from t1 where k = 2;
insert into t1 values (4, 40);
delete from t2 where w is null or k = 3;
"""


def test_a_view_of_tables_changed_by_insert_update_and_delete_is_written_as_it_stands_at_the_end(spark, tmp_path):
    """RisingWave's e2e tests (INSERT, UPDATE, DELETE, then the view's rows): `run` writes the
    view's final rows once, a batch over the tables as they stand."""
    pipeline = Pipeline.from_sql(DML_SCRIPT, "dml.sql", dialect="risingwave")
    status = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)["query"]
    got = sorted(tuple(r.values()) for r in read_output(tmp_path / "out"))
    # t1: (1, 10), (3, 0), (4, 40); t2: (1, 101), (4, 400)
    want = sorted([(1, 10, 1, 101), (3, 0, None, None), (4, 40, 4, 400)], key=repr)
    assert sorted(got, key=repr) == want and status["rows_emitted"] == 3, (got, status)


GROUPS_TABLES = """
create table t1 (k int primary key, v int);
create table t2 (k int primary key, w int, g varchar);
insert into t1 values (1, 10), (2, 20), (3, 30), (5, 7);
insert into t2 values (1, 100, 'a'), (3, 300, 'b'), (4, 400, 'a'), (5, 500, 'a');
"""
GROUPS_VIEW = """
create materialized view groups as
  select t2.g, count(*) as n, sum(t1.v) as s, count(distinct t1.k) as dk, max(t2.w) as mx, avg(t1.v) as mean
  from t1 join t2 on t1.k = t2.k group by t2.g having count(*) > 0;
"""
GROUPS_CASES = {  # the final view's statements and rows; t1 is updated after it (v > 25 -> 0)
    "groups": (GROUPS_VIEW, [("a", 2, 17, 2, 500, 8.5), ("b", 1, 0, 1, 300, 0.0)]),  # a: k 1 (10), 5 (7); b: k 3 (0)
    "a view of the groups": (GROUPS_VIEW + "create materialized view rich as select g, n, s / n as per from groups where s > 5;",
                             [("a", 2, 8)]),
    "no GROUP BY, no rows": ("create materialized view none as select count(*) as n, sum(v) as s from t1 where v > 1000;",
                             [(0, None)]),  # one row, as SQL gives
}


@pytest.mark.parametrize("case", GROUPS_CASES)
def test_groups_of_tables_changed_by_insert_update_and_delete_are_one_batch_of_the_tables_as_they_stand(spark, tmp_path, case):
    """RisingWave's e2e tests aggregate tables (COUNT, SUM, COUNT DISTINCT, MAX, AVG, HAVING, a
    view of the groups read by another view): `run` writes the final view's rows as it stands."""
    views, want = GROUPS_CASES[case]
    script = GROUPS_TABLES + views + "\nupdate t1 set v = 0 where v > 25;\n"
    pipeline = Pipeline.from_sql(script, "dml.sql", dialect="risingwave")
    pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    got = sorted((tuple(r.values()) for r in read_output(tmp_path / "out")), key=repr)
    assert got == sorted(want, key=repr), got


WINDOWED_TABLE = """
create table e (k int, v int, ts timestamp);
insert into e values (1, 10, '2024-01-01 00:00:01'), (1, 5, '2024-01-01 00:00:07'), (2, 1, '2024-01-01 00:00:12'), (2, 3, NULL);
"""


@pytest.mark.parametrize("view,want", [
    ("select k, window_start, window_end, sum(v) as s from tumble(e, ts, interval '5' second) group by k, window_start, window_end",
     [(1, "00:00:00", "00:00:05", 10), (1, "00:00:05", "00:00:10", 5), (2, "00:00:10", "00:00:15", 1)]),
    ("select k, window_start, count(*) as n from hop(e, ts, interval '5' second, interval '10' second) group by k, window_start",
     [(1, "-00:00:05", 1), (1, "00:00:00", 2), (1, "00:00:05", 1), (2, "00:00:05", 1), (2, "00:00:10", 1)]),
])
def test_tumble_and_hop_over_a_table_group_its_rows_by_their_windows_in_one_batch(spark, tmp_path, view, want):
    """RisingWave windows a table's rows too (its e2e tests and workshops do): each row in the
    windows its column falls in, a NULL in none; grouped, one batch of the table as it stands."""
    import datetime as dt

    pipeline = Pipeline.from_sql(WINDOWED_TABLE + f"create materialized view w as {view};", "w.sql", dialect="risingwave")
    pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    midnight = dt.datetime(2024, 1, 1)

    def clock(text: str) -> str:  # a window bound as its offset from midnight
        delta = dt.datetime.fromisoformat(text.replace("Z", "")) - midnight
        return ("-" if delta < dt.timedelta(0) else "") + str(abs(delta)).zfill(8)

    got = sorted(tuple(clock(v) if isinstance(v, str) else v for v in r.values()) for r in read_output(tmp_path / "out"))
    assert got == sorted(want), got


def test_a_view_of_tables_with_order_by_and_limit_writes_its_top_rows_in_order(spark, tmp_path):
    """RisingWave's top-N views (`ORDER BY s DESC LIMIT 3`, an output alias, NULLs first when
    descending as in PostgreSQL), over tables: the batch sorts and cuts; a view of one reads its top rows."""
    script = GROUPS_TABLES + """
    insert into t1 values (6, NULL), (7, 1);
    insert into t2 values (6, 600, 'c'), (7, 700, 'd');
    create materialized view sums as select t2.g, sum(t1.v) as s from t1 join t2 on t1.k = t2.k group by t2.g;
    create materialized view top as select g, s from sums order by s desc limit 3;
    """  # sums: a 17, b 30, c NULL, d 1
    named = "create materialized view named as select top.g from top where top.s is not null order by g;"
    for final, text, want in (("top", script, [("c", None), ("b", 30), ("a", 17)]), ("named", script + named, [("a",), ("b",)])):
        pipeline = Pipeline.from_sql(text, "top.sql", dialect="risingwave")
        pipeline.run(spark, tmp_path / final / "checkpoint", str(tmp_path / final / "out"), until_idle=True)
        assert [tuple(r.values()) for r in read_output(tmp_path / final / "out")] == want, final


def test_grouping_sets_rollup_cube_and_array_agg_over_tables_are_postgresqls(spark, tmp_path):
    """GROUPING SETS / ROLLUP / CUBE over tables: a group for each set, the keys it lacks NULL, a
    set written twice giving its rows twice; ARRAY_AGG keeps NULLs and is NULL over no rows, with
    FILTER and GROUP BY too (it was computed as a DISTINCT: every aggregate column unresolved).
    Rows as PostgreSQL gives them for the same queries."""
    tables = "create table t (g varchar, k int, v int);\n" \
             "insert into t values ('a', 1, 10), ('a', 2, NULL), ('b', 1, 5), (NULL, 3, 7);\n"
    cases = {
        "select g, k, count(*) as n, sum(v) as s from t group by grouping sets ((g), (g, k), ())":
            [("a", None, 2, 10), ("b", None, 1, 5), (None, None, 1, 7), ("a", 1, 1, 10), ("a", 2, 1, None),
             ("b", 1, 1, 5), (None, 3, 1, 7), (None, None, 4, 22)],
        "select g, count(*) as n from t group by rollup (g, g)":
            [("a", 2), ("a", 2), ("b", 1), ("b", 1), (None, 1), (None, 1), (None, 4)],
        "select k, count(*) as n from t where k < 3 group by cube (k)": [(1, 2), (2, 1), (None, 3)],
        "select g, array_agg(v) filter (where k < 3) as vs from t group by g":
            [("a", [10, None]), ("b", [5]), (None, None)],
    }
    for n, (query, want) in enumerate(cases.items()):
        pipeline = Pipeline.from_sql(tables + f"create materialized view q as {query};\n", "g.sql", dialect="risingwave")
        pipeline.run(spark, tmp_path / str(n) / "checkpoint", str(tmp_path / str(n) / "out"), until_idle=True)
        got = sorted((tuple(r.values()) for r in read_output(tmp_path / str(n) / "out")), key=repr)
        assert got == sorted(want, key=repr), query


def test_a_table_seeded_with_arrays_and_a_flush_runs_with_its_arrays(spark, tmp_path):
    """RisingWave's e2e scripts seed array columns (`CAST(ARRAY[] AS SMALLINT[])`) and FLUSH before
    they query (issue 68): the arrays are the rows' values, FLUSH a no-op with a note."""
    from test_subquery_joins_run import run_view

    tables = ("-- seeded as RisingWave's tests do\nCREATE TABLE t (k INT, xs SMALLINT[]);\n"
              "INSERT INTO t VALUES (1, CAST(ARRAY[] AS SMALLINT[])), (2, ARRAY[3, NULL, 5]), (3, NULL);\nFLUSH;\n")
    rows = run_view(spark, tmp_path, "SELECT k, xs, CARDINALITY(xs) AS n FROM t", tables=tables)
    assert rows == sorted([(1, [], 0), (2, [3, None, 5], 3), (3, None, None)], key=repr)


def test_a_view_calling_sql_functions_gives_the_functions_values(spark, tmp_path):
    """CREATE FUNCTION ... LANGUAGE SQL (issue 68: RisingWave's demos declare them): each call is the
    function's expression over its arguments, nested calls too."""
    from test_subquery_joins_run import run_view

    tables = ("CREATE FUNCTION to_ms(a timestamptz) RETURNS numeric LANGUAGE SQL AS $$ SELECT EXTRACT(EPOCH FROM a) * 1000 $$;\n"
              "CREATE FUNCTION plus(INT, INT) RETURNS INT LANGUAGE sql AS 'select $1 + $2';\n"
              "CREATE FUNCTION twice_plus(x INT) RETURNS INT AS $$ SELECT plus(x, x) * 2; $$ LANGUAGE sql;\n"
              "CREATE TABLE t (k INT, ts TIMESTAMPTZ);\n"
              "INSERT INTO t VALUES (1, '1970-01-01 00:00:02+00'), (NULL, '1970-01-01 00:00:00.5+00');\n")
    rows = run_view(spark, tmp_path, "SELECT k, to_ms(ts) AS ms, twice_plus(k) AS tk, plus(k, 1) AS pk FROM t", tables=tables)
    assert [(k, float(ms), tk, pk) for k, ms, tk, pk in rows] == sorted([(1, 2000.0, 4, 2), (None, 500.0, None, None)], key=repr)


def test_create_table_as_a_query_over_tables_holds_the_querys_rows(spark, tmp_path):
    """RisingWave's `CREATE TABLE t AS query` (issue 68): t's rows are the query's over the tables;
    a later change of a table it read is refused (t would keep the rows of its statement)."""
    from streamjoin.errors import SqlError
    from streamjoin.plan import compile_sql
    from test_subquery_joins_run import run_view

    tables = ("CREATE TABLE t (a INT, b INT);\nINSERT INTO t VALUES (1, 2), (3, 4), (3, NULL);\n"
              "CREATE TABLE sums (a, total) AS SELECT a, SUM(b) FROM t GROUP BY a;\n")
    rows = run_view(spark, tmp_path, "SELECT sums.a, sums.total, t.b FROM sums JOIN t ON sums.a = t.a", tables=tables)
    assert rows == sorted([(1, 2, 2), (3, 4, 4), (3, 4, None)], key=repr)
    with pytest.raises(SqlError, match="'t' is changed after CREATE TABLE sums AS ... read it"):
        compile_sql(tables + "INSERT INTO t VALUES (5, 6);\nCREATE MATERIALIZED VIEW mv AS SELECT * FROM sums;\n", "rw.sql",
                    dialect="risingwave")
