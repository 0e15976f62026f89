"""Ingesting a directory of files (or an S3 landing zone) as a stream, without losing rows to
the watermark.

Spark's file source orders new files by modification time; files written in the same
instant, or out of rowtime order, make its watermark drop rows as late with no error. So each
input is ingested here instead, in steps (one per micro-batch):

1. **order**: the new files (not ingested before) are read together, whatever their order;
2. **count** and **route**: rows older than the input's stream clock are late: they are
   written to the late-rows output and counted, never passed on;
3. the rest, plus rowtime bounds, are staged as one immutable Parquet file, and the input's
   clock advances (max rowtime seen - lateness, or a higher bound).

A step is recorded in `manifest.json` (written atomically) only after its staged file is
complete, so a restart neither skips nor re-reads a file. Spark reads the staged files with
its own file source (`streamjoin.io.sources.source`): a step's file is renamed into place complete,
after every earlier step's, so a listing always sees whole steps, in order. The driver stages
(`streamjoin.runtime.runner.Runner`), every half second and before each `process_available`.

An input's path is a local folder (connector 'files': the manifest records base names) or an
`s3://bucket/prefix/` landing zone (connector 's3': the objects directly under the prefix, in
key order, read through pyarrow's S3 filesystem; the manifest records full `s3://` keys). The
manifest holds every key read, not a last key, so an object whose key sorts before keys already
read is still picked up by a later listing. The S3 settings travel in `InputSpec.storage`
(read from the AWS_* variables when the query is planned).

Rowtime bounds (SEMANTICS.md §1): a producer sends one as a row whose `_bound` field is true
and whose rowtime field is the bound, e.g. `{"rowtime": "2024-01-01 10:05:00", "_bound": true}`.

Why one module of ~430 lines: `Stager` is the step protocol (pending step, staged file, manifest,
the redo after a crash between them), and its steps only make sense read together; the file
formats (`io.formats.files`), Spark's reading of the steps (`source.py`) and Kinesis (`kinesis.py`) are
apart.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.faults import crash_point
from streamjoin.io.formats.files import BOUND, conform, read_text, staged_schema
from streamjoin.io.formats.instants import EARLIEST_US, END_US, late_rows
from streamjoin.io.sources import input_files
from streamjoin.io.sources.input_spec import InputSpec
from streamjoin.io.storage import s3
from streamjoin.io.storage.memory import give_back

_TS = pa.timestamp("us", tz="UTC")
_FORMATS = ("json", "csv", "parquet")
STEP_CHUNK = 65_536  # rows per row group of a staged step (Spark splits a large step between row groups)
# rows per staged step: a larger arrival is staged as several steps, in order, so that a join
# that works step by step (the batch interval join) holds a bounded slice of it at a time
STEP_ROWS = 262_144


@dataclass
class Manifest:
    """What an input has ingested so far."""

    files: list[str] = field(default_factory=list)
    steps: int = 0
    rows: int = 0
    late_rows: int = 0
    rejected_rows: int = 0  # rows that could not be read: dead letters (io/sources/rejects.py)
    max_rowtime_us: int | None = None
    bound_us: int | None = None
    ended: bool = False  # the end-of-input bound has been staged
    # a Kinesis input (io.sources.kinesis): per shard the last staged sequence number, its top rowtime,
    # done; and the instant of the first start (start = 'latest' reads from there)
    shards: dict = field(default_factory=dict)
    first_start_us: int | None = None
    # a step being staged from files: {"files", "ending", "now_us"}, recorded before its Parquet
    # file(s) are written, so that a restart after a crash redoes exactly that step (the same rows
    # in the same step files, which Spark may have read already) instead of a bigger one
    pending: dict | None = None
    # a local file's [size, mtime_ns] when it was read, by name: a file that changes afterwards is
    # reported (a dead letter naming it, `changed_files`), never silently ignored (issue 43)
    read_as: dict = field(default_factory=dict)
    changed_files: int = 0
    # an input that ended has let go of what it read from (a postgres-cdc input's replication slot)
    released: bool = False

    @classmethod
    def load(cls, path: Path) -> Manifest:
        if not path.exists():
            return cls()
        # manifests before 2026-11-23 also hold end_seen and flushed (a separate flush step)
        return cls(**{k: v for k, v in json.loads(path.read_text()).items() if k in cls.__dataclass_fields__})

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        os.replace(tmp, path)


class Stager:
    """Turns new files of one input into staged steps (see the module docstring)."""

    def __init__(self, spec: InputSpec):
        self.spec = spec
        self._changes_checked = -1e9  # when the files read before were last looked at (_report_changed)
        self.dir, self.late_dir = Path(spec.state_dir), Path(spec.late_dir)
        self.steps_dir, self.manifest_path = self.dir / "steps", self.dir / "manifest.json"
        self.steps_dir.mkdir(parents=True, exist_ok=True)
        self._filesystem = None  # pyarrow's S3 filesystem, made on first use (s3:// inputs)
        self._log = None  # io.sources.kinesis.KinesisSource, io.sources.kafka.KafkaSource or io.sources.pg_cdc.PostgresCdcSource, made on first use

    def close(self) -> None:
        """Leave what the input reads from (a Kafka client's connections and threads)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def staged_schema(self) -> pa.Schema:
        return staged_schema(self.spec.schema)

    def manifest(self) -> Manifest:
        return Manifest.load(self.manifest_path)

    def step_path(self, step: int) -> Path:
        return self.steps_dir / f"{step:08d}.parquet"

    def clock_us(self, m: Manifest) -> int | None:
        """The input's stream clock: max rowtime seen - lateness, or a higher bound."""
        candidates = [v for v in (m.bound_us,) if v is not None]
        if m.max_rowtime_us is not None:
            candidates.append(m.max_rowtime_us - self.spec.lateness_ms * 1000)
        return max(candidates) if candidates else None

    def advance(self, now_us: int | None = None, tick: bool = False) -> int:
        """Stage what is new; return the number of staged steps. `now_us`: the instant of this
        pass (every input of a query staged in one pass shares it); `tick`: an arrival-ordered
        input (`InputSpec.arrival`) stages its clock even without new rows (another input of the
        query staged rows at `now_us`, and their instant completes when every clock passes it).

        End of input (an `END` file in the input's state folder): what has arrived is read once
        more, and that step ends with a bound at +infinity (SEMANTICS §1); nothing is read after
        it, whatever arrives meanwhile (a live producer must not keep the end away). Spark then
        runs one more batch by itself (a no-data batch: the watermark moved), which flushes every
        pending result; a query without state has none."""
        m = self.manifest()
        if m.ended:
            self._release(m)  # after a crash between the ended manifest and the release
            return m.steps
        ending = (self.dir / "END").exists()
        if self.spec.kinesis is not None or self.spec.kafka is not None or self.spec.cdc is not None:
            new, polled = [], self._poll_log(m, ending)
            if polled is None and not ending:
                return m.steps
            table = polled if polled is not None else self.staged_schema.empty_table()
        else:
            read = self._files_step(m, ending, now_us, tick)
            if read is None:
                return m.steps
            table, new, ending = read
        on_time, late, bounds = self._split(table, self.clock_us(m))
        if late.num_rows:
            self._write_late(late, m.steps)
        staged = on_time
        bound_us = max(bounds) if bounds else None
        if bound_us is not None and (m.bound_us is None or bound_us > m.bound_us):
            m.bound_us = bound_us
            # Spark's watermark is (max event time - lateness): carry the bound as a row it sees
            staged = pa.concat_tables([staged, self._bound_row(bound_us + self.spec.lateness_ms * 1000)])
        if ending:
            m.ended, m.bound_us = True, END_US
            staged = pa.concat_tables([staged, self._bound_row(END_US)])
        parts = [staged.slice(i, STEP_ROWS) for i in range(0, max(staged.num_rows, 1), STEP_ROWS)]
        for i, part in enumerate(parts):  # bounds, if any, are the last rows: in the last step
            self._write_step(part, m.steps + i)
        crash_point("stage.before_manifest")
        rowtimes = on_time.column(self.spec.rowtime)
        if on_time.num_rows:
            top = pc.max(rowtimes).value
            m.max_rowtime_us = top if m.max_rowtime_us is None else max(m.max_rowtime_us, top)
        # files by base name (as manifests always did), objects by full key
        m.files.extend(p if s3.is_s3(p) else os.path.basename(p) for p in new)
        for p in new:
            if not s3.is_s3(p):
                m.read_as[os.path.basename(p)] = input_files.size_and_time(p)
        m.steps += len(parts)
        m.rows += on_time.num_rows
        m.late_rows += late.num_rows
        m.pending = None
        m.save(self.manifest_path)
        self._release(m)
        return m.steps

    def _release(self, m: Manifest) -> None:
        """Once the ended manifest is saved: a postgres-cdc input drops its replication slot (io.sources.pg_cdc)."""
        if self.spec.cdc is None or not m.ended or m.released:
            return
        if self._log is None:
            self._log = self._log_source()
        self._log.release()
        m.released = True
        m.save(self.manifest_path)

    def _poll_log(self, m: Manifest, ending: bool) -> pa.Table | None:
        """What a Kinesis or Kafka input has for this step (io.sources.kinesis, io.sources.kafka), None for
        nothing; the shards' or partitions' positions go into `m`, saved with the step."""
        import time

        if self._log is None:
            self._log = self._log_source()
        if m.first_start_us is None:
            m.first_start_us = int(time.time() * 1_000_000)
        before = m.shards
        table, m.shards = self._log.poll(m.shards, self.spec.rowtime, ending, m.first_start_us)
        if table is None and m.shards != before:  # positions that moved without rows (a start at the
            m.save(self.manifest_path)  # end, records before a start instant): kept for a restart
        rejected, self._log.rejected = self._log.rejected, []
        if rejected:
            # named by the first record: read again after a crash, the same batch rewrites the same file
            first = rejected[0]
            self._write_rejected([dict(r, input=self.spec.alias) for r in rejected],
                                 f"{first['source'].rsplit('/', 1)[-1]}-{first['sequence']}")
            m.rejected_rows += len(rejected)
            if table is None:
                m.save(self.manifest_path)  # no step to save it with: the count must not wait for one
        return table

    def _log_source(self):
        """The input's log reader (io.connectors: Kinesis, Kafka, PostgreSQL CDC), parsing records
        as this input's rows."""
        from streamjoin.io.connectors import log_reader
        from streamjoin.io.sources.log_merge import record_parser

        return log_reader(self.spec, record_parser(self.spec.schema, self.spec.rowtime, self.spec.arrival, self.spec.alias))

    def _files_step(self, m: Manifest, ending: bool, now_us: int | None = None,
                    tick: bool = False) -> tuple[pa.Table, list[str], bool] | None:
        """(the rows of the new files, the files, whether input ends) for this step, or None when
        there is nothing to stage; after a crash that cut a step short (`m.pending` left behind)
        the step is redone as it was."""
        if m.pending is None:
            self._report_changed(m, ending)
            new = self._new_files(m)
            now_us = now_us if now_us is not None else int(time.time() * 1_000_000)
            if self.spec.arrival:  # the clock never goes back, whatever the wall clock does
                now_us = max(now_us, m.bound_us or 0)
            tick = self.spec.arrival and (tick or now_us - (m.bound_us or 0) >= self.ARRIVAL_TICK_S * 1_000_000)
            if not new and not ending and not tick:
                return None
            m.pending = {"files": new, "ending": ending, "now_us": now_us}
            m.save(self.manifest_path)
        new, ending, now_us = m.pending["files"], m.pending["ending"], m.pending["now_us"]
        reads = [self._read(p, now_us) for p in new]
        table = pa.concat_tables([t for t, _ in reads]) if new else self.staged_schema.empty_table()
        give_back(table.num_rows)  # what parsing the files kept, after a large read (io.storage.memory)
        if self.spec.arrival:  # its rows arrived at now_us, and no row can arrive before it any more:
            # the bound completes their instant (the join's clock is a millisecond behind the bound)
            table = pa.concat_tables([table, self._bound_row(now_us + 1000)])
        rejected = [r for _, bad in reads for r in bad]
        if rejected:
            self._write_rejected(rejected, f"{m.steps:08d}")
            m.rejected_rows += len(rejected)
        return table, new, ending

    CHANGE_CHECK_S = 2.0  # how often the files read before are looked at again (a stat each)
    # an arrival-ordered input with no new files moves its clock this often (a step holding only a
    # bound), so that the other input's rows of a regular join wait at most this long for it
    ARRIVAL_TICK_S = 5.0

    def _report_changed(self, m: Manifest, ending: bool) -> None:
        """Files read before that changed since (`io.changed_files`): dead letters naming them,
        counted (`changed_files`) and logged; a file is read once, by name."""
        if s3.is_s3(self.spec.path) or not m.read_as:
            return
        now = time.monotonic()
        if not ending and now - self._changes_checked < self.CHANGE_CHECK_S:
            return
        self._changes_checked = now
        records = input_files.dead_letters(self.spec.alias, Path(self.spec.path), m.read_as)
        if not records:
            return
        for record in records:
            print(f"streamjoin: input {self.spec.alias}: {record['source']}: {record['reason']}", file=sys.stderr, flush=True)
        self._write_rejected(records, f"changed-{m.changed_files:08d}")
        m.changed_files += len(records)
        m.save(self.manifest_path)

    def _new_files(self, m: Manifest) -> list[str]:
        """The input's files (or s3:// objects) not read before, in name order (`io.sources.input_files`)."""
        if s3.is_s3(self.spec.path):
            return input_files.new_objects(self._s3(), self.spec.path, set(m.files), self.spec.pattern)
        return input_files.new_files(Path(self.spec.path), set(m.files), self.spec.pattern)

    def _s3(self):
        if self._filesystem is None:
            storage = self.spec.storage
            settings = s3.S3Settings(**storage) if storage is not None else s3.S3Settings.from_env()
            self._filesystem = settings.filesystem()
        return self._filesystem

    def _read(self, path: str, now_us: int) -> tuple[pa.Table, list[dict]]:
        """(the file's rows conformed to the schema, its rejected records: io/sources/rejects.py), read at
        wall-clock time `now_us` (for future_limit). A storage error is raised as is: only rows
        that are there and cannot be read are rejected."""
        from streamjoin.io.sources.rejects import RejectedRow, read_lenient

        limit = self.spec.future_limit_ms
        latest_us = now_us + limit * 1000 if limit is not None else None
        fmt = self.spec.format
        if fmt not in _FORMATS:
            raise ValueError(f"input {self.spec.alias}: unknown format '{fmt}' (use json, csv or parquet)")
        source = path
        if s3.is_s3(path):
            bucket, key = s3.split(path)
            # one GET per object; a .gz/.bz2/.zst key of json or csv is decompressed on the way
            opener = self._s3().open_input_file if fmt == "parquet" else self._s3().open_input_stream
            with opener(f"{bucket}/{key}") as f:
                source = f.read()
        if self.spec.changelog is not None:
            return self._read_changes(source, path, now_us)
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                table = pq.read_table(source if isinstance(source, str) else pa.BufferReader(source))
            else:
                table = read_text(source, fmt, self.spec.schema)
            table = self._arrived(conform(table, self.spec.schema, self.spec.rowtime, path), now_us)
            if self._rowtimes_usable(table, latest_us):
                return table, []
        except (ValueError, pa.ArrowException):  # json.JSONDecodeError is a ValueError
            pass
        data = Path(source).read_bytes() if isinstance(source, str) else bytes(source)
        kept, rejected = read_lenient(data, fmt, self.spec.schema, None if self.spec.arrival else self.spec.rowtime,
                                      path, self.spec.alias, latest_us, self.spec.future_limit_ms)
        if rejected and self.spec.on_error == "fail":
            raise RejectedRow(rejected[0])
        return self._arrived(kept, now_us), rejected

    def _read_changes(self, source, path: str, now_us: int) -> tuple[pa.Table, list[dict]]:
        """A changelog file (`InputSpec.changelog`): its events as rows with their CHANGE."""
        from streamjoin.io.sources.changelog import read_debezium
        from streamjoin.io.sources.rejects import RejectedRow, read_lenient

        data = Path(source).read_bytes() if isinstance(source, str) else bytes(source)
        rows, rejected = read_debezium(data, path, self.spec.alias)
        text = "".join(json.dumps(r, default=str) + "\n" for r in rows).encode()
        kept, bad = read_lenient(text, "json", self.spec.schema, None, path, self.spec.alias)
        rejected += bad
        if rejected and self.spec.on_error == "fail":
            raise RejectedRow(rejected[0])
        return self._arrived(kept, now_us), rejected

    def _arrived(self, table: pa.Table, now_us: int) -> pa.Table:
        """An arrival-ordered input's rows (`InputSpec.arrival`) take `now_us` as their rowtime."""
        if not self.spec.arrival or table is None:
            return table
        i = table.column_names.index(self.spec.rowtime)
        return table.set_column(i, self.spec.rowtime, pa.array([now_us] * table.num_rows, pa.int64()).cast(table.schema.field(i).type))

    def _rowtimes_usable(self, table: pa.Table, latest_us: int | None = None) -> bool:
        """Every row (not bound) has a rowtime in the supported range (and at most `latest_us`)."""
        rows = table.filter(pc.invert(pc.fill_null(table.column(BOUND), False)))
        rowtimes = pc.cast(rows.column(self.spec.rowtime), pa.int64())
        if rowtimes.null_count:
            return False
        if not len(rowtimes):
            return True
        low, high = pc.min_max(rowtimes).values()
        return EARLIEST_US <= low.as_py() and high.as_py() < END_US and (latest_us is None or high.as_py() <= latest_us)

    def _split(self, table: pa.Table, clock_us: int | None):
        """(on-time rows, late rows, bounds) of rows in arrival order. Lateness is decided per
        row (SEMANTICS §1-§2): a row is late when its rowtime is below the clock as it stood
        just before the row arrived, that is after every earlier row and bound of this input,
        this step's included. So an input gives the same answer however its rows are batched."""
        is_bound = pc.fill_null(table.column(BOUND), False)
        rowtimes = table.column(self.spec.rowtime)
        if pc.any(pc.and_(pc.invert(is_bound), pc.is_null(rowtimes))).as_py():
            raise ValueError(f"input {self.spec.alias}: a row has no rowtime ({self.spec.rowtime})")
        rowtimes_us = pc.cast(rowtimes, pa.int64())
        data_us = rowtimes_us.filter(pc.invert(is_bound))  # a bound may be the end of input (END_US)
        if len(data_us) and data_us.null_count < len(data_us):
            low, high = pc.min_max(data_us).values()
            if low.as_py() < EARLIEST_US or high.as_py() >= END_US:
                raise ValueError(f"input {self.spec.alias}: a rowtime lies outside the supported range "
                                 f"0001-01-01 to 7999-12-31 ({self.spec.rowtime})")
        late_mask = late_rows(rowtimes_us, is_bound, self.spec.lateness_ms * 1000, clock_us)
        bounds = [v.value for v in table.filter(is_bound).column(self.spec.rowtime) if v.is_valid]
        rows = table.filter(pc.invert(is_bound))
        late_mask = late_mask.filter(pc.invert(is_bound))
        return rows.filter(pc.invert(late_mask)), rows.filter(late_mask), bounds

    def _bound_row(self, rowtime_us: int) -> pa.Table:
        return bound_row(self.staged_schema, self.spec.rowtime, rowtime_us)

    def _write_step(self, table: pa.Table, step: int) -> None:
        import pyarrow.parquet as pq

        path = self.step_path(step)
        tmp = path.parent / f".{path.name}.tmp"  # Spark's file source skips dot files
        table = table.select(self.staged_schema.names).cast(self.staged_schema)
        # uncompressed: written once, read once, on local disk; row groups Spark can split between
        pq.write_table(table, tmp, row_group_size=STEP_CHUNK, compression="none")
        os.replace(tmp, path)

    @property
    def rejected_dir(self) -> Path:
        """`<...>/rejected/<input>/`, beside the late rows' `<...>/late/<input>/`."""
        return self.late_dir.parent.parent / "rejected" / self.late_dir.name

    def _write_rejected(self, rejected: list[dict], name: str) -> None:
        """Dead letters, one JSON object a line, in `rejected-<name>.jsonl` (the step's number for
        files: rewritten whole if the step is redone)."""
        self.rejected_dir.mkdir(parents=True, exist_ok=True)
        path = self.rejected_dir / f"rejected-{name}.jsonl"
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rejected))
        os.replace(tmp, path)

    def _write_late(self, late: pa.Table, step: int) -> None:
        from streamjoin.io.formats.jsonlines import format_rows

        lines = format_rows(late.drop_columns([BOUND]).to_pylist())
        self.late_dir.mkdir(parents=True, exist_ok=True)
        path = self.late_dir / f"late-{step:08d}.jsonl"
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(lines))
        os.replace(tmp, path)


def bound_row(schema: pa.Schema, rowtime: str, rowtime_us: int) -> pa.Table:
    """A rowtime bound as one row of a staged schema: NULLs, the bound, the marker set."""
    values = {f.name: pa.nulls(1, f.type) for f in schema}
    values[rowtime] = pa.array([rowtime_us], pa.int64()).cast(_TS)
    values[BOUND] = pa.array([True])
    return pa.table(values, schema=schema)

