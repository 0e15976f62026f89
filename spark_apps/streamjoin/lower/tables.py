"""Table inputs of a streaming query (SEMANTICS.md §7).

A **snapshot** is read once, when the query starts (`io.sources.tables.read_table`: files, PostgreSQL,
or the latest version of an exported snapshot in S3): filters on the table alone are applied
while reading (pushed into PostgreSQL's SQL where they translate; applied to the rows read
otherwise), the result is written to the checkpoint as Parquet, cached and broadcast. The running
query never reads the source again; a restart takes a new snapshot. Its identity (source,
taken-at time, row count, content hash) goes into the query status.

A **process-time temporal** table (`FOR SYSTEM_TIME AS OF PROCTIME()`) is not snapshotted: it
is a PostgreSQL read that Spark executes again in every micro-batch.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from sqlglot import exp

from streamjoin.env import expand
from streamjoin.errors import Unsupported
from streamjoin.io.formats.types import arrow_schema
from streamjoin.io.sources.snapshots import content_hash
from streamjoin.io.sources.tables import read_table
from streamjoin.lower.columns import flat, q
from streamjoin.lower.expressions import postgres_sql, spark_sql
from streamjoin.plan.model import Input, Join, JoinKind, Query, Relation


@dataclass(frozen=True)
class Snapshot:
    """Which snapshot a running query uses (written into its status)."""

    alias: str
    source: str
    taken_at: str
    rows: int
    sha256: str
    path: str  # the Parquet copy in the checkpoint
    version: int | None = None  # the exported snapshot's version (connector 's3')

    def identity(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "path" and not (k == "version" and v is None)}


def used_columns(query: Query, alias: str, columns: tuple[str, ...], keep: tuple[str, ...] = ()) -> list[str]:
    """The columns of one input that the query reads (after table-only filters ran), and `keep`
    (an ASOF table's primary key, which breaks its ties: lower.asof_table)."""
    trees = [o.expression for o in query.output]
    trees += [query.where] if query.where is not None else []
    for j in query.joins:
        trees += [e for pair in j.condition.keys for e in pair] + list(j.condition.residual)
        trees += [j.condition.asof.left, j.condition.asof.right] if j.condition.asof else []
    if query.aggregation:
        trees += list(query.aggregation.keys)
    trees += list(query.distinct or ()) + ([query.having] if query.having is not None else [])
    used = {col.name for tree in trees for col in tree.find_all(exp.Column) if col.table == alias}
    return [c for c in columns if c in used or c in keep] or list(columns[:1])


def kafka_table(relation: Relation) -> pa.Table:
    """A table fed by a topic's records (RisingWave `CREATE TABLE ... WITH (connector = 'kafka')
    FORMAT PLAIN`), as the topic holds it when the query starts: each record a row, a later record
    replacing an earlier one of the same primary key."""
    from dataclasses import replace

    from streamjoin.io.sources.kafka import read_all
    from streamjoin.lower.inputs import kafka_options
    from streamjoin.plan.model import Column

    arrival = "__arrival"  # the records' timestamps order them (each partition's order kept)
    reading = replace(relation, columns=(*relation.columns, Column(arrival, "TIMESTAMP")), rowtime=arrival,
                      implicit_rowtime=False, arrival_rowtime=True)
    options = kafka_options(reading)
    rows = read_all(options, arrow_schema(reading.columns), arrival, arrival=True).drop_columns([arrival])
    if relation.primary_key and rows.num_rows:
        keys = rows.select(list(relation.primary_key)).to_pylist()
        last = {tuple(k.values()): n for n, k in enumerate(keys)}
        rows = rows.take(pa.array(sorted(last.values()), pa.int64()))
    return rows


def load_snapshot(spark, relation: Relation, alias: str, query: Query, item: Input, directory: Path,
                  view_rows: pa.Table | None = None) -> tuple[object, Snapshot]:
    """Read the table once and return (a cached DataFrame with `alias__col` names, its identity)."""
    from pyspark.sql import functions as F

    taken_at = dt.datetime.now(dt.UTC)
    asof = any(j.kind == JoinKind.ASOF_TABLE and j.right == alias for j in query.joins)
    keep = used_columns(query, alias, item.columns, relation.primary_key if asof else ())
    connector = (relation.option("connector") or "files").lower()
    version = None
    if view_rows is not None:
        table, source = view_rows, f"view {relation.name}"
        filters = list(item.pushed_filters)
    else:
        where, filters = _postgres_where(item.pushed_filters, alias) if connector == "postgres" else (None, list(item.pushed_filters))
        if connector == "kafka":
            table, source = kafka_table(relation), f"kafka topic {relation.option('topic') or relation.name}"
        else:
            read = read_table(relation.name, dict(relation.options), arrow_schema(relation.columns), where)
            table, source, version = read.rows, read.source, read.version

    present = set(table.column_names)
    keep = [c for c in keep if c in present]  # (a TUMBLE / HOP input's window columns come after: lower.running.input_windows)
    if item.time_window is not None and item.time_window.column not in keep:
        keep.append(item.time_window.column)  # the column its windows are computed from
    table = table.rename_columns([flat(alias, c) for c in table.column_names])
    if filters:  # the table-only filters, in Spark's SQL
        frame = spark.createDataFrame(table)
        for f in filters:
            frame = frame.where(F.expr(spark_sql(f)))
        rows = frame.select(*[F.col(q(flat(alias, c))) for c in keep]).toArrow()
    else:  # nothing to evaluate: the columns it reads, without a trip through Spark (seconds for 1M rows)
        rows = table.select([flat(alias, c) for c in keep])
    digest = content_hash(rows)
    directory.mkdir(parents=True, exist_ok=True)
    stem = alias if alias[:1] not in ("_", ".") else f"t{alias}"  # Spark's reader skips a file named _x or .x as hidden
    for old in directory.glob(f"{stem}-*.parquet"):
        old.unlink() if old.is_file() else shutil.rmtree(old)
    path = directory / f"{stem}-{taken_at.strftime('%Y%m%dT%H%M%S%f')}.parquet"
    pq.write_table(rows, path)
    snapshot = Snapshot(alias, source, taken_at.isoformat(timespec="milliseconds"), rows.num_rows, digest, str(path), version)
    cached = spark.read.parquet(str(path)).persist()
    cached.count()  # materialize the cache now: every micro-batch reuses it
    return F.broadcast(cached), snapshot


def temporal_frame(spark, relation: Relation, alias: str):
    """A PostgreSQL table Spark re-reads in every micro-batch (no snapshot)."""
    from pyspark.sql import functions as F

    from streamjoin.io.sources import pg_source

    if (relation.option("connector") or "").lower() != "postgres":
        raise Unsupported(
            f"FOR SYSTEM_TIME AS OF PROCTIME() needs a table that can be re-read: '{relation.name}' "
            "must use connector = 'postgres' (or hold the rows the program inserts)"
        )
    url = expand(relation.option("url"))
    pg_source.register(spark)
    reader = spark.read.format("streamjoin_pg").option("url", url)
    if relation.option("table"):
        reader = reader.option("table", relation.option("table"))
    if relation.option("query"):
        reader = reader.option("query", relation.option("query"))
    frame = reader.option("schema", pg_source.encode_schema(arrow_schema(relation.columns))).load()
    return F.broadcast(frame.select(*[F.col(q(c)).alias(flat(alias, c)) for c in frame.columns]))


def check_temporal_key(relation: Relation, join: Join) -> None:
    """The condition must cover the table's primary key, read from PostgreSQL's catalog when the
    DDL declares none (the analyzer checked a declared one)."""
    from streamjoin.io.sources import postgres

    if relation.primary_key or not relation.option("table"):
        if not relation.primary_key:
            raise Unsupported(f"'{relation.name}' declares no PRIMARY KEY, which a temporal join needs")
        return
    pk = postgres.primary_key(expand(relation.option("url")), relation.option("table"))
    if not pk:
        raise Unsupported(
            f"'{relation.name}' has no primary key in PostgreSQL ({relation.option('table')}), which a temporal join needs"
        )
    keyed = {r.name for _, r in join.condition.keys if isinstance(r, exp.Column)}
    if not set(pk) <= keyed:
        raise Unsupported(
            f"the temporal join on '{relation.name}' must cover its primary key ({', '.join(pk)}); "
            f"the condition uses {', '.join(sorted(keyed)) or 'no key column'}"
        )


def _postgres_where(filters: tuple[exp.Expression, ...], alias: str) -> tuple[str | None, list[exp.Expression]]:
    """Table-only filters as PostgreSQL SQL over unqualified columns; what does not translate
    is applied after reading instead."""
    pushed, rest = [], []
    for f in filters:
        translated = postgres_sql(f, alias)
        if translated is None:
            rest.append(f)
        else:
            pushed.append(f"({translated})")
    return (" AND ".join(pushed) or None), rest
