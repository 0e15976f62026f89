"""Landing-zone streams on S3 (`CREATE STREAM ... WITH (connector = 's3', path = 's3://...')`),
against the embedded S3 server: new objects are read in key order, the manifest in the
checkpoint records every key read, so a restart neither skips nor re-reads an object."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from runtime_helpers import read_output, run_until_idle, start, ts
from streamjoin.errors import Unsupported
from streamjoin.io.sources.staging import InputSpec, Stager
from streamjoin.io.storage import s3
from streamjoin.io.storage.embedded_s3 import SECRET_KEY
from streamjoin.lower.inputs import input_specs
from streamjoin.lower.support import check_runnable
from streamjoin.plan import compile_sql

JOIN = """CREATE STREAM orders (id INT, qty INT)
  WITH (connector = 's3', format = 'json', path = '{root}/orders/', lateness = '1 HOUR');
CREATE STREAM shipments (id INT, carrier VARCHAR)
  WITH (connector = 's3', format = 'json', path = '{root}/shipments/', lateness = '1 HOUR');
SELECT STREAM ROWTIME, o.id, o.qty, s.carrier
FROM shipments OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS s
JOIN orders OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS o ON o.id = s.id;
"""


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def orders(first: int) -> list[dict]:
    return [{"id": i, "qty": i % 7, "rowtime": ts(1000 * i)} for i in range(first, first + 5)]


def shipments(first: int) -> list[dict]:
    return [{"id": i, "carrier": f"c{i % 3}", "rowtime": ts(1000 * i + 500)} for i in range(first, first + 5)]


def put_batch(root: str, names: list[str]) -> int:
    """Put orders/<name>.json and shipments/<name>.json (five rows each); return the rows put."""
    for name in names:
        first = int(name) * 10
        s3.write_bytes(f"{root}/orders/{name}.json", jsonl(orders(first)))
        s3.write_bytes(f"{root}/shipments/{name}.json", jsonl(shipments(first)))
    return 10 * len(names)


FIRST, LATER = ["0002", "0004"], ["0001", "0005"]  # 0001 sorts before keys the first run read


def put_ignored(root: str) -> None:
    """Objects a landing zone skips: markers, hidden and empty objects, deeper prefixes."""
    s3.write_bytes(f"{root}/orders/_SUCCESS", b"")
    s3.write_bytes(f"{root}/orders/.inprogress.json", jsonl(orders(90)))
    s3.write_bytes(f"{root}/orders/0003.json", b"")
    s3.write_bytes(f"{root}/orders/archive/0009.json", jsonl(orders(90)))


def test_a_restart_of_the_landing_zone_stream_neither_skips_nor_rereads_an_object(spark, s3_prefix, tmp_path):
    single_root = f"{s3_prefix}/single"
    expected_rows = put_batch(single_root, FIRST + LATER)
    put_ignored(single_root)
    reference, _ = run_until_idle(spark, JOIN.format(root=single_root), tmp_path / "single")

    root, workdir = f"{s3_prefix}/restart", tmp_path / "restart"
    put_ignored(root)
    put = put_batch(root, FIRST)
    runner = start(spark, JOIN.format(root=root), workdir)
    try:
        runner.process_available()
    finally:
        before = runner.stop("stopped")
    assert before["inputs"]["o"]["rows_read"] == 10 and before["inputs"]["s"]["rows_read"] == 10

    put += put_batch(root, LATER)
    runner = start(spark, JOIN.format(root=root), workdir)  # the same checkpoint: the query resumes
    try:
        runner.process_available()
        runner.end_of_input()
    finally:
        after = runner.stop("finished")

    rows = read_output(workdir / "out")
    ids = sorted(int(name) * 10 + k for name in FIRST + LATER for k in range(5))
    assert [r["id"] for r in reference] == ids  # each order joins its one shipment
    assert rows == reference  # no gap, no duplicate, in the same order
    assert put == expected_rows == 40
    assert sum(i["rows_read"] for i in after["inputs"].values()) == put
    assert after["rows_emitted"] == len(ids) and after["late_rows"] == 0
    manifest = json.loads((workdir / "checkpoint" / "sources" / "o" / "manifest.json").read_text())
    assert manifest["files"] == [f"{root}/orders/{n}.json" for n in FIRST] + [f"{root}/orders/{n}.json" for n in LATER]
    # the S3 settings travel in the source's options, never into files of the run
    for path in workdir.rglob("*"):
        assert not path.is_file() or SECRET_KEY.encode() not in path.read_bytes(), path


def test_late_rows_from_s3_objects_are_counted_and_written_to_the_late_rows_output(spark, s3_prefix, tmp_path):
    sql = f"""CREATE STREAM a (k INT, x INT) WITH (connector = 's3', format = 'json', path = '{s3_prefix}/a', lateness = '2 SECONDS');
