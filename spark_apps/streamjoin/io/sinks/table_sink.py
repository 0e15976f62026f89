"""A streaming sink into S3-compatible storage (or a local folder), committed exactly once.

`CREATE SINK name WITH (connector = 's3', path = 's3://bucket/prefix', format = 'delta' |
'parquet', partitioned_by = 'hour')`, then `INSERT INTO name SELECT STREAM ...`.

How a micro-batch lands (docs/storage.md):
1. Executors write their partitions in parallel as Parquet files straight into the table's
   folder (`hour=YYYY-MM-DDTHH/part-<version>-<uuid>.parquet`) through pyarrow's S3
   filesystem; only the files' names, sizes and row counts come back to the driver.
2. The driver commits them in one atomic step, tagged with the write's version (the micro-batch
   id, or the release number of a bucketed join) under the query's application id:
   - `delta`: one Delta Lake commit (delta-rs) carrying an application transaction
     (`txn` action, app id + version); a reader sees all of a batch or none of it;
   - `parquet`: one manifest object `_commits/<version>.json` naming the batch's files; readers
     read only files a manifest names.
   A write whose version is already committed (a batch Spark replays after a crash) is not
   written again, but its rows are still computed to the end and dropped (`drain`): the query's
   stateful operators commit the batch's state only when its rows are computed, and a replay that
   skipped them left Spark's state behind its commit log (issue 65: the restart failed, the next
   one lost rows).
   Files written by a batch that crashed before its commit are never named by a commit: they
   stay invisible (`vacuum` removes them).
3. Hour partitions get a completeness marker, `_complete/hour=YYYY-MM-DDTHH.json`, once the
   query's clock has passed the end of the hour and every row of it is committed; it names
   the hour's row count, the table version and the snapshots the rows were joined with.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
import uuid
from dataclasses import dataclass

import pyarrow as pa

from streamjoin.faults import crash_point
from streamjoin.io.storage import s3
from streamjoin.io.storage.retry import retrying

log = logging.getLogger("streamjoin.sink")
HOUR = "hour"
HOUR_US = 3_600_000_000
_FORMATS = ("delta", "parquet")
_FILES_SCHEMA = "path STRING, size LONG, hour STRING, rows LONG"


def hour_name(us: int) -> str:
    """The partition value of the hour holding `us` (microseconds since the epoch, UTC)."""
    return dt.datetime.fromtimestamp((us // HOUR_US) * HOUR_US / 1e6, dt.UTC).strftime("%Y-%m-%dT%H")


def hour_start_us(name: str) -> int:
    """`2024-01-01T10` (or `2024-01-01 10:00...`) -> the hour's start in microseconds."""
    text = name.strip().replace(" ", "T")[:13]
    return int(dt.datetime.strptime(text, "%Y-%m-%dT%H").replace(tzinfo=dt.UTC).timestamp() * 1_000_000)


@dataclass(frozen=True)
class SinkSpec:
    """A declared sink, validated."""

    name: str
    path: str  # s3://bucket/prefix or a local folder
    format: str  # delta | parquet
    partitioned_by: str | None  # 'hour' or None
    # 'upsert': a changelog applied by `primary_key` (Delta merges; RisingWave's sink type);
    # 'append-only': rows appended
    type: str = "append-only"
    primary_key: tuple[str, ...] = ()
    # Delta: a table checkpoint every this many versions (`delta.checkpointInterval`, Delta's default 100)
    checkpoint_interval: int = 100

    @classmethod
    def from_options(cls, name: str, options: dict[str, str], expand=lambda v: v) -> SinkSpec:
        connector = (options.get("connector") or "s3").lower()
        if connector not in ("s3", "files"):
            raise ValueError(f"sink '{name}': connector '{connector}' is not supported (use 's3')")
        path = expand(options.get("path"))
        if not path:
            raise ValueError(f"sink '{name}' needs WITH (path = 's3://bucket/prefix')")
        fmt = (options.get("format") or "delta").lower()
        if fmt not in _FORMATS:
            raise ValueError(f"sink '{name}': format '{fmt}' is not supported (use 'delta' or 'parquet')")
        part = (options.get("partitioned_by") or "").strip().lower() or None
        if part not in (None, HOUR):
            raise ValueError(f"sink '{name}': partitioned_by = '{part}' is not supported (use 'hour', or leave it out)")
        key = tuple(k.strip() for k in (options.get("primary_key") or "").split(",") if k.strip())
        kind = (options.get("type") or ("upsert" if key else "append-only")).lower()
        if kind not in ("upsert", "append-only"):
            raise ValueError(f"sink '{name}': type = '{kind}' is not supported (use 'upsert' or 'append-only')")
        if kind == "upsert" and (not key or fmt != "delta" or part):
            raise ValueError(f"sink '{name}': type = 'upsert' applies a changelog by key to a Delta table: it needs "
                             "primary_key = 'col, ...' and format = 'delta', and no partitioned_by")
        interval = (options.get("checkpoint_interval") or "100").strip()
        if not interval.isdigit() or int(interval) < 1:
            raise ValueError(f"sink '{name}': checkpoint_interval = '{interval}' is not a whole number of versions from 1")
        return cls(name, s3.normalize(path), fmt, part, kind, key, int(interval))


