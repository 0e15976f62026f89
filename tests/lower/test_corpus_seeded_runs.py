"""Corpus programs whose tables the program itself fills (RisingWave's e2e tests and docs declare
tables without a connector and INSERT into them; the corpus keeps their statements, not their
INSERTs): each runs end to end on generated seed rows, `INSERT INTO t (columns) VALUES ...` put in
before its first view or sink, and writes its columns; or `run` refuses it before reading data,
with its reason pinned here."""

from __future__ import annotations

import random
import re

import pytest
from streamjoin.plan import compile_sql
from streamjoin.runtime.pipeline import Pipeline
from test_corpus_kafka_runs import kafka_program
from test_corpus_runs import CORPUS, _header_ok, inputs_of, run_whole, runnable, value_of

pytestmark = [pytest.mark.spark]


def _fills_its_tables(path) -> bool:
    if not _header_ok(path) or any(line.startswith("-- database:") for line in path.read_text().splitlines()[:8]):
        return False  # (a program that reads a database's catalog: tests/plan/test_corpus.py creates it)
    if runnable(path) or kafka_program(path):
        return False
    relations = inputs_of(compile_sql(path.read_text(), path.name))
    return bool(relations) and all(not r.option("connector") or r.option("connector") == "values" for r in relations)


PROGRAMS = sorted(p for p in CORPUS.glob("*/*.sql") if _fills_its_tables(p))

RUN_REFUSES = {
    # a query over tables only writes a sink (INSERT INTO an Iceberg table)
    "risingwave/06_clickstream_left_join_chain_iceberg": "not INSERT INTO a sink yet",
}


def _literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def seeded(sql: str, name: str, rng: random.Random) -> str:
    """The program with generated rows INSERTed into each table it declares without a connector,
    before its first view or sink (and its teardown DROPs, which come after)."""
    inserts = []
    for relation in inputs_of(compile_sql(sql, name)):
        if relation.option("connector"):
            continue
        columns = [c for c in relation.columns if not (relation.implicit_rowtime and c.name == relation.rowtime)]
        rows = [[value_of(c.type, rng, n) for c in columns] for n in range(8)]
        inserts.append(f"INSERT INTO {relation.name} ({', '.join(c.name for c in columns)}) VALUES "
                       + ", ".join("(" + ", ".join(_literal(v) for v in row) + ")" for row in rows) + ";\n")
    first = re.search(r"(?im)^\s*create\s+(materialized\s+view|view|sink)\b", sql)
    at = first.start() if first else len(sql)
    return sql[:at] + "".join(inserts) + sql[at:]


def test_the_corpus_has_programs_that_fill_their_own_tables():
    assert len(PROGRAMS) >= 3, [p.name for p in PROGRAMS]


@pytest.mark.parametrize("path", PROGRAMS, ids=[f"{p.parent.name}/{p.stem}" for p in PROGRAMS])
def test_a_corpus_program_runs_on_generated_seed_rows_and_writes_its_columns(spark, tmp_path, path):
    from streamjoin.errors import Unsupported

    sql = seeded(path.read_text(), path.name, random.Random(path.name))
    refused = RUN_REFUSES.get(f"{path.parent.name}/{path.stem}")
    if refused is not None:
        with pytest.raises(Unsupported, match=re.escape(refused)):
            Pipeline.from_sql(sql, path.name)
        return
    rows = run_whole(spark, tmp_path, Pipeline.from_sql(sql, path.name))
    assert rows, "generated seed rows give the program rows to write"


