"""The sink of the batch interval join (`lower.batch.batch_join`) and its query (`BatchJoinQuery`).

No Spark streaming query runs: the runner's feeder stages new steps and the sink joins them at
once (`staged`), each join a Spark batch job on executors; `BatchJoinQuery` stands where the
runner keeps a Spark query and reports each join as a micro-batch (status.json, the progress
line). A Spark streaming query over the steps, only to trigger micro-batches, used half the
JVM's CPU at a steady 10K rows/s per stream: listing the steps folders, writing its offset and
commit logs, planning a micro-batch twice a second (docs/runtime.md).

Exactly once: a micro-batch's rows join the carry, and the steps it read, the clocks and the
retained steps are recorded with them in one atomic write of `output/state.json` (as
`OrderedSink` records its carry). A crash before that write redoes the steps (perhaps with
more); a crash after it but before a release is written releases the same rows again under
the same file name, as `OrderedSink` does. Output leaves in rowtime order once final
(`BatchJoin.release_below`); under EMIT EAGER (INNER joins) each join's rows leave as soon as it
has found them, each release in rowtime order, the releases not.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.faults import crash_point
from streamjoin.io.formats.files import BOUND
from streamjoin.io.formats.instants import END_US, engine_us, spark_time
from streamjoin.io.sinks.ordered_sink import OrderedSink
from streamjoin.io.sinks.writer import RowWriter
from streamjoin.io.sources.staging import Stager
from streamjoin.lower.batch.batch_join import INF, BatchJoin, Clocks, clock_of
from streamjoin.lower.batch.chain_join import ChainJoin
from streamjoin.plan.model import Emit

log = logging.getLogger("streamjoin.batch")

GROUP_ROWS = 2_000_000  # data rows (both inputs) joined per Spark job at most, a step at least


class BatchJoinSink(OrderedSink):
    def __init__(self, spark, checkpoint: Path, writer: RowWriter, columns: list[str], batch: BatchJoin | ChainJoin):
        super().__init__(checkpoint, writer, columns, 0)
        self.spark, self.batch = spark, batch
        self.stagers = [Stager(spec) for spec in batch.specs]
        self._stats_cache: dict[tuple[int, int], StepStats] = {}
        self._stats_lock = threading.Lock()
        self.joining = threading.Lock()  # one join at a time; `lock` guards the state and the carry
        self._joiner: threading.Thread | None = None  # a join the feeder started (`staged`)
        self.join_error: Exception | None = None
        self.on_join: Callable[[int], None] | None = None  # after each join, its milliseconds (BatchJoinQuery)
        # EMIT EAGER (INNER joins, and a regular join's appended rows): a join's rows are written as
        # soon as it has found them, not once the clocks pass them (`release_final`)
        self.eager = batch.query.emit == Emit.EAGER or any(j.join_type.filters for j in batch.query.joins)  # (regular semi / anti)

    def release(self, watermark: str | None) -> None:
        """After `Runner.process_available`: whatever is staged and not joined yet, then what is final."""
        self.advance()

    def settle(self, clock_us: int) -> None:
        self.advance()

    def finish(self) -> None:
        self.advance()
        self._release(None)

    def staged(self) -> None:
        """After the feeder staged new steps: release what they make final, without waiting for
        the join that is running (`final_below`: the rows they can still pair hold their rowtimes).
        The join of the new steps starts at once, in a thread beside the feeder; its failure is
        raised here, on the feeder's next pass, and ends the query (`BatchJoinQuery.isActive`)."""
        if self.join_error is not None:
            raise self.join_error
        if self.release_final() and (self._joiner is None or not self._joiner.is_alive()):
            self._joiner = threading.Thread(target=self._join_beside, name="streamjoin-batch-join", daemon=True)
            self._joiner.start()

    def _join_beside(self) -> None:
        try:
            self.advance()
        except Exception as error:  # raised by the feeder's next `staged` call
            log.debug("batch join failed", exc_info=True)
            self.join_error = error

    def close(self) -> None:
        """The runner stops: a join the feeder started ends first (no join after the query stops)."""
        if self._joiner is not None:
            self._joiner.join()

    def advance(self) -> None:
        """Join the steps staged since the last join, a slice of at most GROUP_ROWS rows at a
        time in rowtime order, releasing what is final before and after each: a large arrival (a
        bounded run's whole input) is joined, held and written a bounded part at a time. One join
        at a time (`joining`); the Spark job runs outside `lock`, so releases go on beside it."""
        while True:
            if not self.release_final():  # after a restart too: what a crash kept from being written
                return
            with self.joining:  # reported before the next join, or a caller's advance, can start
                started = time.monotonic()
                if not self._join_new_steps():
                    return
                if self.on_join is not None:
                    self.on_join(round((time.monotonic() - started) * 1000))

    def release_final(self) -> bool:
        """Write the carried rows that are final (`BatchJoin.final_below`); True: steps are
        staged that are not joined yet.

        Joins run as soon as steps are staged, not only once the output waits for them: putting
        them off (fewer joins, each re-reading the window once for more new rows) saved 3% of
        the CPU at 10K rows/s and 21% at 2K, but at 2K the rows a join held back made p99 3.8 s
        against 2.4 s (docs/runtime.md)."""
        joined = self.state().join
        join = joined or self._start()
        clocks, done = Clocks(*join["clocks"]), join["done"]
        staged, lowest, waiting = list(join["clocks"]), None, False
        for n, stager in enumerate(self.stagers):
            pending = [self._stats(n, k) for k in range(done[n], _present(stager, done[n]))]
            staged[n] = _clock_after(staged[n], pending, stager.spec.lateness_ms)
            waiting = waiting or bool(pending)
            lows = [st.low for st in pending if st.rows]
            if lows:
                lowest = min(lows) if lowest is None else min(lowest, *lows)
        below = INF if self.eager else self.batch.final_below(clocks, Clocks(*staged), lowest)
        if joined is not None:
            self._release(None if below >= INF else below - 1)
        return waiting

    def _start(self) -> dict:
        """The join's state before its first micro-batch: no step joined, no clock, none retained."""
        n = len(self.stagers)
        return {"done": [0] * n, "clocks": [None] * n, "steps": [{} for _ in range(n)]}

    def _group(self, done: list[int]) -> list[int]:
        """How far to join this time: each input's steps from `done`, taking next the step (of
        either input) whose rows end earliest, until GROUP_ROWS data rows (at least one step)."""
        present = [_present(s, d) for s, d in zip(self.stagers, done, strict=True)]
        upto, rows = list(done), 0
        while upto != present and (rows < GROUP_ROWS or upto == done):
            candidates = []
            for i in range(len(self.stagers)):
                if upto[i] < present[i]:
                    top = self._stats(i, upto[i]).top
                    candidates.append((INF if top is None else top, i))
            _, n = min(candidates)
            rows += self._stats(n, upto[n]).rows
            upto[n] += 1
        return upto

    def _stats(self, n: int, step: int) -> StepStats:
        key = (n, step)
        with self._stats_lock:
            found = self._stats_cache.get(key)
        if found is None:
            found = _stats(self.stagers[n], step)
            with self._stats_lock:
                self._stats_cache[key] = found
        return found

    def _join_new_steps(self) -> bool:
        """Join the next group of steps (`_group`); False: nothing new."""
        join = self.state().join or self._start()
        done = join["done"]
        present = self._group(done)
        if present == done:
            return False
        before = Clocks(*join["clocks"])
        new_stats = [{n: self._stats(i, n) for n in range(d, p)} for i, (d, p) in enumerate(zip(done, present, strict=True))]
        with self._stats_lock:
            for key in [k for k in self._stats_cache if k[1] < done[k[0]]]:
                del self._stats_cache[key]
        after = Clocks(*[_clock_after(join["clocks"][n], new_stats[n].values(), spec.lateness_ms)
                         for n, spec in enumerate(self.batch.specs)])
        retain = self.batch.retain_from(before)
        inputs = range(len(self.stagers))
        retained = [{int(k): StepStats(*st) for k, st in join["steps"][n].items()} for n in inputs]
        old_stats = [{k: st for k, st in retained[n].items() if st.high is not None and st.high >= retain[n]} for n in inputs]
        new_stats = [{k: st for k, st in new_stats[n].items() if st.rows} for n in inputs]
        rows = None
        if any(new_stats) or (self.batch.outer and after != before):  # a clock moved: preserved rows may leave
            if self.batch.keyed is not None:
                rows = self.batch.keyed_rows(self.spark, tuple(str(s.steps_dir) for s in self.stagers),
                                             tuple(list(new_stats[n]) for n in range(2)),
                                             tuple(list(old_stats[n]) for n in range(2)), before, after,
                                             sum(st.rows for side in old_stats for st in side.values()))
            else:
                rows = self._scan(new_stats, old_stats, before, after)
        # the steps still holding rows in range after this micro-batch (their stats), by input
        keep = self.batch.retain_from(after)
        steps = []
        for n in inputs:
            merged = {**{str(k): v for k, v in retained[n].items()}, **{str(k): v for k, v in new_stats[n].items()}}
            steps.append({k: v for k, v in merged.items() if v.rows and v.high is not None and v.high >= keep[n]})
        crash_point("sink.after_rows")
        with self.lock:  # a release may have written since the state was read: only the carry can differ
            state = self.state()
            state.join = {"done": present, "clocks": list(after), "steps": steps}
            state.last_batch += 1
            carry = self._load(state.carry)
            tables = [t for t in (carry, rows) if t is not None and t.num_rows]
            self._save(state, pa.concat_tables(tables) if tables else None)
        log.debug("batch join: steps %s -> %s, clocks %s, %s rows, retained steps %s", done, present, state.join["clocks"],
                  rows.num_rows if rows is not None else 0, [len(s) for s in steps])
        return True

    def _scan(self, new_stats: list[dict], old_stats: list[dict], before: Clocks, after: Clocks) -> pa.Table | None:
        """The micro-batch's rows by scanning the retained steps (`BatchJoin.step`)."""
        old = [[str(s.step_path(k)) for k in old_stats[n]] for n, s in enumerate(self.stagers)]
        new = [[str(s.step_path(k)) for k in new_stats[n]] for n, s in enumerate(self.stagers)]
        # the most rows an input's side of this micro-batch holds (its new and retained steps')
        inputs = range(len(self.stagers))
        held = max(sum(st.rows for st in (*old_stats[n].values(), *new_stats[n].values())) for n in inputs)
        sizes = tuple((sum(st.rows for st in new_stats[n].values()), sum(st.rows for st in old_stats[n].values()))
                      for n in inputs)
        frame = self.batch.step(self.spark, tuple(new), tuple(old), before, after, held, sizes)
        return frame.toArrow() if frame is not None else None

    def status(self) -> dict:
        """The rows the join retains (its state): those of the steps still in range."""
        join = self.state().join or {}
        return {"operator_state_rows": sum(StepStats(*st).rows for side in join.get("steps", []) for st in side.values())}


