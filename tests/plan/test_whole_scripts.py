"""SQL basics real programs use (issue 39): common table expressions and subqueries in FROM and
JOIN (each a view), s-Server's CREATE PUMP ... STOPPED, CREATE MATERIALIZED VIEW IF NOT EXISTS,
Lenses topic names with hyphens; and syntax errors at the token that caused them, in SQL words."""

from __future__ import annotations

import pytest
from streamjoin.errors import SqlError
from streamjoin.plan import compile_sql

DDL = """CREATE STREAM l (k INT, v INT) WITH (connector = 'files', path = '/l');
CREATE STREAM r (k INT, w INT) WITH (connector = 'files', path = '/r');
"""


def test_a_cte_and_a_subquery_in_join_are_views_the_query_reads_by_name():
    script = compile_sql(DDL + """CREATE VIEW joined AS
  WITH lf AS (SELECT STREAM k, v FROM l WHERE v >= 0)
  SELECT STREAM a.k, a.v, b.w FROM lf OVER (RANGE INTERVAL '2' SECOND PRECEDING) AS a
  LEFT JOIN (SELECT STREAM k, w FROM r WHERE w > 0) OVER (RANGE INTERVAL '2' SECOND PRECEDING) AS b ON a.k = b.k;
SELECT STREAM * FROM joined;""")
    joined = script.view("joined")
    assert [(i.alias, i.relation, i.window.size_ms) for i in joined.inputs] == [("a", "lf", 2000), ("b", "b", 2000)]
    assert script.view("lf").where is not None and script.view("b").where is not None
    assert [c.name for c in script.final.output] == ["k", "v", "w"]


def test_a_subquery_in_from_without_an_alias_gets_a_name_and_a_cte_a_free_one():
    script = compile_sql(DDL + "WITH l AS (SELECT STREAM k FROM l) SELECT STREAM k FROM (SELECT STREAM k, v FROM l);")
    names = [q.name for q in script.queries]
    assert names == ["l_2", "subquery_1", "query"]  # `l` is the declared stream: the CTE's view is l_2


def test_s_servers_create_pump_stopped_with_options_reads_as_a_pump():
    script = compile_sql(DDL + """CREATE OR REPLACE STREAM "OUT" ("k" INT);
CREATE OR REPLACE PUMP "P" STOPPED OPTIONS ("ORDER" 'ASC', "LIMIT" '(1)') AS INSERT INTO "OUT" SELECT STREAM k FROM l;""")
    assert [p.name for p in script.pumps] == ["P"]


def test_create_materialized_view_if_not_exists_is_a_view():
    script = compile_sql(DDL + "CREATE MATERIALIZED VIEW IF NOT EXISTS mv AS SELECT STREAM k FROM l;")
    assert script.final.name == "mv"


def test_a_lenses_topic_name_with_hyphens_is_one_name():
    script = compile_sql("""CREATE STREAM "src-app-users-json" (_key VARCHAR, name VARCHAR) WITH (connector = 'files', path = '/u');
SELECT STREAM u.name FROM src-app-users-json AS u;""")
    assert script.final.inputs[0].relation == "src-app-users-json"


@pytest.mark.parametrize(("sql", "at", "message", "hint"), [
    ("CREATE STREAM s (k INT);\n  // a comment\nSELECT STREAM k FROM s", "2:3", "`//` does not start a comment", "--"),
    ("SELECT STREAM a, FROM s", "1:16", "a comma before FROM", "remove the comma"),
    ("SELECT STREAM a.k FROM s AS a LEFT JION t AS b ON a.k = b.k", "1:36", "unexpected 'JION'", "did you mean JOIN?"),
    ("SELECT STREAM a.k FROM s AS a RIGHT OUTTER JOIN t AS b ON a.k = b.k", "1:37", "unexpected 'OUTTER'", "did you mean OUTER?"),
    ("SELECT STREAM a / FROM s", "1:19", "missing for a division (/)", "near 'FROM'"),
])
def test_a_syntax_error_is_at_the_token_that_caused_it_in_sql_words(sql, at, message, hint):
    with pytest.raises(SqlError) as error:
        compile_sql(sql, "q.sql", dialect="default")
    text = str(error.value)
    assert text.startswith(f"q.sql:{at}: error: syntax error: ") and message in text and hint in text
    assert "<class" not in text and "sqlglot" not in text


