"""INSERT INTO an S3 sink, against the embedded S3 server: the committed contents are the join's
result, a crash before or after a commit neither shows partial batches nor duplicates rows, and
an hour's completeness marker appears only once all of its rows are committed."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from runtime_helpers import read_output, run_to_end, run_until_idle, start, write_jsonl
from streamjoin.io.sinks.hours import HourNotComplete, complete_hours, marker, read_hour, read_hour_arrow
from streamjoin.io.sinks.table_sink import DeltaCommitter, TableSink
from streamjoin.io.storage import s3

DDL = """CREATE STREAM orders (id INT, customer INT, amount INT)
  WITH (connector = 'files', format = 'json', path = '{dir}/orders');
CREATE TABLE customers (customer INT PRIMARY KEY, name VARCHAR)
  WITH (connector = 'files', format = 'csv', path = '{dir}/customers');
CREATE SINK enriched WITH (connector = 's3', path = '{sink}', format = '{fmt}', partitioned_by = 'hour');
"""
SELECT = """SELECT STREAM ROWTIME AS order_time, o.id, c.name, o.amount
FROM orders AS o JOIN customers AS c ON o.customer = c.customer;"""
CUSTOMERS = [{"customer": 1, "name": "Ada"}, {"customer": 2, "name": "Bob"}, {"customer": 3, "name": "Cy"}]


def order(i: int, hhmm: str, customer: int) -> dict:
    return {"id": i, "customer": customer, "amount": 10 * i, "rowtime": f"2024-01-01 {hhmm}:00.000"}


ORDERS = [order(1, "10:05", 1), order(2, "10:40", 2), order(3, "10:59", 9), order(4, "11:10", 3), order(5, "12:30", 1)]


def write_customers(root: Path) -> None:
    path = root / "customers" / "c.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["customer", "name"])
        writer.writeheader()
        writer.writerows(CUSTOMERS)


def sink_sql(root: Path, sink: str, fmt: str = "delta") -> str:
    return DDL.format(dir=root, sink=sink, fmt=fmt) + "INSERT INTO enriched " + SELECT


def committed(sink: str) -> list[tuple]:
    rows = []
    for hour in ("2024-01-01T10", "2024-01-01T11", "2024-01-01T12"):
        table = read_hour_arrow(sink, hour, require_complete=False)
        rows += [(r["id"], r["name"], r["amount"], hour) for r in table.to_pylist()] if table.num_rows else []
    return sorted(rows)


EXPECTED = [(1, "Ada", 10, "2024-01-01T10"), (2, "Bob", 20, "2024-01-01T10"), (4, "Cy", 40, "2024-01-01T11"),
            (5, "Ada", 50, "2024-01-01T12")]


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_the_sinks_committed_contents_equal_the_joins_result(spark, tmp_path, s3_prefix, fmt):
    sink = f"{s3_prefix}/enriched"
    write_customers(tmp_path)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)
    reference, _ = run_until_idle(spark, DDL.format(dir=tmp_path, sink=sink, fmt=fmt) + SELECT, tmp_path / "json")
    _, status = run_until_idle(spark, sink_sql(tmp_path, sink, fmt), tmp_path / "s3")
    assert committed(sink) == EXPECTED
    assert sorted((r["id"], r["name"], r["amount"]) for r in reference) == [e[:3] for e in EXPECTED]
    assert status["rows_emitted"] == 4 and status["sink"]["complete_through"] == "2024-01-01T12"
    frame = read_hour(sink, "2024-01-01 10:00:00")
    assert sorted(frame["id"]) == [1, 2] and list(frame.columns) == ["order_time", "id", "name", "amount"]
    assert str(frame["order_time"].iloc[0])[:10] == "2024-01-01"
    assert read_hour(sink, "2024-01-01T11", engine="spark", spark=spark).collect()[0]["name"] == "Cy"


def test_a_run_killed_between_writing_files_and_committing_leaves_nothing_visible_and_restarts_exactly_once(
    spark, tmp_path, s3_prefix, monkeypatch
):
    sink = f"{s3_prefix}/enriched"
    write_customers(tmp_path)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)

    def killed(self, files, schema, version):
        raise RuntimeError("killed between writing files and committing")

    monkeypatch.setattr(DeltaCommitter, "commit", killed)
    runner = start(spark, sink_sql(tmp_path, sink), tmp_path)
    with pytest.raises(Exception, match="killed between"):
        runner.process_available()
    runner.fail(RuntimeError("killed"))
    written = [p for p in s3.list_files(sink, recursive=True) if p.endswith(".parquet")]
    assert written  # the executors had written their files...
    assert committed(sink) == [] and complete_hours(sink) == []  # ...and none of them is visible
    monkeypatch.undo()
    _restart_until_end(spark, tmp_path, sink)
    assert committed(sink) == EXPECTED


def test_a_batch_replayed_after_its_commit_landed_is_not_written_twice(spark, tmp_path, s3_prefix, monkeypatch):
    sink = f"{s3_prefix}/enriched"
    write_customers(tmp_path)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)
    original = TableSink.write

    def commit_then_crash(self, frame, version, rowtime_column):
        original(self, frame, version, rowtime_column)
        raise RuntimeError("crashed after the commit, before Spark recorded the batch")

    monkeypatch.setattr(TableSink, "write", commit_then_crash)
    runner = start(spark, sink_sql(tmp_path, sink), tmp_path)
    with pytest.raises(Exception, match="crashed after the commit"):
        runner.process_available()
    runner.fail(RuntimeError("crashed"))
    assert committed(sink) == EXPECTED  # the batch is in the table
    monkeypatch.undo()
    _restart_until_end(spark, tmp_path, sink)  # Spark replays the batch: the sink skips it
    assert committed(sink) == EXPECTED


def _restart_until_end(spark, root: Path, sink: str) -> dict:
    return run_to_end(start(spark, sink_sql(root, sink), root))


def test_the_completeness_marker_appears_only_after_the_hours_rows_are_all_committed(spark, tmp_path, s3_prefix):
    sink = f"{s3_prefix}/enriched"
    write_customers(tmp_path)
    write_jsonl(tmp_path / "orders" / "1.json", ORDERS[:3])  # hour 10 only: the clock is at 10:59
    runner = start(spark, sink_sql(tmp_path, sink), tmp_path)
    try:
        runner.process_available()
        assert committed(sink) == EXPECTED[:2] and complete_hours(sink) == []
        with pytest.raises(HourNotComplete):
            read_hour(sink, "2024-01-01T10")
        write_jsonl(tmp_path / "orders" / "2.json", ORDERS[3:4])  # 11:10: the clock passes 11:00
        runner.process_available()
        runner.process_available()  # the batch that runs with the new watermark
        assert complete_hours(sink) == ["2024-01-01T10"]
        mark = marker(sink, "2024-01-01T10")
        assert mark["rows"] == 2 == len(read_hour(sink, "2024-01-01T10"))
        assert mark["snapshots"][0]["alias"] == "c" and mark["snapshots"][0]["rows"] == 3
        write_jsonl(tmp_path / "orders" / "3.json", ORDERS[4:])
        runner.end_of_input()
    except Exception as error:
        runner.fail(error)
        raise
    status = runner.stop("finished")
    assert complete_hours(sink) == ["2024-01-01T10", "2024-01-01T11", "2024-01-01T12"]
    assert [marker(sink, h)["rows"] for h in complete_hours(sink)] == [2, 1, 1]
    assert status["sink"]["complete_through"] == "2024-01-01T12"
    assert read_output(tmp_path / "out") == []  # rows went to the sink, not to JSON Lines


CITY_SQL = """CREATE STREAM city_sales (city VARCHAR, total_sales DECIMAL(10, 2))
  WITH (connector = 'files', format = 'json', path = '{dir}/sales');
