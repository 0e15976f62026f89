"""Queries inside expressions run as semi, anti and single-row joins (issue 67), over tables: the
rows Flink's own tests expect of them (SemiJoinITCase, ScalarQueryITCase and JoinITCase, whose
tables hold NULLs on both sides), through `streamjoin run --dialect risingwave`. SQL's NOT IN is
null-aware: a NULL among the subquery's values drops every row, a NULL on the left passes an
empty subquery only."""

from __future__ import annotations

import pytest
from runtime_helpers import read_output
from streamjoin.errors import SqlError

TABLES = """CREATE TABLE l (a INT, b DOUBLE);
CREATE TABLE r (c INT, d DOUBLE);
INSERT INTO l VALUES (1, 2.0), (1, 2.0), (2, 1.0), (2, 1.0), (3, 3.0), (NULL, NULL), (NULL, 5.0), (6, NULL);
INSERT INTO r VALUES (2, 3.0), (2, 3.0), (3, 2.0), (4, 1.0), (NULL, NULL), (NULL, 5.0), (6, NULL);
"""
N = None


def run_view(spark, tmp_path, query: str) -> list[tuple]:
    from streamjoin.runtime.pipeline import Pipeline

    pipeline = Pipeline.from_sql(TABLES + f"CREATE MATERIALIZED VIEW mv AS {query};\n", "s.sql", dialect="risingwave")
    statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert all(s["state"] == "finished" for s in statuses.values()), statuses
    names = [c.name for c in pipeline.query.output]
    return sorted((tuple(r.get(n) for n in names) for r in read_output(tmp_path / "out")), key=repr)