def test_an_append_only_table_seeded_by_insert_is_a_stream_of_those_rows_in_the_order_inserted(spark, tmp_path):
    """RisingWave's APPEND ONLY table is a stream: `INSERT INTO` gives it its rows (their rowtime
    the watermark's column), read as a files input written in the checkpoint; a temporal join
    against a seeded table reads its rows (they never change); both views are outputs."""
    program = """create table scans(scan_id int, kiosk int, scanned_at timestamp,
  watermark for scanned_at as scanned_at - interval '10' second) append only;
create table kiosk_info(kiosk_id int, zone int, primary key (kiosk_id));
insert into kiosk_info values (1, 10), (2, 20);
insert into scans values (1, 1, '2026-11-27 10:00:01'), (2, 2, '2026-11-27 10:00:03'), (3, 3, '2026-11-27 10:00:07');
insert into scans values (4, 1, '2026-11-27 10:00:12');
create materialized view zoned as select scan_id, zone from scans left join kiosk_info for system_time as of proctime() on kiosk = kiosk_id;
create materialized view counted as select window_start, count(*) as n from tumble(scans, scanned_at, interval '5 s')
  group by window_start emit on window close;
"""
    pipeline = Pipeline.from_sql(program, "seeded.sql", dialect="risingwave")
    rows = run_whole(spark, tmp_path, pipeline)
    assert sorted((r["scan_id"], r["zone"]) for r in rows if r["stream"] == "zoned") == [(1, 10), (2, 20), (3, None), (4, 10)]
    assert sorted((r["window_start"], r["n"]) for r in rows if r["stream"] == "counted") == [
        ("2026-11-27 10:00:00.000", 2), ("2026-11-27 10:00:05.000", 1), ("2026-11-27 10:00:10.000", 1)]


@pytest.mark.parametrize("conflict, expected", [
    ("ON CONFLICT DO UPDATE IF NOT NULL", [(1, 100, 200, 300), (2, 110, 210, None), (3, 100, None, 300)]),  # as written
    ("", [(1, None, None, 300), (2, None, 210, None), (3, None, None, 300)]),  # DO UPDATE FULL: the last sink's row
])
def test_table_sinks_into_a_wide_table_merge_their_rows_by_its_key_as_its_on_conflict_says(spark, tmp_path, conflict, expected):
    """risingwave/02 (RisingWave's wide table fed by table sinks), with its tables' rows inserted:
    `run` writes the wide table's rows, each sink's rows merged into it in the file's order."""
    sql = (CORPUS / "risingwave" / "02_wide_table_sink_into_joins.sql").read_text()
    sql = sql.replace("ON CONFLICT DO UPDATE IF NOT NULL", conflict)
    seeds = """INSERT INTO parcel VALUES (1, 10, 20, 30), (2, 11, 21, 99), (3, 10, NULL, 30);
INSERT INTO carrier VALUES (10, 100), (11, 110);
INSERT INTO depot VALUES (20, 200), (21, 210);
INSERT INTO lane VALUES (30, 300);
"""
    at = sql.index("CREATE SINK parcel_sink")
    pipeline = Pipeline.from_sql(sql[:at] + seeds + sql[at:], "02.sql")
    rows = run_whole(spark, tmp_path, pipeline)
    assert sorted((r["pk"], r["carrier_v"], r["depot_v"], r["lane_v"]) for r in rows) == expected


def test_table_sinks_merge_rows_of_other_types_into_the_tables_own_with_its_seeded_rows(spark, tmp_path):
    """A sink's SUM of a DECIMAL into a DOUBLE column, an INT into a VARCHAR one, and a row the
    program inserted into the wide table itself (its TIMESTAMP kept): each value takes t's type."""
    program = """CREATE TABLE ev (id INT PRIMARY KEY, pk INT, amount DECIMAL(10, 2));
CREATE TABLE wide (pk INT PRIMARY KEY, total DOUBLE, at TIMESTAMP, label VARCHAR) ON CONFLICT DO UPDATE IF NOT NULL;
INSERT INTO ev VALUES (1, 1, 2.50), (2, 1, 1.25), (3, 2, 4.00);
INSERT INTO wide VALUES (1, NULL, TIMESTAMP '2024-01-01 00:00:00', 'one');
CREATE SINK totals INTO wide (pk, total) AS SELECT pk, SUM(amount) FROM ev GROUP BY pk;
CREATE SINK labels INTO wide (pk, label) AS SELECT pk, pk * 1 AS n FROM ev WHERE pk = 2;
"""
    rows = run_whole(spark, tmp_path, Pipeline.from_sql(program, "wide.sql", dialect="risingwave"))
    assert sorted((r["pk"], r["total"], r["at"], r["label"]) for r in rows) == [
        (1, 3.75, "2024-01-01 00:00:00.000", "one"), (2, 4.0, None, "2")]
