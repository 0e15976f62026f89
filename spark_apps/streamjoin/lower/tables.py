"""Table inputs of a streaming query (SEMANTICS.md §7).

A **snapshot** is read once, when the query starts (from files, PostgreSQL, or the latest
version of an exported snapshot in S3, `io/snapshots.py`): filters and projections on the table alone
are applied while reading (pushed into PostgreSQL's SQL; applied to the files as they are
read), the result is written to the checkpoint as Parquet, cached and broadcast. The running
query never reads the source again; a restart takes a new snapshot. Its identity (source,
taken-at time, row count, content hash) goes into the query status.

A **process-time temporal** table (`FOR SYSTEM_TIME AS OF PROCTIME()`) is not snapshotted: it
is a PostgreSQL read that Spark executes again in every micro-batch.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoin
from streamjoin.env import expand  # noqa: F401 - re-exported: connector options
from streamjoin.errors import Unsupported
from streamjoin.io.snapshots import content_hash as _content_hash
from streamjoin.io.staging import BOUND, _read_text, conform
from streamjoin.io.types import arrow_schema
from streamjoin.plan import model as m


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


def used_columns(query: m.Query, alias: str, columns: tuple[str, ...]) -> list[str]:
    """The columns of one input that the query reads (after table-only filters ran)."""
    texts = [o.expression for o in query.output]
    texts += [query.where] if query.where else []
    for j in query.joins:
        texts += [e for pair in j.condition.keys for e in pair] + list(j.condition.residual)
        texts += [j.condition.asof[0], j.condition.asof[2]] if j.condition.asof else []
    if query.aggregation:
        texts += list(query.aggregation.keys)
    used = set()
    for text in texts:
        for col in sqlglot.parse_one(text, read=StreamJoin).find_all(exp.Column):
            if col.table == alias:
                used.add(col.name)
    return [c for c in columns if c in used] or list(columns[:1])


def load_snapshot(spark, relation: m.Relation, alias: str, query: m.Query, item: m.Input, directory: Path,
                  view_rows: pa.Table | None = None) -> tuple[object, Snapshot]:
    """Read the table once and return (a cached DataFrame with `alias__col` names, its identity)."""
    from pyspark.sql import functions as F

    from streamjoin.lower.stream_join import flat, spark_sql

    taken_at = dt.datetime.now(dt.UTC)
    keep = used_columns(query, alias, item.columns)
    connector = (relation.option("connector") or "files").lower()
    version = None
    if view_rows is not None:
        table, source = view_rows, f"view {relation.name}"
        filters = list(item.pushed_filters)
    else:
        where, filters = _postgres_where(item.pushed_filters, alias) if connector == "postgres" else (None, list(item.pushed_filters))
        table, source, version = _read(relation, where)

    frame = spark.createDataFrame(table.rename_columns([flat(alias, c) for c in table.column_names]))
    for f in filters:
        frame = frame.where(F.expr(spark_sql(f)))
    frame = frame.select(*[flat(alias, c) for c in keep])
    rows = frame.toArrow()
    digest = _content_hash(rows)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob(f"{alias}-*.parquet"):
        old.unlink() if old.is_file() else shutil.rmtree(old)
    path = directory / f"{alias}-{taken_at.strftime('%Y%m%dT%H%M%S%f')}.parquet"
    pq.write_table(rows, path)
    snapshot = Snapshot(alias, source, taken_at.isoformat(timespec="milliseconds"), rows.num_rows, digest, str(path), version)
    cached = spark.read.parquet(str(path)).persist()
    cached.count()  # materialize the cache now: every micro-batch reuses it
    return F.broadcast(cached), snapshot


def read_source(relation: m.Relation, where: str | None = None) -> tuple[pa.Table, str]:
    """The whole declared table, Spark-free, with its declared schema, and a one-line description
    of where it came from. `where` (PostgreSQL SQL over unqualified columns) is evaluated by
    PostgreSQL; the other connectors ignore it (their filters run after reading)."""
    table, source, _ = _read(relation, where)
    return table, source


def _read(relation: m.Relation, where: str | None) -> tuple[pa.Table, str, int | None]:
    """(rows, source, snapshot version or None) of a files, postgres or s3 table."""
    connector = (relation.option("connector") or "files").lower()
    schema = arrow_schema(relation.columns)
    if connector == "postgres":
        from streamjoin.io import postgres

        url = expand(relation.option("url"))
        name, sql = relation.option("table"), relation.option("query")
        if not url or not (name or sql):
            raise Unsupported(f"table '{relation.name}': connector 'postgres' needs url and table (or query)")
        table = postgres.read_table(url, name, sql, schema, where=where, columns=None)
        return table, f"postgres {_redact(url)} {name or '(query)'}" + (f" WHERE {where}" if where else ""), None
    if connector not in ("files", "s3"):
        raise Unsupported(f"table '{relation.name}': connector '{connector}' is not supported (use 'files', 'postgres' or 's3')")
    path = expand(relation.option("path"))
    if not path:
        raise Unsupported(f"table '{relation.name}' needs WITH (path = '...') to be read")
    if connector == "s3":
        from streamjoin.io import snapshots

        table, identity = snapshots.read_latest(path, schema)
        return table, f"s3 {snapshots.root_path(path)} version {identity['version']}", identity["version"]
    return read_files(path, (relation.option("format") or "csv").lower(), schema), f"files {path}", None


def temporal_frame(spark, relation: m.Relation, alias: str):
    """A PostgreSQL table Spark re-reads in every micro-batch (no snapshot)."""
    from pyspark.sql import functions as F

    from streamjoin.io import postgres
    from streamjoin.lower.stream_join import flat

    if (relation.option("connector") or "").lower() != "postgres":
        raise Unsupported(
            f"FOR SYSTEM_TIME AS OF PROCTIME() needs a table that can be re-read: '{relation.name}' "
            "must use connector = 'postgres'"
        )
    url = expand(relation.option("url"))
    postgres.register(spark)
    reader = spark.read.format("streamjoin_pg").option("url", url)
    if relation.option("table"):
        reader = reader.option("table", relation.option("table"))
    if relation.option("query"):
        reader = reader.option("query", relation.option("query"))
    frame = reader.option("schema", arrow_schema(relation.columns).serialize().to_pybytes().hex()).load()
    return F.broadcast(frame.select(*[F.col(c).alias(flat(alias, c)) for c in frame.columns]))


def check_temporal_key(relation: m.Relation, join: m.Join) -> None:
    """The condition must cover the table's primary key, read from PostgreSQL's catalog when the
    DDL declares none (the analyzer checked a declared one)."""
    from streamjoin.io import postgres

    if relation.primary_key or not relation.option("table"):
        if not relation.primary_key:
            raise Unsupported(f"'{relation.name}' declares no PRIMARY KEY, which a temporal join needs")
        return
    pk = postgres.primary_key(expand(relation.option("url")), relation.option("table"))
    if not pk:
        raise Unsupported(
            f"'{relation.name}' has no primary key in PostgreSQL ({relation.option('table')}), which a temporal join needs"
        )
    keyed = {r.split(".")[-1].strip('"') for _, r in join.condition.keys}
    if not set(pk) <= keyed:
        raise Unsupported(
            f"the temporal join on '{relation.name}' must cover its primary key ({', '.join(pk)}); "
            f"the condition uses {', '.join(sorted(keyed)) or 'no key column'}"
        )


def read_files(path: str, fmt: str, schema: pa.Schema) -> pa.Table:
    """Every file of a folder (or one file) as one Arrow table with the declared schema."""
    root = Path(path)
    if not root.exists():
        raise ValueError(f"table path {path} does not exist")
    files = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith((".", "_"))) if root.is_dir() else [root]
    parts = []
    for p in files:
        if fmt == "parquet":
            raw = pq.read_table(p)
        elif fmt in ("csv", "json"):
            raw = _read_text(str(p), fmt)
        else:
            raise ValueError(f"table {path}: unknown format '{fmt}' (use csv, json or parquet)")
        parts.append(conform(raw, schema, None, str(p)).drop_columns([BOUND]))
    if not parts:
        return conform(pa.table({}), schema, None, path).drop_columns([BOUND])
    return pa.concat_tables(parts)


def _postgres_where(filters: tuple[str, ...], alias: str) -> tuple[str | None, list[str]]:
    """Table-only filters as PostgreSQL SQL over unqualified columns; what does not translate
    is applied after reading instead."""
    pushed, rest = [], []
    for f in filters:
        try:
            tree = sqlglot.parse_one(f, read=StreamJoin)
            for col in tree.find_all(exp.Column):
                if col.table != alias:
                    raise ValueError(col.sql())
                col.set("table", None)
            pushed.append(f"({tree.sql(dialect='postgres')})")
        except Exception:  # noqa: BLE001 - any failure to translate: filter in Spark
            rest.append(f)
    return (" AND ".join(pushed) or None), rest


def _redact(url: str) -> str:
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)
