"""EMIT FINAL output in rowtime order (SEMANTICS §6): each micro-batch's rows wait in the
checkpoint (`output/carry-N.arrow`) until Spark's watermark, less the time a NULL-extended row may
still take to appear, has passed their rowtime; then they are written sorted by rowtime. With
`--until-idle` every clock goes to +infinity at the end and the rest is released.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from streamjoin.faults import alive, crash_point, generation
from streamjoin.io.formats.columns import ROWTIME_COLUMN
from streamjoin.io.formats.instants import END_US, spark_watermark_rowtime_us
from streamjoin.io.sinks.writer import RowWriter, write_sorted
from streamjoin.io.storage.memory import give_back


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
    join: dict | None = None  # the batch interval join (lower.batch.batch_sink): steps joined, clocks, retained steps
    committed_version: int | None = None  # S3 sink: the last version this query committed rows under
    pending_release_us: int | None = None  # a release into a topic or stream being sent: its threshold (a replay redoes it)


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
                 bucketed=None, input_top_us=None, custom: bool = False, emit: str = "FINAL", order: tuple = ()):
        self.writer, self.columns, self.order_delay_ms = writer, columns, order_delay_ms
        # ORDER BY ROWTIME, c, ... (plan Query.order_within): each release sorted by rowtime, then these
        self.sort_keys = [(ROWTIME_COLUMN, "ascending"), *[(c, "descending" if d else "ascending") for c, d in order]]
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
        self._born = generation()  # (a crash harness's simulated kill: a killed run's sink writes nothing more)
        self._writes = 0  # state.json writes by this sink: `state` parses it again after each
        self._parsed: tuple[int, dict] | None = None
        self._parsed_lock = threading.Lock()
        # the carry this sink saved last (its file name, its table): loaded again from memory, not
        # read back from the file (a bounded run's whole output is one carry: read back, it was a
        # second copy in memory); another sink's carry (after a restart) is read from its file
        self._held: tuple[str, object] | None = None

    def staged(self) -> None:
        """The feeder staged new input (a sink that can release on that alone does: BatchJoinSink)."""

    def close(self) -> None:
        """The runner stops, its feeder has stopped: end what the sink runs by itself (BatchJoinSink)."""

    def check_resumable(self) -> None:
        """Before a query starts on this checkpoint: raise if it cannot resume (CommittedSink)."""

    def check_batches(self, planned: int | None, done: int | None) -> None:
        """Before a Spark streaming query resumes on this checkpoint: its offset log (last batch
        `planned`) and commit log (last batch `done`) and the batches this sink recorded must agree.
        The sink records a batch inside Spark's batch, before Spark logs it done, so it has recorded
        every done batch and none Spark did not plan. Otherwise part of the checkpoint is not the
        rest's (a folder restored from another copy, removed, or another query's), and resuming
        would skip rows as done or write rows twice: CheckpointMismatch, before anything runs."""
        from streamjoin.errors import CheckpointMismatch

        last = self.state().last_batch
        spark = self.dir.parent / "spark"
        if done is not None and last < done:
            found = f"Spark's commit log ({spark / 'commits'}) holds micro-batches up to {done} as done, but the sink's " \
                    f"record ({self.state_path}) " + (f"ends at batch {last}" if last >= 0 else "holds none")
            lost = f"the rows of batches {last + 1} to {done} were never written, and Spark would not run those batches again"
        elif last >= 0 and (planned is None or last > planned):
            found = f"the sink's record ({self.state_path}) holds micro-batches up to {last}, but Spark's offset log " \
                    f"({spark / 'offsets'}) " + (f"ends at batch {planned}" if planned is not None else "holds none")
            lost = "Spark would number new batches as ones the sink has recorded, and the sink would skip their rows as written"
        else:
            return
        raise CheckpointMismatch(f"checkpoint {self.dir.parent} cannot be resumed: {found}: {lost}. Nothing was run or "
                                 "written. Restore the whole checkpoint folder from one copy, or start on a new checkpoint "
                                 "(every input is read again from its start).")

    def state(self) -> SinkState:
        """state.json as this sink last wrote it (or as a restart finds it). Parsed once per write:
        nested values (`join`, `groups`) are shared between readers, so they are replaced, never
        changed in place. (A batch join's retained steps make it large: at a 1-hour window parsing
        it at every read was a sixth of the driver's CPU, 2026-11-27.)"""
        with self._parsed_lock:
            if self._parsed is None or self._parsed[0] != self._writes:
                # the count before the read: a write that lands while the file is read leaves the
                # entry stale (parsed again next time), never the old text under the new count
                # (whose carry file that write removed: FileNotFoundError, seen under load)
                writes = self._writes
                parsed = json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
                self._parsed = (writes, parsed)
            return SinkState(**self._parsed[1])

    def __call__(self, frame, batch_id: int) -> None:
        new = frame.toArrow()  # a replayed batch's too: computing its rows is what commits its state
        crash_point("sink.after_rows")
        with self.lock:
            state = self.state()
            added = batch_id > state.last_batch  # else already in the carry (a replay after a crash)
            if added:
                if self.custom:
                    new = self._take_meta(state, new)
                tables = [t for t in (self._load(state.carry), new) if t is not None and t.num_rows]
                state.last_batch = batch_id
                self._save(state, pa.concat_tables(tables) if tables else None)
        if added and self.custom and self.emit != "FINAL":
            self._release(None)
        crash_point("sink.after_batch")

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
            # the operator's watermark is the clock - 1 ms: every instant up to it is complete
            return self._release_operator(at_us + 999)
        self._release(at_us - self.order_delay_ms * 1000)

    def _release_operator(self, upto_us: int) -> None:
        """streamjoin's operator: EMIT FINAL rows up to `upto_us` and below every group's hold (the
        lowest rowtime a group may still emit); EAGER and CHANGES rows at once."""
        if self.emit != "FINAL":
            return self._release(None)
        holds = [h for h, _ in (self.state().groups or {}).values() if h is not None]
        self._release(min([upto_us, *holds]))

    def finish(self) -> None:
        """End of input: release everything left."""
        self._release(None)

    def settle(self, clock_us: int) -> None:
        """Release what a stateless query's clock (see Runner.settle) makes final: buckets that end at
        or before it; rows older than it (a row at the clock itself may still come)."""
        if self.bucketed is not None:
            self._release(clock_us)
        elif self.custom:  # (a prompt view read by the operator: still below its holds)
            self._release_operator(clock_us - 1)
        else:
            self._release(clock_us - 1 - self.order_delay_ms * 1000)

    def _release(self, threshold_us: int | None) -> None:
        if self.bucketed is not None:
            return self._release_buckets(threshold_us)
        with self.lock:
            state = self.state()
            if state.pending_release_us is not None:
                # a release into a topic or stream cut short by a crash: redone with exactly its
                # threshold, so that it holds the same rows and the writer finds which it sent
                threshold_us = None if state.pending_release_us >= END_US else state.pending_release_us
            table = self._load(state.carry)
            done, rest = None, None
            if table is not None and table.num_rows:
                rowtimes = None if threshold_us is None else pc.cast(table.column(ROWTIME_COLUMN), pa.int64())
                if rowtimes is None or (not rowtimes.null_count and pc.max(rowtimes).as_py() <= threshold_us):
                    done = table  # all of it final (a bounded run's end): no copy
                else:
                    ready = pc.less_equal(rowtimes, threshold_us)
                    done, rest = table.filter(ready), table.filter(pc.invert(ready))
            if self._write(state, done, threshold_us):
                self._save(state, rest)
            elif state.pending_release_us is not None:  # (nothing left to redo: never the case, but never stuck)
                state.pending_release_us = None
                self._save_state(state)

    def _write(self, state: SinkState, done, threshold_us: int | None) -> bool:
        """Write the released rows `done` (all rows up to `threshold_us`); False: nothing to do."""
        if done is None or not done.num_rows:
            return False
        if getattr(self.writer, "appends", False):  # a topic, a stream: what was sent cannot be taken back
            state.pending_release_us = END_US if threshold_us is None else threshold_us
            self._save_state(state)  # the plan first: a crash from here on redoes this very release
        # written in sorted order a slice at a time: the indices, not a sorted copy of the rows
        order = pc.sort_indices(done, sort_keys=self.sort_keys)
        rows = done.select(self.columns)
        write_sorted(self.writer, f"part-{state.releases:08d}", rows, order)  # names sort in emission order
        state.pending_release_us = None
        state.releases += 1
        state.rows_emitted += rows.num_rows
        give_back(rows.num_rows)  # what formatting the text kept, after a large release (io.storage.memory)
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
        alive(self._born)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.__dict__))
        os.replace(tmp, self.state_path)
        self._writes += 1

    def _save(self, state: SinkState, carry) -> None:
        alive(self._born)
        old = state.carry
        state.carry, self._held = None, None
        if carry is not None and carry.num_rows:
            state.carry = f"carry-{state.last_batch:08d}-{state.releases:08d}.arrow"
            with ipc.new_file(self.dir / state.carry, carry.schema) as w:
                w.write_table(carry)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.__dict__))
        crash_point("sink.before_state")
        os.replace(tmp, self.state_path)
        self._writes += 1
        self._held = (state.carry, carry) if state.carry else None
        if old and old != state.carry:
            (self.dir / old).unlink(missing_ok=True)

    def _load(self, name: str | None):
        if not name:
            return None
        if self._held is not None and self._held[0] == name:
            return self._held[1]
        with ipc.open_file(self.dir / name) as reader:
            return reader.read_all()