def test_kda_and_s_server_read_a_double_slash_as_a_comment_and_it_tells_the_dialect():
    sql = ("CREATE STREAM s (k INT) WITH (connector = 'files', path = '/in');\n"
           "// KDA's SQL Reference comments its examples so\nSELECT STREAM k FROM s; // and here '--'")
    script = compile_sql(sql, "q.sql")
    assert script.dialect == "kda" and "// comments" in script.dialect_reason
    assert [c.name for c in script.final.output] == ["K"]
    assert compile_sql(sql, "q.sql", dialect="sqlstream").final.joins == ()


RW = """SET streaming_parallelism = 1;
CREATE SECRET pg_pwd WITH (backend = 'meta') AS 'x';
CREATE TABLE scans (scan_id INT, kiosk INT, at TIMESTAMP, WATERMARK FOR at AS at - INTERVAL '10' SECOND) APPEND ONLY;
CREATE TABLE kiosks (kiosk_id INT PRIMARY KEY, zone INT) WITH (connector = 'postgres-cdc', password = secret pg_pwd);
CREATE MATERIALIZED VIEW per_window AS SELECT window_start, COUNT(scan_id) AS n FROM TUMBLE(scans, at, INTERVAL '5' SECOND)
  GROUP BY window_start EMIT ON WINDOW CLOSE;
CREATE SINK counts FROM per_window WITH (connector = 'kafka', topic = 'counts') FORMAT PLAIN ENCODE JSON;
CREATE SINK zoned AS SELECT s.scan_id, k.zone FROM scans AS s JOIN kiosks AS k ON s.kiosk = k.kiosk_id WITH (connector = 'blackhole');
DROP SINK zoned;
DROP TABLE scans CASCADE;
"""


def test_a_risingwave_program_with_sinks_append_only_tables_secrets_and_teardown_reads_whole():
    script = compile_sql(RW, "rw.sql")
    assert script.dialect == "risingwave"
    assert script.relation("scans").kind.name == "STREAM" and script.relation("scans").rowtime == "at"
    # a postgres-cdc table is read by its changes (io.sources.pg_cdc): a stream of upserts and deletes
    assert script.relation("kiosks").changing and dict(script.relation("kiosks").options)["password"] == "secret pg_pwd"
    assert script.outputs == ("counts", "zoned") and [q.sink for q in script.runs] == ["counts", "zoned"]
    assert script.view("per_window").emit.name == "FINAL"
    notes = "\n".join(script.notes)
    assert "line 2: CREATE SECRET" in notes and "line 9: DROP SINK zoned: the script's teardown" in notes


SSERVER_FOREIGN = """!set force on
CREATE OR REPLACE SCHEMA buses;
SET SCHEMA 'buses';
CREATE OR REPLACE FOREIGN STREAM "positions" ("bus" INT, "route" VARCHAR(8))
SERVER FILE_SERVER OPTIONS (PARSER 'CSV', DIRECTORY $(BUS_DIR) DEFAULT '/srv/buses', FILENAME_PATTERN 'p.*\\.csv');
CREATE OR REPLACE SERVER "routes_db" FOREIGN DATA WRAPPER SYS_JDBC
  OPTIONS ("URL" 'jdbc:postgresql://localhost/transit', "SCHEMA_NAME" 'public', "USER_NAME" 'x');
CREATE OR REPLACE FOREIGN TABLE "routes" ("route" VARCHAR(8), "name" VARCHAR(64))
SERVER "routes_db" OPTIONS (TABLE_NAME 'routes');
!set force off
SELECT STREAM p."bus", r."name" FROM "positions" AS p LEFT JOIN "routes" AS r ON p."route" = r."route";
"""


