"""Versioned, immutable snapshots of a lookup table under one root (s3://bucket/prefix or a local
folder), written by `streamjoin snapshot` and read by `CREATE TABLE ... WITH (connector = 's3')`.

Layout under a root `R`:

    R/v=000001/data.parquet      the rows (Parquet, the table's declared schema)
    R/v=000001/_snapshot.json    version, source, taken_at, rows, sha256, schema, path
    R/v=000002/...
    R/_latest.json               {"version": 2, "path": "R/v=000002"}, the pointer

A version is written once and never overwritten. The pointer is written last, in one PUT, so a
crash mid-export leaves the pointer on the previous version (and, at worst, an unreferenced
`v=` folder whose number is never reused). One exporter per root at a time: S3 has no
create-if-absent here, so two concurrent exports of the same root could pick the same version.

Spark-free: the query's driver reads the latest version with pyarrow and hands it to Spark.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq

from streamjoin.io.sources.staging import BOUND, conform
from streamjoin.io.storage import s3
from streamjoin.io.storage.retry import StorageUnavailableError, first_line, transient

POINTER = "_latest.json"
META = "_snapshot.json"
DATA = "data.parquet"
_VERSION = re.compile(r"(?:^|/)v=(\d+)/")


def version_path(root: str, version: int) -> str:
    return s3.join(root_path(root), f"v={version:06d}")


def root_path(root: str) -> str:
    """s3://bucket/prefix without a trailing slash, or an absolute local folder."""
    return s3.normalize(root) if s3.is_s3(root) else os.path.abspath(root)


def content_hash(table: pa.Table) -> str:
    """Order-independent: the same rows in any order hash the same."""
    if table.num_rows:
        import json

        import pyarrow.compute as pc

        keys = pa.table({c: _sortable(table.column(c), json) for c in table.column_names})  # nested values by their JSON text
        table = table.take(pc.sort_indices(keys, [(c, "ascending") for c in keys.column_names]))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _sortable(column: pa.ChunkedArray, json) -> pa.ChunkedArray | pa.Array:
    if pa.types.is_nested(column.type):
        return pa.array([json.dumps(v, sort_keys=True, default=str) for v in column.to_pylist()], pa.string())
    return column


def versions(root: str) -> list[int]:
    """Every version number with at least one object under `R/v=N/`, committed or not."""
    root = root_path(root)
    found = set()
    for path in s3.list_files(root, recursive=True):
        match = _VERSION.search(path[len(root):] if path.startswith(root) else path)
        if match:
            found.add(int(match.group(1)))
    return sorted(found)


def latest(root: str) -> dict | None:
    """The `_snapshot.json` of the version the pointer names, or None before the first export."""
    root = root_path(root)
    pointer = s3.read_json(s3.join(root, POINTER))
    if pointer is None:
        return None
    # the version's place under this root, not the pointer's `path`: a copied root still reads
    path = version_path(root, int(pointer["version"]))
    meta = s3.read_json(s3.join(path, META))
    if meta is None:
        raise ValueError(f"{s3.join(root, POINTER)} names version {pointer['version']}, but {path} has no {META}")
    return {**meta, "path": path}


def export(table: pa.Table, root: str, source: str) -> dict:
    """Write `table` as the next version under `root`, then move the pointer to it; returns the
    version's `_snapshot.json` content."""
    root = root_path(root)
    current = latest(root)
    version = max([current["version"] if current else 0, *versions(root)]) + 1
    path = version_path(root, version)
    if s3.list_files(path, recursive=True):  # another exporter got here first: never overwrite
        raise ValueError(f"snapshot version {path} already exists")
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    s3.write_bytes(s3.join(path, DATA), buffer.getvalue())
    meta = {
        "version": version,
        "path": path,
        "source": source,
        "taken_at": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "rows": table.num_rows,
        "sha256": content_hash(table),
        "schema": {f.name: str(f.type) for f in table.schema},
    }
    s3.write_json(s3.join(path, META), meta)
    s3.write_json(s3.join(root, POINTER), {"version": version, "path": path})  # last: the commit
    return meta


def read_latest(root: str, schema: pa.Schema) -> tuple[pa.Table, dict]:
    """The latest version's rows conformed to `schema` (declared names, case-insensitive; missing
    columns are NULL), and its identity (version, path, source, taken_at, rows, sha256).

    Read once, when the query starts: a store that cannot be reached fails the start with
    `StorageUnavailableError` naming the root (a query never runs on an empty table)."""
    root = root_path(root)
    try:
        meta = latest(root)
        if meta is None:
            raise ValueError(f"no snapshot under {root}: create one with `streamjoin snapshot`")
        data = s3.join(meta["path"], DATA)
        filesystem, inner = s3.resolve(data)
        raw = pq.read_table(inner, filesystem=filesystem)
    except Exception as error:
        if not transient(error):
            raise
        where = (s3.S3Settings.from_env().endpoint_url or "AWS") if s3.is_s3(root) else "the file system"
        raise StorageUnavailableError(f"snapshot {root}: the storage ({where}) could not be reached, so the table was not "
                                      f"loaded and the query did not start: {first_line(error)}") from error
    table = conform(raw, schema, None, data).drop_columns([BOUND])
    identity = {k: meta[k] for k in ("version", "path", "source", "taken_at", "rows", "sha256")}
    return table, identity
