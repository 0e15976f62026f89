"""Stream-table joins on Spark (SEMANTICS.md §7), run end to end in the test session: the seeds'
examples (s-Server's beast_events / animal_data and city_sales / city_info, Lenses' customers /
orders), streaming GROUP BY, snapshots and their identity in the status."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from runtime_helpers import read_output, run_in_two_parts, run_until_idle, start, ts, write_jsonl

BEAST_DDL = """CREATE STREAM beast_events (row_id integer not null, sensor integer, zone integer, animal_id int, weight integer)
  WITH (connector = 'files', format = 'json', path = '{dir}/events');
CREATE TABLE animal_data (animal_id int not null primary key, edible boolean, poisonous boolean,
  name varchar(32) not null, species varchar(32) not null, genus varchar(32) not null)
  WITH (connector = 'files', format = 'csv', path = '{dir}/animals');
"""
ANIMALS = [
    {"animal_id": 1, "edible": "true", "poisonous": "false", "name": "cow", "species": "taurus", "genus": "bos"},
    {"animal_id": 2, "edible": "true", "poisonous": "true", "name": "fugu", "species": "rubripes", "genus": "takifugu"},
    {"animal_id": 3, "edible": "false", "poisonous": "false", "name": "cat", "species": "catus", "genus": "felis"},
]
EVENTS = [{"row_id": i, "sensor": 7, "zone": i % 2, "animal_id": i % 5, "weight": 100 + i, "rowtime": ts(1000 * i)} for i in range(10)]


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def beast(spark, tmp_path: Path, query: str) -> tuple[list[dict], dict]:
    write_jsonl(tmp_path / "events" / "e.json", EVENTS)
    write_csv(tmp_path / "animals" / "animals.csv", ANIMALS)
    return run_until_idle(spark, BEAST_DDL.format(dir=tmp_path) + query, tmp_path)


def test_the_simple_stream_table_join_enriches_each_event_with_its_animal(spark, tmp_path):
    rows, status = beast(spark, tmp_path, "SELECT STREAM * from beast_events e join animal_data a using (animal_id);")
    names = {a["animal_id"]: a["name"] for a in ANIMALS}
    expected = [(e["row_id"], e["animal_id"], names[e["animal_id"]]) for e in EVENTS if e["animal_id"] in names]
    assert [(r["row_id"], r["animal_id"], r["name"]) for r in rows] == expected
    assert list(rows[0]) == ["animal_id", "row_id", "sensor", "zone", "weight", "edible", "poisonous", "name", "species", "genus"]
    assert status["snapshots"][0]["rows"] == 3


def test_extra_table_filters_are_applied_before_the_snapshot_is_taken(spark, tmp_path):
    rows, status = beast(
        spark, tmp_path,
        "SELECT STREAM * from beast_events e join animal_data a on (e.animal_id = a.animal_id and a.edible and not a.poisonous);",
    )
    assert [(r["row_id"], r["name"]) for r in rows] == [(1, "cow"), (6, "cow")]
    snapshot = status["snapshots"][0]
    assert snapshot["rows"] == 1  # only the edible, non-poisonous animal was loaded
    assert snapshot["alias"] == "a" and snapshot["source"].startswith("files ") and len(snapshot["sha256"]) == 64


def test_a_stream_left_join_table_keeps_every_event_in_rowtime_order(spark, tmp_path):
    rows, _ = beast(spark, tmp_path, "SELECT STREAM ROWTIME, e.row_id, a.name from beast_events e left join animal_data a using (animal_id);")
    names = {a["animal_id"]: a["name"] for a in ANIMALS}
    assert [(r["row_id"], r["name"]) for r in rows] == [(e["row_id"], names.get(e["animal_id"])) for e in EVENTS]
    assert [r["rowtime"] for r in rows] == [e["rowtime"] for e in EVENTS]


def test_an_extra_stream_filter_in_an_inner_join_keeps_only_the_events_it_accepts(spark, tmp_path):
    rows, _ = beast(spark, tmp_path, "SELECT STREAM e.row_id, a.name from beast_events e join animal_data a on e.animal_id = a.animal_id and e.zone = 1;")
    assert [(r["row_id"], r["name"]) for r in rows] == [(1, "cow"), (3, "cat"), (7, "fugu")]


CITY_DDL = """CREATE STREAM city_sales (city VARCHAR(32), total_sales DECIMAL(12, 2))
  WITH (connector = 'files', format = 'json', path = '{dir}/sales');