def test_s_server_foreign_streams_and_tables_map_onto_files_and_postgres_and_directives_are_blank():
    script = compile_sql(SSERVER_FOREIGN, "buses.sql")
    assert script.dialect == "sqlstream"
    positions, routes = dict(script.relation("positions").options), dict(script.relation("routes").options)
    assert (positions["connector"], positions["format"], positions["path"]) == ("files", "csv", "${BUS_DIR:-/srv/buses}")
    assert (routes["connector"], routes["url"], routes["table"]) == ("postgres", "postgresql://x@localhost/transit", "public.routes")  # the server's USER_NAME
    assert script.relation("routes").kind.name == "TABLE" and script.final.joins[0].kind.name == "SNAPSHOT"
    notes = "\n".join(script.notes)
    assert "line 1: !set force on: a client's directive" in notes and "line 10: !set force off" in notes


def test_lenses_value_facet_names_the_values_field():
    script = compile_sql("""CREATE STREAM members (_key VARCHAR, nickname VARCHAR) WITH (connector = 'files', path = '/m');
SELECT STREAM m._value.nickname, m._key FROM members AS m;""")
    assert [sql_of(c) for c in script.final.output] == ["m.nickname", "m._key"]


def sql_of(column) -> str:
    from streamjoin.plan.model import sql

    return sql(column.expression)


def test_insert_values_seeds_a_table_or_a_stream_without_a_connector_and_is_refused_for_one_read_from_a_connector():
    ddl = "CREATE TABLE t (k INT, name VARCHAR);\nCREATE STREAM s (k INT) WITH (connector = 'files', path = '/s');\n"
    script = compile_sql(ddl + "INSERT INTO t VALUES (1, 'a'), (-2, NULL);\nSELECT STREAM s.k, t.name FROM s JOIN t ON s.k = t.k;")
    assert dict(script.relation("t").options)["connector"] == "values"
    with pytest.raises(SqlError, match="seeds a table or stream declared without a connector; 's' is read from 'files'"):
        compile_sql(ddl + "INSERT INTO s VALUES (1);\nSELECT STREAM k FROM s;")
    seeded = compile_sql("CREATE STREAM a (k INT, ts TIMESTAMP) WITH (rowtime = 'ts');\n"
                         "INSERT INTO a VALUES (1, '2026-11-27 10:00:00');\nSELECT STREAM k FROM a;")
    assert dict(seeded.relation("a").options)["connector"] == "values"  # a stream of those rows (lower.inputs.seed_folder)
    with pytest.raises(SqlError, match=r"q.sql:3:23: error: a seed row's value must be a literal, not 1 \+ 1"):
        compile_sql(ddl + "INSERT INTO t VALUES (1 + 1, 'a');\nSELECT STREAM k FROM s;", "q.sql")
    # an expression the parser keeps no position for is refused at its statement (its table), not at the file's first line
    with pytest.raises(SqlError, match=r"q.sql:4:13: error: a seed row.s value must be a literal, not ARRAY\[\] \|\| ARRAY\[\]"):
        compile_sql("-- a comment\n" + ddl + "INSERT INTO t VALUES (1, ARRAY[] || ARRAY[]);\nSELECT STREAM k FROM s;", "q.sql")


def test_flush_is_a_no_op_with_a_note_and_array_seeds_are_lists():
    script = compile_sql("CREATE TABLE t (k INT, xs INT[]);\nINSERT INTO t VALUES (1, CAST(ARRAY[] AS INT[])), (2, ARRAY[1, NULL]);"
                         "\nFLUSH;\nCREATE MATERIALIZED VIEW mv AS SELECT * FROM t;\n", "rw.sql", dialect="risingwave")
    assert "line 3: FLUSH: ignored" in "\n".join(script.notes)
    assert dict(script.relation("t").options)["rows"] == '[{"k": 1, "xs": []}, {"k": 2, "xs": [1, null]}]'


