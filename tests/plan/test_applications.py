"""Kinesis Analytics / s-Server applications: in-application streams filled by pumps run as one
query, with the join semantics unchanged; `check` and `explain` show the pump graph, and a bad
graph is a positioned error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runtime_helpers import streamjoin, write_jsonl
from streamjoin.dialect import parse_script, to_sql
from streamjoin.errors import SqlError
from streamjoin.plan import compile_sql

D = "2024-01-01 "
ORDERS = [(D + "10:00:00", 100), (D + "10:10:00", 101), (D + "10:20:00", 102), (D + "10:25:00", 103), (D + "10:40:00", 104)]
SHIPMENTS = [(D + "10:30:00", 101), (D + "10:45:00", 100), (D + "10:55:00", 103), (D + "11:05:00", 103), (D + "11:30:00", 104)]

# The Kinesis seed's orders/shipments join, written as a KDA application: the input stream under
# KDA's name, a pump that filters it into an in-application stream (declared after the pump that
# reads it), and the pump into DESTINATION_SQL_STREAM, whose declared columns name the output.
APP = """-- orders and shipments, as a Kinesis Analytics application
CREATE STREAM "SOURCE_SQL_STREAM_001" (orderId INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/orders');
CREATE STREAM Shipments (orderId INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/shipments');
CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" (order_id INTEGER, order_time TIMESTAMP);
CREATE OR REPLACE PUMP "OUTPUT_PUMP" AS INSERT INTO "DESTINATION_SQL_STREAM"
  SELECT STREAM ROWTIME, o.orderId, o.ROWTIME AS orderTime FROM Shipments AS s
  JOIN "ORDERS" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId;
CREATE OR REPLACE STREAM "ORDERS" (orderId INTEGER);
CREATE OR REPLACE PUMP "ORDERS_PUMP" AS INSERT INTO "ORDERS"
  SELECT STREAM orderId FROM "SOURCE_SQL_STREAM_001" WHERE orderId <> 102;
"""


def write_app(tmp_path: Path, sql: str = APP) -> Path:
    write_jsonl(tmp_path / "orders" / "rows.json", [{"rowtime": t, "orderId": i} for t, i in ORDERS])
    write_jsonl(tmp_path / "shipments" / "rows.json", [{"rowtime": t, "orderId": i} for t, i in SHIPMENTS])
    path = tmp_path / "app.sql"
    path.write_text(sql.replace("$DIR", str(tmp_path)))
    return path


@pytest.mark.spark
def test_a_kda_application_of_two_pumps_runs_as_one_query_and_names_its_columns_as_the_destination_declares(tmp_path):
    app = write_app(tmp_path)
    result = streamjoin("run", app, "--until-idle", "--output", "-", "--checkpoint", tmp_path / "checkpoint")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows == [
        {"rowtime": D + "10:30:00.000", "order_id": 101, "order_time": D + "10:10:00.000"},
        {"rowtime": D + "10:45:00.000", "order_id": 100, "order_time": D + "10:00:00.000"},
        {"rowtime": D + "10:55:00.000", "order_id": 103, "order_time": D + "10:25:00.000"},
        {"rowtime": D + "11:05:00.000", "order_id": 103, "order_time": D + "10:25:00.000"},
        {"rowtime": D + "11:30:00.000", "order_id": 104, "order_time": D + "10:40:00.000"},
    ]


# Fan-in (issue 68): two pumps fill "EVENTS", each with its own column order; the output pump reads
# every row of both, in rowtime order
FAN_IN = """CREATE STREAM "SOURCE_SQL_STREAM_001" (orderId INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/orders');
CREATE STREAM Shipments (orderId INTEGER) WITH (connector = 'files', format = 'json', path = '$DIR/shipments');
CREATE OR REPLACE STREAM "EVENTS" (kind VARCHAR(8), order_id INTEGER);
CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" (kind VARCHAR(8), order_id INTEGER);
CREATE OR REPLACE PUMP "ORDERS_PUMP" AS INSERT INTO "EVENTS" SELECT STREAM 'order', orderId FROM "SOURCE_SQL_STREAM_001"
  WHERE orderId <> 102;
CREATE OR REPLACE PUMP "SHIPMENTS_PUMP" AS INSERT INTO "EVENTS" (order_id, kind) SELECT STREAM orderId, 'shipment' FROM Shipments;
CREATE OR REPLACE PUMP "OUTPUT_PUMP" AS INSERT INTO "DESTINATION_SQL_STREAM" SELECT STREAM ROWTIME, kind, order_id FROM "EVENTS"
  WHERE order_id < 104;
"""


@pytest.mark.spark
def test_two_pumps_into_one_stream_fill_it_with_both_pumps_rows_in_rowtime_order(tmp_path):
    app = write_app(tmp_path, FAN_IN)
    script = compile_sql(app.read_text(), "app.sql")
    assert [(p.name, p.target) for p in script.pumps if p.target == "EVENTS"] == [("ORDERS_PUMP", "EVENTS"),
                                                                                   ("SHIPMENTS_PUMP", "EVENTS")]
    result = streamjoin("run", app, "--until-idle", "--output", "-", "--checkpoint", tmp_path / "checkpoint")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    expected = sorted([(t, "order", i) for t, i in ORDERS if i not in (102, 104)] + [(t, "shipment", i) for t, i in SHIPMENTS if i < 104])
    assert [(r["rowtime"], r["kind"], r["order_id"]) for r in rows] == [(t + ".000", k, i) for t, k, i in expected]


def test_check_counts_the_pumps_and_explain_shows_what_each_reads_and_fills(tmp_path):
    app = write_app(tmp_path)
    check = streamjoin("check", app, timeout=120)
    warning, ok = check.stderr.strip().splitlines()
    assert check.returncode == 0 and ok == f"{app}: ok (2 queries, 1 join, 2 pumps)"
    # read with the default profile (it accepts the file), with the KDA reading named (issue 39)
    assert warning.startswith(f"{app}: warning: this file uses SOURCE_SQL_STREAM_001") and "--dialect kda" in warning
    explain = streamjoin("explain", app, timeout=120)
    assert explain.returncode == 0, explain.stderr
    assert "pumps:\n  ORDERS_PUMP: SOURCE_SQL_STREAM_001 -> ORDERS\n" \
           "  OUTPUT_PUMP: ORDERS, shipments -> DESTINATION_SQL_STREAM (the output: no pump reads it)\n" in explain.stdout
    assert "output: rowtime=ROWTIME, order_id=o.orderid, order_time=o.rowtime" in explain.stdout


def test_an_insert_column_list_names_the_columns_in_its_own_order():
    script = compile_sql("""CREATE STREAM src (a INT, b INT) WITH (connector = 'files', path = '/in');
CREATE STREAM out (x INT, y INT);
CREATE PUMP p AS INSERT INTO out (y, x) SELECT STREAM a, b FROM src;""")
    assert [c.name for c in script.final.output] == ["y", "x"]


def test_a_pump_into_a_declared_sink_is_the_query_that_inserts_into_it():
    script = compile_sql("""CREATE STREAM src (a INT) WITH (connector = 'files', path = '/in');
CREATE SINK lake WITH (connector = 's3', path = 's3://b/out', format = 'parquet');
CREATE PUMP p AS INSERT INTO lake SELECT STREAM ROWTIME, a FROM src;""")
    assert script.final.sink == "lake" and [p.target for p in script.pumps] == ["lake"]


def test_a_pump_reads_back_as_the_same_sql():
    [pump] = parse_script('CREATE OR REPLACE PUMP "P" AS INSERT INTO "OUT" SELECT STREAM a FROM "SRC" WHERE a > 1')
    assert to_sql(pump) == 'CREATE OR REPLACE PUMP "P" AS INSERT INTO "OUT" SELECT STREAM a FROM "SRC" WHERE a > 1'


SRC = "CREATE STREAM src (k INTEGER) WITH (connector = 'files', format = 'json', path = '/in');\n"


@pytest.mark.parametrize(
    ("sql", "line", "col", "message"),
    [
        (SRC + "CREATE STREAM a (k INTEGER);\nCREATE STREAM b (k INTEGER);\nCREATE STREAM out (k INTEGER);\n"
         "CREATE PUMP po AS INSERT INTO out SELECT STREAM k FROM a;\n"
         "CREATE PUMP pa AS INSERT INTO a SELECT STREAM k FROM b;\nCREATE PUMP pb AS INSERT INTO b SELECT STREAM k FROM a;\n",
         6, 13, "the pumps form a cycle: a -> b -> a (each reads the stream after it)"),
        (SRC + "CREATE STREAM a (k INTEGER);\nCREATE STREAM out (k INTEGER);\nCREATE PUMP po AS INSERT INTO out SELECT STREAM k FROM a;\n",
         4, 56, "'a' is read but no pump fills it"),
        (SRC + "CREATE STREAM out (k INTEGER, j INTEGER);\nCREATE PUMP po AS INSERT INTO out SELECT STREAM k FROM src;\n",
         3, 42, "pump 'po' inserts 1 column into 'out', which takes 2 (k, j)"),
        (SRC + "CREATE STREAM out (k INTEGER);\nCREATE PUMP po AS INSERT INTO outt SELECT STREAM k FROM src;\n",
         3, 31, "pump 'po' inserts into 'outt', which is not declared"),
        (SRC + "CREATE STREAM o1 (k INTEGER);\nCREATE STREAM o2 (k INTEGER);\n"
         "CREATE PUMP p1 AS INSERT INTO o1 SELECT STREAM k FROM src;\nCREATE PUMP p2 AS INSERT INTO o2 SELECT STREAM k FROM src;\n"
         "SELECT STREAM k FROM src;\n",
         6, 8, "the application has several output streams and a final query as well"),
        (SRC + "CREATE STREAM o1 (k INTEGER);\nCREATE STREAM o2 (stream INTEGER);\n"
         "CREATE PUMP p1 AS INSERT INTO o1 SELECT STREAM k FROM src;\nCREATE PUMP p2 AS INSERT INTO o2 SELECT STREAM k FROM src;\n",
         5, 31, "'o2' has a column named stream, the key that names each row's output stream"),
        (SRC + "CREATE PUMP p1 AS INSERT INTO src SELECT STREAM k FROM src;\n",
         2, 31, "pump 'p1' inserts into 'src', which reads from a connector"),
        (SRC + "CREATE OR REPLACE PUMP p1 INSERT INTO o1 SELECT STREAM k FROM src;\n",
         2, 27, "syntax error: Expected AS INSERT INTO stream SELECT STREAM ... after the pump's name"),
    ],
    ids=["cycle", "never-filled", "column-count", "unknown-target", "outputs-and-query", "stream-column", "connector-target",
         "no-as"],
)
def test_a_bad_pump_graph_is_an_error_at_the_pump_or_stream_that_causes_it(sql, line, col, message):
    with pytest.raises(SqlError) as caught:
        compile_sql(sql, "app.sql")
    error = caught.value
    assert (error.line, error.col) == (line, col)
    assert error.message.startswith(message)


# ------------------------------------------------------------------ inputs declared by the config

# The same application as KDA held it: the SQL never declares its input stream or its reference
# table; the app's configuration maps them to sources.
KDA_SQL = """CREATE OR REPLACE STREAM "DESTINATION_SQL_STREAM" (order_id INTEGER, order_time TIMESTAMP, customer VARCHAR(16));
CREATE OR REPLACE PUMP "OUTPUT_PUMP" AS INSERT INTO "DESTINATION_SQL_STREAM"
  SELECT STREAM ROWTIME, o.orderId, o.ROWTIME, c.name FROM Shipments AS s
  JOIN "ORDERS" OVER (RANGE INTERVAL '1' HOUR PRECEDING) AS o ON o.orderId = s.orderId
  LEFT JOIN "CUSTOMERS" AS c ON c.orderId = o.orderId;
CREATE OR REPLACE STREAM "ORDERS" (orderId INTEGER);
CREATE OR REPLACE PUMP "ORDERS_PUMP" AS INSERT INTO "ORDERS"
  SELECT STREAM orderId FROM "SOURCE_SQL_STREAM_001" WHERE orderId <> 102;
"""
KDA_CONFIG = """[inputs.SOURCE_SQL_STREAM_001]
columns = "orderId INTEGER"
connector = "files"
format = "json"
path = "$DIR/orders"

[inputs.shipments]
columns = ["orderId INTEGER"]
connector = "files"
format = "json"
path = "$DIR/shipments"

[reference.CUSTOMERS]
columns = "orderId INTEGER PRIMARY KEY, name VARCHAR(16)"
connector = "files"
format = "csv"
path = "$DIR/customers"
"""


def write_kda_app(tmp_path: Path, config: str = KDA_CONFIG) -> tuple[Path, Path]:
    app = write_app(tmp_path, KDA_SQL)
    (tmp_path / "customers").mkdir()
    (tmp_path / "customers" / "c.csv").write_text("orderId,name\n100,ada\n103,grace\n")
    toml = tmp_path / "app.toml"
    toml.write_text(config.replace("$DIR", str(tmp_path)))
    return app, toml


@pytest.mark.spark
def test_a_kda_application_reads_its_input_stream_and_reference_table_from_the_config_without_editing_the_sql(tmp_path):
    app, toml = write_kda_app(tmp_path)
    without = streamjoin("check", app, timeout=120)
    assert without.returncode == 2 and "unknown stream or table 'SOURCE_SQL_STREAM_001'" in without.stderr
    assert "or in the app's config ([inputs.NAME] / [reference.NAME], --config)" in without.stderr
    check = streamjoin("check", app, "--config", toml, timeout=120)
    assert check.returncode == 0, check.stderr
    result = streamjoin("run", app, "--config", toml, "--until-idle", "--output", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["order_id"], r["customer"]) for r in rows] == [(101, None), (100, "ada"), (103, "grace"), (103, "grace"), (104, None)]
    assert rows[0] == {"rowtime": D + "10:30:00.000", "order_id": 101, "order_time": D + "10:10:00.000", "customer": None}


def test_an_input_declared_by_the_config_and_by_the_sql_is_an_error_at_the_sql_declaration(tmp_path):
    app, toml = write_kda_app(tmp_path)
    app.write_text('CREATE STREAM "SOURCE_SQL_STREAM_001" (orderId INTEGER);\n' + app.read_text())
    result = streamjoin("check", app, "--config", toml, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith(f"{app}:1:15: error: 'SOURCE_SQL_STREAM_001' is declared by the app's config "
                                    f"({toml} [inputs.SOURCE_SQL_STREAM_001]) and here")


@pytest.mark.parametrize(("section", "message"), [
    ('[inputs.S]\nconnector = "files"\n', "[inputs.S]:1:1: error: no columns"),
    ('[inputs.S]\ncolumns = "k NOTATYPE("\n', "[inputs.S]:"),
    ('[reference.T]\ncolumns = "k INT"\n"bad key" = "x"\n', "[reference.T]:1:1: error: option 'bad key' is not a name"),
    ('inputs = "S"\n', "error: [inputs] must be a table of named streams ([inputs.NAME])"),
])
def test_a_bad_config_section_is_an_error_that_names_the_section(tmp_path, section, message):
    app, toml = write_kda_app(tmp_path, section)
    result = streamjoin("check", app, "--config", toml, timeout=120)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_missing_config_file_is_a_rejection_that_names_it(tmp_path):
    app, _ = write_kda_app(tmp_path)
    result = streamjoin("check", app, "--config", tmp_path / "nope.toml", timeout=120)
    assert result.returncode == 2 and "--config" in result.stderr and "nope.toml" in result.stderr


def test_an_app_folder_declares_its_inputs_in_app_toml_for_the_deployed_app(tmp_path):
    from streamjoin.runtime.app import App
    from streamjoin.runtime.pipeline import Pipeline

    app, _ = write_kda_app(tmp_path)
    (tmp_path / "app.toml").write_text('name = "orders"\nquery = "app.sql"\n[paths]\ncheckpoint = "ck"\n\n'
                                       + (tmp_path / "app.toml").read_text())
    loaded = App.load(tmp_path)
    pipeline = Pipeline.from_file(loaded.query_file, declared=loaded.declared)
    inputs = {i.relation for q in pipeline.script.queries for i in q.inputs}
    assert inputs == {"SOURCE_SQL_STREAM_001", "shipments", "ORDERS", "CUSTOMERS"}
    assert [p.name for p in pipeline.script.pumps] == ["ORDERS_PUMP", "OUTPUT_PUMP"]


# ------------------------------------------------------------------------- several output streams

SEVERAL = APP + """CREATE OR REPLACE STREAM "BIG_ORDERS" (order_id INTEGER);
CREATE OR REPLACE PUMP "BIG_PUMP" AS INSERT INTO "BIG_ORDERS" SELECT STREAM ROWTIME, orderId FROM "ORDERS" WHERE orderId >= 103;
"""
BIG = [{"stream": "BIG_ORDERS", "rowtime": D + "10:25:00.000", "order_id": 103},
       {"stream": "BIG_ORDERS", "rowtime": D + "10:40:00.000", "order_id": 104}]


@pytest.mark.spark
def test_an_application_with_two_output_streams_writes_both_with_a_stream_key_naming_each_rows_stream(tmp_path):
    app = write_app(tmp_path, SEVERAL)
    check = streamjoin("check", app, timeout=120)
    # the last line: a warning that KDA would read the unquoted names in upper case comes first (issue 39)
    assert check.returncode == 0 and check.stderr.strip().splitlines()[-1] == f"{app}: ok (3 queries, 1 join, 3 pumps)", check.stderr
    result = streamjoin("run", app, "--until-idle", "--output", "-")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r for r in rows if r["stream"] == "BIG_ORDERS"] == BIG
    joined = [r for r in rows if r["stream"] == "DESTINATION_SQL_STREAM"]
    assert [(r["rowtime"], r["order_id"]) for r in joined] == [
        (D + "10:30:00.000", 101), (D + "10:45:00.000", 100), (D + "10:55:00.000", 103), (D + "11:05:00.000", 103), (D + "11:30:00.000", 104)]
    assert list(joined[0]) == ["stream", "rowtime", "order_id", "order_time"] and len(rows) == 7
    lines = result.stderr.strip().splitlines()
    assert "streamjoin: DESTINATION_SQL_STREAM: finished: 5 rows emitted, 0 late rows" in lines
    assert "streamjoin: BIG_ORDERS: finished: 2 rows emitted, 0 late rows" in lines


@pytest.mark.spark
@pytest.mark.long  # the same two outputs as the test above, into files: make test-long
def test_two_output_streams_into_a_directory_write_files_named_by_stream_and_explain_shows_each_output(tmp_path):
    app = write_app(tmp_path, SEVERAL)
    out = tmp_path / "out"
    result = streamjoin("run", app, "--until-idle", "--output", out)
    assert result.returncode == 0, result.stderr[-3000:]
    big = [json.loads(line) for f in sorted(out.glob("part-*-BIG_ORDERS.jsonl")) for line in f.read_text().splitlines()]
    assert big == BIG
    assert sum(len(f.read_text().splitlines()) for f in out.glob("part-*-DESTINATION_SQL_STREAM.jsonl")) == 5
    explain = streamjoin("explain", app, timeout=120)
    assert "output BIG_ORDERS (pump BIG_PUMP into BIG_ORDERS):" in explain.stdout
    assert "output DESTINATION_SQL_STREAM (pump OUTPUT_PUMP into DESTINATION_SQL_STREAM):" in explain.stdout
