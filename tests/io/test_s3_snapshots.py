"""Lookup-table snapshots in S3 (`streamjoin.io.sources.snapshots`, `streamjoin snapshot`, CREATE TABLE ...
WITH (connector = 's3')), against the embedded S3 server: versions are immutable, the pointer
names the latest, and a restarted query loads the version that is latest then.

The PostgreSQL test needs the server on 127.0.0.1:5432 ($STREAMJOIN_TEST_PG_URL), like
test_run_temporal_join.py.
"""

from __future__ import annotations

import csv
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pg_helpers import PG_URL, pg_execute
from runtime_helpers import read_output, run_in_two_parts, start, ts, write_jsonl
from streamjoin.cli import main
from streamjoin.io.sources import snapshots
from streamjoin.io.storage import s3

SCHEMA = pa.schema([("animal_id", pa.int32()), ("name", pa.string())])


def animals(*names: str) -> pa.Table:
    return pa.table({"animal_id": list(range(1, len(names) + 1)), "name": list(names)}, schema=SCHEMA)


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_each_export_writes_a_new_immutable_version_and_moves_the_pointer(s3_prefix):
    root = f"{s3_prefix}/snapshots/animals/"
    assert snapshots.latest(root) is None
    first = snapshots.export(animals("cow", "fugu"), root, "test one")
    v1_bytes = s3.read_bytes(f"{s3_prefix}/snapshots/animals/v=000001/data.parquet")
    second = snapshots.export(animals("ox", "fugu", "cat"), root, "test two")

    assert (first["version"], second["version"]) == (1, 2)
    assert snapshots.versions(root) == [1, 2]
    assert s3.read_json(f"{s3_prefix}/snapshots/animals/_latest.json") == {
        "version": 2, "path": f"{s3_prefix}/snapshots/animals/v=000002",
    }
    # version 1 is untouched by the second export, and its metadata describes what was exported
    assert s3.read_bytes(f"{s3_prefix}/snapshots/animals/v=000001/data.parquet") == v1_bytes
    meta1 = s3.read_json(f"{s3_prefix}/snapshots/animals/v=000001/_snapshot.json")
    assert meta1 == first
    assert meta1["rows"] == 2 and meta1["source"] == "test one" and len(meta1["sha256"]) == 64
    assert meta1["schema"] == {"animal_id": "int32", "name": "string"}
    assert meta1["sha256"] == snapshots.content_hash(animals("cow", "fugu"))
    assert second["taken_at"] >= first["taken_at"]

    table, identity = snapshots.read_latest(root, SCHEMA)
    assert table.to_pylist() == animals("ox", "fugu", "cat").to_pylist()
    assert identity["version"] == 2 and identity["rows"] == 3 and identity["sha256"] == second["sha256"]
    assert snapshots.latest(root) == second


def test_a_version_folder_without_a_pointer_update_is_never_reused(s3_prefix):
    root = f"{s3_prefix}/snap"
    snapshots.export(animals("cow"), root, "one")
    # a crash after writing version 2's data, before the pointer moved
    s3.write_bytes(f"{root}/v=000002/data.parquet", b"partial")
    assert snapshots.latest(root)["version"] == 1
    meta = snapshots.export(animals("ox"), root, "three")
    assert meta["version"] == 3
    assert s3.read_bytes(f"{root}/v=000002/data.parquet") == b"partial"
    assert snapshots.read_latest(root, SCHEMA)[0].to_pylist() == [{"animal_id": 1, "name": "ox"}]


def test_snapshots_also_work_in_a_local_folder(tmp_path):
    snapshots.export(animals("cow"), str(tmp_path / "snap"), "local")
    snapshots.export(animals("ox", "cat"), str(tmp_path / "snap") + "/", "local")
    assert sorted(p.name for p in (tmp_path / "snap").iterdir()) == ["_latest.json", "v=000001", "v=000002"]
    table, identity = snapshots.read_latest(str(tmp_path / "snap"), SCHEMA)
    assert identity["version"] == 2 and table.num_rows == 2


def test_reading_a_root_without_a_snapshot_says_how_to_create_one(s3_prefix):
    with pytest.raises(ValueError, match=r"no snapshot under s3://.*/nothing: create one with `streamjoin snapshot`"):
        snapshots.read_latest(f"{s3_prefix}/nothing/", SCHEMA)