CREATE TABLE city_info (city VARCHAR(32) PRIMARY KEY, region VARCHAR(32), store_name VARCHAR(64))
  WITH (connector = 'files', format = 'csv', path = '{dir}/cities');
SELECT STREAM ROWTIME, cs.*, ci.*
FROM city_sales OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW) AS cs
RIGHT OUTER JOIN city_info AS ci
USING(city);
"""
CITIES = [{"city": c, "region": r, "store_name": f"{c} store"} for c, r in
          [("Berlin", "eu"), ("Lima", "sa"), ("Oslo", "eu"), ("Perth", "au")]]


def test_the_hourly_right_outer_join_gives_one_row_per_city_per_hour_even_for_empty_hours(spark, tmp_path):
    # hour 10: two cities sold; hour 11: nothing at all; hour 12: one city; then the clock moves on
    sales = [
        {"rowtime": "2024-01-01 10:00:00.000", "city": "Berlin", "total_sales": "100.50"},
        {"rowtime": "2024-01-01 10:00:00.000", "city": "Lima", "total_sales": "20.00"},
        {"rowtime": "2024-01-01 12:00:00.000", "city": "Oslo", "total_sales": "7.25"},
        {"rowtime": "2024-01-01 13:30:00.000", "_bound": True},  # closes hour 12 (rowtime bound)
    ]
    write_jsonl(tmp_path / "sales" / "s.json", sales)
    write_csv(tmp_path / "cities" / "c.csv", CITIES)
    rows, _ = run_until_idle(spark, CITY_DDL.format(dir=tmp_path), tmp_path)
    # `cs.*, ci.*` names each side's city (alias.column: the names repeat), as the seed writes it
    got = [(r["rowtime"][11:16], r["ci.city"], r["total_sales"], r["region"]) for r in rows]
    by_hour = {h: sorted(x[1:] for x in got if x[0] == h) for h in ("10:00", "11:00", "12:00")}
    assert by_hour["10:00"] == [("Berlin", 100.5, "eu"), ("Lima", 20, "sa"), ("Oslo", None, "eu"), ("Perth", None, "au")]
    assert by_hour["11:00"] == [(c["city"], None, c["region"]) for c in CITIES]
    assert by_hour["12:00"] == [("Berlin", None, "eu"), ("Lima", None, "sa"), ("Oslo", 7.25, "eu"), ("Perth", None, "au")]
    assert len(got) == 12  # nothing for hour 13: no stream row there, and the bound only closed up to 12
    assert [r["rowtime"] for r in rows] == sorted(r["rowtime"] for r in rows)
    assert list(rows[0]) == ["rowtime", "cs.city", "total_sales", "ci.city", "region", "store_name"]
    assert all(r["cs.city"] in (None, r["ci.city"]) for r in rows)


LENSES_DDL = """CREATE STREAM customers (_key INTEGER, id INTEGER, name VARCHAR)
  WITH (connector = 'files', format = 'json', path = '{dir}/customers');
CREATE STREAM orders (_key INTEGER, customer_id INTEGER, item VARCHAR)
  WITH (connector = 'files', format = 'json', path = '{dir}/orders');
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM orders);
"""
CUSTOMERS = [
    {"_key": 1, "id": 1, "name": "John", "rowtime": ts(0)},
    {"_key": 2, "id": 2, "name": "Frank", "rowtime": ts(0)},
]
ORDERS = [
    {"_key": 1, "customer_id": 1, "item": "Computer", "rowtime": ts(1000)},
    {"_key": 2, "customer_id": 1, "item": "Mouse", "rowtime": ts(2000)},
    {"_key": 3, "customer_id": 3, "item": "Keyboard", "rowtime": ts(3000)},
]


def lenses(spark, tmp_path: Path, join: str) -> list[dict]:
    write_jsonl(tmp_path / "customers" / "c.json", CUSTOMERS)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)
    sql = LENSES_DDL.format(dir=tmp_path) + f"""INSERT INTO result
