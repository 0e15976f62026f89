"""PostgreSQL change data capture (`connector = 'postgres-cdc'`, io.sources.pg_cdc) against a cluster of
the tests' own with wal_level = logical: the first read is the table in the slot's snapshot, then
each committed change once, across restarts; a RisingWave program joining a stream with CDC tables
runs as written, its view maintained through updates, deletes and a SIGKILL, into an upsert Delta
table on S3."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pyarrow as pa
import pytest
from runtime_helpers import read_output, run_to_end, write_jsonl
from streamjoin.io.sources.changelog import CHANGE
from streamjoin.io.sources.log_merge import record_parser
from streamjoin.io.sources.pg_cdc import CdcUnavailableError, PostgresCdcSource, slot_name

COLUMNS = [("id", pa.int32()), ("name", pa.string()), ("score", pa.float64()), ("vip", pa.bool_()), ("seen", pa.timestamp("us"))]


def source(server, db: str, state: str = "/tmp/cdc-state", on_error: str = "fail") -> PostgresCdcSource:
    schema = pa.schema([*COLUMNS, ("rowtime", pa.timestamp("us")), (CHANGE, pa.string())])
    options = {"connection": {"host": "127.0.0.1", "port": server.port, "user": "postgres", "dbname": db, "connect_timeout": 5},
               "schema": "public", "table": "people", "columns": [c for c, _ in COLUMNS], "key": ["id"],
               "slot": slot_name(None, state), "publication": "rw_publication", "broker_timeout_ms": 5000}
    return PostgresCdcSource(options, record_parser(schema, "rowtime", True, "people"), on_error)


def changes(table) -> list[tuple]:
    return [(r[CHANGE], r["id"], r["name"]) for r in table.to_pylist()] if table is not None else []


def people(server, db: str) -> None:
    server.execute("CREATE TABLE people (id int PRIMARY KEY, name text, score float8, vip bool, seen timestamptz);"
                   "INSERT INTO people VALUES (1, 'ann', 1.5, true, '2024-01-01 10:00:00+00'), (2, 'bob', NULL, false, NULL)", db)


def test_the_first_read_is_the_tables_snapshot_then_each_committed_change_once_in_commit_order(logical_postgres, cdc_database):
    server, db = logical_postgres, cdc_database
    people(server, db)
    first = source(server, db)
    table, positions = first.poll({}, "rowtime", False, 0)
    rows = table.to_pylist()
    assert [(r["id"], r["name"], r["score"], r["vip"], r["seen"] and r["seen"].isoformat()[:19]) for r in rows] == [
        (1, "ann", 1.5, True, "2024-01-01T10:00:00"), (2, "bob", None, False, None)]
    server.execute("INSERT INTO people VALUES (3, 'cy', 2, true, now());"
                   "BEGIN; UPDATE people SET name = 'ann2' WHERE id = 1; UPDATE people SET id = 5 WHERE id = 2; COMMIT;"
                   "DELETE FROM people WHERE id = 3", db)
    table, after = first.poll(positions, "rowtime", False, 0)
    assert changes(table) == [("+", 3, "cy"), ("+", 1, "ann2"), ("-", 2, None), ("+", 5, "bob"), ("-", 3, None)]
    first.close()
    # a crash before `after` was saved: a restart from the saved position reads those changes
    # again, and the one committed since (the slot moves only to a position saved)
    server.execute("INSERT INTO people VALUES (7, 'dee', NULL, NULL, NULL)", db)
    again = source(server, db)
    table, later = again.poll(positions, "rowtime", False, 0)
    assert changes(table) == [("+", 3, "cy"), ("+", 1, "ann2"), ("-", 2, None), ("+", 5, "bob"), ("-", 3, None), ("+", 7, "dee")]
    assert again.poll(later, "rowtime", False, 0)[0] is None  # from a saved position: nothing read twice
    table, end = again.poll(later, "rowtime", True, 0)
    assert table is None and end == later
    again.close()  # the slot stays until the ended manifest is saved (a crash before: read again)
    assert server.execute("SELECT count(*) FROM pg_replication_slots WHERE database = current_database()", db, fetch=True) == [(1,)]
    again.release()  # the stager's call once the ended manifest is saved: the server keeps no WAL for it
    assert server.execute("SELECT count(*) FROM pg_replication_slots WHERE database = current_database()", db, fetch=True) == [(0,)]


def test_a_slot_moved_past_the_staged_position_fails_the_input_rather_than_skip_changes(logical_postgres, cdc_database):
    server, db = logical_postgres, cdc_database
    people(server, db)
    cdc = source(server, db)
    _, positions = cdc.poll({}, "rowtime", False, 0)
    server.execute("INSERT INTO people VALUES (3, 'cy', NULL, NULL, NULL)", db)
    cdc.close()
    # another reader consumes the slot's changes (what a crash inside a multi-read end once did)
    server.execute(f"SELECT count(*) FROM pg_logical_slot_get_binary_changes('{positions['slot']}', NULL, NULL, "
                   "'proto_version', '1', 'publication_names', 'rw_publication')", db)
    with pytest.raises(CdcUnavailableError, match=r"is at LSN .* past the LSN .* staged last"):
        source(server, db).poll(positions, "rowtime", False, 0)


def test_an_update_that_leaves_a_toasted_value_unchanged_keeps_it_with_replica_identity_full(logical_postgres, cdc_database):
    import random
    import string

    server, db = logical_postgres, cdc_database
    big = "".join(random.Random(7).choices(string.ascii_letters, k=200_000))  # stored out of line, not compressible
    server.execute(f"CREATE TABLE people (id int PRIMARY KEY, name text, score float8, vip bool, seen timestamptz);"
                   f"INSERT INTO people VALUES (1, '{big}', 1, true, NULL)", db)
    cdc = source(server, db)
    _, positions = cdc.poll({}, "rowtime", False, 0)
    server.execute("UPDATE people SET score = 2 WHERE id = 1", db)  # name not sent: unchanged and TOASTed
    with pytest.raises(ValueError, match="did not send name .*REPLICA IDENTITY FULL"):
        cdc.poll(positions, "rowtime", False, 0)
    cdc.close()
    server.execute("ALTER TABLE people REPLICA IDENTITY FULL; UPDATE people SET score = 3 WHERE id = 1", db)
    again = source(server, db, on_error="dead_letter")
    table, _ = again.poll(positions, "rowtime", False, 0)
    rows = table.to_pylist()  # the first update is set aside whole (its row keeps its last version); the second has the text
    assert [(r[CHANGE], r["id"], r["score"], r["name"] == big) for r in rows] == [("+", 1, 3.0, True)], rows
    assert len(again.rejected) == 1 and "did not send name" in again.rejected[0]["reason"]
    again.close()


def test_a_truncate_fails_the_input_naming_the_table_or_is_set_aside_as_a_dead_letter(logical_postgres, cdc_database):
    server, db = logical_postgres, cdc_database
    people(server, db)
    for on_error in ("fail", "dead_letter"):
        cdc = source(server, db, f"/tmp/cdc-{on_error}", on_error)
        _, positions = cdc.poll({}, "rowtime", False, 0)
        server.execute("TRUNCATE people; INSERT INTO people VALUES (9, 'eve', NULL, NULL, NULL)", db)
        if on_error == "fail":
            with pytest.raises(ValueError, match=r"public.people was truncated at LSN .*new checkpoint"):
                cdc.poll(positions, "rowtime", False, 0)
        else:
            table, _ = cdc.poll(positions, "rowtime", False, 0)
            assert changes(table) == [("+", 9, "eve")]
            assert [r["reason"][:35] for r in cdc.rejected] == ["table public.people was truncated a"]
        cdc.close()


def test_a_slot_dropped_while_the_query_was_stopped_fails_the_input_saying_the_changes_are_gone(logical_postgres, cdc_database):
    server, db = logical_postgres, cdc_database
    people(server, db)
    cdc = source(server, db)
    _, positions = cdc.poll({}, "rowtime", False, 0)
    cdc.close()
    server.execute(f"SELECT pg_drop_replication_slot('{positions['slot']}')", db)
    with pytest.raises(CdcUnavailableError, match=r"replication slot '.*' is gone .*start the query with a new checkpoint"):
        source(server, db).poll(positions, "rowtime", False, 0)


def test_a_server_that_does_not_answer_is_asked_again_and_then_the_input_fails_naming_it(logical_postgres, caplog):
    from pg_helpers import LogicalPostgres

    class Gone(LogicalPostgres):
        def __init__(self):
            from streamjoin.io.storage.ports import free_port

            self.port = free_port()  # nothing listens there

    with pytest.raises(CdcUnavailableError, match=r"postgres-cdc://127.0.0.1:\d+/crm/public.people: could not read the table .* for 5 s"):
        source(Gone(), "crm").poll({}, "rowtime", False, 0)
    asked = [r.getMessage() for r in caplog.records if "asking again" in r.getMessage()]
    assert len(asked) >= 2 and "Connection refused" in asked[0], asked


PROGRAM = """
CREATE SOURCE orders (oid INT, cust INT) WITH (connector = 'files', path = '{d}/orders') FORMAT PLAIN ENCODE JSON;
CREATE SOURCE crm_pg WITH (
  connector = 'postgres-cdc', hostname = 'pg-primary', port = '5432', username = 'postgres',
  password = 'placeholder', database.name = '{db}', slot.name = 'rw_orders_slot'
);
CREATE TABLE customers (id INT PRIMARY KEY, name VARCHAR, region INT) FROM crm_pg TABLE 'public.customers';
CREATE TABLE regions (
  "id" INT, "label" VARCHAR, PRIMARY KEY ("id")
) WITH (
  connector = 'postgres-cdc', hostname = 'pg-primary', port = '5432', username = 'postgres',
  password = secret pg_pwd, database.name = '{db}', schema.name = 'public', table.name = 'regions'
);
CREATE MATERIALIZED VIEW enriched AS
  SELECT o.oid, c.name FROM orders AS o LEFT JOIN customers AS c ON o.cust = c.id;
