"""Constructs real programs use (issue 39), run to the end of input on Spark, not only read by
`check`: a record's field as a join key (Lenses `a._key.incr`), s-Server's `STEP(ts BY ...)`,
`(VALUES ...) AS t (cols)` in FROM, and s-Server's new rowtime (`expr AS ROWTIME`) with its
t-sort (`ORDER BY ... WITHIN`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from runtime_helpers import read_output, run_until_idle, write_jsonl
from streamjoin.runtime.pipeline import Pipeline
from streamjoin.settings import Settings

T = "2026-11-27 10:00:"


def test_a_join_on_a_field_of_a_structured_key_matches_rows_whose_fields_are_equal(spark, tmp_path: Path):
    write_jsonl(tmp_path / "checkout" / "rows.json", [
        {"rowtime": T + "01", "_key": {"incr": 1}, "total": 10.5},
        {"rowtime": T + "02", "_key": {"incr": 2}, "total": 20.0},
        {"rowtime": T + "03", "_key": {"incr": 9}, "total": 99.0},
    ])
    write_jsonl(tmp_path / "device" / "rows.json", [
        {"rowtime": T + "04", "_key": {"incr": 2}, "vendor": "acme"},
        {"rowtime": T + "05", "_key": {"incr": 1}, "vendor": "bolt"},
    ])
    sql = f"""
    CREATE STREAM checkout (_key STRUCT<incr INT>, total DOUBLE)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/checkout');
    CREATE STREAM device (_key STRUCT<incr INT>, vendor VARCHAR)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/device');
    SELECT STREAM vendor, total, c._key.incr AS incr
    FROM checkout AS c JOIN device AS d ON c._key.incr = d._key.incr WITHIN 1m;
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert sorted((r["vendor"], r["total"], r["incr"]) for r in rows) == [("acme", 20.0, 2), ("bolt", 10.5, 1)], status


def test_step_rounds_a_timestamp_down_to_whole_steps_of_its_interval_in_a_view(spark, tmp_path: Path):
    write_jsonl(tmp_path / "usage" / "rows.json", [
        {"rowtime": T + "01", "k": 1},
        {"rowtime": "2026-11-27 10:27:59", "k": 2},
        {"rowtime": "2026-11-27 10:40:00", "k": 3},
    ])
    sql = f"""
    CREATE STREAM usage (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path}/usage');
    CREATE VIEW slots AS SELECT STREAM k, STEP(usage.ROWTIME BY INTERVAL '20' MINUTE) AS slot,
      STEP(usage.ROWTIME BY INTERVAL '1' HOUR) AS hour_start FROM usage;
    SELECT STREAM k, slot, hour_start FROM slots;
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    got = sorted((r["k"], r["slot"][11:16], r["hour_start"][11:16]) for r in rows)
    assert got == [(1, "10:00", "10:00"), (2, "10:20", "10:00"), (3, "10:40", "10:00")], (rows, status)


def test_a_values_list_in_from_is_a_table_the_stream_joins(spark, tmp_path: Path):
    write_jsonl(tmp_path / "orders" / "rows.json", [
        {"rowtime": T + "01", "regionno": 7, "amount": 5},
        {"rowtime": T + "02", "regionno": 8, "amount": 6},
    ])
    sql = f"""
    CREATE STREAM orders (regionno INT, amount INT)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/orders');
    SELECT STREAM o.amount, c.city FROM orders AS o
      LEFT JOIN (VALUES ('Oslo', 7), ('Lima', 9)) AS c (city, regionno) ON o.regionno = c.regionno;
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert sorted((r["amount"], r["city"]) for r in rows) == [(5, "Oslo"), (6, None)], (rows, status)