def test_a_seed_row_that_leaves_a_column_out_holds_its_default():
    """Corpus risingwave/07's limits table: `INSERT INTO limits (limit_id, resident_id) VALUES ...`
    into columns declared `DEFAULT 45`, ... (before 2026-11-29 they were NULL, and every comparison
    with them silently false)."""
    import json

    ddl = ("CREATE TABLE t (id INT PRIMARY KEY, low INT DEFAULT 45, spo2 DECIMAL DEFAULT 92.00, who VARCHAR DEFAULT 'nurse', "
           "at TIMESTAMPTZ DEFAULT CURRENT_TIMESTAMP(), note VARCHAR, odd INT DEFAULT 1 + 1);\n"
           "CREATE STREAM s (id INT) WITH (connector = 'files', path = '/s');\n")
    query = "SELECT STREAM s.id, t.low FROM s JOIN t ON s.id = t.id;"
    script = compile_sql(ddl + "INSERT INTO t (id, note, odd) VALUES (1, 'x', 3);\n" + query, "d.sql", dialect="risingwave")
    [row] = json.loads(dict(script.relation("t").options)["rows"])
    assert {k: row[k] for k in ("id", "low", "spo2", "who", "note", "odd")} == {
        "id": 1, "low": 45, "spo2": 92.0, "who": "nurse", "note": "x", "odd": 3}
    assert int(row["at"][:4]) >= 2026 and row["at"][4] == "-"  # the time the file was read
    with pytest.raises(SqlError, match=r"d.sql:3:13: error: INSERT INTO leaves out column 'odd', whose DEFAULT 1 \+ 1"):
        compile_sql(ddl + "INSERT INTO t (id) VALUES (1);\n" + query, "d.sql", dialect="risingwave")


def test_a_view_column_list_names_the_views_columns_in_order():
    script = compile_sql(DDL + 'CREATE OR REPLACE VIEW v ("dummy", "rowno") AS SELECT STREAM 1, k FROM l;\nSELECT STREAM * FROM v;')
    assert [c.name for c in script.final.output] == ["dummy", "rowno"]
    with pytest.raises(SqlError, match="the view lists 1 columns, its query selects 2"):
        compile_sql(DDL + 'CREATE VIEW v ("only") AS SELECT STREAM 1, k FROM l;\nSELECT STREAM * FROM v;')


def test_two_insert_into_statements_are_two_outputs_each_writing_its_sink():
    script = compile_sql(DDL + """INSERT INTO first_out SELECT STREAM k, v FROM l;
INSERT INTO second_out SELECT STREAM k, w FROM r;""")
    assert script.outputs == ("first_out", "second_out")
    assert [(q.name, q.sink) for q in script.runs] == [("first_out", "first_out"), ("second_out", "second_out")]


def test_a_sink_written_by_two_insert_into_statements_is_refused_at_the_second():
    with pytest.raises(SqlError, match=r":4:\d+: error: 'out' is written by two statements"):
        compile_sql(DDL + """INSERT INTO out SELECT STREAM k, v FROM l;
INSERT INTO out SELECT STREAM k, w FROM r;""")


def test_create_function_is_refused_at_its_name_and_create_jar_is_a_no_op():
    with pytest.raises(SqlError, match=r":4:\d+: error: CREATE FUNCTION F: user-defined functions are not supported "
                                       r"\(a Java UDX runs inside s-Server"):
        compile_sql(DDL + """CREATE OR REPLACE JAR j LIBRARY 'file:/x.jar' OPTIONS (0);
CREATE OR REPLACE FUNCTION f(c CURSOR) RETURNS TABLE(c.*, x INT) LANGUAGE JAVA EXTERNAL NAME 'j:a.B.c';
SELECT STREAM * FROM l;""", dialect="sqlstream")


def test_a_pump_that_merges_into_a_table_is_refused_as_unsupported_not_as_a_syntax_error():
    with pytest.raises(SqlError) as refused:
        compile_sql(DDL + """CREATE PUMP p STOPPED AS
MERGE INTO t AS s USING (SELECT STREAM k FROM l) AS i ON s.k = i.k WHEN MATCHED THEN UPDATE SET k = i.k;""")
    assert ":4:1: error: a pump that MERGEs INTO a table" in str(refused.value) and "syntax" not in str(refused.value)