def _clock_after(was: int | None, stats, lateness_ms: int) -> int | None:
    """An input's clock once steps with these `_stats` are staged (it never goes back)."""
    tops = [st.top for st in stats if st.top is not None]
    now = clock_of(max(tops), lateness_ms) if tops else None
    return was if now is None else now if was is None else max(was, now)


def _present(stager: Stager, done: int) -> int:
    """How many steps are staged, in order (a step's file appears after every earlier one's)."""
    n = done
    while stager.step_path(n).exists():
        n += 1
    return n


class StepStats(NamedTuple):
    """What the join keeps of a staged step (in output/state.json as a list, in this order), µs."""

    low: int | None  # the lowest data rowtime
    high: int | None  # the highest data rowtime
    rows: int  # data rows
    top: int | None  # the highest rowtime, bound rows included


def _stats(stager: Stager, step: int) -> StepStats:
    """A staged step's `StepStats`."""
    import pyarrow.parquet as pq

    spec = stager.spec
    table = pq.read_table(stager.step_path(step), columns=[spec.rowtime, BOUND])
    rowtimes = pc.cast(table.column(spec.rowtime), pa.int64())
    data = rowtimes.filter(pc.invert(pc.fill_null(table.column(BOUND), False)))
    low, high = pc.min_max(data).values() if len(data) else (None, None)
    top = pc.max(rowtimes).as_py() if len(rowtimes) else None
    return StepStats(low.as_py() if low is not None else None, high.as_py() if high is not None else None, len(data), top)


