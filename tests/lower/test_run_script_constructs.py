"""Constructs real programs use (issue 39), run to the end of input on Spark, not only read by
`check`: a record's field as a join key (Lenses `a._key.incr`), s-Server's `STEP(ts BY ...)`,
and `(VALUES ...) AS t (cols)` in FROM."""

from __future__ import annotations

from pathlib import Path

from runtime_helpers import run_until_idle, write_jsonl

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
