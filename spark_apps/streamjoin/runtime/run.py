"""`streamjoin run`: start the query, release its output in rowtime order, keep its status.

EMIT FINAL output is released once the join's stream clock has passed it (SEMANTICS §6): each
micro-batch's rows wait in the checkpoint (`output/carry-N.arrow`) until Spark's watermark, less
the time a NULL-extended row may still take to appear, has passed their rowtime; then they are
written sorted by rowtime. With `--until-idle` every clock goes to +infinity at the end and the
rest is released.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from streamjoin.errors import one_line_reason
from streamjoin.io.instants import spark_watermark_rowtime_us
from streamjoin.io.source import steps_read
from streamjoin.io.staging import END_US, Stager
from streamjoin.lower.stream_join import ROWTIME_COLUMN, Lowered
from streamjoin.runtime.output import format_rows, format_value

log = logging.getLogger("streamjoin.run")


class RowWriter:
    """Writes released rows: JSON Lines to stdout, or to files in a directory."""

    def __init__(self, target: str):
        self.stdout = target == "-"
        self.dir = None if self.stdout else Path(target)
        if self.dir:
            self.dir.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, rows: list[dict]) -> None:
        lines = format_rows(rows)
        if self.stdout:
            sys.stdout.write("".join(lines))
            sys.stdout.flush()
        elif lines:
            path = self.dir / f"{name}.jsonl"
            tmp = self.dir / f".{name}.jsonl.tmp"
            tmp.write_text("".join(lines))
            os.replace(tmp, path)  # idempotent by name: a replayed batch rewrites the same file


@dataclass
class SinkState:
    last_batch: int = -1  # the last micro-batch whose rows are in the carry
    carry: str | None = None  # unreleased rows (an Arrow file in checkpoint/output)
    rows_emitted: int = 0
    releases: int = 0  # output files written so far (their names count up)
    next_bucket_us: int | None = None  # bucketed table-preserving join: the first bucket not yet closed
    next_marker_us: int | None = None  # S3 sink: the first hour without a completeness marker
    pending_last_us: int | None = None  # a bucketed release being written: its last bucket (a replay redoes exactly it)
    groups: dict | None = None  # custom operator: group -> [hold (us) or None, rows held] (streamjoin.operator)
    bound_us: int | None = None  # a part of a cut chain (StageSink): the last rowtime bound written
    pending_stage_us: int | None = None  # a StageSink release being written: its threshold (a replay redoes exactly it)


class OrderedSink:
    """Keeps result rows in the checkpoint until they are final, then writes them in order.

    `__call__` is the foreachBatch target: it adds a micro-batch's rows to the carry (once per
    batch id, so a replayed batch is not added twice). `release` runs after every micro-batch
    with the watermark Spark used in it: rows at or below (watermark - order delay) can no
    longer be preceded by another row, so they are written sorted by rowtime.
    A crash between writing a release and recording it releases those rows again on restart,
    under the same file name: with `--output DIR` the file is rewritten (each row exactly once);
    on stdout, which cannot be taken back, that one release is printed again.
    """

    def __init__(self, checkpoint: Path, writer: RowWriter, columns: list[str], order_delay_ms: int,
                 bucketed=None, input_top_us=None, custom: bool = False, emit: str = "FINAL"):
        self.writer, self.columns, self.order_delay_ms = writer, columns, order_delay_ms
        # streamjoin's operator: its meta rows carry each group's hold (the lowest rowtime it may
        # still emit); FINAL output is released up to the clock and below every hold. EAGER and
        # CHANGES are not ordered (SEMANTICS §6): their rows leave with the batch that made them.
        self.custom, self.emit = custom, emit
        self.bucketed = bucketed  # streamjoin.lower.bucketed.BucketedJoin, or None
        self.input_top_us = input_top_us  # () -> the latest rowtime (or bound) any input has delivered
        self.dir = checkpoint / "output"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_path = self.dir / "state.json"
        self.lock = threading.Lock()

    def state(self) -> SinkState:
        return SinkState(**json.loads(self.state_path.read_text())) if self.state_path.exists() else SinkState()

    def __call__(self, frame, batch_id: int) -> None:
        new = frame.toArrow()
        with self.lock:
            state = self.state()
            if batch_id <= state.last_batch:
                return  # already in the carry (a replay after a crash)
            if self.custom:
                new = self._take_meta(state, new)
            tables = [t for t in (self._load(state.carry), new) if t is not None and t.num_rows]
            state.last_batch = batch_id
            self._save(state, pa.concat_tables(tables) if tables else None)
        if self.custom and self.emit != "FINAL":
            self._release(None)

    def _take_meta(self, state: SinkState, table):
        """Record the operator's meta rows (the latest per group wins) and return the data rows."""
        meta = pc.fill_null(table.column("__meta"), False)
        groups = dict(state.groups or {})
        rows = table.filter(meta).select(["__group", "__rowtime", "__state"])
        holds = pc.cast(rows.column("__rowtime"), pa.int64()).to_pylist()
        for group, hold, held in zip(rows.column("__group").to_pylist(), holds, rows.column("__state").to_pylist(), strict=True):
            if hold is None and not held:
                groups.pop(group, None)
            else:
                groups[group] = [hold, held]
        state.groups = groups
        return table.filter(pc.invert(meta)).drop_columns(["__meta", "__group", "__state"])

    def release(self, watermark: str | None) -> None:
        """Release by the watermark of a batch's progress report (Spark's, in engine time)."""
        at_us = spark_watermark_rowtime_us(watermark)
        if at_us is None:
            return
        if self.custom:
            if self.emit != "FINAL":
                return self._release(None)
            # the operator's watermark is the clock - 1 ms: every instant up to it is complete
            holds = [h for h, _ in (self.state().groups or {}).values() if h is not None]
            return self._release(min([at_us + 999, *holds]))
        self._release(at_us - self.order_delay_ms * 1000)

    def finish(self) -> None:
        """End of input: release everything left."""
        self._release(None)

    def settle(self, clock_us: int) -> None:
        """Release what a stateless query's clock (see Runner.settle) makes final: buckets that end at
        or before it; rows older than it (a row at the clock itself may still come)."""
        if self.bucketed is not None:
            self._release(clock_us)
        else:
            self._release(clock_us - 1 - self.order_delay_ms * 1000)

    def _release(self, threshold_us: int | None) -> None:
        if self.bucketed is not None:
            return self._release_buckets(threshold_us)
        with self.lock:
            state = self.state()
            table = self._load(state.carry)
            done, rest = None, None
            if table is not None and table.num_rows:
                if threshold_us is None:
                    done = table
                else:
                    ready = pc.less_equal(pc.cast(table.column(ROWTIME_COLUMN), pa.int64()), threshold_us)
                    done, rest = table.filter(ready), table.filter(pc.invert(ready))
            if self._write(state, done, threshold_us):
                self._save(state, rest)

    def _write(self, state: SinkState, done, threshold_us: int | None) -> bool:
        """Write the released rows `done` (all rows up to `threshold_us`); False: nothing to do."""
        if done is None or not done.num_rows:
            return False
        rows = done.sort_by([(ROWTIME_COLUMN, "ascending")]).select(self.columns).to_pylist()
        self.writer.write(f"part-{state.releases:08d}", rows)  # names sort in emission order
        state.releases += 1
        state.rows_emitted += len(rows)
        return True

    def _release_buckets(self, threshold_us: int | None) -> None:
        """Close every bucket whose end the clock has passed (at end of input: up to the bucket of
        the latest rowtime any input delivered), in order, including buckets without stream
        rows, and write the bucketed join's rows for them."""
        b = self.bucketed
        with self.lock:
            state = self.state()
            table = self._load(state.carry)
            rowtimes = pc.cast(table.column(ROWTIME_COLUMN), pa.int64()) if table is not None else None
            if state.next_bucket_us is None:
                if table is None or not table.num_rows:
                    return  # buckets count from the first stream row's
                state.next_bucket_us = b.bucket_of(pc.min(rowtimes).as_py())
            # No clock passes the latest rowtime (or bound) an input delivered, except at end of
            # input, where the watermark sits just below +infinity (END minus the lateness):
            # buckets close at most up to the latest delivered one, never up to year 9000.
            tops = [self.input_top_us() if self.input_top_us else None]
            tops.append(pc.max(rowtimes).as_py() if table is not None and table.num_rows else None)
            tops = [t for t in tops if t is not None]
            if not tops:
                return
            last = b.bucket_of(max(tops))
            if threshold_us is not None and threshold_us < END_US:
                last = min(last, b.bucket_of(threshold_us - b.unit_us))  # buckets whose end <= the clock
            if state.pending_last_us is not None:
                # a release that crashed while being written: redo exactly its buckets, so that a
                # sink that skips the replayed version skips the same rows (no bucket is lost)
                last = state.pending_last_us
            if last < state.next_bucket_us:
                return
            buckets = list(range(state.next_bucket_us, last + b.unit_us, b.unit_us))
            if table is not None and table.num_rows:
                ready = pc.less(rowtimes, last + b.unit_us)
                done, rest = table.filter(ready), table.filter(pc.invert(ready))
            else:
                done, rest = table, None
            state.pending_last_us = last
            self._save_state(state)  # the plan first: a crash from here on replays this very release
            state.rows_emitted += self._write_buckets(done, buckets, state.releases)
            state.releases += 1
            state.next_bucket_us = last + b.unit_us
            state.pending_last_us = None
            self._save(state, rest)

    def _write_buckets(self, rows, buckets: list[int], release: int) -> int:
        """Write the bucketed join's output for closed buckets as release number `release`."""
        result = self.bucketed(rows, buckets).select(self.columns).to_pylist()
        self.writer.write(f"part-{release:08d}", result)
        return len(result)

    def status(self) -> dict:
        """What the sink adds to status.json: the rows streamjoin's operator holds (its state)."""
        if not self.custom:
            return {}
        return {"operator_state_rows": sum(held for _, held in (self.state().groups or {}).values())}

    def _save_state(self, state: SinkState) -> None:
        """state.json alone (the carry stays as it is)."""
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.__dict__))
        os.replace(tmp, self.state_path)

    def _save(self, state: SinkState, carry) -> None:
        old = state.carry
        state.carry = None
        if carry is not None and carry.num_rows:
            state.carry = f"carry-{state.last_batch:08d}-{state.releases:08d}.arrow"
            with ipc.new_file(self.dir / state.carry, carry.schema) as w:
                w.write_table(carry)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.__dict__))
        os.replace(tmp, self.state_path)
        if old and old != state.carry:
            (self.dir / old).unlink(missing_ok=True)

    def _load(self, name: str | None):
        if not name:
            return None
        with ipc.open_file(self.dir / name) as reader:
            return reader.read_all()


