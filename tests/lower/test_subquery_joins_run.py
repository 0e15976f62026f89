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


# RisingWave's e2e_test/batch/subquery/subquery.slt.part (commit 448c6570): NULLs on both sides
NULLS = """CREATE TABLE t1 (x INT, y INT);
CREATE TABLE t2 (x INT, y INT);
CREATE TABLE t3 (x INT, y INT);
INSERT INTO t1 VALUES (1, 1), (2, 2), (1, NULL), (NULL, 2), (2, NULL), (NULL, 1), (NULL, NULL);
INSERT INTO t2 VALUES (1, 2), (2, 2), (1, NULL), (NULL, 2), (2, NULL), (NULL, 1), (NULL, NULL);
INSERT INTO t3 VALUES (1, 2), (2, 2), (1, NULL), (NULL, 2), (2, NULL), (NULL, 1), (NULL, NULL);
"""


def run_view(spark, tmp_path, query: str, tables: str = TABLES) -> list[tuple]:
    from streamjoin.runtime.pipeline import Pipeline

    pipeline = Pipeline.from_sql(tables + f"CREATE MATERIALIZED VIEW mv AS {query};\n", "s.sql", dialect="risingwave")
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
    # LIMIT 1 under a correlation: one row of the key's; ordered DESC, NULLs come first (PostgreSQL's order)
    "scalar limit 1, correlated": ("SELECT a, (SELECT d FROM r WHERE r.c = l.a LIMIT 1) AS x FROM l WHERE a > 1",
                                   [(2, 3.0), (2, 3.0), (3, 2.0), (6, N)]),
    "scalar first of an order, correlated": (
        "SELECT b, (SELECT c FROM r WHERE r.d = l.b ORDER BY c DESC LIMIT 1) AS x FROM l",
        [(1.0, 4), (1.0, 4), (2.0, 3), (2.0, 3), (3.0, 2), (5.0, N), (N, N), (N, N)]),
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


RISINGWAVE = {
    "exists with an inequality": ("SELECT * FROM t1 WHERE EXISTS (SELECT * FROM t2 WHERE t1.x = t2.x AND t1.y <> t2.y)",
                                  [(1, 1)]),
    "not exists with an inequality": (
        "SELECT * FROM t1 WHERE NOT EXISTS (SELECT * FROM t2 WHERE t1.x = t2.x AND t1.y <> t2.y)",
        [(1, N), (2, 2), (2, N), (N, 1), (N, 2), (N, N)]),
    "in of an outer column": ("SELECT * FROM t1 WHERE t1.y IN (SELECT t1.y FROM t2 WHERE t1.x = t2.x)", [(1, 1), (2, 2)]),
}


@pytest.mark.parametrize("name", list(RISINGWAVE))
def test_a_subquery_over_tables_with_nulls_gives_risingwaves_rows(spark, tmp_path, name):
    query, rows = RISINGWAVE[name]
    assert run_view(spark, tmp_path, query, NULLS) == sorted(rows, key=repr)


# a subquery without FROM is over one row: its WHERE decides (RisingWave's subquery.slt.part, line 154 on)
LEFT_JOINED = """CREATE TABLE t1 (a INT, b INT);
CREATE TABLE t2 (c INT, d INT);
INSERT INTO t1 VALUES (1, 1);
"""
WITHOUT_FROM = {
    "exists of a value": ("SELECT * FROM t1 LEFT JOIN t2 ON t1.a = t2.c WHERE EXISTS (SELECT t2.d IS NULL)",
                          [(1, 1, N, N)], LEFT_JOINED),
    "exists where it holds": ("SELECT * FROM t1 LEFT JOIN t2 ON t1.a = t2.c WHERE EXISTS (SELECT t2.d WHERE t2.d IS NULL)",
                              [(1, 1, N, N)], LEFT_JOINED),
    "exists where it does not": (
        "SELECT * FROM t1 LEFT JOIN t2 ON t1.a = t2.c WHERE EXISTS (SELECT t2.d WHERE t2.d IS NOT NULL)", [], LEFT_JOINED),
    # UNKNOWN (b NULL) is no row: NOT EXISTS holds
    "not exists": ("SELECT a FROM l WHERE NOT EXISTS (SELECT b WHERE b > 1.5)", [(2,), (2,), (N,), (6,)], TABLES),
    # {2} where b < 2.5, else empty (which every a passes, NULL too)
    "not in": ("SELECT a FROM l WHERE a NOT IN (SELECT 2 WHERE b < 2.5)", [(1,), (1,), (3,), (N,), (N,), (6,)], TABLES),
    "scalar": ("SELECT a, (SELECT a * 10 WHERE b > 1.5) AS s FROM l",
               [(1, 10), (1, 10), (2, N), (2, N), (3, 30), (N, N), (N, N), (6, N)], TABLES),
}