SELECT STREAM customersTable.name, ordersStream.item
FROM ordersStream {join} customersTable ON customersTable.id = ordersStream.customer_id;"""
    rows, _ = run_until_idle(spark, sql, tmp_path)
    return rows


def test_lenses_stream_inner_join_table_emits_only_matches(spark, tmp_path):
    assert lenses(spark, tmp_path, "JOIN") == [{"name": "John", "item": "Computer"}, {"name": "John", "item": "Mouse"}]


def test_lenses_stream_left_join_table_keeps_the_unmatched_order(spark, tmp_path):
    assert lenses(spark, tmp_path, "LEFT JOIN") == [
        {"name": "John", "item": "Computer"}, {"name": "John", "item": "Mouse"}, {"name": None, "item": "Keyboard"},
    ]


def test_a_table_view_over_a_keyed_stream_keeps_the_latest_row_per_key(spark, tmp_path):
    write_jsonl(tmp_path / "customers" / "c2.json", [{"_key": 1, "id": 1, "name": "Johnny", "rowtime": ts(500)}])
    assert lenses(spark, tmp_path, "JOIN") == [{"name": "Johnny", "item": "Computer"}, {"name": "Johnny", "item": "Mouse"}]


AGG_DDL = """CREATE STREAM trades (sym VARCHAR, qty INT, px DOUBLE, t TIMESTAMP)
  WITH (connector = 'files', format = 'json', path = '{dir}/trades', rowtime = 't');
"""
TRADES = [
    {"sym": "A", "qty": 1, "px": 10.0, "t": ts(0)},
    {"sym": "B", "qty": 2, "px": 20.0, "t": ts(10_000)},
    {"sym": "A", "qty": 3, "px": 30.0, "t": ts(59_999)},
    {"sym": "A", "qty": 4, "px": 40.0, "t": ts(60_000)},
    {"sym": "B", "qty": 5, "px": 50.0, "t": ts(150_000)},
]


def test_group_by_a_minute_bucket_emits_one_row_per_group_with_the_bucket_start_as_rowtime(spark, tmp_path):
    write_jsonl(tmp_path / "trades" / "t.json", TRADES)
    sql = AGG_DDL.format(dir=tmp_path) + """SELECT STREAM ROWTIME, sym, COUNT(*) AS n, SUM(qty) AS qty,
  MIN(px) AS lo, MAX(px) AS hi, AVG(px) AS avg_px
FROM trades GROUP BY FLOOR(ROWTIME TO MINUTE), sym;"""
    rows, _ = run_until_idle(spark, sql, tmp_path)
    got = sorted((r["rowtime"], r["sym"], r["n"], r["qty"], r["lo"], r["hi"], r["avg_px"]) for r in rows)
    assert got == [
        (ts(0), "A", 2, 4, 10.0, 30.0, 20.0),
        (ts(0), "B", 1, 2, 20.0, 20.0, 20.0),
        (ts(60_000), "A", 1, 4, 40.0, 40.0, 40.0),
        (ts(120_000), "B", 1, 5, 50.0, 50.0, 50.0),
    ]
    assert [r["rowtime"] for r in rows] == sorted(r["rowtime"] for r in rows)


def test_a_group_is_emitted_only_once_the_clock_passes_its_bucket_end(spark, tmp_path):
    write_jsonl(tmp_path / "trades" / "1.json", TRADES[:3])
    sql = AGG_DDL.format(dir=tmp_path) + "SELECT STREAM sym, SUM(qty) AS qty FROM trades GROUP BY FLOOR(ROWTIME TO MINUTE), sym;"
    runner = start(spark, sql, tmp_path)
    try:
        runner.process_available()
        assert read_output(tmp_path / "out") == []  # clock 00:00:59.999: the minute is still open
        write_jsonl(tmp_path / "trades" / "2.json", TRADES[3:4])  # clock reaches 00:01:00
        runner.process_available()
        runner.process_available()
        assert sorted(map(tuple, (r.values() for r in read_output(tmp_path / "out")))) == [("A", 4), ("B", 2)]
        runner.end_of_input()
    finally:
        runner.stop("finished")
    assert [r["qty"] for r in read_output(tmp_path / "out")][2:] == [4]


@pytest.mark.parametrize(("column", "group", "shift"), [
    ("window_start", "window_start, sym", 0),
    ("window_end", "sym, window_end", 60_000),  # window_end alone (RisingWave's habit): the same windows
])
def test_a_tumble_window_groups_like_floor_by_window_start_or_window_end_alone(spark, tmp_path, column, group, shift):
    write_jsonl(tmp_path / "trades" / "t.json", TRADES)
    sql = AGG_DDL.format(dir=tmp_path) + f"""SELECT STREAM {column}, sym, SUM(qty) AS qty