class StageSink(OrderedSink):
    """The sink of a part of a cut chain (plan.operators.cuts) but the last: its rows, in
    rowtime order, are the next part's input. Each release is one parquet file in the folder the
    next part reads (the same staging as any input), ending with a rowtime bound at the release
    threshold: no later row of this part can be older, so the next part's clock advances with
    this part's, rows or not."""

    def __init__(self, checkpoint: Path, spec, columns: list[str], order_delay_ms: int):
        super().__init__(checkpoint, None, columns, order_delay_ms)
        self.spec = spec
        self.folder = Path(spec.path)
        self.folder.mkdir(parents=True, exist_ok=True)

    def _release(self, threshold_us: int | None) -> None:
        pending = self.state().pending_stage_us
        if pending is not None:
            # a release that crashed between writing its file and recording it: the next part may
            # have read that file already, so it is redone with exactly its threshold (same rows,
            # same name); a later threshold waits for the next release
            threshold_us = None if pending >= END_US else pending
        super()._release(threshold_us)

    def _write(self, state: SinkState, done, threshold_us: int | None) -> bool:
        import pyarrow.parquet as pq

        from streamjoin.io.staging import BOUND, bound_row, staged_schema

        rows = done.sort_by([(ROWTIME_COLUMN, "ascending")]).select(self.columns) if done is not None else None
        rows = rows if rows is not None and rows.num_rows else None
        bound = threshold_us if threshold_us is not None and (state.bound_us is None or threshold_us > state.bound_us) else None
        if rows is None and bound is None:
            return False
        schema = staged_schema(self.spec.schema)
        parts = []
        if rows is not None:
            parts.append(rows.append_column(BOUND, pa.array([False] * rows.num_rows)).cast(schema))
        if bound is not None:
            parts.append(bound_row(schema, ROWTIME_COLUMN, bound))
        name = f"part-{state.releases:08d}.parquet"  # a replayed release rewrites the same file
        state.pending_stage_us = END_US if threshold_us is None else threshold_us
        self._save_state(state)  # the plan first: a crash from here on replays this very release
        tmp = self.folder / f".{name}.tmp"  # the stager skips dot files
        pq.write_table(pa.concat_tables(parts), tmp)
        os.replace(tmp, self.folder / name)
        state.releases += 1
        state.rows_emitted += rows.num_rows if rows is not None else 0
        state.bound_us = bound if bound is not None else state.bound_us
        state.pending_stage_us = None
        return True