def test_the_snapshot_command_exports_a_files_table(s3_prefix, tmp_path, capsys):
    write_csv(tmp_path / "animals" / "a.csv", [{"animal_id": 1, "name": "cow"}, {"animal_id": 2, "name": "cat"}])
    source = tmp_path / "animals.sql"
    source.write_text(
        f"CREATE TABLE animal_data (animal_id INT PRIMARY KEY, name VARCHAR)\n"
        f"  WITH (connector = 'files', format = 'csv', path = '{tmp_path}/animals');\n"
    )
    dest = f"{s3_prefix}/snapshots/animals/"
    assert main(["snapshot", str(source), dest]) == 0
    meta = snapshots.latest(dest)
    assert capsys.readouterr().out == f"snapshot {dest} version 1: 2 rows, sha256 {meta['sha256']}\n"
    assert meta["source"] == f"files {tmp_path}/animals"
    assert snapshots.read_latest(dest, SCHEMA)[0].to_pylist() == [
        {"animal_id": 1, "name": "cow"}, {"animal_id": 2, "name": "cat"},
    ]
    assert main(["snapshot", str(source), dest]) == 0
    assert capsys.readouterr().out.startswith(f"snapshot {dest} version 2: 2 rows, sha256 {meta['sha256']}")


@pytest.mark.postgres
def test_the_snapshot_command_exports_a_postgres_table(s3_prefix, tmp_path, capsys):
    name = f"sj_snapshot_{uuid.uuid4().hex[:10]}"
    pg_execute(f"CREATE TABLE {name} (animal_id INT PRIMARY KEY, name VARCHAR(32), weight INT);"
               f"INSERT INTO {name} VALUES (1, 'cow', 500), (2, 'fugu', 1), (3, 'cat', 4);")
    try:
        source = tmp_path / "animals.sql"
        source.write_text(
            f"CREATE TABLE animal_data (animal_id INT, name VARCHAR, weight INT)\n"
            f"  WITH (connector = 'postgres', url = '{PG_URL}', table = '{name}');\n"
        )
        dest = f"{s3_prefix}/snapshots/pg"
        assert main(["snapshot", str(source), dest]) == 0
        assert capsys.readouterr().out.startswith(f"snapshot {dest} version 1: 3 rows, sha256 ")
        pg_execute(f"UPDATE {name} SET name = 'ox' WHERE animal_id = 1")
        assert main(["snapshot", str(source), dest]) == 0
        assert capsys.readouterr().out.startswith(f"snapshot {dest} version 2: 3 rows, sha256 ")
    finally:
        pg_execute(f"DROP TABLE IF EXISTS {name}")
    meta = snapshots.latest(dest)
    assert meta["source"].startswith("postgres ") and meta["source"].endswith(name)
    assert meta["schema"] == {"animal_id": "int32", "name": "string", "weight": "int32"}
    table, _ = snapshots.read_latest(dest, pa.schema([("animal_id", pa.int32()), ("name", pa.string())]))
    assert sorted(table.to_pylist(), key=lambda r: r["animal_id"]) == [
        {"animal_id": 1, "name": "ox"}, {"animal_id": 2, "name": "fugu"}, {"animal_id": 3, "name": "cat"},
    ]


def test_the_snapshot_command_needs_table_when_the_file_declares_several(s3_prefix, tmp_path, capsys):
    write_csv(tmp_path / "a" / "a.csv", [{"animal_id": 1, "name": "cow"}])
    source = tmp_path / "tables.sql"
    source.write_text(
        f"CREATE TABLE one (animal_id INT, name VARCHAR) WITH (connector = 'files', path = '{tmp_path}/a');\n"
        f"CREATE TABLE two (animal_id INT, name VARCHAR) WITH (connector = 'files', path = '{tmp_path}/a');\n"
        f"CREATE STREAM events (animal_id INT) WITH (connector = 'files', format = 'json', path = '{tmp_path}/e');\n"
    )
    dest = f"{s3_prefix}/snap"
    assert main(["snapshot", str(source), dest]) == 2
    assert "declares several tables (one, two): pick one with --table NAME" in capsys.readouterr().err
    assert main(["snapshot", str(source), dest, "--table", "events"]) == 2
    assert "--table events: the file declares no such table (its tables: one, two)" in capsys.readouterr().err
    assert snapshots.latest(dest) is None
    assert main(["snapshot", str(source), dest, "--table", "two"]) == 0
    assert capsys.readouterr().out.startswith(f"snapshot {dest} version 1: 1 rows")