class BatchJoinQuery:
    """What the runner reads of a Spark streaming query, for the batch interval join, which runs
    none: active until stopped, failed when a join failed, each join reported as a micro-batch
    (`lastProgress` in Spark's shape: batch id, duration, the watermark as the joined clocks'
    minimum) to `reported` (the progress listener: status.json and the progress line)."""

    def __init__(self, sink: BatchJoinSink, name: str, reported: Callable[[int], None]):
        self.sink, self.name, self.reported = sink, name, reported
        self.id = uuid.uuid4()
        self._stopped = False
        self.lastProgress: dict | None = None
        self.recentProgress: list[dict] = []
        sink.on_join = self._joined

    @property
    def isActive(self) -> bool:
        return not self._stopped and self.sink.join_error is None

    @property
    def status(self) -> dict:
        joining = self.sink.joining.locked()
        return {"message": "joining staged steps" if joining else "waiting for data to arrive",
                "isDataAvailable": joining, "isTriggerActive": joining}

    def processAllAvailable(self) -> None:
        """Join every staged step (the runner has just staged what the inputs hold)."""
        self.sink.advance()

    def exception(self) -> Exception | None:
        return self.sink.join_error

    def stop(self) -> None:
        self._stopped = True

    def _joined(self, duration_ms: int) -> None:
        """After a join (committed): its progress; reporting it never fails the join."""
        state = self.sink.state()
        progress = {"id": str(self.id), "name": self.name, "batchId": state.last_batch,
                    "durationMs": {"triggerExecution": duration_ms}, "eventTime": {}}
        clocks = [c for c in (state.join or {}).get("clocks", []) if c is not None]
        try:
            progress["timestamp"] = spark_time(int(time.time() * 1_000_000))
            if clocks and len(clocks) == len(self.sink.stagers):
                progress["eventTime"] = {"watermark": spark_time(engine_us(min(min(clocks), END_US)))}
        except (ValueError, OverflowError, OSError):  # a clock no timestamp can show: status shows none
            log.debug("no watermark for clocks %s", clocks, exc_info=True)
        self.lastProgress = progress
        self.recentProgress = [*self.recentProgress[-99:], progress]
        self.reported(state.last_batch)