def test_s_server_analytic_modifiers_and_the_span_of_a_difference_read_and_write_back_as_written():
    from streamjoin.dialect import parse_script, to_sql

    sql = ("SELECT STREAM NTH_VALUE(x, 2) FROM LAST RESPECT NULLS OVER w AS h, "
           "FLOOR((s.ROWTIME - TIMESTAMP '1970-01-01 00:00:00') SECOND / 30 TO SECOND) AS b, (a) second "
           "FROM s WINDOW w AS (ROWS 2 PRECEDING)")
    (query,) = parse_script(sql)
    written = to_sql(query)
    assert "NTH_VALUE(x, 2) FROM LAST RESPECT NULLS OVER w" in written
    assert "FLOOR((s.ROWTIME - CAST('1970-01-01 00:00:00' AS TIMESTAMP)) SECOND / 30 TO SECOND)" in written
    assert "(a) AS second" in written  # a unit after a parenthesized name that is no difference is an alias
    assert to_sql(parse_script(written)[0]) == written


def test_step_of_one_unit_is_floor_to_that_unit_and_of_several_a_step():
    script = compile_sql(DDL + """CREATE VIEW b AS SELECT STREAM k, STEP(l.ROWTIME BY INTERVAL '1' MINUTE) AS m,
  STEP(l.ROWTIME BY INTERVAL '20' MINUTE) AS s FROM l;
SELECT STREAM * FROM b;""")
    from streamjoin.dialect import to_sql

    m, s = (to_sql(c.expression) for c in script.view("b").output[1:3])
    assert m == "FLOOR(l.rowtime TO MINUTE)" and s == "STEP(l.rowtime BY INTERVAL '20 MINUTE')"


def test_a_t_sort_sorts_the_view_by_its_new_rowtime_with_its_interval_as_the_disorder_allowed():
    script = compile_sql(DDL + "CREATE VIEW s AS SELECT STREAM k, l.v AS ROWTIME FROM l ORDER BY l.v WITHIN INTERVAL '30' SECOND;\n"
                         "CREATE VIEW u AS SELECT STREAM k, v AS ROWTIME FROM l;\nSELECT STREAM * FROM s JOIN u ON s.k = u.k;")
    assert script.view("s").disorder_ms == 30_000  # rows up to 30 s out of order are sorted
    assert script.view("u").disorder_ms == 0  # a new rowtime without a t-sort: rows out of order are late
    assert script.final.disorder_ms is None  # its rowtime is its inputs'


def test_a_t_sort_without_a_new_rowtime_or_by_another_expression_is_refused_at_it():
    with pytest.raises(SqlError) as refused:
        compile_sql(DDL + "CREATE VIEW s AS SELECT STREAM k, l.v AS x FROM l ORDER BY l.v WITHIN INTERVAL '30' SECOND;\n"
                    "SELECT STREAM * FROM s;")
    text = str(refused.value)
    assert ":3:64: error: ORDER BY ... WITHIN (s-Server's t-sort) sorts rows by a new rowtime" in text and "AS ROWTIME" in text
    with pytest.raises(SqlError, match=r":3:\d+: error: the t-sort orders by l.k, not by the new rowtime"):
        compile_sql(DDL + "CREATE VIEW s AS SELECT STREAM k, l.v AS ROWTIME FROM l ORDER BY l.k WITHIN INTERVAL '30' SECOND;\n"
                    "SELECT STREAM * FROM s;")


def test_a_session_window_on_a_join_input_is_refused_at_session():
    with pytest.raises(SqlError, match=r":3:\d+: error: session windows \(PARTITION BY SESSION ON"):
        compile_sql(DDL + "SELECT STREAM * FROM l JOIN r OVER (PARTITION BY SESSION ON k TIMEOUT AFTER INTERVAL '1' HOUR "
                    "ROWS CURRENT ROW) AS b ON l.k = b.k;")


def test_update_and_delete_change_a_seeded_tables_rows_in_order_and_are_refused_elsewhere():
    import json

    sql = ("CREATE TABLE t (k INT PRIMARY KEY, v INT);\nINSERT INTO t VALUES (1, 10), (2, 20), (3, NULL);\n"
           "UPDATE t SET v = v * 2 WHERE k <= 2;\nDELETE FROM t WHERE v > 30;\nUPDATE t SET v = 0 WHERE v IS NULL;\n"
           "SELECT k, v FROM t;")
    rows = json.loads(compile_sql(sql, "t.sql", dialect="risingwave").relation("t").option("rows"))
    assert rows == [{"k": 1, "v": 20}, {"k": 3, "v": 0}]
    with pytest.raises(SqlError, match=r":3:14: error: UPDATE t SET w: 't' has no column 'w'"):
        compile_sql(sql.replace("SET v = v * 2", "SET w = 1"), "t.sql", dialect="risingwave")
    with pytest.raises(SqlError, match=r"DELETE changes a table the file declares without a connector"):
        compile_sql(DDL + "DELETE FROM l WHERE k = 1;\nSELECT STREAM * FROM l;", "t.sql")


