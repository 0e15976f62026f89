"""Hostile names and options (issue 20, item 4): a name or a WITH option that reaches generated
Spark SQL or PostgreSQL text is quoted, never spliced in as SQL, so it cannot change the plan. A
column named to break out of its quotes (`k`) OR true OR (`k`) would turn the join's key
equality into `true`: every pair would join."""

from __future__ import annotations

import uuid

import pytest
from pg_helpers import PG_URL, pg_execute
from runtime_helpers import read_output, run_to_end, run_until_idle, start, ts, write_jsonl
from streamjoin.settings import Settings

KEY = "k`) OR true OR (`k"
SQL = """CREATE STREAM a ("k`) OR true OR (`k" INT, "x.y" INT, "t` --" TIMESTAMP)
  WITH (connector = 'files', format = 'json', path = '{a}', rowtime = 't` --');
CREATE STREAM b ("k`) OR true OR (`k" INT, "y'z" INT) WITH (connector = 'files', format = 'json', path = '{b}');
SELECT STREAM ROWTIME, a."x.y" AS ax, b."y'z" AS bz
FROM a JOIN b ON a."k`) OR true OR (`k" = b."k`) OR true OR (`k"
  AND b.ROWTIME BETWEEN a.ROWTIME - INTERVAL '1' SECOND AND a.ROWTIME + INTERVAL '1' SECOND;
"""


@pytest.mark.parametrize("operator", ["auto", pytest.param("native", marks=pytest.mark.long)])
def test_column_names_that_try_to_break_out_of_their_quotes_stay_names(spark, tmp_path, operator):
    write_jsonl(tmp_path / "a" / "1.json", [{KEY: 1, "x.y": 10, "t` --": ts(0)}, {KEY: 2, "x.y": 20, "t` --": ts(500)}])
    write_jsonl(tmp_path / "b" / "1.json", [{KEY: 1, "y'z": 100, "rowtime": ts(200)}, {KEY: 3, "y'z": 300, "rowtime": ts(300)}])
    sql = SQL.format(a=tmp_path / "a", b=tmp_path / "b")
    settings = Settings.from_env({"STREAMJOIN_JOIN_OPERATOR": operator})
    run_to_end(start(spark, sql, tmp_path / "run", until_idle=True, settings=settings))
    rows = read_output(tmp_path / "run" / "out")
    assert [(r["ax"], r["bz"]) for r in rows] == [(10, 100)]  # the keys were compared, not `true`


DDL = """CREATE STREAM a ("{k}" INT, "{x}" INT, "{t}" TIMESTAMP) WITH (connector = 'files', format = 'json', path = '{a}', rowtime = '{t}');
CREATE STREAM b ("{k}" INT, "{y}" INT) WITH (connector = 'files', format = 'json', path = '{b}');
CREATE TABLE c ("{k}" INT PRIMARY KEY, "{n}" VARCHAR) WITH (connector = 'files', format = 'csv', path = '{c}');
"""
QUERIES = {  # streamjoin's operator; a stream-table join
    "rows": """SELECT STREAM ROWTIME, a."{x}" AS "{x}", b."{y}" AS bz FROM a OVER (PARTITION BY "{k}" ROWS 1 PRECEDING) AS a
  LEFT JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS b ON a."{k}" = b."{k}";""",
    "table": """SELECT STREAM ROWTIME, a."{x}" AS "{x}", c."{n}" AS cn FROM a LEFT JOIN c ON a."{k}" = c."{k}";""",
}
HOSTILE = {"k": KEY, "x": "x.y", "t": "t` --", "y": "y'z", "n": "n`) AS n, true AS (`m"}  # no '"': CSV quoting
PLAIN = {"k": "k", "x": "x", "t": "t", "y": "y", "n": "n"}


def _run(spark, root, query: str, names: dict) -> list[tuple]:
    k, x, t, y, n = (names[c] for c in "kxtyn")
    write_jsonl(root / "a" / "1.json", [{k: i % 3, x: i, t: ts(i * 300)} for i in range(12)])
    write_jsonl(root / "b" / "1.json", [{k: i % 2, y: 100 + i, "rowtime": ts(i * 450)} for i in range(8)])
    (root / "c").mkdir(parents=True, exist_ok=True)
    (root / "c" / "c.csv").write_text(f'"{k}","{n}"\n0,zero\n2,two\n')
    sql = (DDL + QUERIES[query]).format(a=root / "a", b=root / "b", c=root / "c", **names)
    run_to_end(start(spark, sql, root / "run", until_idle=True))
    return [tuple(r.values()) for r in read_output(root / "run" / "out")]


@pytest.mark.parametrize("query", ["rows", "table"])
def test_hostile_names_give_the_result_the_plain_names_give(spark, tmp_path, query):
    plain = _run(spark, tmp_path / "plain", query, PLAIN)
    assert len(plain) >= 12 and (query != "table" or sum(r[2] == "two" for r in plain) == 4)
    assert _run(spark, tmp_path / "hostile", query, HOSTILE) == plain


@pytest.mark.postgres
def test_a_postgres_table_option_with_sql_in_it_is_a_name_not_a_statement(spark, tmp_path):
    victim = f"sj_victim_{uuid.uuid4().hex[:10]}"
    pg_execute(f"CREATE TABLE {victim} (k integer PRIMARY KEY, name text); INSERT INTO {victim} VALUES (1, 'one');")
    try:
        write_jsonl(tmp_path / "s" / "1.json", [{"k": 1, "rowtime": ts(0)}])
        sql = f"""CREATE STREAM s (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / "s"}');
CREATE TABLE t (k INT PRIMARY KEY, name VARCHAR)
  WITH (connector = 'postgres', url = '{PG_URL}', table = '{victim}; DROP TABLE {victim}');
SELECT STREAM s.k, t.name FROM s LEFT JOIN t ON s.k = t.k;
"""
        with pytest.raises(Exception, match="does not exist"):
            run_until_idle(spark, sql, tmp_path / "run")
        assert pg_execute(f"SELECT count(*) FROM {victim}", fetch=True) == [(1,)]  # still there
    finally:
        pg_execute(f"DROP TABLE IF EXISTS {victim}")
