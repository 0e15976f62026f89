"""`INSERT INTO sink SELECT STREAM ...` where the sink is a table in S3 (or a local folder).

A table needs no order, so a micro-batch's rows go straight from the executors into the table
and are committed under the batch id (`streamjoin.io.sinks.table_sink`). A bucketed table-preserving
join still holds its stream rows until their bucket closes (the carry of `OrderedSink`); each
release is then written the same way under its release number. After every batch the hours
the clock has passed get their completeness markers.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

from streamjoin.faults import alive, crash_point
from streamjoin.io.formats.columns import ROWTIME_COLUMN
from streamjoin.io.formats.instants import END_US
from streamjoin.io.formats.jsonlines import format_instant
from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.io.sinks.table_sink import HOUR, HOUR_US, TableSink, hour_name, hour_start_us


class CommittedSink(OrderedSink):
    def __init__(self, checkpoint: Path, lowered, input_top_us, query_file: str):
        super().__init__(checkpoint, None, lowered.columns, lowered.order_delay_ms, lowered.bucketed, input_top_us,
                         lowered.custom, lowered.emit)
        self.table = TableSink(lowered.sink, _app_id(checkpoint))
        self.snapshots = [s.identity() for s in lowered.snapshots]
        self.query_file = query_file
        self.last_marker: str | None = None
        self._committed: int | None = None  # the last version this run committed rows under

    def __call__(self, frame, batch_id: int) -> None:
        if self.bucketed is not None:
            return super().__call__(frame, batch_id)  # held until the bucket closes
        if self.custom or self.table.spec.type == "upsert":  # the driver applies them: merged by key into an upsert table
            self._apply(frame, batch_id)
        else:  # a replayed batch committed before: its rows computed (the query's state) and not written again
            rows = self.table.write(frame.select(*self.columns, ROWTIME_COLUMN), batch_id, ROWTIME_COLUMN)
            with self.lock:
                self._record(self.state(), batch_id, rows)
        crash_point("sink.after_batch")

    def _apply(self, frame, batch_id: int) -> None:
        """streamjoin's operator (a regular join: rows emitted at once, EMIT EAGER or CHANGES), or any
        query into an upsert table (a running aggregate's changelog: merged by the key, not appended
        with its -D rows): the batch's rows, the operator's meta rows aside, applied to the table
        under the batch id."""
        from streamjoin.io.formats.columns import OP

        table = frame.toArrow()  # a replayed batch's too: computing its rows is what commits its state
        crash_point("sink.after_rows")
        with self.lock:
            state = self.state()
            rows = (self._take_meta(state, table) if self.custom else table).select(self.columns)
            self._record(state, batch_id, self.table.apply(rows, batch_id, OP if OP in self.columns else None))

    def _record(self, state, batch_id: int, rows: int | None) -> None:
        """A written batch in the sink's state: its rows (None: a replay, committed before)."""
        if rows is not None and batch_id > state.last_batch:
            state.rows_emitted += rows
        if rows:
            self._committed = max(batch_id, self._committed or -1)
        state.last_batch = max(state.last_batch, batch_id)
        self._save(state, None)

    def _release(self, threshold_us: int | None) -> None:
        if self.custom:
            return
        if self.bucketed is not None:
            self._release_buckets(threshold_us)
        self._mark(threshold_us)

    def _write_buckets(self, rows, buckets: list[int], release: int) -> int:
        frame = self.bucketed.frame(rows, buckets).select(*self.columns, ROWTIME_COLUMN)
        written = self.table.write(frame, release, ROWTIME_COLUMN) or 0
        if written:  # recorded with the release (`_save`, next)
            self._committed = max(release, self._committed or -1)
        return written

    def _save(self, state, carry) -> None:
        if self._committed is not None:
            state.committed_version = max(self._committed, state.committed_version or -1)
        super()._save(state, carry)

    def check_resumable(self) -> None:
        """Refuse to resume when the table lost what this checkpoint committed (storage reset,
        table deleted): the checkpoint would skip those batches as done and the run would
        report success with the rows gone."""
        expected = self.state().committed_version
        if expected is None:
            return
        found = self.table.committer.committed_version()
        if found is not None and found >= expected:
            return
        spec = self.table.spec
        what = "has no table" if self.table.committer.table_version() is None else \
            f"holds this query's commits only up to version {found}" if found is not None else "holds none of this query's commits"
        raise RuntimeError(
            f"sink {spec.name}: this checkpoint ({self.dir.parent}) committed rows to {spec.path} up to version "
            f"{expected} (app id {self.table.app_id}), but {spec.path} {what}: the sink's storage was reset or "
            "the table removed, and those rows are gone. Nothing was written. To rebuild the table from the inputs, "
            "remove the checkpoint folder and run again (every input is read from the start).")

    def check_batches(self, planned: int | None, done: int | None) -> None:
        """OrderedSink's check, and the table's: its commits under this checkpoint's application id
        are numbered by micro-batch (by release for a bucketed join), so none can be past the last
        batch Spark planned (the last release the sink began)."""
        super().check_batches(planned, done)
        from streamjoin.errors import CheckpointMismatch

        found = self.table.committer.committed_version()
        state = self.state()
        top, what = (state.releases, "release the sink began") if self.bucketed is not None else (
            planned, f"micro-batch in Spark's offset log ({self.dir.parent / 'spark' / 'offsets'})")
        if found is None or (top is not None and found <= top):
            return
        spec = self.table.spec
        raise CheckpointMismatch(
            f"sink {spec.name}: {spec.path} holds commits of this checkpoint's application id ({self.table.app_id}) up to "
            f"version {found}, but the last {what} is {top if top is not None else 'none'}: the checkpoint "
            f"({self.dir.parent}) is older than the table, and resuming it would skip new rows as committed. Nothing "
            "was run or written. Restore the checkpoint folder that wrote the table, or start on a new checkpoint "
            "(every input is read again from its start).")

    def _mark(self, threshold_us: int | None) -> None:
        """Completeness markers for the hours the clock has passed, oldest first. As for buckets,
        no hour past the latest rowtime (or bound) an input delivered closes, except that at end
        of input the hour holding it does."""
        if self.table.spec.partitioned_by != HOUR:
            return
        with self.lock:
            state = self.state()
            if (state.next_marker_us is not None and threshold_us is not None and threshold_us < END_US
                    and ((threshold_us - HOUR_US) // HOUR_US) * HOUR_US < state.next_marker_us):
                return  # the clock has not passed the next hour's end: no need to read the table's log
            counts = self.table.hour_rows()
            first = state.next_marker_us
            if first is None:
                if not counts:
                    return  # hours count from the first committed row's
                first = min(hour_start_us(h) for h in counts)
            tops = [t for t in (self.input_top_us() if self.input_top_us else None,) if t is not None]
            tops += [hour_start_us(h) for h in counts]
            if not tops:
                return
            last = (max(tops) // HOUR_US) * HOUR_US
            if threshold_us is not None and threshold_us < END_US:
                last = min(last, ((threshold_us - HOUR_US) // HOUR_US) * HOUR_US)
            if self.bucketed is not None:
                # an hour is complete once its buckets are written, not when the clock passes it: a
                # release redone after a crash writes only its own buckets, whatever the clock
                # (found by the crash harness: hours marked with 0 rows, their rows committed later)
                if state.next_bucket_us is None:
                    return
                last = min(last, ((state.next_bucket_us - HOUR_US) // HOUR_US) * HOUR_US)
            if last < first:
                return
            for start in range(first, last + HOUR_US, HOUR_US):
                hour = hour_name(start)
                if state.next_marker_us is None and self.table.marked_by_another(hour):
                    continue  # an earlier query's hour (a new checkpoint on an old table): keep its marker
                crash_point("sink.before_marker")
                alive(self._born)
                self.table.mark_complete(hour, counts.get(hour, 0), {
                    "snapshots": self.snapshots,
                    "query": self.query_file,
                    "clock": format_instant(threshold_us) if threshold_us is not None and threshold_us < END_US else "end of input",
                    "completed_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                })
                self.last_marker = hour
            state.next_marker_us = last + HOUR_US
            self._save_state(state)

    def status(self) -> dict:
        state = self.state()
        return {"sink": {
            "path": self.table.spec.path,
            "format": self.table.spec.format,
            "app_id": self.table.app_id,
            "complete_through": hour_name(state.next_marker_us - HOUR_US) if state.next_marker_us is not None else None,
        }}


def _app_id(checkpoint: Path) -> str:
    """The query's application id in the sink's commits: one per checkpoint, so a replay is
    recognised and a new checkpoint (batch ids from 0 again) is not mistaken for one."""
    path = checkpoint / "sink.json"
    # kept only while Spark's own checkpoint is: batch ids restart at 0 with a new one, and the
    # old id's versions would make the sink skip them as replays
    if path.exists() and (checkpoint / "spark" / "metadata").exists():
        return json.loads(path.read_text())["app_id"]
    app_id = f"streamjoin-{uuid.uuid4().hex[:12]}"
    path.write_text(json.dumps({"app_id": app_id}))
    return app_id