def test_s_server_splitter_views_of_values_are_tables_a_stream_joins_using_a_dummy_column(spark, tmp_path: Path):
    # NigelThomas/ucp's sectorsplitter: a view of VALUES, read by a view naming its columns, joined USING ("dummy")
    write_jsonl(tmp_path / "orders" / "rows.json", [{"rowtime": T + "01", "amount": 5}, {"rowtime": T + "02", "amount": 6}])
    sql = f"""
    CREATE STREAM orders (amount INT) WITH (connector = 'files', format = 'json', path = '{tmp_path}/orders');
    CREATE OR REPLACE VIEW splitter ("dummy", "rowno") AS SELECT 1, * FROM (VALUES (0), (1), (2));
    CREATE OR REPLACE VIEW wide AS SELECT STREAM o.amount, 1 AS "dummy" FROM orders AS o;
    SELECT STREAM w.amount, s."rowno" FROM wide AS w JOIN splitter AS s USING ("dummy") WHERE s."rowno" < 2;
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert sorted((r["amount"], r["rowno"]) for r in rows) == [(5, 0), (5, 1), (6, 0), (6, 1)], (rows, status)


def test_lenses_window_by_tumble_sums_each_key_per_window(spark, tmp_path: Path):
    write_jsonl(tmp_path / "payments" / "rows.json", [
        {"rowtime": T + "01", "region": "EMEA", "amount": 1.0},
        {"rowtime": T + "04", "region": "EMEA", "amount": 2.0},
        {"rowtime": T + "05", "region": "APAC", "amount": 5.0},
        {"rowtime": T + "12", "region": "EMEA", "amount": 4.0},
    ])
    sql = f"""
    CREATE STREAM payments (region VARCHAR, amount DOUBLE)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/payments');
    INSERT INTO totals SELECT STREAM region, sum(amount) AS total, count(*) AS n
    FROM payments WINDOW BY TUMBLE 10s GROUP BY region
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    got = sorted((r["region"], r["total"], r["n"]) for r in rows)  # EMEA: one row per window
    assert got == [("APAC", 5.0, 1), ("EMEA", 3.0, 2), ("EMEA", 4.0, 1)], (rows, status)


def test_two_s_server_foreign_streams_in_one_folder_read_only_the_files_their_pattern_names(spark, tmp_path: Path):
    folder = tmp_path / "srv"
    folder.mkdir()
    (folder / "usage.csv").write_text("ROWTIME,k,bytes\n2026-11-27 10:00:01,1,100\n2026-11-27 10:00:02,2,200\n")
    (folder / "attach.csv").write_text("ROWTIME,k,cell\n2026-11-27 10:00:01,1,c1\n")
    sql = f"""
    CREATE OR REPLACE SERVER files_server TYPE 'FILE' FOREIGN DATA WRAPPER ECDA;
    CREATE OR REPLACE FOREIGN STREAM usage_fs ("k" INTEGER, "bytes" INTEGER) SERVER files_server
      OPTIONS (PARSER 'CSV', DIRECTORY '{folder}', FILENAME_PATTERN 'usage\\.csv');
    CREATE OR REPLACE FOREIGN STREAM attach_fs ("k" INTEGER, "cell" VARCHAR(8)) SERVER files_server
      OPTIONS (PARSER 'CSV', DIRECTORY '{folder}', FILENAME_PATTERN 'attach.*');
    SELECT STREAM u."k", u."bytes", a."cell" FROM usage_fs AS u
      LEFT JOIN attach_fs OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a ON u."k" = a."k";
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert sorted((r["k"], r["bytes"], r["cell"]) for r in rows) == [(1, 100, "c1"), (2, 200, None)], (rows, status)
    assert status["rejected_rows"] == 0, status  # neither read the other's file (its header would not read)


def test_a_view_selecting_a_records_fields_with_paren_star_gives_one_column_per_field(spark, tmp_path: Path):
    write_jsonl(tmp_path / "events" / "rows.json", [
        {"rowtime": T + "01", "kind": 1, "bid": {"lot": 7, "price": 10}},
        {"rowtime": T + "02", "kind": 0, "bid": None},
        {"rowtime": T + "03", "kind": 1, "bid": {"lot": 8, "price": 12}},
    ])
    sql = f"""
    CREATE SOURCE events (kind BIGINT, bid STRUCT<"lot" BIGINT, "price" BIGINT>)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/events');
    CREATE VIEW bids AS SELECT (bid).* FROM events WHERE kind = 1;
    SELECT STREAM lot, price FROM bids;
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert sorted((r["lot"], r["price"]) for r in rows) == [(7, 10), (8, 12)], (rows, status)