def test_a_view_may_be_rows_of_values_a_query_in_parentheses_or_a_select_without_from():
    script = compile_sql("""create materialized view mvb as values (233, 'risingwave'), (233, 'risingwave');
create materialized view two as (select 'a' as source, 1 as n union all select 'b' as source, 2 as n);
create materialized view both_ as select * from mvb, two;""", dialect="risingwave")
    values = script.relation(script.view("mvb").inputs[0].relation)
    assert values.option("connector") == "values" and [c.name for c in script.view("mvb").output] == ["column1", "column2"]
    assert len(script.view("two").union_of) == 2
    branch = script.view(script.view("two").union_of[0])
    assert [c.name for c in branch.output] == ["source", "n"]
    assert script.relation(branch.inputs[0].relation).option("rows") == '[{"column1": 0}]'  # one row to select from


UDFS = """CREATE FUNCTION to_ms(a timestamptz) RETURNS numeric LANGUAGE SQL AS $$ SELECT EXTRACT(EPOCH FROM a) * 1000 $$;
CREATE FUNCTION plus(INT, INT) RETURNS INT LANGUAGE sql AS 'select $1 + $2';
CREATE FUNCTION twice_plus(x INT) RETURNS INT AS $$ SELECT plus(x, x) * 2; $$ LANGUAGE sql;
CREATE FUNCTION inc(x INT) RETURNS INT RETURN x + 1;
CREATE TABLE t (k INT, ts TIMESTAMPTZ);
"""


def test_sql_functions_are_inlined_where_they_are_called_with_their_arguments():
    script = compile_sql(UDFS + "CREATE MATERIALIZED VIEW mv AS SELECT k, to_ms(ts) AS ms, twice_plus(k + 1) AS tk, "
                         "inc(plus(k, 10)) AS ik FROM t;\n", "rw.sql", dialect="risingwave")
    out = {o.name: o.expression.sql() for o in script.view("mv").output}
    assert out["ms"] == "(EXTRACT(EPOCH FROM (t.ts)) * 1000)"
    assert out["tk"] == "((((t.k + 1)) + ((t.k + 1))) * 2)" and out["ik"] == "((((t.k) + (10))) + 1)"


@pytest.mark.parametrize(("sql", "message"), [
    ("CREATE FUNCTION p(x INT) RETURNS INT LANGUAGE python AS $$\ndef p(x):\n    return x\n$$;\nCREATE TABLE t (k INT);\n"
     "CREATE MATERIALIZED VIEW mv AS SELECT p(k) AS v FROM t;", r"rw.sql:1:17: error: CREATE FUNCTION p: a function in LANGUAGE python is not supported"),
    ("CREATE FUNCTION q(x INT) RETURNS INT LANGUAGE sql AS $$ SELECT k FROM t WHERE k = x $$;\nCREATE TABLE t (k INT);\n"
     "CREATE MATERIALIZED VIEW mv AS SELECT q(k) AS v FROM t;", "a SQL function's body is one expression"),
    (UDFS + "CREATE MATERIALIZED VIEW mv AS SELECT plus(k) AS v FROM t;", r"rw.sql:6:39: error: plus takes 2 argument\(s\); this call gives 1"),
    ("CREATE FUNCTION loop(x INT) RETURNS INT LANGUAGE sql AS 'select loop(x)';\nCREATE TABLE t (k INT);\n"
     "CREATE MATERIALIZED VIEW mv AS SELECT loop(k) AS v FROM t;", "calls itself"),
])
def test_a_function_that_is_not_one_sql_expression_or_a_call_that_does_not_fit_is_refused_naming_it(sql, message):
    with pytest.raises(SqlError, match=message):
        compile_sql(sql, "rw.sql", dialect="risingwave")