class Status:
    """The query's status file (checkpoint/status.json) and a one-line progress summary."""

    def __init__(self, checkpoint: Path, stagers: list[Stager], sink: OrderedSink, query_file: str, snapshots=(), upstream=()):
        self.path = checkpoint / "status.json"
        self.stagers, self.sink, self.query_file = stagers, sink, query_file
        self.upstream = upstream  # the Runners of the earlier parts of a cut chain: their state counts too
        self.snapshots = [s.identity() for s in snapshots]
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.error: str | None = None
        self.final: str | None = None
        self.lock = threading.Lock()

    def snapshot(self, query) -> dict:
        progress = (query.lastProgress if query is not None else None) or {}
        inputs = {}
        clocks = []
        for s in self.stagers:
            m = s.manifest()
            clock = s.clock_us(m)
            clocks.append(clock)
            inputs[s.spec.alias] = {
                "rows_read": m.rows,
                "late_rows": m.late_rows,
                "files": len(m.files),
                "clock": _iso(clock),
                "late_rows_output": s.spec.late_dir,
            }
        known = [c for c in clocks if c is not None]
        return {
            "query": self.query_file,
            "state": "failed" if self.error else "running",
            "error": self.error,
            "batch": progress.get("batchId"),
            "inputs": inputs,
            "snapshots": self.snapshots,
            "join_clock": _iso(min(known)) if len(known) == len(clocks) and known else None,
            "rows_emitted": self.sink.state().rows_emitted,
            **self.sink.status(),
            "late_rows": sum(v["late_rows"] for v in inputs.values()),
            # Spark's state rows, or for streamjoin's operator the join rows it holds
            "state_rows": self.sink.status().get("operator_state_rows", _state_rows(progress))
            + sum(_state_rows(r.query.lastProgress or {}) for r in self.upstream),
            "last_batch_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
            "watermark": _iso(spark_watermark_rowtime_us((progress.get("eventTime") or {}).get("watermark"))),
            "updated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "started_at": self.started_at,
            "pid": os.getpid(),
        }

    def write(self, query, final: str | None = None) -> dict:
        snap = self.snapshot(query)
        with self.lock:
            if self.final and not final:
                return snap  # a progress callback that arrives after the query ended
            if final:
                snap["state"] = self.final = final
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(snap, indent=2))
            os.replace(tmp, self.path)
        return snap

    def line(self, snap: dict) -> str:
        reads = " ".join(f"{a}={v['rows_read']}" for a, v in snap["inputs"].items())
        return (
            f"streamjoin: batch {snap['batch']} read {reads} emitted {snap['rows_emitted']} "
            f"late {snap['late_rows']} state {snap['state_rows']} clock {snap['join_clock']}"
        )