def write_files(frame, spec: SinkSpec, version: int, settings: s3.S3Settings, rowtime_column: str):
    """Executors write `frame` (output columns plus the rowtime column) as Parquet files under the
    table; returns [(relative path, size, hour, rows)] collected on the driver."""
    from pyspark.sql import functions as F

    columns = [c for c in frame.columns if c != rowtime_column]
    root, partitioned = spec.path, spec.partitioned_by == HOUR
    if partitioned:
        frame = frame.withColumn(HOUR, F.date_format(F.col(rowtime_column), "yyyy-MM-dd'T'HH"))

    def write_partition(batches):
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from streamjoin.io.storage import s3 as s3io

        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        table = pa.concat_tables(tables)
        filesystem, inner_root = s3io.resolve(root, settings)
        groups = sorted(set(table.column(HOUR).to_pylist())) if partitioned else [None]
        out = {"path": [], "size": [], "hour": [], "rows": []}
        for hour in groups:
            part = table.filter(pc.equal(table.column(HOUR), hour)) if partitioned else table
            relative = (f"{HOUR}={hour}/" if partitioned else "") + f"part-{version:08d}-{uuid.uuid4().hex}.parquet"
            target = f"{inner_root}/{relative}"
            if not s3io.is_s3(root):
                import os

                os.makedirs(os.path.dirname(target), exist_ok=True)
            pq.write_table(part.select(columns), target, filesystem=filesystem)
            out["path"].append(relative)
            out["size"].append(filesystem.get_file_info(target).size)
            out["hour"].append(hour)
            out["rows"].append(part.num_rows)
        yield pa.RecordBatch.from_pydict(
            out, schema=pa.schema([("path", pa.string()), ("size", pa.int64()), ("hour", pa.string()), ("rows", pa.int64())])
        )

    return [tuple(r) for r in frame.mapInArrow(write_partition, _FILES_SCHEMA).collect()]


def drain(frame) -> None:
    """Compute every row of a micro-batch's `frame` and drop them: a replayed batch whose rows are
    committed already still runs the query's stateful operators to the end of the batch, which is
    when they commit its state (Spark's `noop` sink: nothing leaves the executors)."""
    frame.write.format("noop").mode("overwrite").save()