def _promoted_inputs(tmp_path: Path) -> str:
    """Rows that arrive in one order (their declared rowtime) and carry another (eventtime): the
    usage rows' eventtimes come up to 4 s out of order, the third attach row's 40 s."""
    arrive = "2026-11-27 10:01:"
    write_jsonl(tmp_path / "usage" / "rows.json", [
        {"rowtime": f"{arrive}{i:02d}", "b": "b1", "eventtime": T + f"{s:02d}", "volume": s}
        for i, s in enumerate((5, 2, 9, 7, 50, 45))])
    write_jsonl(tmp_path / "attach" / "rows.json", [
        {"rowtime": f"{arrive}{i:02d}", "b": "b1", "eventtime": T + f"{s:02d}", "sector": f"x{s}"}
        for i, s in enumerate((1, 48, 8))])
    return f"""
    CREATE STREAM usage (b VARCHAR, eventtime TIMESTAMP, volume INT)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/usage');
    CREATE STREAM attach (b VARCHAR, eventtime TIMESTAMP, sector VARCHAR)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/attach');
    CREATE VIEW usage_sorted AS SELECT STREAM b, s.eventtime AS ROWTIME, volume FROM usage AS s
      ORDER BY s.eventtime WITHIN INTERVAL '30' SECOND;
    CREATE VIEW attach_by_time AS SELECT STREAM b, eventtime AS ROWTIME, sector FROM attach;
    """


@pytest.mark.parametrize("operator", ["auto", "native"])
def test_a_view_that_promotes_a_new_rowtime_joins_by_it_and_its_t_sort_allows_its_disorder(spark, tmp_path: Path, operator):
    sql = _promoted_inputs(tmp_path) + """
    SELECT STREAM u.ROWTIME AS t, volume, sector
    FROM usage_sorted AS u JOIN attach_by_time OVER (RANGE INTERVAL '5' SECOND PRECEDING) AS a ON u.b = a.b;
    """
    settings = Settings.from_env({**os.environ, "STREAMJOIN_JOIN_OPERATOR": operator})
    rows, status = run_until_idle(spark, sql, tmp_path / "run", settings)
    # usage at 2, 5, 7, 9, 45, 50 s (all within the t-sort's 30 s); attach at 1 and 48 s, the row at
    # 8 s came after 48 s without a t-sort: late. Pairs: attach in [usage - 5 s, usage]
    got = sorted((r["t"][-6:-4], r["volume"], r["sector"]) for r in rows)
    assert got == [("02", 2, "x1"), ("05", 5, "x1"), ("50", 50, "x48")], (rows, status)
    assert status["late_rows"] == 1, status


def test_an_aggregate_over_a_view_that_promotes_a_new_rowtime_buckets_by_it(spark, tmp_path: Path):
    sql = _promoted_inputs(tmp_path) + """
    CREATE VIEW per_ten AS SELECT STREAM FLOOR(u.ROWTIME TO MINUTE) AS m, SUM(volume) AS total, COUNT(*) AS n
      FROM usage_sorted AS u GROUP BY FLOOR(u.ROWTIME TO MINUTE);
    SELECT STREAM m, total, n FROM per_ten;
    """
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert [(r["m"][11:16], r["total"], r["n"]) for r in rows] == [("10:00", 118, 6)], (rows, status)
    assert status["late_rows"] == 0, status


@pytest.mark.parametrize(("a", "b", "c", "d", "expected"), [
    (1, 3, 3, 5, True),  # touching periods overlap (closed, as Calcite's OVERLAPS)
    (1, 2, 3, 4, False),
    (3, 1, 2, 5, True),  # a period's ends in either order
    (5, 6, 1, 4, False),
    (1, None, 0, 9, None),  # an unknown end: unknown
])
def test_s_server_period_overlaps_compares_closed_periods_with_sorted_ends(spark, a, b, c, d, expected):
    import sqlglot
    from streamjoin.lower.expressions import spark_sql

    condition = spark_sql(sqlglot.parse_one("PERIOD(t.a, t.b) OVERLAPS PERIOD(t.c, t.d)"))
    frame = spark.createDataFrame([(a, b, c, d)], "t__a INT, t__b INT, t__c INT, t__d INT")
    assert frame.selectExpr(f"{condition} AS o").first()["o"] is expected