FROM TUMBLE(trades, t, INTERVAL '1' MINUTE) GROUP BY {group};"""
    rows, _ = run_until_idle(spark, sql, tmp_path)
    assert sorted((r[column], r["sym"], r["qty"]) for r in rows) == [
        (ts(shift), "A", 4), (ts(shift), "B", 2), (ts(60_000 + shift), "A", 4), (ts(120_000 + shift), "B", 5),
    ]


@pytest.mark.parametrize("group", ["GROUP BY FLOOR(ROWTIME TO MONTH), sym"])  # GROUP BY sym: a running aggregate (test_running_aggregates.py)
def test_aggregations_run_cannot_finish_are_rejected_before_spark_starts(group, tmp_path):
    from streamjoin.errors import Unsupported
    from streamjoin.lower.support import check_runnable
    from streamjoin.plan import compile_sql

    script = compile_sql(AGG_DDL.format(dir=tmp_path) + f"SELECT STREAM sym, COUNT(*) AS n FROM trades {group};")
    with pytest.raises(Unsupported):
        check_runnable(script, script.final)


def test_a_restart_takes_a_new_snapshot_and_loses_or_repeats_no_stream_row(spark, tmp_path):
    sql = BEAST_DDL.format(dir=tmp_path) + "SELECT STREAM e.row_id, a.name FROM beast_events e JOIN animal_data a ON e.animal_id = a.animal_id;"
    events = [{"row_id": i, "animal_id": 1, "rowtime": ts(1000 * i)} for i in range(10)]
    write_csv(tmp_path / "animals" / "animals.csv", ANIMALS)
    write_jsonl(tmp_path / "events" / "1.json", events[:5])

    def change_the_table_and_add_events():
        write_csv(tmp_path / "animals" / "animals.csv", [{**ANIMALS[0], "name": "ox"}, *ANIMALS[1:]])
        write_jsonl(tmp_path / "events" / "2.json", events[5:])

    before, after = run_in_two_parts(spark, sql, tmp_path, change_the_table_and_add_events)
    rows = read_output(tmp_path / "out")
    assert sorted((r["row_id"], r["name"]) for r in rows) == [(i, "cow") for i in range(5)] + [(i, "ox") for i in range(5, 10)]
    old, new = before["snapshots"][0], after["snapshots"][0]
    assert old["sha256"] != new["sha256"] and new["taken_at"] > old["taken_at"]
    assert new["rows"] == 3 and after["rows_emitted"] == 10


def test_table_right_join_stream_and_a_table_table_join_run_as_ordinary_joins(spark, tmp_path):
    write_csv(tmp_path / "genera" / "g.csv", [{"genus": "bos", "family": "bovidae"}, {"genus": "felis", "family": "felidae"}])
    ddl = BEAST_DDL + """CREATE TABLE genera (genus VARCHAR PRIMARY KEY, family VARCHAR)
  WITH (connector = 'files', format = 'csv', path = '{dir}/genera');
"""
    write_jsonl(tmp_path / "events" / "e.json", EVENTS)
    write_csv(tmp_path / "animals" / "animals.csv", ANIMALS)
    sql = ddl.format(dir=tmp_path) + """SELECT STREAM e.row_id, a.name, g.family
FROM animal_data a JOIN genera g ON a.genus = g.genus
RIGHT JOIN beast_events e ON e.animal_id = a.animal_id;"""
    rows, _ = run_until_idle(spark, sql, tmp_path)
    family = {1: ("cow", "bovidae"), 3: ("cat", "felidae")}  # fugu's genus is not in `genera`
    assert [(r["row_id"], r["name"], r["family"]) for r in rows] == [
        (e["row_id"], *family.get(e["animal_id"], (None, None))) for e in EVENTS
    ]


ASOF_DDL = """CREATE STREAM stock_prices (stock_name VARCHAR, stock_time TIMESTAMP, price INT)
  WITH (connector = 'files', format = 'json', path = '{dir}/sp', rowtime = 'stock_time');