def _state_rows(progress: dict) -> int:
    return sum(op.get("numRowsTotal", 0) for op in progress.get("stateOperators", []))


def _iso(us: int | None) -> str | None:
    """A clock or watermark for people: `YYYY-MM-DD HH:MM:SS.fff`, or "end of input"."""
    if us is None:
        return None
    if us >= END_US:
        return "end of input"
    return format_value(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us))


class Runner:
    """One running query: start it, feed it, end its input, stop it. `run_query` drives it for
    the CLI; tests drive it step by step."""

    def __init__(self, spark, lowered: Lowered, checkpoint: Path, output: str, query_file: str = "<sql>", quiet: bool = False,
                 until_idle: bool = False):
        """`until_idle`: what the inputs hold now is all there is; `end_of_input` then flushes it.
        The end is staged with those rows, so Spark reads, joins and flushes them in two batches
        (the second one Spark runs by itself, its watermark having moved to +infinity)."""
        _refuse_python_source_checkpoint(checkpoint / "spark")  # before any part starts
        checkpoint.mkdir(parents=True, exist_ok=True)
        self.spark = spark
        # a chain cut after its outer joins (plan.operators.cuts): one query per earlier
        # part, each feeding the next; this Runner is the last part and drives them all. Only
        # the first part reads nothing but the user's inputs: only it can end before it starts.
        self.upstream = [
            Runner(spark, part, checkpoint / "stages" / str(n), "", query_file, quiet=True, until_idle=until_idle and n == 0)
            for n, part in enumerate(lowered.upstream)
        ]
        self.stagers = [Stager(spec) for spec in lowered.inputs]
        if until_idle and not self.upstream:
            self._end_inputs()
        self.checkpoint = checkpoint
        self.feed_error: Exception | None = None  # a file that cannot be staged: the query fails
        self._feeding = threading.Lock()  # one staging pass at a time (the feeder thread's, process_available's)
        self._stopping = threading.Event()
        try:
            self.feed()  # before the start: the first batch reads everything there is
        except Exception as error:  # noqa: BLE001 - raised by the runner's next check, as a failure of the query
            self.feed_error = error
        if lowered.stage_output is not None:
            self.sink = StageSink(checkpoint, lowered.stage_spec, lowered.columns, lowered.order_delay_ms)
        elif lowered.sink is not None:
            from streamjoin.runtime.committed import CommittedSink

            self.sink = CommittedSink(checkpoint, lowered, self.input_top_us, query_file)
        else:
            self.sink = OrderedSink(
                checkpoint, RowWriter(output), lowered.columns, lowered.order_delay_ms, lowered.bucketed, self.input_top_us,
                lowered.custom, lowered.emit,
            )
        parts = {part.stage_spec.alias for part in lowered.upstream}  # staged inputs that are not the user's
        user = [s for r in [*self.upstream, self] for s in r.stagers if s.spec.alias not in parts]
        self.status = Status(checkpoint, user, self.sink, query_file, lowered.snapshots, self.upstream)
        self.name = f"streamjoin-{uuid.uuid4().hex[:12]}"  # the listener hears every query of the session
        self.listener = _ProgressListener(self.status, self.sink, self.name, quiet)
        spark.streams.addListener(self.listener)
        self.query = (
            lowered.frame.writeStream.foreachBatch(self.sink)
            .queryName(self.name)
            .option("checkpointLocation", str(checkpoint / "spark"))
            .trigger(processingTime="500 milliseconds")
            .start()
        )
        self.listener.query = self.query
        self.listener.settle = self.settle
        self._feeder = threading.Thread(target=self._feed_every, args=(0.5,), name=f"{self.name}-feeder", daemon=True)
        self._feeder.start()
        self.status.write(self.query)  # at once: a restarted query shows its new snapshots before any batch

    def input_top_us(self) -> int | None:
        """The latest rowtime, or rowtime bound short of end of input, any input delivered."""
        tops = []
        for s in self.stagers:
            m = s.manifest()
            tops += [v for v in (m.max_rowtime_us,) if v is not None]
            if m.bound_us is not None and m.bound_us < END_US:
                tops.append(m.bound_us - 1)
        return max(tops) if tops else None

    def feed(self) -> None:
        """Stage what the inputs hold now (all inputs at once), as steps Spark reads next. A
        failed step records nothing: the file is read again by the next pass."""
        from concurrent.futures import ThreadPoolExecutor

        with self._feeding, ThreadPoolExecutor(max_workers=max(1, len(self.stagers))) as pool:
            for future in [pool.submit(s.advance) for s in self.stagers]:
                future.result()

    def _feed_every(self, seconds: float) -> None:
        """The feeder thread: stage new files as they arrive, until the query stops or a file
        cannot be staged (then the runner fails the query with that reason)."""
        while self.feed_error is None and not self._stopping.wait(seconds):
            try:
                self.feed()
            except Exception as error:  # noqa: BLE001 - raised by the runner's next check
                log.debug("staging failed", exc_info=True)
                self.feed_error = error

    def process_available(self) -> None:
        """Ingest and process everything the inputs hold now."""
        for part in self.upstream:
            part.process_available()
        self._raise_if_failed()
        self.feed()
        self.query.processAllAvailable()
        self._raise_if_failed()
        # The listener releases after every batch, but asynchronously, and a restarted query's
        # first batch may never reach it: release here by the last batch's watermark too, so what
        # is final is written when this returns (a release is idempotent, under the sink's lock).
        recent = self.query.recentProgress
        if recent:
            self.sink.release((recent[-1].get("eventTime") or {}).get("watermark"))
            self.status.write(self.query)
        self._raise_if_failed()
        self.settle()

    def settle(self) -> None:
        """Release by the inputs' clock when the query is stateless and idle.

        A query without a stateful operator (a stream-table join, say) emits every row in the
        batch that reads it, but Spark runs no batch just to move its watermark on, so the last
        hour would wait for the next row. Once every staged step is processed, rows older than
        the join clock (min of the inputs' clocks) can no longer come: release up to it."""
        progress = self.query.lastProgress or {}
        if not progress or progress.get("stateOperators"):
            return  # Spark's watermark, after each batch, drives a stateful query
        manifests = [s.manifest() for s in self.stagers]
        for stager, m in zip(self.stagers, manifests, strict=True):
            read = [steps_read(self.checkpoint / "spark", source, stager) for source in progress.get("sources", [])]
            read = [n for n in read if n is not None]  # the sources that read this input's steps
            if not read or any(n != m.steps for n in read):
                return  # a step is staged but not processed yet: the next batch settles
        clocks = [s.clock_us(m) for s, m in zip(self.stagers, manifests, strict=True)]
        if clocks and None not in clocks:
            self.sink.settle(min(clocks))

    def end_of_input(self) -> None:
        """Every clock to +infinity: flush all pending results (SEMANTICS §1)."""
        for part in self.upstream:  # each part's rows are all written before the next part ends
            part.end_of_input()
        self._end_inputs()
        deadline = time.time() + 600
        # once the end is staged, processAllAvailable returns only after the batch that reads it
        # and the no-data batch that follows it (Spark constructs that one before reporting idle)
        self.process_available()
        while not all(s.manifest().ended for s in self.stagers):
            if time.time() > deadline:
                raise TimeoutError("the end-of-input flush did not finish within 10 minutes")
            self.process_available()
        self.sink.finish()

    def _end_inputs(self) -> None:
        for s in self.stagers:
            (s.dir / "END").touch()

    def wait_for_signal(self, until=None, tick=None) -> None:
        """Run until SIGTERM/SIGINT, or until `until()` is true (checked every second; `tick()`
        runs then too), then let the running micro-batch finish."""
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.is_set() and all(r.query.isActive and r.listener.error is None and r.feed_error is None
                                        for r in self._parts()):
            if until is not None and until():
                break
            if tick is not None:
                tick()
            stop.wait(1.0)
        self._raise_if_failed()
        for r in self._parts():
            while r.query.isActive and r.query.status.get("isTriggerActive"):
                time.sleep(0.1)  # let the current micro-batch finish

    def _parts(self) -> list[Runner]:
        return [*self.upstream, self]

    def _raise_if_failed(self) -> None:
        for part in self.upstream:
            part._raise_if_failed()
        if self.feed_error is not None:
            raise self.feed_error
        _raise_if_failed(self.query)
        if self.listener.error is not None:
            error = self.listener.error
            raise RuntimeError(f"releasing output failed: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")

    def stop(self, final: str) -> dict:
        for part in self.upstream:
            part.stop(final)
        self._stopping.set()
        self._feeder.join()  # a staging pass in progress ends first: a restart must not stage beside it
        # the last batch's progress event may still be releasing output: let it finish, so that
        # a query restarted in this process never has two sinks on one checkpoint
        last = (self.query.lastProgress or {}).get("batchId")
        deadline = time.time() + 5  # a missed release is not lost: the rows stay in the carry
        while last is not None and self.listener.handled < last and time.time() < deadline and self.listener.error is None:
            time.sleep(0.05)
        self.spark.streams.removeListener(self.listener)  # before stop: no callback into a closing driver
        self.query.stop()
        with self.sink.lock:  # a release still running (a progress event, an idle settle) ends first
            pass
        return self.status.write(self.query, final=final)

    def fail(self, error: Exception) -> None:
        self.status.error = one_line_reason(error)  # the root cause, as the CLI's last line says it
        try:
            self.stop("failed")
        except Exception:  # the query may already be dead; the status says why
            log.debug("stopping a failed query", exc_info=True)