CREATE STREAM b (k INT, y INT) WITH (connector = 's3', format = 'json', path = '{s3_prefix}/b');
SELECT STREAM ROWTIME, a.k, a.x, b.y FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS a
  LEFT JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) AS b ON a.k = b.k;
"""
    s3.write_bytes(f"{s3_prefix}/a/1.json", jsonl([{"rowtime": ts(10_000), "k": 1, "x": 1}]))
    s3.write_bytes(f"{s3_prefix}/b/1.json", jsonl([{"rowtime": ts(10_000), "k": 1, "y": 7}]))
    runner = start(spark, sql, tmp_path / "run")
    try:
        runner.process_available()
        # a's clock is now 10 s - 2 s lateness = 8 s: 9 s is on time, 7 s is late
        rows = [{"rowtime": ts(9_000), "k": 1, "x": 2}, {"rowtime": ts(7_000), "k": 1, "x": 3}]
        s3.write_bytes(f"{s3_prefix}/a/2.json", jsonl(rows))
        runner.process_available()
        runner.end_of_input()
    finally:
        status = runner.stop("finished")
    assert status["late_rows"] == 1 and status["inputs"]["a"]["late_rows"] == 1
    assert status["inputs"]["a"]["rows_read"] == 2 and status["inputs"]["b"]["rows_read"] == 1
    late_files = sorted((tmp_path / "run" / "out" / "late" / "a").glob("*.jsonl"))
    late = [json.loads(line) for f in late_files for line in f.read_text().splitlines()]
    assert late == [{"k": 1, "x": 3, "rowtime": ts(7_000)}]
    assert sorted((r["x"], r["y"]) for r in read_output(tmp_path / "run" / "out")) == [(1, 7), (2, 7)]


TRADES = """CREATE STREAM trades (id INT, sym VARCHAR, price DOUBLE, ok BOOLEAN, at TIMESTAMP)
  WITH (connector = 's3', format = '{fmt}', path = '{root}/trades/', lateness = '1 MINUTE');