CREATE TABLE market_data (stock_name VARCHAR, market_time TIMESTAMP, sentiment DOUBLE)
  WITH (connector = 'files', format = 'json', path = '{dir}/md.json');
"""
DAY = "2024-09-24 "


def asof_table(spark, tmp_path, join: str, op: str, emit: str = "") -> list[tuple]:
    prices = [{"stock_name": n, "stock_time": DAY + t, "price": p} for n, t, p in (
        ("TSLA", "09:30:00", 250), ("GOOG", "09:30:00", 1400), ("TSLA", "10:30:00", 252), ("TSLA", "11:00:00", 255))]
    market = [{"stock_name": n, "market_time": DAY + t, "sentiment": s} for n, t, s in (
        ("TSLA", "09:00:00", 0.7), ("TSLA", "10:00:00", 0.8), ("TSLA", "11:00:00", 0.9), ("TSLA", "11:00:00", 0.95))]
    write_jsonl(tmp_path / "sp" / "p.json", prices)
    write_jsonl(tmp_path / "md.json", market)
    sql = ASOF_DDL.format(dir=tmp_path) + f"""SELECT STREAM sp.stock_name, sp.stock_time, sp.price, md.sentiment
FROM stock_prices sp {join} market_data md ON sp.stock_name = md.stock_name AND md.market_time {op} sp.stock_time {emit};"""
    rows, _ = run_until_idle(spark, sql, tmp_path / "run")
    return [tuple(r.values()) for r in rows]


def test_a_stream_asof_join_against_a_table_takes_the_nearest_preceding_table_row(spark, tmp_path):
    # 11:00 has two table rows with the same market_time: the later one (0.95) wins the tie
    assert asof_table(spark, tmp_path, "ASOF JOIN", "<=") == [
        ("TSLA", DAY + "09:30:00.000", 250, 0.7), ("TSLA", DAY + "10:30:00.000", 252, 0.8),
        ("TSLA", DAY + "11:00:00.000", 255, 0.95),
    ]


def test_a_stream_asof_left_join_against_a_table_keeps_unmatched_rows_and_can_look_ahead(spark, tmp_path):
    assert sorted(asof_table(spark, tmp_path, "ASOF LEFT JOIN", ">", "EMIT CHANGES"), key=repr) == [
        ("+I", "GOOG", DAY + "09:30:00.000", 1400, None), ("+I", "TSLA", DAY + "09:30:00.000", 250, 0.8),
        ("+I", "TSLA", DAY + "10:30:00.000", 252, 0.95), ("+I", "TSLA", DAY + "11:00:00.000", 255, None),
    ]


def test_a_table_seeded_by_insert_values_is_the_snapshot_a_stream_joins(spark, tmp_path):
    """RisingWave's tests and demos seed tables with INSERT ... VALUES (issue 39): the rows, in
    any column order, NULLs and typed literals included, are the table's snapshot."""
    write_jsonl(tmp_path / "l" / "a.json", [{"k": 1, "rowtime": "2024-01-01 00:00:00"}, {"k": 2, "rowtime": "2024-01-01 00:00:05"},
                                            {"k": 3, "rowtime": "2024-01-01 00:00:10"}])
    sql = (f"CREATE STREAM l (k INT) WITH (connector = 'files', format = 'json', path = '{tmp_path / 'l'}');\n"
           "CREATE TABLE names (k INT PRIMARY KEY, name VARCHAR, since TIMESTAMP);\n"
           "INSERT INTO names VALUES (1, 'one', TIMESTAMP '2024-01-01 00:00:00'), (2, 'two', NULL);\n"
           "INSERT INTO names (name, k) VALUES ('minus', -1);\n"
           "SELECT STREAM a.k, n.name, n.since FROM l AS a LEFT JOIN names AS n ON a.k = n.k;")
    rows, status = run_until_idle(spark, sql, tmp_path / "run")
    assert rows == [{"k": 1, "name": "one", "since": "2024-01-01 00:00:00.000"}, {"k": 2, "name": "two", "since": None},
                    {"k": 3, "name": None, "since": None}]
    assert [s["rows"] for s in status["snapshots"]] == [3]
