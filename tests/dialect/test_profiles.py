"""Dialect profiles (issue 39): how each system folds names and what its windowless joins mean,
chosen by --dialect / app.toml or detected from constructs only one dialect has; and whole
scripts' set-up statements (DROP, CREATE OR REPLACE, schemas, ALTER PUMP), applied in order or
accepted as no-ops with a note, unsupported ones refused at their own line."""

from __future__ import annotations

import pytest
from runtime_helpers import streamjoin
from streamjoin.errors import SqlError, Unsupported
from streamjoin.plan import compile_sql

# The KDA SQL Reference's JOIN example, as written (its input declared the way its app config did)
KDA_JOIN = """CREATE STREAM "SOURCE_SQL_STREAM_001" ("orderid" INT, "type" VARCHAR(16)) WITH (connector = 'files', path = '/in');
CREATE OR REPLACE STREAM "ORDERS" (
   "orderid" int,
   "orderrowtime" timestamp);
CREATE OR REPLACE PUMP "ORDERS_PUMP" AS
   INSERT INTO "ORDERS"
   SELECT STREAM "orderid", "ROWTIME"
   FROM "SOURCE_SQL_STREAM_001" WHERE "type" = 'order';
CREATE OR REPLACE STREAM "SHIPMENTS" ("orderid" int, "shipmentrowtime" timestamp);
CREATE OR REPLACE PUMP "SHIPMENTS_PUMP" AS INSERT INTO "SHIPMENTS"
   SELECT STREAM "orderid", "ROWTIME" FROM "SOURCE_SQL_STREAM_001" WHERE "type" = 'shipment';
CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" ("orderid" int, "ordertime" timestamp, "shipmenttime" timestamp);
CREATE OR REPLACE PUMP "OUTPUT_PUMP" AS INSERT INTO "DESTINATION_SQL_STREAM"
   SELECT STREAM "ROWTIME", "o"."orderid", "o"."orderrowtime", "s"."shipmentrowtime"
   FROM "ORDERS" OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS "o"
   JOIN "SHIPMENTS" AS "s" ON "o"."orderid" = "s"."orderid";
"""


def outputs(script) -> list[str]:
    return [c.name for c in script.final.output]


def test_the_kda_references_join_example_reads_as_written_with_rowtime_in_a_declared_column():
    script = compile_sql(KDA_JOIN, "kda.sql")
    assert script.dialect == "kda" and "SOURCE_SQL_STREAM_001" in script.dialect_reason
    assert outputs(script) == ["rowtime", "orderid", "ordertime", "shipmenttime"]
    orders = script.view("ORDERS")
    assert [c.name for c in orders.output] == ["orderid", "orderrowtime"]


def test_under_kda_unquoted_names_fold_to_upper_case_and_quoted_rowtime_is_the_rowtime():
    sql = ('CREATE STREAM "ORDERS_STREAM" ("TICKER" VARCHAR, "PRICE" INT) WITH (connector = \'files\', path = \'/in\');\n'
           'SELECT STREAM "ROWTIME" AS t, ticker, Price FROM orders_stream;')
    script = compile_sql(sql, "q.sql", dialect="kda")
    assert outputs(script) == ["T", "TICKER", "PRICE"]
    assert script.dialect_reason == "chosen by --dialect"
    with pytest.raises(SqlError, match="unknown stream or table 'orders_stream'"):
        compile_sql(sql, "q.sql", dialect="default")


def test_a_program_the_default_profile_accepts_keeps_its_meaning_and_is_warned_of_the_other_reading():
    sql = ("CREATE STREAM \"SOURCE_SQL_STREAM_001\" (ticker VARCHAR) WITH (connector = 'files', path = '/in');\n"
           'SELECT STREAM ticker FROM "SOURCE_SQL_STREAM_001";')
    script = compile_sql(sql, "q.sql")
    assert script.dialect == "default" and outputs(script) == ["ticker"]
    [warning] = [n for n in script.notes if n.startswith("warning:")]
    assert "--dialect kda" in warning and "upper case" in warning


def test_a_program_without_another_dialects_constructs_reads_with_the_default_profile_and_no_warning():
    sql = "CREATE STREAM s (k INT) WITH (connector = 'files', path = '/in');\nSELECT STREAM k FROM s;"
    script = compile_sql(sql, "q.sql")
    assert (script.dialect, script.dialect_reason, script.notes) == ("default", "", ())


RW_TWO_STREAMS = """CREATE SOURCE a (id INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'files', path = '/a');
CREATE SOURCE b (id INT, ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH (connector = 'files', path = '/b');
"""