def run_query(spark, lowered: Lowered, checkpoint: Path, output: str, until_idle: bool, query_file: str) -> dict:
    """Run until idle (then flush and return) or until SIGTERM/SIGINT; returns the last status."""
    runner = Runner(spark, lowered, checkpoint, output, query_file, until_idle=until_idle)
    try:
        if until_idle:
            runner.end_of_input()
        else:
            runner.wait_for_signal()
    except Exception as error:
        runner.fail(error)
        raise
    return runner.stop("finished" if until_idle else "stopped")


def _refuse_python_source_checkpoint(spark_checkpoint: Path) -> None:
    """Spark's checkpoint of a query whose inputs were a Python source (before 2026-11-23,
    offsets `{"steps": n}`) cannot be resumed by the file source that reads the steps now."""
    offsets = [p for p in (spark_checkpoint / "offsets").glob("*") if p.name.isdigit()]
    if offsets and '{"steps":' in max(offsets, key=lambda p: int(p.name)).read_text():
        raise ValueError(f"{spark_checkpoint.parent} was written by an earlier streamjoin (its inputs' offsets are "
                         "the old staged source's): start this query on a new checkpoint")


def _progress_listener_base():
    from pyspark.sql.streaming import StreamingQueryListener

    return StreamingQueryListener