"""


def crm(server, db: str) -> None:
    server.execute("CREATE TABLE customers (id int PRIMARY KEY, name text, region int, note text);"
                   "CREATE TABLE regions (id int PRIMARY KEY, label text);"
                   "INSERT INTO customers VALUES (1, 'ann', 1, 'x'), (2, 'bob', 2, NULL), (3, 'cy', NULL, NULL);"
                   "INSERT INTO regions VALUES (1, 'north'), (2, 'south')", db)


@pytest.mark.long  # `make test` has the SIGKILL run below (updates, deletes, a restart, into Delta on S3)
def test_a_risingwave_program_as_written_joins_a_stream_with_a_cdc_table_through_updates_and_deletes(
        spark, logical_postgres, cdc_database, tmp_path):
    """The view's changelog folds to the join of every order with the customers as they are at the
    end; the query's slots are gone once it has ended."""
    from streamjoin.runtime.pipeline import Pipeline

    server, db = logical_postgres, cdc_database
    crm(server, db)
    sql = PROGRAM.format(d=tmp_path, db=db)
    runner = Pipeline.from_sql(sql, "rw.sql", dialect="risingwave").runner(spark, tmp_path / "checkpoint", str(tmp_path / "out"))
    current = runner.start()
    write_jsonl(tmp_path / "orders" / "0.json", [{"oid": 10, "cust": 1}, {"oid": 11, "cust": 2}, {"oid": 12, "cust": 4}])
    current.process_available()
    server.execute("UPDATE customers SET name = 'ann2' WHERE id = 1; DELETE FROM customers WHERE id = 2;"
                   "INSERT INTO customers VALUES (4, 'dee', 1, NULL)", db)
    write_jsonl(tmp_path / "orders" / "1.json", [{"oid": 13, "cust": 3}, {"oid": 14, "cust": 2}])
    current.process_available()
    current.process_available()
    current.stop("stopped")  # a restart in the middle: the slot's position is the manifest's
    server.execute("UPDATE customers SET id = 6 WHERE id = 3; INSERT INTO customers VALUES (2, 'bo', 1, NULL)", db)
    current = Pipeline.from_sql(sql, "rw.sql", dialect="risingwave").runner(
        spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True).start()
    status = run_to_end(current)
    content = Counter()
    for r in read_output(tmp_path / "out"):
        content[(r["oid"], r["name"])] += 1 if r["op"] == "+I" else -1
    assert +content == Counter({(10, "ann2"): 1, (11, "bo"): 1, (12, "dee"): 1, (13, None): 1, (14, "bo"): 1}), read_output(tmp_path / "out")
    assert status["rejected_rows"] == 0, status
    assert server.execute("SELECT count(*) FROM pg_replication_slots WHERE database = current_database()", db, fetch=True) == [(0,)]


