"""Reading a declared table whole, Spark-free: from files (a folder or one file: CSV, JSON Lines,
Parquet), from PostgreSQL (a table or a query, a filter pushed into its SQL), or the latest
version of an exported snapshot in S3 (`io/sources/snapshots.py`). The snapshot a query joins with
(`lower.tables`) and `streamjoin snapshot` both read through here.

A table is described by its connector options (as declared in `WITH (...)`, `${VAR}` expanded
here) and its Arrow schema (`io.formats.types.arrow_schema` of its columns)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from streamjoin.env import expand
from streamjoin.errors import Unsupported
from streamjoin.io.formats.files import BOUND, conform, read_text

CONNECTORS = ("files", "postgres", "s3")


@dataclass(frozen=True)
class TableRead:
    rows: pa.Table
    source: str  # one line: where the rows came from (no password)
    version: int | None = None  # an exported snapshot's version (connector 's3')


def read_table(name: str, options: Mapping[str, str], schema: pa.Schema, where: str | None = None) -> TableRead:
    """The whole table `name`, with its declared schema. `where` (PostgreSQL SQL over unqualified
    columns) is evaluated by PostgreSQL; the other connectors ignore it (their filters run after
    reading)."""
    connector = (options.get("connector") or "files").lower()
    if connector == "postgres":
        from streamjoin.io.sources import postgres

        url = expand(options.get("url"))
        table, sql = options.get("table"), options.get("query")
        if not url or not (table or sql):
            raise Unsupported(f"table '{name}': connector 'postgres' needs url and table (or query)")
        rows = postgres.read_table(url, table, sql, schema, where=where, columns=None)
        return TableRead(rows, f"postgres {redact(url)} {table or '(query)'}" + (f" WHERE {where}" if where else ""))
    if connector == "values":  # rows the program inserted (INSERT INTO t VALUES ...): JSON in the options
        import json

        rows = json.loads(options.get("rows") or "[]")
        table = pa.Table.from_pylist([{k: (v if v is None or isinstance(v, bool | int | float) else  # (an array: its JSON)
                                           json.dumps(v) if isinstance(v, list | dict) else str(v))
                                       for k, v in r.items()} for r in rows]) if rows else pa.table({})
        return TableRead(_rows_only(conform(table, schema, None, f"table {name}")), f"values ({len(rows)} rows inserted)")
    if connector not in ("files", "s3"):
        raise Unsupported(f"table '{name}': connector '{connector}' is not supported (use 'files', 'postgres' or 's3')")
    path = expand(options.get("path"))
    if not path:
        raise Unsupported(f"table '{name}' needs WITH (path = '...') to be read")
    if connector == "s3":
        from streamjoin.io.sources import snapshots

        rows, identity = snapshots.read_latest(path, schema)
        return TableRead(rows, f"s3 {snapshots.root_path(path)} version {identity['version']}", identity["version"])
    return TableRead(read_files(path, (options.get("format") or "csv").lower(), schema, options.get("pattern")),
                     f"files {path}")


def read_files(path: str, fmt: str, schema: pa.Schema, pattern: str | None = None) -> pa.Table:
    """Every file of a folder (or one file) as one Arrow table with the declared schema;
    `pattern`: a regular expression the names of the folder's files must match whole."""
    import re

    root = Path(path)
    if not root.exists():
        raise ValueError(f"table path {path} does not exist")
    wanted = re.compile(pattern) if pattern else None
    files = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith((".", "_"))
                   and (wanted is None or wanted.fullmatch(p.name))) if root.is_dir() else [root]
    parts = []
    for p in files:
        if fmt not in ("csv", "json", "parquet"):
            raise ValueError(f"table {path}: unknown format '{fmt}' (use csv, json or parquet)")
        try:
            raw = pq.read_table(p) if fmt == "parquet" else read_text(str(p), fmt, schema)
            parts.append(_rows_only(conform(raw, schema, None, str(p))))
        except (ValueError, pa.ArrowException) as error:
            # a table must be whole: fail, naming the first row that cannot be read (FILE:LINE[:COL])
            from streamjoin.io.sources.rejects import first_rejected

            raise (first_rejected(p.read_bytes(), fmt, schema, None, str(p)) or error) from None
    if not parts:
        return conform(pa.table({}), schema, None, path).drop_columns([BOUND])
    return pa.concat_tables(parts)


def _rows_only(table: pa.Table) -> pa.Table:
    """A file's rows without its rowtime bounds (a stream's files read whole, as a `SELECT TABLE`
    view does): a bound a writer sent is no row."""
    import pyarrow.compute as pc

    return table.filter(pc.invert(pc.fill_null(table.column(BOUND), False))).drop_columns([BOUND])


def redact(url: str) -> str:
    """A URL without its password."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)