def test_a_query_over_views_of_tables_runs_as_one_batch_of_their_latest_rows_and_joins(spark, tmp_path: Path):
    # corpus risingwave/09: latest-row views (row_number() OVER (... ORDER BY ... DESC) ... WHERE rn = 1)
    # over tables, joined in a CTE chain that computes on the joined rows
    write_jsonl(tmp_path / "updates" / "rows.json", [
        {"delivery_id": "d1", "van_id": "v1", "state": "new", "changed_at": "2026-01-01 10:00:00"},
        {"delivery_id": "d1", "van_id": "v1", "state": "out", "changed_at": "2026-01-01 10:05:00"},
        {"delivery_id": "d2", "van_id": "v2", "state": "new", "changed_at": "2026-01-01 10:01:00"},
        {"delivery_id": "d3", "van_id": "v9", "state": "new", "changed_at": "2026-01-01 10:02:00"},
    ])
    write_jsonl(tmp_path / "positions" / "rows.json", [
        {"van_id": "v1", "kmh": 30.0, "seen_at": "2026-01-01 10:00:00"},
        {"van_id": "v1", "kmh": 50.0, "seen_at": "2026-01-01 10:06:00"},
        {"van_id": "v2", "kmh": 20.0, "seen_at": "2026-01-01 10:03:00"},
    ])
    sql = f"""
    CREATE TABLE updates (delivery_id VARCHAR, van_id VARCHAR, state VARCHAR, changed_at TIMESTAMP)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/updates');
    CREATE TABLE positions (van_id VARCHAR, kmh DOUBLE, seen_at TIMESTAMP)
      WITH (connector = 'files', format = 'json', path = '{tmp_path}/positions');
    CREATE VIEW deliveries AS SELECT delivery_id, van_id, state FROM (
      SELECT *, row_number() OVER (PARTITION BY delivery_id ORDER BY changed_at DESC) AS rn FROM updates) t WHERE rn = 1;
    CREATE VIEW vans AS SELECT van_id, kmh FROM (
      SELECT *, row_number() OVER (PARTITION BY van_id ORDER BY seen_at DESC) AS rn FROM positions) t WHERE rn = 1;
    CREATE VIEW eta AS WITH joined AS (
      SELECT d.delivery_id, d.state, v.kmh FROM deliveries d LEFT JOIN vans v ON d.van_id = v.van_id
    ), scored AS (SELECT *, coalesce(kmh, 0) * 2 AS score FROM joined)
    SELECT delivery_id, state, score FROM scored;
    """
    status = Pipeline.from_sql(sql, "eta.sql").run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert status["query"]["state"] == "finished", status
    rows = read_output(tmp_path / "out")
    assert sorted((r["delivery_id"], r["state"], r["score"]) for r in rows) == [
        ("d1", "out", 100.0), ("d2", "new", 40.0), ("d3", "new", 0.0)]


def test_risingwave_file_sources_read_the_files_their_match_pattern_names(spark, tmp_path):
    """`connector = 'posix_fs', posix_fs.root = ..., match_pattern = 'in/*.csv'` (RisingWave's
    local file source) reads the CSV files of that folder whose names match, not the others."""
    (tmp_path / "a" / "in").mkdir(parents=True)
    (tmp_path / "a" / "in" / "one.csv").write_text("k,n\n1,x\n2,y\n")
    (tmp_path / "a" / "in" / "skip.txt").write_text("k,n\n1,never\n")
    write_jsonl(tmp_path / "b" / "b.json", [{"k": 1, "m": "p"}, {"k": 2, "m": "q"}])
    sql = f"""
    CREATE SOURCE a (k INT, n VARCHAR) WITH (connector = 'posix_fs', posix_fs.root = '{tmp_path}/a',
      match_pattern = 'in/*.csv') FORMAT PLAIN ENCODE CSV (without_header = 'false', delimiter = ',');
    CREATE SOURCE b (k INT, m VARCHAR) WITH (connector = 'posix_fs', posix_fs.root = '{tmp_path}/b') FORMAT PLAIN ENCODE JSON;
    CREATE MATERIALIZED VIEW ab AS SELECT a.n, b.m FROM a JOIN b ON a.k = b.k;
    """
    pipeline = Pipeline.from_sql(sql, "files.sql", dialect="risingwave")
    pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
    assert sorted((r["n"], r["m"]) for r in read_output(tmp_path / "out")) == [("x", "p"), ("y", "q")]
    with pytest.raises(Exception, match="without_header"):
        Pipeline.from_sql(sql.replace("without_header = 'false'", "without_header = 'true'"), "files.sql", dialect="risingwave")