def test_under_risingwave_a_join_of_two_streams_without_a_time_bound_is_a_regular_join():
    sql = RW_TWO_STREAMS + "CREATE MATERIALIZED VIEW mv AS SELECT a.id, b.ts FROM a JOIN b ON a.id = b.id;"
    regular = compile_sql(sql, "rw.sql", dialect="risingwave").final
    assert (regular.joins[0].kind.name, regular.emit.name) == ("REGULAR", "EAGER")  # inner: appended at once
    outer = compile_sql(sql.replace("a JOIN b", "a LEFT JOIN b"), "rw.sql", dialect="risingwave").final
    assert (outer.joins[0].kind.name, outer.emit.name) == ("REGULAR", "CHANGES")  # outer: a changelog
    window = compile_sql(sql, "rw.sql").final.joins[0]  # the default profile: s-Server's CURRENT ROW window join
    assert window.kind.name == "STREAM_STREAM_WINDOW"


def test_under_risingwave_a_source_without_a_watermark_is_ordered_by_arrival():
    sql = ("CREATE SOURCE a (id INT, ts TIMESTAMP) WITH (connector = 'files', path = '/a');\n" + RW_TWO_STREAMS.splitlines()[1]
           + "\nCREATE MATERIALIZED VIEW mv AS SELECT a.id FROM a JOIN b ON a.id = b.id;")
    script = compile_sql(sql, "rw.sql", dialect="risingwave")
    assert script.relation("a").arrival_rowtime and not script.relation("b").arrival_rowtime  # b declares its time
    assert not compile_sql(sql, "rw.sql").relation("a").arrival_rowtime  # the default profile: a rowtime column


def test_under_risingwave_numeric_without_a_precision_keeps_its_fraction_and_elsewhere_has_scale_zero():
    """`ROUND(AVG(rate)::NUMERIC, 2)` (corpus risingwave/05): PostgreSQL's NUMERIC keeps every digit;
    read as Spark's DECIMAL(10, 0) it would round 95.81 to 96, silently."""
    from streamjoin.lower.expressions import spark_sql

    sql = RW_TWO_STREAMS + "CREATE MATERIALIZED VIEW mv AS SELECT ROUND(a.id::NUMERIC, 2) AS x, CAST(a.id AS DECIMAL(5, 1)) AS y FROM a;"
    risingwave = [spark_sql(o.expression) for o in compile_sql(sql, "rw.sql", dialect="risingwave").final.output]
    assert risingwave == ["ROUND(CAST(`a__id` AS DECIMAL(38, 18)), 2)", "CAST(`a__id` AS DECIMAL(5, 1))"]
    standard = [spark_sql(o.expression) for o in compile_sql(sql, "rw.sql", dialect="sqlstream").final.output]
    assert "CAST(`A__ID` AS DECIMAL)" in standard[0]


def test_under_risingwave_an_interval_join_runs_as_everywhere():
    sql = RW_TWO_STREAMS + ("CREATE MATERIALIZED VIEW mv AS SELECT a.id, b.ts FROM a JOIN b ON a.id = b.id "
                            "AND a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts;")
    assert compile_sql(sql, "rw.sql", dialect="risingwave").final.joins[0].kind.name == "INTERVAL"


def test_an_unknown_dialect_names_the_ones_there_are():
    with pytest.raises(Unsupported, match="unknown dialect 'flink': use one of default, kda, sqlstream, risingwave, lenses"):
        compile_sql("SELECT 1", "q.sql", dialect="flink")


SSERVER_SCRIPT = """-- set up, as s-Server sample scripts start
CREATE OR REPLACE SCHEMA "Demo";
SET SCHEMA '"Demo"';
SET PATH '"Demo"';
DROP VIEW IF EXISTS "Demo"."Enriched";
CREATE OR REPLACE STREAM "Demo"."Orders" ("id" INT, "city" VARCHAR(10)) WITH (connector = 'files', path = '/o');
CREATE OR REPLACE STREAM "Demo"."Orders" ("id" INT, "city" VARCHAR(16), "qty" INT) WITH (connector = 'files', path = '/o');
CREATE OR REPLACE STREAM "Demo"."Returns" ("id" INT) WITH (connector = 'files', path = '/r');
CREATE OR REPLACE VIEW "Demo"."Enriched" AS SELECT STREAM o."id", o."qty" FROM "Orders" AS o
  JOIN "Returns" OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS r ON o."id" = r."id";
ALTER PUMP "Demo".* START;
SELECT STREAM * FROM "Enriched";
"""


def test_an_s_server_script_applies_drop_and_replace_in_order_and_notes_the_set_up_it_ignores():
    script = compile_sql(SSERVER_SCRIPT, "app.sql")
    assert script.dialect == "sqlstream"
    assert [c.name for c in script.relation("Demo.Orders").columns if c.name != "rowtime"] == ["id", "city", "qty"]
    notes = "\n".join(script.notes)
    for expected in ("line 2: CREATE SCHEMA: ignored", "line 3: SET SCHEMA", "line 4: SET PATH",
                     "line 5: DROP VIEW Demo.Enriched: nothing to drop", "line 7: CREATE OR REPLACE Demo.Orders: replaces",
                     "line 11: ALTER PUMP"):
        assert expected in notes, notes
    assert outputs(script) == ["id", "qty"]