@pytest.mark.spark
def test_a_run_killed_in_the_middle_keeps_its_upsert_delta_table_on_s3_equal_to_the_view(logical_postgres, cdc_database, s3_prefix, tmp_path):
    """`streamjoin run` while orders arrive and customers change; SIGKILL to its process group
    mid-run; the same checkpoint run to the end leaves the sink's Delta table on S3 holding each
    order with its customer's last name (RisingWave's upsert sink of the view)."""
    from deltalake import DeltaTable
    from streamjoin.io.storage.s3 import S3Settings

    server, db = logical_postgres, cdc_database
    crm(server, db)
    sink = f"{s3_prefix}/enriched"
    sql = tmp_path / "rw.sql"
    sql.write_text(PROGRAM.format(d=tmp_path, db=db) + f"""
CREATE SINK enriched_sink FROM enriched WITH (connector = 's3', path = '{sink}', format = 'delta', type = 'upsert', primary_key = 'oid');""")
    args = [sys.executable, "-m", "streamjoin.cli", "run", "--dialect", "risingwave", str(sql), "--checkpoint", str(tmp_path / "checkpoint")]
    names = {1: "ann", 2: "bob", 3: "cy"}
    orders = []

    def step(i: int) -> None:
        new = [{"oid": i * 10 + n, "cust": (i + n) % 5} for n in range(4)]
        orders.extend(new)
        write_jsonl(tmp_path / "orders" / f"{i}.json", new)
        key = i % 4 + 1
        names[key] = f"name{i}"
        server.execute(f"INSERT INTO customers VALUES ({key}, 'name{i}', 1, NULL) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name", db)
        if i % 3 == 2:
            server.execute(f"DELETE FROM customers WHERE id = {(i + 1) % 4 + 1}", db)
            names.pop((i + 1) % 4 + 1, None)

    def committed() -> list[tuple]:
        try:
            table = DeltaTable(sink, storage_options=S3Settings.from_env().storage_options()).to_pyarrow_table()
        except Exception:  # noqa: BLE001 - no commit yet
            return []
        return sorted((r["oid"], r["name"]) for r in table.to_pylist())

    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        for i in range(3):
            step(i)
            time.sleep(1)
        deadline = time.time() + 180
        while not committed() and time.time() < deadline:
            assert process.poll() is None, process.stderr.read().decode()[-2000:]
            time.sleep(0.5)
        step(3)
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert committed(), "the first process committed nothing before the kill"
    for i in range(4, 7):
        step(i)
    result = subprocess.run([*args, "--until-idle"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert committed() == sorted((o["oid"], names.get(o["cust"])) for o in orders)


@pytest.mark.kafka
def test_the_corpus_cdc_enrichment_program_runs_as_written_from_a_topic_and_a_cdc_table_into_a_topic(
        spark, logical_postgres, tmp_path, monkeypatch):
    """risingwave/10 (RisingWave's stream-enrichment recipe), unedited: a Kafka source, a shared
    postgres-cdc source and a table FROM it, an inner regular join, and a Kafka sink FROM the view
    with force_append_only: the topic receives the joined rows as plain rows (inserts only)."""
    from pathlib import Path

    from kafka_helpers import produce, read_topic
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka, create_topic
    from streamjoin.io.storage.kafka_client import BOOTSTRAP_ENV
    from streamjoin.runtime.pipeline import Pipeline

    path = Path(__file__).parents[1] / "corpus" / "risingwave" / "10_cdc_shared_source_enrichment_kafka_sink.sql"
    server = logical_postgres
    server.execute("DROP DATABASE IF EXISTS crm WITH (FORCE)")
    server.execute("CREATE DATABASE crm")
    server.execute("CREATE TABLE accounts (id varchar PRIMARY KEY, tier varchar, country varchar, plan varchar);"
                   "INSERT INTO accounts VALUES ('a1', 'gold', 'NL', 'pro'), ('a2', 'free', 'DE', 'basic'), ('a3', 'gold', 'FR', 'pro');"
                   "UPDATE accounts SET tier = 'silver' WHERE id = 'a2'; DELETE FROM accounts WHERE id = 'a3'", "crm")
    with EmbeddedKafka(port=0, log_path=str(tmp_path / "tansu.log")) as broker:  # the program's topic names: a broker of its own
        monkeypatch.setenv(BOOTSTRAP_ENV, broker.servers)
        for topic in ("page_hits", "page-hits-enriched"):
            create_topic(broker.servers, topic, 1)
        hits = [("a1", "/home"), ("a2", "/pricing"), ("a3", "/docs"), ("a9", "/x"), ("a1", "/buy")]
        produce(broker, "page_hits", [{"account_id": a, "path": p, "hit_time": f"2024-01-01 10:00:0{i}"} for i, (a, p) in enumerate(hits)])
        pipeline = Pipeline.from_sql(path.read_text(), path.name)
        assert pipeline.script.dialect == "risingwave"
        statuses = pipeline.run(spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True)
        assert all(s["state"] == "finished" and not s.get("rejected_rows") for s in statuses.values()), statuses
        rows = [value for _, value, _ in read_topic(broker.servers, "page-hits-enriched")]
    assert sorted((r["account_id"], r["path"], r["tier"], r["country"], r["plan"]) for r in rows) == [
        ("a1", "/buy", "gold", "NL", "pro"), ("a1", "/home", "gold", "NL", "pro"), ("a2", "/pricing", "silver", "DE", "basic")]
    assert all("op" not in r for r in rows), rows


def test_a_truncate_in_a_running_query_is_a_dead_letter_naming_the_table_and_the_rest_runs(spark, logical_postgres, cdc_database, tmp_path):
    from streamjoin.runtime.pipeline import Pipeline

    server, db = logical_postgres, cdc_database
    crm(server, db)
    sql = PROGRAM.format(d=tmp_path, db=db)
    write_jsonl(tmp_path / "orders" / "0.json", [{"oid": 10, "cust": 1}, {"oid": 11, "cust": 5}])
    current = Pipeline.from_sql(sql, "rw.sql", dialect="risingwave").runner(spark, tmp_path / "checkpoint", str(tmp_path / "out")).start()
    current.process_available()
    server.execute("TRUNCATE customers; INSERT INTO customers VALUES (5, 'eve', 1, NULL)", db)
    current.stop("stopped")
    current = Pipeline.from_sql(sql, "rw.sql", dialect="risingwave").runner(
        spark, tmp_path / "checkpoint", str(tmp_path / "out"), until_idle=True).start()
    status = run_to_end(current)
    assert status["rejected_rows"] == 1, status
    (letter,) = [r for f in (tmp_path / "out" / "rejected").rglob("*.jsonl") for r in f.read_text().splitlines()]
    assert "public.customers was truncated" in letter
    content = Counter()
    for r in read_output(tmp_path / "out"):
        content[(r["oid"], r["name"])] += 1 if r["op"] == "+I" else -1
    # the truncate is not applied (ann stays), the insert after it is
    assert +content == Counter({(10, "ann"): 1, (11, "eve"): 1}), read_output(tmp_path / "out")