# (query, rows): Flink's SemiJoinITCase / ScalarQueryITCase / JoinITCase on the same tables
CASES = {
    "in": ("SELECT * FROM l WHERE a IN (SELECT c FROM r)", [(2, 1.0), (2, 1.0), (3, 3.0), (6, N)]),
    "not exists": ("SELECT * FROM l WHERE NOT EXISTS (SELECT * FROM r WHERE a = c)",
                   [(1, 2.0), (1, 2.0), (N, N), (N, 5.0)]),
    # the subquery holds every row of r (a NULL among them) when b > 2, else none: empty passes, NULL a too
    "not in, correlated on the left only": ("SELECT * FROM l WHERE a NOT IN (SELECT c FROM r WHERE b > 2)",
                                            [(1, 2.0), (1, 2.0), (2, 1.0), (2, 1.0), (N, N), (6, N)]),
    # (NULL, 5.0)'s subquery is {NULL}: UNKNOWN, dropped; every other row's is empty or lacks a
    "not in, correlated": ("SELECT * FROM l WHERE a NOT IN (SELECT c FROM r WHERE b = d AND b > 1)",
                           [(1, 2.0), (1, 2.0), (2, 1.0), (2, 1.0), (3, 3.0), (N, N), (6, N)]),
    "not in, in a derived table": (
        "SELECT * FROM (SELECT * FROM l WHERE a NOT IN (SELECT c FROM r WHERE b = d AND c < 3)) t WHERE t.b > 2",
        [(3, 3.0), (N, 5.0)]),
    "in over an aggregate, correlated": ("SELECT * FROM r WHERE c IN (SELECT SUM(a) FROM l WHERE b = d)", [(4, 1.0)]),
    # COUNT over no rows is 0, not NULL (the count bug)
    "scalar count, correlated": ("SELECT * FROM l WHERE (SELECT COUNT(*) FROM r WHERE a = c) > 0",
                                 [(2, 1.0), (2, 1.0), (3, 3.0), (6, N)]),
    "scalar count is 0 without rows": ("SELECT a, (SELECT COUNT(*) FROM r WHERE r.c = l.a) AS n FROM l WHERE b >= 2",
                                       [(1, 0), (1, 0), (3, 1), (N, 0)]),
    "scalar of one row": ("SELECT * FROM l WHERE a = (SELECT c FROM r WHERE c = 3)", [(3, 3.0)]),
    "not exists with an inequality": ("SELECT * FROM l WHERE NOT EXISTS (SELECT * FROM r WHERE l.a = r.c AND l.b <> r.d)",
                                      [(1, 2.0), (1, 2.0), (N, N), (N, 5.0), (6, N)]),
    "scalar average, correlated": (
        "SELECT a, b FROM l WHERE a * b < 2.0 * (SELECT AVG(d) FROM r WHERE l.a = r.c AND c < 6)", [(2, 1.0), (2, 1.0)]),
    "scalar average, uncorrelated": ("SELECT a, b FROM l WHERE a >= 1.0 * (SELECT AVG(d) FROM r WHERE c > 2)",
                                     [(2, 1.0), (2, 1.0), (3, 3.0), (6, N)]),
    # a join of tables whose ON holds an OR (its parentheses kept: before 2026-12-07 `k AND x OR y`)
    "or in the condition of a join of tables": (
        "SELECT l.a, r.d FROM l JOIN r ON l.a = r.c AND (r.d > 2.5 OR r.d IS NULL)", [(2, 3.0), (2, 3.0), (2, 3.0), (2, 3.0), (6, N)]),
    "semi join written": ("SELECT l.* FROM l LEFT SEMI JOIN r ON l.a = r.c", [(2, 1.0), (2, 1.0), (3, 3.0), (6, N)]),
    "exists and not exists, nested": (
        "SELECT * FROM l WHERE EXISTS (SELECT * FROM r WHERE r.c = l.a AND r.c NOT IN (SELECT a FROM l WHERE a > 2))",
        [(2, 1.0), (2, 1.0)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_subquery_over_tables_gives_flinks_rows(spark, tmp_path, name):
    query, rows = CASES[name]
    assert run_view(spark, tmp_path, query) == sorted(rows, key=repr)


def test_a_scalar_subquery_of_more_than_one_row_stops_the_run_naming_it(spark, tmp_path):
    with pytest.raises(Exception, match="scalar subquery produced more than one row: \\(SELECT c FROM r\\)"):
        run_view(spark, tmp_path, "SELECT * FROM l WHERE a = (SELECT c FROM r)")
    assert not list((tmp_path / "out").glob("part-*"))  # nothing written


@pytest.mark.parametrize(("query", "message"), [
    ("SELECT * FROM l WHERE a > 1 OR EXISTS (SELECT * FROM r WHERE r.c = l.a)", "joined by AND"),
    ("SELECT * FROM l WHERE b > (SELECT MAX(d) FROM r WHERE r.c <> l.a)", "joined on equalities"),
    ("SELECT * FROM l WHERE a IN (SELECT c, d FROM r)", "compares one column"),
    ("SELECT * FROM l WHERE EXISTS (SELECT l.a FROM r WHERE r.c = 1)", "outside its WHERE"),
])
def test_a_subquery_that_is_no_join_is_refused_saying_what_to_write(query, message):
    from streamjoin.plan import compile_sql

    with pytest.raises(SqlError, match=message):
        compile_sql(TABLES + f"CREATE MATERIALIZED VIEW mv AS {query};\n", "s.sql", dialect="risingwave")


# a stream against a table's snapshot (SEMANTICS §7): each row decided against the snapshot
def test_a_streams_subqueries_against_a_table_are_decided_row_by_row_against_its_snapshot(spark, tmp_path):
    from test_run_stream_table import ANIMALS, EVENTS, beast

    edible = {a["animal_id"] for a in ANIMALS if a["edible"] == "true"}
    cases = {
        "SELECT STREAM row_id FROM beast_events e WHERE animal_id IN (SELECT animal_id FROM animal_data WHERE edible);":
            [e["row_id"] for e in EVENTS if e["animal_id"] in edible],
        "SELECT STREAM row_id FROM beast_events e WHERE NOT EXISTS "
        "(SELECT * FROM animal_data a WHERE a.animal_id = e.animal_id AND a.poisonous);":
            [e["row_id"] for e in EVENTS if e["animal_id"] != 2],
        "SELECT STREAM row_id, (SELECT COUNT(*) FROM animal_data a WHERE a.animal_id = e.animal_id) AS n FROM beast_events e;":
            [(e["row_id"], 1 if e["animal_id"] in (1, 2, 3) else 0) for e in EVENTS],
    }
    for n, (query, expected) in enumerate(cases.items()):
        rows, status = beast(spark, tmp_path / str(n), query)
        got = [tuple(r.values()) if len(r) > 1 else r["row_id"] for r in rows]
        assert got == expected, query
        assert status["state"] == "finished"