CREATE TABLE city_info (city VARCHAR PRIMARY KEY, region VARCHAR)
  WITH (connector = 'files', format = 'json', path = '{dir}/cities');
CREATE SINK hourly WITH (connector = 's3', path = '{sink}', format = 'delta', partitioned_by = 'hour');
INSERT INTO hourly
SELECT STREAM FLOOR(ROWTIME TO HOUR) AS sales_hour, ci.city, ci.region, cs.total_sales
FROM city_sales OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW) AS cs
RIGHT OUTER JOIN city_info AS ci ON cs.city = ci.city;
"""


def test_the_hourly_right_outer_join_lands_one_row_per_city_per_hour_with_a_marker_per_hour(spark, tmp_path, s3_prefix):
    sink = f"{s3_prefix}/hourly"
    write_jsonl(tmp_path / "cities" / "c.json", [{"city": c, "region": "eu"} for c in ("Berlin", "Oslo", "Rome")])
    write_jsonl(tmp_path / "sales" / "s.json", [
        {"city": "Berlin", "total_sales": "5.50", "rowtime": "2024-01-01 10:00:00"},
        {"city": "Rome", "total_sales": "7", "rowtime": "2024-01-01 12:00:00"},
    ])
    _, status = run_until_idle(spark, CITY_SQL.format(dir=tmp_path, sink=sink), tmp_path)
    assert complete_hours(sink) == ["2024-01-01T10", "2024-01-01T11", "2024-01-01T12"]
    for hour, sold in (("2024-01-01T10", {"Berlin"}), ("2024-01-01T11", set()), ("2024-01-01T12", {"Rome"})):
        frame = read_hour(sink, hour)
        assert sorted(frame["city"]) == ["Berlin", "Oslo", "Rome"] and marker(sink, hour)["rows"] == 3
        assert set(frame[frame["total_sales"].notna()]["city"]) == sold
        assert marker(sink, hour)["snapshots"][0]["rows"] == 3
    assert status["rows_emitted"] == 9


def test_streamjoin_run_inserts_into_an_s3_sink_from_the_command_line(tmp_path, s3_prefix):
    import os
    import subprocess
    import sys

    sink = f"{s3_prefix}/enriched"
    write_customers(tmp_path)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)
    query = tmp_path / "q.sql"
    query.write_text(sink_sql(tmp_path, sink))
    done = subprocess.run(
        [sys.executable, "-m", "streamjoin.cli", "run", str(query), "--until-idle", "--checkpoint", str(tmp_path / "ck")],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == ""  # the rows went to the sink
    assert done.stderr.strip().splitlines()[-1] == "streamjoin: finished: 4 rows emitted, 0 late rows"
    assert committed(sink) == EXPECTED and complete_hours(sink) == ["2024-01-01T10", "2024-01-01T11", "2024-01-01T12"]


def test_a_sink_with_an_unknown_format_or_partitioning_is_rejected_before_spark_starts(tmp_path):
    from streamjoin.cli import main

    for option, bad, message in (("format = 'delta'", "format = 'orc'", "format 'orc' is not supported"),
                                 ("partitioned_by = 'hour'", "partitioned_by = 'day'", "partitioned_by = 'day' is not supported")):
        query = tmp_path / "q.sql"
        query.write_text(DDL.format(dir=tmp_path, sink="s3://b/x", fmt="delta").replace(option, bad)
                         + "INSERT INTO enriched " + SELECT)
        assert main(["check", str(query)]) == 0
        assert main(["run", str(query), "--until-idle"]) == 2, message


def test_the_embedded_server_runs_as_a_command_and_serves_the_standard_variables(tmp_path):
    import boto3
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3

    with EmbeddedS3(port=0, buckets=("landing", "reports")) as server:
        env = server.env()
        client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name=env["AWS_REGION"])
        assert sorted(b["Name"] for b in client.list_buckets()["Buckets"]) == ["landing", "reports"]
        s3.write_json("s3://reports/x/a.json", {"ok": 1}, server.settings)
        assert s3.read_json("s3://reports/x/a.json", server.settings) == {"ok": 1}
        assert server._process.poll() is None  # a process of its own (see EmbeddedS3)



@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_a_checkpoint_whose_committed_rows_are_gone_from_the_table_refuses_to_run_and_says_how_to_reset(
        spark, tmp_path, s3_prefix, fmt):
    sink = f"{s3_prefix}/enriched"
    write_customers(tmp_path)
    write_jsonl(tmp_path / "orders" / "o.json", ORDERS)
    sql = sink_sql(tmp_path, sink, fmt)
    run_to_end(start(spark, sql, tmp_path / "run"))
    assert committed(sink) == EXPECTED
    filesystem, root = s3.resolve(sink)
    filesystem.delete_dir(root)  # the storage was reset: the table is gone, the checkpoint is not
    from streamjoin.runtime.pipeline import Pipeline

    runner = Pipeline.from_sql(sql, "q.sql").runner(spark, tmp_path / "run" / "checkpoint", str(tmp_path / "run" / "out"))
    with pytest.raises(RuntimeError, match="those rows are gone.*remove the checkpoint folder"):
        runner.start()
    assert runner.query is None  # refused before anything started
    # a new checkpoint rebuilds the table from the inputs
    run_to_end(start(spark, sql, tmp_path / "again"))
    assert committed(sink) == EXPECTED


def test_a_delta_sink_writes_the_tables_checkpoint_every_checkpoint_interval_versions(tmp_path):
    # the sink writes Delta's checkpoint itself, after the commit (a crash point between the two:
    # sink.before_delta_checkpoint), every `checkpoint_interval` versions; readers need none of them
    import pyarrow as pa
    from deltalake import DeltaTable
    from streamjoin.io.sinks.table_sink import SinkSpec

    spec = SinkSpec.from_options("out", {"path": str(tmp_path / "t"), "format": "delta", "checkpoint_interval": "2"})
    sink = TableSink(spec, "app-1")
    for version in range(5):
        sink.apply(pa.table({"k": [version], "v": [f"v{version}"]}), version, None)
    log = tmp_path / "t" / "_delta_log"
    assert sorted(p.name.split(".")[0].lstrip("0") or "0" for p in log.glob("*.checkpoint.parquet")) == ["2", "4"]
    table = DeltaTable(str(tmp_path / "t"))
    assert table.version() == 4 and table.transaction_version("app-1") == 4
    assert sorted(table.to_pyarrow_table().column("k").to_pylist()) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="checkpoint_interval = '0' is not a whole number"):
        SinkSpec.from_options("out", {"path": "x", "checkpoint_interval": "0"})
