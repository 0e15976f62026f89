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

# an APPEND ONLY table is a stream, and INSERT INTO ... VALUES seeds tables only: its rows would have to
# come from files (or a topic), so the program does not run as written with its INSERTs (`check` says so)
SEEDS_A_STREAM = {"risingwave/11_temporal_join_proctime_eowc": "INSERT INTO 'scans' VALUES seeds a table declared "
                                                               "without a connector; 'scans' is a stream"}
RUN_REFUSES = {
    # a query over tables only writes a sink (CREATE SINK ... INTO a table; INSERT INTO an Iceberg table)
    "risingwave/02_wide_table_sink_into_joins": "not INSERT INTO a sink yet",
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
    from streamjoin.errors import SqlError, Unsupported

    if f"{path.parent.name}/{path.stem}" in SEEDS_A_STREAM:
        with pytest.raises(SqlError, match=re.escape(SEEDS_A_STREAM[f"{path.parent.name}/{path.stem}"])):
            compile_sql(seeded(path.read_text(), path.name, random.Random(path.name)), path.name)
        return
    sql = seeded(path.read_text(), path.name, random.Random(path.name))
    refused = RUN_REFUSES.get(f"{path.parent.name}/{path.stem}")
    if refused is not None:
        with pytest.raises(Unsupported, match=re.escape(refused)):
            Pipeline.from_sql(sql, path.name)
        return
    rows = run_whole(spark, tmp_path, Pipeline.from_sql(sql, path.name))
    assert rows, "generated seed rows give the program rows to write"