class _ProgressListener(_progress_listener_base()):
    """After every micro-batch: refresh the status file, print the progress line."""

    def __init__(self, status: Status, sink: OrderedSink, name: str, quiet: bool = False):
        self.status, self.sink, self.name, self.quiet = status, sink, name, quiet
        self.query = None
        self.settle = None  # Runner.settle, once the query runs
        self.error: Exception | None = None
        self.handled = -1  # the last batch id whose progress was handled

    def onQueryStarted(self, event):
        pass

    def onQueryProgress(self, event):
        if event.progress.name != self.name:
            return  # another query's (a part of a cut chain, a test's)
        try:
            self.sink.release((event.progress.eventTime or {}).get("watermark"))
            if self.query is not None:
                snap = self.status.write(self.query)
                if not self.quiet:
                    print(self.status.line(snap), file=sys.stderr, flush=True)
        except Exception as error:  # Spark would only log it: the runner raises it instead
            log.debug("release failed", exc_info=True)
            self.error = error
        finally:
            self.handled = max(self.handled, event.progress.batchId)

    def onQueryIdle(self, event):
        if self.query is None or str(event.id) != str(self.query.id):
            return
        try:
            if self.settle is not None:
                self.settle()
        except Exception as error:  # noqa: BLE001 - raised by the runner, like a release failure
            log.debug("settle failed", exc_info=True)
            self.error = error

    def onQueryTerminated(self, event):
        pass


def _raise_if_failed(query) -> None:
    error = query.exception()
    if error is not None:
        raise RuntimeError(str(error).splitlines()[0])