def test_a_statement_sqlglot_keeps_as_text_is_refused_at_its_own_line_never_at_a_comment():
    sql = ("-- a comment on line 1\nCREATE STREAM s (k INT) WITH (connector = 'files', path = '/in');\n\n"
           "ALTER STREAM s ADD COLUMN x INT;\nSELECT STREAM k FROM s;")
    with pytest.raises(SqlError) as error:
        compile_sql(sql, "q.sql")
    assert str(error.value).startswith("q.sql:4:1: error: unsupported statement: ALTER STREAM s ADD")
    assert "COMMAND" not in str(error.value)


def test_check_and_explain_say_which_dialect_and_why(tmp_path):
    path = tmp_path / "kda.sql"
    path.write_text(KDA_JOIN)
    checked = streamjoin("check", path)
    assert checked.returncode == 0 and "dialect kda, detected: SOURCE_SQL_STREAM_001" in checked.stderr
    explained = streamjoin("explain", path, "--dialect", "kda")
    assert explained.stdout.startswith("dialect: kda (Amazon Kinesis Data Analytics for SQL; chosen by --dialect)")
    refused = streamjoin("check", path, "--dialect", "risingwave")
    assert refused.returncode == 2  # quoted upper-case names do not fold to them in RisingWave


def test_in_every_profile_unbounded_windows_on_both_streams_spell_out_a_regular_join():
    sql = ("CREATE STREAM a (id INT) WITH (connector = 'files', path = '/a');\n"
           "CREATE STREAM b (id INT) WITH (connector = 'files', path = '/b');\n"
           "SELECT STREAM a.id FROM a OVER (RANGE UNBOUNDED PRECEDING) LEFT JOIN b OVER (ROWS UNBOUNDED PRECEDING) "
           "ON a.id = b.id;")
    for dialect in ("default", "kda", "lenses"):
        query = compile_sql(sql, "q.sql", dialect=dialect).final
        assert (query.joins[0].kind.name, query.emit.name) == ("REGULAR", "CHANGES"), dialect
    with pytest.raises(SqlError, match="an UNBOUNDED window makes a regular join of two streams: both need it"):
        compile_sql(sql.replace(" OVER (ROWS UNBOUNDED PRECEDING)", ""), "q.sql")


def test_risingwave_spellings_of_real_programs_are_read_as_risingwave_reads_them():
    """CREATE SOURCE IF NOT EXISTS, the old `ROW FORMAT JSON`, and a CTE's or subquery's column
    list (`WITH c (a, b) AS (...)`, `(SELECT ...) AS c (a, b)`), which names its columns."""
    script = compile_sql("""
    CREATE SOURCE IF NOT EXISTS s (id INT, v VARCHAR) WITH (connector = 'files', path = '/in/s') ROW FORMAT JSON;
    CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY, w INT) WITH (connector = 'files', path = '/in/t') ROW FORMAT DEBEZIUM_JSON;
    CREATE MATERIALIZED VIEW m AS
      WITH c (a, b) AS (SELECT id, v FROM s)
      SELECT c.a, c.b, d.y FROM c JOIN (SELECT id, w FROM t) AS d (x, y) ON c.a = d.x;
    """, "rw.sql", dialect="risingwave")
    s, t = script.relation("s"), script.relation("t")
    assert (s.option("format"), s.option("changelog"), t.option("format"), t.option("changelog")) == ("json", "plain", "json", "debezium")
    assert [c.name for c in script.final.output] == ["a", "b", "y"]
    fewer = compile_sql("CREATE TABLE t (id INT, v INT);\nCREATE MATERIALIZED VIEW m AS WITH c (a) AS (SELECT id, v FROM t) "
                        "SELECT c.a, c.v FROM c;", "rw.sql", dialect="risingwave")
    assert [c.name for c in fewer.final.output] == ["a", "v"]  # PostgreSQL: the first columns renamed, the rest kept
    with pytest.raises(SqlError, match="lists 3 columns, its query selects 2"):
        compile_sql("CREATE TABLE t (id INT, v INT);\nCREATE MATERIALIZED VIEW m AS WITH c (a, b, z) AS (SELECT id, v FROM t) "
                    "SELECT c.a FROM c;", "rw.sql", dialect="risingwave")


def test_if_not_exists_twice_declares_once_and_row_format_in_a_string_stays_text():
    script = compile_sql("""
    CREATE SOURCE IF NOT EXISTS s (id INT, note VARCHAR) WITH (connector = 'files', path = '/in/s') ROW FORMAT JSON;
    CREATE SOURCE IF NOT EXISTS s (id INT, other VARCHAR) WITH (connector = 'files', path = '/in/x') ROW FORMAT JSON;
    CREATE MATERIALIZED VIEW m AS SELECT id FROM s WHERE note <> 'a row format json note';
    """, "rw.sql", dialect="risingwave")
    assert [c.name for c in script.relation("s").columns][:2] == ["id", "note"] and script.relation("s").option("path") == "/in/s"
    assert "'a row format json note'" in script.final.where.sql()
    with pytest.raises(SqlError, match="declared twice"):
        compile_sql("CREATE TABLE t (k INT);\nCREATE TABLE t (k INT);", "rw.sql", dialect="risingwave")