@pytest.mark.postgres
def test_the_snapshot_command_fails_with_one_line_when_the_source_is_missing(s3_prefix, tmp_path, capsys):
    source = tmp_path / "t.sql"
    source.write_text(f"CREATE TABLE t (animal_id INT) WITH (connector = 'files', path = '{tmp_path}/missing');\n")
    assert main(["snapshot", str(source), f"{s3_prefix}/snap"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == f"streamjoin: ValueError: table path {tmp_path}/missing does not exist"
    source.write_text("CREATE TABLE t (animal_id INT) WITH (connector = 'kafka', topic = 't');\n")
    assert main(["snapshot", str(source), f"{s3_prefix}/snap"]) == 2
    assert "connector 'kafka' is not supported (use 'files', 'postgres' or 's3')" in capsys.readouterr().err


STREAM_SQL = """CREATE STREAM beast_events (row_id INT, animal_id INT)
  WITH (connector = 'files', format = 'json', path = '{dir}/events');
CREATE TABLE animal_data (animal_id INT PRIMARY KEY, name VARCHAR)
  WITH (connector = 's3', path = '{root}');
SELECT STREAM e.row_id, a.name FROM beast_events e JOIN animal_data a ON e.animal_id = a.animal_id;
"""


def test_a_restarted_query_loads_the_new_snapshot_version(spark, s3_prefix, tmp_path):
    root = f"{s3_prefix}/snapshots/x"
    snapshots.export(animals("cow", "fugu", "cat"), root, "test")
    sql = STREAM_SQL.format(dir=tmp_path, root=root)
    events = [{"row_id": i, "animal_id": 1 + i % 2, "rowtime": ts(1000 * i)} for i in range(10)]
    write_jsonl(tmp_path / "events" / "1.json", events[:5])

    def move_the_snapshot_forward_and_add_events():
        snapshots.export(animals("ox", "puffer", "cat"), root, "test")
        write_jsonl(tmp_path / "events" / "2.json", events[5:])

    before, after = run_in_two_parts(spark, sql, tmp_path, move_the_snapshot_forward_and_add_events)
    rows = read_output(tmp_path / "out")
    old, new = {1: "cow", 2: "fugu"}, {1: "ox", 2: "puffer"}
    assert sorted((r["row_id"], r["name"]) for r in rows) == [
        (e["row_id"], (old if e["row_id"] < 5 else new)[e["animal_id"]]) for e in events
    ]
    assert after["rows_emitted"] == 10
    was, now = before["snapshots"][0], after["snapshots"][0]
    assert was["version"] == 1 and was["source"] == f"s3 {root} version 1"
    assert now["version"] == 2 and now["source"] == f"s3 {root} version 2"
    assert was["sha256"] != now["sha256"] and now["rows"] == 3


def test_a_query_on_a_root_without_a_snapshot_fails_with_the_clear_error(spark, s3_prefix, tmp_path):
    write_jsonl(tmp_path / "events" / "1.json", [{"row_id": 1, "animal_id": 1, "rowtime": ts(0)}])
    with pytest.raises(ValueError, match="no snapshot under .*/empty: create one with `streamjoin snapshot`"):
        start(spark, STREAM_SQL.format(dir=tmp_path, root=f"{s3_prefix}/empty"), tmp_path)


def test_an_s3_table_without_a_path_is_rejected_before_spark_starts(tmp_path):
    from streamjoin.errors import Unsupported
    from streamjoin.lower.support import check_runnable
    from streamjoin.plan import compile_sql

    script = compile_sql(STREAM_SQL.format(dir=tmp_path, root="x").replace(", path = 'x'", ""))
    with pytest.raises(Unsupported, match="needs WITH \\(path"):
        check_runnable(script, script.final)


def test_a_snapshot_store_that_cannot_be_reached_at_start_fails_the_start_naming_it_never_an_empty_table(
        spark, s3_prefix, tmp_path, monkeypatch):
    import socket
    import time

    from streamjoin.errors import one_line_reason

    root = f"{s3_prefix}/snapshots/down"
    snapshots.export(animals("cow", "fugu"), root, "test")
    write_jsonl(tmp_path / "events" / "1.json", [{"row_id": 1, "animal_id": 1, "rowtime": ts(0)}])
    with socket.socket() as probe:  # a port nothing listens on: the store is down
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead)
    began = time.monotonic()
    with pytest.raises(Exception) as caught:
        start(spark, STREAM_SQL.format(dir=tmp_path, root=root), tmp_path)
    reason = one_line_reason(caught.value)
    assert reason.startswith(f"StorageUnavailableError: snapshot {root}: the storage ({dead}) could not be reached"), reason
    assert time.monotonic() - began < 120
    assert not list((tmp_path / "out").glob("part-*"))  # nothing ran on an empty table