@pytest.mark.parametrize("name", list(WITHOUT_FROM))
def test_a_subquery_without_from_is_its_expression_over_the_outer_row(spark, tmp_path, name):
    query, rows, tables = WITHOUT_FROM[name]
    assert run_view(spark, tmp_path, query, tables) == sorted(rows, key=repr)


def test_a_scalar_subquery_of_more_than_one_row_stops_the_run_naming_it(spark, tmp_path):
    with pytest.raises(Exception, match="scalar subquery produced more than one row: \\(SELECT c FROM r\\)"):
        run_view(spark, tmp_path, "SELECT * FROM l WHERE a = (SELECT c FROM r)")
    assert not list((tmp_path / "out").glob("part-*"))  # nothing written


@pytest.mark.parametrize(("query", "message"), [
    ("SELECT * FROM l WHERE a IN (SELECT c, d FROM r)", "compares one column"),
    # correlated in its own WITH
    ("SELECT * FROM l WHERE EXISTS (WITH w AS (SELECT c FROM r) SELECT * FROM w JOIN r ON w.c = l.a)", "its own WITH"),
    # a column of the subquery's input is named as written, not by the join's alias (exists_1.zz)
    ("SELECT * FROM l WHERE EXISTS (SELECT * FROM r WHERE r.zz = l.a)", "unknown column 'r.zz'"),
    # (it used to loop for ever: no pass took it out)
    ("SELECT a, ARRAY(SELECT c FROM r) AS cs FROM l", "a query inside ARRAY\\(...\\) is not supported"),
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


# tables the file changes after the view is created: the view as it stands after the file's statements
CHANGED = """CREATE TABLE t1 (x INT, y INT);
CREATE TABLE t2 (x INT, y INT);
INSERT INTO t1 VALUES (1, 1), (2, 2), (3, 3), (NULL, 4);
INSERT INTO t2 VALUES (1, 10), (1, 11), (2, 20);
CREATE MATERIALIZED VIEW mv AS {query};
DELETE FROM t2 WHERE y = 20;
INSERT INTO t2 VALUES (3, 30), (NULL, 40);
DELETE FROM t2 WHERE y = 10;
{last}
"""


@pytest.mark.parametrize(("query", "last", "rows"), [
    ("SELECT * FROM t1 WHERE EXISTS (SELECT * FROM t2 WHERE t2.x = t1.x)", "", [(1, 1), (3, 3)]),
    ("SELECT * FROM t1 WHERE NOT EXISTS (SELECT * FROM t2 WHERE t2.x = t1.x)", "", [(2, 2), (N, 4)]),
    ("SELECT * FROM t1 WHERE x IN (SELECT x FROM t2)", "", [(1, 1), (3, 3)]),
    # t2 holds a NULL x: NOT IN is UNKNOWN for every row; once it is deleted, 2 passes (NULL x does not)
    ("SELECT * FROM t1 WHERE x NOT IN (SELECT x FROM t2)", "", []),
    ("SELECT * FROM t1 WHERE x NOT IN (SELECT x FROM t2)", "DELETE FROM t2 WHERE y = 40;", [(2, 2)]),
])
def test_a_subquery_over_tables_the_file_changes_gives_the_view_as_it_stands_after_them(spark, tmp_path, query, last, rows):
    from streamjoin.runtime.pipeline import Pipeline

    program = CHANGED.format(query=query, last=last)
    pipeline = Pipeline.from_sql(program, "s.sql", dialect="risingwave")
    assert any(j.join_type.filters for j in pipeline.query.joins)
    statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert all(s["state"] == "finished" for s in statuses.values()), statuses
    content: dict = {}
    for r in read_output(tmp_path / "out"):  # the changelog folded
        key = (r["x"], r["y"])
        content[key] = content.get(key, 0) + (-1 if r.get("op") == "-D" else 1)
    assert sorted((k for k, n in content.items() for _ in range(n)), key=repr) == sorted(rows, key=repr)


# RisingWave's sources without a time bound: the subquery's join a regular join on streamjoin's
# operator, its rows a changelog (a semi row written at its first partner; an anti row withdrawn at its first)
SOURCES = """CREATE SOURCE orders (id INT, cust INT) WITH (connector = 'files', path = '{d}/orders') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE pays (oid INT, amount INT) WITH (connector = 'files', path = '{d}/pays') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW mv AS SELECT o.id, o.cust FROM orders AS o WHERE {condition};
"""


@pytest.mark.parametrize(("condition", "keep"), [
    ("EXISTS (SELECT * FROM pays AS p WHERE p.oid = o.id)", lambda o, oids: o["id"] is not None and o["id"] in oids),
    pytest.param("NOT EXISTS (SELECT * FROM pays AS p WHERE p.oid = o.id)",
                 lambda o, oids: o["id"] not in oids or o["id"] is None, marks=pytest.mark.long),
    pytest.param("o.id IN (SELECT oid FROM pays)", lambda o, oids: o["id"] in oids and o["id"] is not None,
                 marks=pytest.mark.long),
    ("o.id NOT IN (SELECT oid FROM pays)", lambda o, oids: not oids or (o["id"] is not None and o["id"] not in oids
                                                                          and None not in oids)),
])
def test_a_subquery_over_sources_is_a_regular_semi_or_anti_join_whose_changelog_folds_to_sqls_rows(
        spark, tmp_path, condition, keep):
    import random

    from runtime_helpers import run_to_end, write_jsonl
    from streamjoin.runtime.pipeline import Pipeline

    rng = random.Random(condition)
    orders = [{"id": rng.choice([1, 2, 3, 4, 5, None]), "cust": n} for n in range(14)]
    pays = [{"oid": rng.choice([1, 2, 3, 6, None] if "NOT IN" not in condition else [1, 2, 3, 6]), "amount": n}
            for n in range(8)] + ([{"oid": None, "amount": 99}] if "NOT IN" in condition else [])
    write_jsonl(tmp_path / "orders" / "a.json", orders[:7])
    write_jsonl(tmp_path / "pays" / "a.json", pays[:3])
    pipeline = Pipeline.from_sql(SOURCES.format(d=tmp_path, condition=condition), "rw.sql", dialect="risingwave")
    assert pipeline.query.joins[-1].kind == "regular join" and pipeline.query.joins[-1].join_type.filters
    runner = pipeline.runner(spark, tmp_path / "checkpoint", str(tmp_path / "out")).start()
    runner.process_available()
    runner.process_available()
    write_jsonl(tmp_path / "pays" / "b.json", pays[3:])
    write_jsonl(tmp_path / "orders" / "b.json", orders[7:])
    status = run_to_end(runner)
    content: dict = {}
    for r in read_output(tmp_path / "out"):
        key = (r["id"], r["cust"])
        content[key] = content.get(key, 0) + (-1 if r.get("op") == "-D" else 1)
        assert content[key] >= 0, f"-D of {key}, which is not in the view"
    oids = {p["oid"] for p in pays}
    expected = sorted(((o["id"], o["cust"]) for o in orders if keep(o, oids)), key=repr)
    assert sorted((k for k, n in content.items() for _ in range(n)), key=repr) == expected, status


# two streams, the subquery's condition bounding the rowtimes (an interval join) or its FROM item's
# window: a semi row leaves at its first match, an anti row when its window closes without one
STREAM_SHAPES = {
    "exists-interval-final": ("EXISTS (SELECT * FROM in1 AS s1 WHERE s1.c = s0.c AND s1.k = s0.k AND "
                              "s1.ROWTIME BETWEEN s0.ROWTIME - INTERVAL '2' SECOND AND s0.ROWTIME + INTERVAL '1' SECOND)",
                              "SEMI", "FINAL", ("range", 1000, 0), ("range", 2000, 0)),
    "not-exists-window-changes": ("NOT EXISTS (SELECT * FROM in1 OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS s1 "
                                  "WHERE s1.c = s0.c AND s1.k = s0.k)", "ANTI", "CHANGES", ("range", 2000, 0),
                                  ("range", 1000, 0)),
    "not-exists-interval-final": ("NOT EXISTS (SELECT * FROM in1 AS s1 WHERE s1.c = s0.c AND s1.k = s0.k AND "
                                  "s1.ROWTIME BETWEEN s0.ROWTIME - INTERVAL '1' SECOND AND s0.ROWTIME + INTERVAL '2' SECOND)",
                                  "ANTI", "FINAL", ("range", 2000, 0), ("range", 1000, 0)),
    "in-window-eager": ("s0.k IN (SELECT k FROM in1 OVER (RANGE INTERVAL '2' SECOND PRECEDING) AS s1 WHERE s1.c = s0.c)",
                        "SEMI", "EAGER", ("range", 1000, 0), ("range", 2000, 0)),
}


@pytest.mark.parametrize("name", [n if n == "not-exists-window-changes"
                                  else pytest.param(n, marks=pytest.mark.long) for n in STREAM_SHAPES])
def test_a_subquery_over_two_streams_gives_the_references_rows(spark, tmp_path, name):
    import random

    from runtime_helpers import run_until_idle
    from test_differential import OPERATOR_SEED, compare, ddl, generate, two_way_by_case, write_inputs

    condition, join_type, emit, lwin, rwin = STREAM_SHAPES[name]
    rng = random.Random(f"{OPERATOR_SEED}-{name}")
    streams = generate(rng)
    dirs = write_inputs(tmp_path, streams, rng)
    window = {("range", 1000, 0): "OVER (RANGE INTERVAL '1' SECOND PRECEDING)",
              ("range", 2000, 0): "OVER (RANGE INTERVAL '2' SECOND PRECEDING)"}[lwin] if "OVER" in condition else ""
    sql = ddl(dirs) + (f"SELECT STREAM ROWTIME, s0.c AS c, s0.id AS id0, CAST(NULL AS INT) AS id1 FROM in0 {window} AS s0 "
                       f"WHERE {condition} EMIT {emit};")
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert status["late_rows"] == 0
    compare(rows, emit, two_way_by_case(streams, lwin, rwin, join_type,
                                        lambda a, b: a["k"] is not None and a["k"] == b["k"], emit))


# Flink's SemiAntiJoinStreamITCase: the subquery's rows a running aggregate that changes as its
# stream's rows come (its sums retracted and written again), the semi / anti join a regular join
FLINK_RETRACTION = """CREATE SOURCE ds1 (a INT, b VARCHAR) WITH (connector = 'files', path = '{d}/ds1') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE ds2 (c INT, d VARCHAR) WITH (connector = 'files', path = '{d}/ds2') FORMAT PLAIN ENCODE JSON;
{ds3}CREATE MATERIALIZED VIEW mv AS {query};
"""
DS3 = "CREATE MATERIALIZED VIEW ds3 AS SELECT SUM(c) AS c FROM ds2 GROUP BY d;\n"
DS1 = [(1, "a"), (2, "b"), (10, "c"), (6, "d"), (8, "e"), (11, "f")]
DS2 = [(0, "a"), (1, "a"), (1, "b"), (1, "b"), (1, "c"), (2, "c"), (3, "c"), (4, "c"), (1, "d"), (2, "d"), (3, "d"),
       (4, "e"), (4, "e")]


@pytest.mark.parametrize(("query", "rows"), [
    # testSemiJoinWithOneSideRetraction (its left side without (11, f))
    pytest.param("SELECT a FROM ds1 WHERE a IN (SELECT SUM(c) FROM ds2 GROUP BY d) AND a <> 11",
                 [(1,), (2,), (10,), (6,), (8,)], marks=pytest.mark.long),
    # testAntiJoinWithOneSideRetraction
    ("SELECT * FROM ds1 WHERE NOT EXISTS (SELECT c FROM ds3 WHERE a = c)", [(11, "f")]),
])
def test_flinks_semi_and_anti_joins_with_a_retracting_side_give_its_rows(spark, tmp_path, query, rows):
    from runtime_helpers import run_to_end, write_jsonl
    from streamjoin.runtime.pipeline import Pipeline

    write_jsonl(tmp_path / "ds1" / "a.json", [{"a": a, "b": b} for a, b in DS1])
    write_jsonl(tmp_path / "ds2" / "a.json", [{"c": c, "d": d} for c, d in DS2[:6]])
    program = FLINK_RETRACTION.format(d=tmp_path, query=query, ds3=DS3 if "ds3" in query else "")
    runner = Pipeline.from_sql(program, "flink.sql", dialect="risingwave").runner(
        spark, tmp_path / "checkpoint", str(tmp_path / "out")).start()
    runner.process_available()
    write_jsonl(tmp_path / "ds2" / "b.json", [{"c": c, "d": d} for c, d in DS2[6:]])  # the sums change
    run_to_end(runner)
    names = list(read_output(tmp_path / "out")[0]) if read_output(tmp_path / "out") else []
    content: dict = {}
    for r in read_output(tmp_path / "out"):
        key = tuple(r[n] for n in names if n != "op")
        content[key] = content.get(key, 0) + (-1 if r.get("op") == "-D" else 1)
        assert content[key] >= 0, f"-D of {key}, which is not in the view"
    assert sorted(k for k, n in content.items() for _ in range(n)) == sorted(rows)


def test_a_star_except_selects_the_stars_columns_without_those_it_names():
    """`* EXCEPT (...)` (RisingWave's subquery.slt.part selects so): it was read as `*`, every column."""
    from streamjoin.plan import compile_sql

    def output(query: str) -> list[str]:
        script = compile_sql(TABLES + f"CREATE MATERIALIZED VIEW mv AS {query};\n", "s.sql", dialect="risingwave")
        return [c.name for c in script.final.output]

    assert output("SELECT * EXCEPT (b) FROM l") == ["a"]
    assert output("SELECT l.* EXCEPT (a), r.* EXCEPT (d) FROM l JOIN r ON l.a = r.c") == ["b", "c"]
    with pytest.raises(SqlError, match="EXCEPT names r.c, which this \\* does not select"):
        output("SELECT l.* EXCEPT (r.c) FROM l JOIN r ON l.a = r.c")


@pytest.mark.long  # (42 s)
def test_a_scalar_subquery_over_a_stream_in_the_default_profile_is_a_regular_join_of_the_stream_read_whole(spark, tmp_path):
    """Outside the risingwave profile a stream without OVER is its current row, which cannot follow
    a running aggregate: `run` says to read it whole (refused before, pointing at 1:1); so read,
    the changelog folds to SQL's rows over all of both streams."""
    import random

    from runtime_helpers import run_until_idle, ts, write_jsonl
    from streamjoin.plan import compile_sql

    rng = random.Random("scalar-default-profile")
    s = [{"id": n, "k": rng.choice([1, 2, 3, None]), "v": rng.randint(0, 9), "rowtime": ts(1000 * n)} for n in range(24)]
    s2 = [{"k": rng.choice([1, 2, 4]), "v": rng.randint(0, 9), "rowtime": ts(500 * n)} for n in range(30)]
    write_jsonl(tmp_path / "s" / "a.json", s)
    write_jsonl(tmp_path / "s2" / "a.json", s2)
    ddl = (f"CREATE STREAM s (id INT, k INT, v INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 's'}');\n"
           f"CREATE STREAM s2 (k INT, v INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 's2'}');\n")
    query = "SELECT STREAM s.id FROM s{over} WHERE s.v * 2 > (SELECT AVG(v) FROM s2 WHERE s2.k = s.k);"
    with pytest.raises(SqlError, match="read the outer streams whole") as caught:
        compile_sql(ddl + query.format(over=""), "q.sql")
    assert caught.value.line == 3
    rows, status = run_until_idle(spark, ddl + query.format(over=" OVER (RANGE UNBOUNDED PRECEDING)"), tmp_path / "run")
    assert status["state"] == "finished"
    content: dict = {}
    for r in rows:
        content[r["id"]] = content.get(r["id"], 0) + (-1 if r.get("op") == "-D" else 1)
        assert content[r["id"]] >= 0
    averages = {k: sum(r["v"] for r in s2 if r["k"] == k) / len([r for r in s2 if r["k"] == k]) for k in (1, 2, 4)}
    expected = sorted(r["id"] for r in s if r["k"] in averages and r["v"] * 2 > averages[r["k"]])
    assert sorted(i for i, n in content.items() for _ in range(n)) == expected