SELECT STREAM * FROM trades;
"""
TRADE_ROWS = [
    {"id": 1, "sym": "ABC", "price": 1.5, "ok": True, "at": "2024-01-01 00:00:00.250", "rowtime": "2024-01-01 00:00:01.000"},
    {"id": 2, "sym": None, "price": None, "ok": False, "at": None, "rowtime": "2024-01-01 00:00:02.000"},
]


def spec_for(sql: str, tmp_path: Path) -> InputSpec:
    script = compile_sql(sql)
    (spec,) = input_specs(script, script.final, tmp_path / "checkpoint", tmp_path / "late")
    return spec


def staged(stager: Stager, step: int) -> pa.Table:
    return pq.read_table(stager.step_path(step))


def as_utc(text: str | None):
    return None if text is None else dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def expected_trades() -> list[dict]:
    return [{**r, "at": as_utc(r["at"]), "rowtime": as_utc(r["rowtime"]), "_bound": False} for r in TRADE_ROWS]


def csv_object() -> bytes:
    lines = ["id,sym,price,ok,at,rowtime"]
    for r in TRADE_ROWS:
        lines.append(",".join("" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for v in r.values()))
    return ("\n".join(lines) + "\n").encode()


def parquet_object() -> bytes:
    table = pa.table({
        "id": pa.array([r["id"] for r in TRADE_ROWS], pa.int64()),
        "sym": [r["sym"] for r in TRADE_ROWS],
        "price": [r["price"] for r in TRADE_ROWS],
        "ok": [r["ok"] for r in TRADE_ROWS],
        "at": pa.array([dt.datetime.fromisoformat(r["at"]) if r["at"] else None for r in TRADE_ROWS], pa.timestamp("ms")),
        "rowtime": pa.array([dt.datetime.fromisoformat(r["rowtime"]) for r in TRADE_ROWS], pa.timestamp("us")),
    })
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_csv_and_parquet_objects_are_read_with_the_declared_schema(s3_prefix, tmp_path, fmt):
    root = f"{s3_prefix}/{fmt}"  # s3_prefix cuts long test names: both parameters get the same one
    data = csv_object() if fmt == "csv" else parquet_object()
    s3.write_bytes(f"{root}/trades/t-1.{fmt}", data)
    stager = Stager(spec_for(TRADES.format(fmt=fmt, root=root), tmp_path))
    assert stager.advance() == 1
    table = staged(stager, 0)
    assert table.schema.field("id").type == pa.int32() and table.schema.field("price").type == pa.float64()
    assert table.schema.field("ok").type == pa.bool_() and table.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert table.to_pylist() == expected_trades()


def test_a_gzipped_json_object_is_decompressed_by_its_key_suffix(s3_prefix, tmp_path):
    rows = [{k: v for k, v in r.items() if v is not None} for r in TRADE_ROWS]
    bucket, key = s3.split(f"{s3_prefix}/trades/t-1.json.gz")
    # boto3 stores the bytes as they are (pyarrow's output stream would gzip a .gz key once more)
    s3.S3Settings.from_env().client().put_object(Bucket=bucket, Key=key, Body=gzip.compress(jsonl(rows)))
    stager = Stager(spec_for(TRADES.format(fmt="json", root=s3_prefix), tmp_path))
    assert stager.advance() == 1
    assert staged(stager, 0).to_pylist() == expected_trades()


def test_the_stager_reads_s3_with_the_settings_its_spec_carries_not_its_environment(s3_prefix, tmp_path, monkeypatch):
    spec = spec_for(TRADES.format(fmt="csv", root=s3_prefix), tmp_path)
    assert spec.storage["endpoint_url"] == s3.S3Settings.from_env().endpoint_url
    s3.write_bytes(f"{s3_prefix}/trades/t-1.csv", csv_object())
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)  # as in Spark's Python worker started before they were set
    stager = Stager(InputSpec.from_json(spec.to_json()))
    assert stager.advance() == 1 and stager.manifest().rows == 2


def test_an_object_whose_key_sorts_before_those_already_read_is_still_read_once(s3_prefix, tmp_path):
    sql = TRADES.format(fmt="csv", root=s3_prefix)
    s3.write_bytes(f"{s3_prefix}/trades/b.csv", csv_object())
    assert Stager(spec_for(sql, tmp_path)).advance() == 1
    s3.write_bytes(f"{s3_prefix}/trades/a.csv", csv_object())
    stager = Stager(spec_for(sql, tmp_path))  # a new stager on the same checkpoint, as after a restart
    assert stager.advance() == 2 and stager.advance() == 2  # nothing new the second time
    m = stager.manifest()
    assert m.files == [f"{s3_prefix}/trades/b.csv", f"{s3_prefix}/trades/a.csv"] and m.rows == 4


def test_a_local_manifest_still_records_file_base_names(tmp_path):
    folder = tmp_path / "trades"
    folder.mkdir()
    (folder / "t-1.csv").write_bytes(csv_object())
    stager = Stager(spec_for(TRADES.format(fmt="csv", root=tmp_path).replace("'s3'", "'files'"), tmp_path))
    assert stager.spec.storage is None and "storage" not in json.loads(stager.spec.to_json())
    assert stager.advance() == 1 and stager.manifest().files == ["t-1.csv"]
    assert staged(stager, 0).to_pylist() == expected_trades()


@pytest.mark.parametrize(
    "options, message",
    [
        ("connector = 's3', path = '/data/orders'", "connector 's3' needs path = 's3://bucket/prefix/'"),
        ("connector = 'files', path = 's3://bucket/orders/'", "use connector = 's3'"),
        ("connector = 's3'", "needs WITH (path = '...')"),
        ("connector = 'pulsar', path = 's3://bucket/orders/'", "use 'files', 's3', 'kinesis', 'kafka' or, for a table, 'postgres-cdc'"),
    ],
)
def test_a_stream_connector_and_path_that_do_not_fit_are_rejected_before_spark_starts(options, message):
    script = compile_sql(f"CREATE STREAM orders (id INT) WITH ({options}, format = 'json');\nSELECT STREAM * FROM orders;")
    with pytest.raises(Unsupported, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        check_runnable(script, script.final)