def data_schema(frame, rowtime_column: str, partitioned: bool) -> pa.Schema:
    """The table's Arrow schema: the output columns (plus the hour partition column)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(frame.drop(rowtime_column).schema, timezone="UTC")
    return schema.append(pa.field(HOUR, pa.string())) if partitioned else schema


class TableSink:
    """The committed side of the sink: versions, commits, row counts per hour, markers."""

    def __init__(self, spec: SinkSpec, app_id: str, settings: s3.S3Settings | None = None):
        self.spec, self.app_id = spec, app_id
        self.settings = settings or s3.S3Settings.from_env()
        self.committer = (DeltaCommitter if spec.format == "delta" else ManifestCommitter)(spec, app_id, self.settings)
        self.timings: list[dict] = []  # per committed write: version, rows, files, bytes, write_s, commit_s

    def write(self, frame, version: int, rowtime_column: str) -> int | None:
        """Write and commit one micro-batch (or release) as `version`; None if it was committed
        before (a replay), else the number of rows committed. An unreachable storage is retried
        (io.storage.retry): the whole write again, which skips a version whose commit did land."""
        return retrying(f"sink {self.spec.name} version {version}", lambda: self._write(frame, version, rowtime_column))

    def _write(self, frame, version: int, rowtime_column: str) -> int | None:
        committed = self.committer.committed_version()  # one read of the table's log
        if committed is not None and version <= committed:
            drain(frame)  # the batch's state committed, its rows not written twice
            log.info("sink %s: version %d is already committed: its rows computed again for the query's state, "
                     "not written again (a replayed batch)", self.spec.name, version)
            return None
        started = time.time()
        files = write_files(frame, self.spec, version, self.settings, rowtime_column)
        if not files:
            return 0
        schema = data_schema(frame, rowtime_column, self.spec.partitioned_by == HOUR)
        written = time.time()
        crash_point("sink.before_commit")
        self.committer.commit(files, schema, version)
        crash_point("sink.after_commit")
        rows = sum(f[3] for f in files)
        self.timings.append({"version": version, "rows": rows, "files": len(files), "bytes": sum(f[1] for f in files),
                             "write_s": written - started, "commit_s": time.time() - written})
        log.info("sink %s: committed version %d: %d rows in %d files (%.2fs)", self.spec.name, version, rows, len(files),
                 time.time() - started)
        return rows

    def apply(self, rows: pa.Table, version: int, op: str | None) -> int | None:
        """Commit rows the driver holds (streamjoin's operator's output) as `version`: a changelog
        (`op` its column, +I / -D) merged by the primary key into a Delta table (type 'upsert'), or
        rows appended. None if `version` was committed before (a replay), else the rows applied."""
        return retrying(f"sink {self.spec.name} version {version}", lambda: self._apply(rows, version, op))

    def _apply(self, rows: pa.Table, version: int, op: str | None) -> int | None:
        committed = self.committer.committed_version()
        if committed is not None and version <= committed:
            log.info("sink %s: version %d is already committed, skipped (a replayed batch)", self.spec.name, version)
            return None
        if not rows.num_rows:
            return 0
        crash_point("sink.before_commit")
        if self.spec.type == "upsert":
            if op is None:  # rows, not changes: each one inserts its key's row or replaces it
                op = "__streamjoin_op"
                rows = rows.append_column(op, pa.array(["+I"] * rows.num_rows, pa.string()))
            self.committer.merge(rows, version, self.spec.primary_key, op)
        else:
            data = rows.drop_columns([op]) if op else rows
            self.committer.commit(self._write_arrow(data, version), data.schema, version)
        crash_point("sink.after_commit")
        log.info("sink %s: committed version %d: %d changes", self.spec.name, version, rows.num_rows)
        return rows.num_rows

    def _write_arrow(self, data: pa.Table, version: int) -> list[tuple]:
        """One Parquet file of `data` under the table, written by the driver: [(path, size, hour, rows)]."""
        import pyarrow.parquet as pq

        filesystem, root = s3.resolve(self.spec.path, self.settings)
        relative = f"part-{version:08d}-{uuid.uuid4().hex}.parquet"
        if not s3.is_s3(self.spec.path):
            import os

            os.makedirs(root, exist_ok=True)
        pq.write_table(data, f"{root}/{relative}", filesystem=filesystem)
        return [(relative, filesystem.get_file_info(f"{root}/{relative}").size, None, data.num_rows)]

    def hour_rows(self) -> dict[str, int]:
        """Committed rows per hour partition."""
        return retrying(f"sink {self.spec.name}: reading its log", self.committer.hour_rows)

    def marker_path(self, hour: str) -> str:
        return s3.join(self.spec.path, "_complete", f"{HOUR}={hour}.json")

    def marked_by_another(self, hour: str) -> bool:
        """Has another query (app id) marked this hour already?"""
        mark = retrying(f"sink {self.spec.name}: reading a marker", lambda: s3.read_json(self.marker_path(hour), self.settings))
        return mark is not None and mark.get("app_id") != self.app_id

    def mark_complete(self, hour: str, rows: int, extra: dict) -> str:
        path = self.marker_path(hour)

        def mark() -> None:
            s3.write_json(path, {"hour": hour, "rows": rows, "table": self.spec.path, "format": self.spec.format,
                                 "app_id": self.app_id, "table_version": self.committer.table_version(), **extra}, self.settings)

        retrying(f"sink {self.spec.name}: marking hour {hour}", mark)
        return path


def _no_checkpoint():
    from deltalake import PostCommitHookProperties

    return PostCommitHookProperties(create_checkpoint=False)


class DeltaCommitter:
    """Delta Lake commits with an application transaction per write (delta-rs)."""

    def __init__(self, spec: SinkSpec, app_id: str, settings: s3.S3Settings):
        self.spec, self.app_id, self.settings = spec, app_id, settings
        self.uri = spec.path if s3.is_s3(spec.path) else s3.resolve(spec.path)[1]

    def _table(self):
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.uri, storage_options=self._options()):
            return None
        return DeltaTable(self.uri, storage_options=self._options())

    def _options(self) -> dict[str, str] | None:
        return self.settings.storage_options() if s3.is_s3(self.spec.path) else None

    def committed_version(self) -> int | None:
        table = self._table()
        return None if table is None else table.transaction_version(self.app_id)

    def table_version(self) -> int | None:
        table = self._table()
        return None if table is None else table.version()

    def commit(self, files, schema: pa.Schema, version: int) -> None:
        from deltalake import CommitProperties, Transaction
        from deltalake import Schema as DeltaSchema
        from deltalake.transaction import AddAction, create_table_with_add_actions

        schema = DeltaSchema.from_arrow(schema)

        now = int(time.time() * 1000)
        part = [HOUR] if self.spec.partitioned_by == HOUR else None
        actions = [
            AddAction(path, size, {HOUR: hour} if part else {}, now, True, json.dumps({"numRecords": rows}))
            for path, size, hour, rows in files
        ]
        props = CommitProperties(app_transactions=[Transaction(self.app_id, version)])
        table = self._table()
        if table is None:
            create_table_with_add_actions(self.uri, schema, actions, mode="append", partition_by=part,
                                          configuration=self._configuration(), storage_options=self._options(),
                                          commit_properties=props, post_commithook_properties=_no_checkpoint())
        else:
            table.create_write_transaction(actions, "append", schema, partition_by=part, commit_properties=props,
                                           post_commithook_properties=_no_checkpoint())
        self._checkpoint(table)

    def _configuration(self) -> dict[str, str]:
        return {"delta.checkpointInterval": str(self.spec.checkpoint_interval)}

    def _checkpoint(self, table) -> None:
        """The table's checkpoint of a version due one (every `checkpoint_interval`), written here
        rather than by delta-rs inside its commit, so that a crash between the two is a crash point.
        A checkpoint a crash left unwritten is not needed (readers replay the log from the one
        before), and the next one due is written as usual. `table`: as the commit left it (None: it
        created the table, version 0)."""
        if table is None:
            return
        table.update_incremental()  # (a write transaction leaves the object at the version before it)
        version = table.version()
        if version and version % self.spec.checkpoint_interval == 0:
            crash_point("sink.before_delta_checkpoint")
            table.create_checkpoint()

    def merge(self, rows: pa.Table, version: int, key: tuple[str, ...], op: str) -> None:
        """A changelog applied by `key` in one commit: per key its last change wins (+I: the row
        is inserted or replaces the one there; -D: the row there is deleted)."""
        import pyarrow.compute as pc
        from deltalake import CommitProperties, Transaction, write_deltalake

        net = net_changes(rows, key, op)
        props = CommitProperties(app_transactions=[Transaction(self.app_id, version)])
        table = self._table()
        if table is None:  # the first commit creates the table with the rows it inserts
            inserted = net.filter(pc.equal(net.column(op), "+I")).drop_columns([op])
            write_deltalake(self.uri, inserted, mode="append", configuration=self._configuration(),
                            storage_options=self._options(), commit_properties=props, post_commithook_properties=_no_checkpoint())
            return
        columns = [c for c in net.column_names if c != op]
        quoted = {c: "`" + c.replace("`", "``") + "`" for c in net.column_names}
        same = " AND ".join(f"(t.{quoted[k]} IS NOT DISTINCT FROM s.{quoted[k]})" for k in key)  # (DataFusion binds AND tighter)
        values = {quoted[c]: f"s.{quoted[c]}" for c in columns}
        (table.merge(net, same, source_alias="s", target_alias="t", commit_properties=props,
                     post_commithook_properties=_no_checkpoint())
         .when_matched_update(values, predicate=f"s.{quoted[op]} = '+I'")
         .when_matched_delete(predicate=f"s.{quoted[op]} = '-D'")
         .when_not_matched_insert(values, predicate=f"s.{quoted[op]} = '+I'")
         .execute())
        self._checkpoint(table)

    def hour_rows(self) -> dict[str, int]:
        table = self._table()
        if table is None:
            return {}
        actions = table.get_add_actions(flatten=True)
        actions = pa.table(actions) if not isinstance(actions, pa.Table) else actions
        counts: dict[str, int] = {}
        column = f"partition.{HOUR}"
        if column not in actions.column_names:
            return counts
        for hour, rows in zip(actions.column(column).to_pylist(), actions.column("num_records").to_pylist(), strict=True):
            counts[hour] = counts.get(hour, 0) + (rows or 0)
        return counts

    def files(self, hour: str | None = None) -> list[str]:
        table = self._table()
        if table is None:
            return []
        return table.file_uris(partition_filters=[(HOUR, "=", hour)] if hour else None)


class ManifestCommitter:
    """Plain Parquet: a batch is committed by one manifest object naming its files
    (`_commits/<version>.json`); the object's PUT is the atomic step."""

    def __init__(self, spec: SinkSpec, app_id: str, settings: s3.S3Settings):
        self.spec, self.app_id, self.settings = spec, app_id, settings

    def _manifests(self) -> list[dict]:
        paths = s3.list_files(s3.join(self.spec.path, "_commits"), self.settings)
        return [s3.read_json(p, self.settings) for p in paths if p.endswith(".json")]

    def committed_version(self) -> int | None:
        versions = [m["version"] for m in self._manifests() if m["app_id"] == self.app_id]
        return max(versions) if versions else None

    def table_version(self) -> int | None:
        return len(self._manifests()) or None

    def commit(self, files, schema: pa.Schema, version: int) -> None:
        manifest = {"app_id": self.app_id, "version": version, "committed_at": dt.datetime.now(dt.UTC).isoformat(),
                    "files": [{"path": p, "size": s, HOUR: h, "rows": r} for p, s, h, r in files],
                    "schema": schema.serialize().to_pybytes().hex()}
        s3.write_json(s3.join(self.spec.path, "_commits", f"{self.app_id}-{version:012d}.json"), manifest, self.settings)

    def hour_rows(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for m in self._manifests():
            for f in m["files"]:
                counts[f[HOUR]] = counts.get(f[HOUR], 0) + f["rows"]
        return counts

    def files(self, hour: str | None = None) -> list[str]:
        return [s3.join(self.spec.path, f["path"]) for m in self._manifests() for f in m["files"]
                if hour is None or f[HOUR] == hour]


def net_changes(rows: pa.Table, key: tuple[str, ...], op: str) -> pa.Table:
    """Each key's last change of a changelog, in the order the keys last changed."""
    missing = [k for k in key if k not in rows.column_names]
    if missing:
        raise ValueError(f"the sink's primary_key names {', '.join(missing)}, which the query does not write")
    last: dict = {}
    keys = zip(*[rows.column(k).to_pylist() for k in key], strict=True)
    for i, k in enumerate(keys):
        last.pop(k, None)
        last[k] = i
    return rows.take(pa.array(list(last.values()), pa.int64()))
