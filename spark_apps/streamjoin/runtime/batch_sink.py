"""The sink of the batch interval join (`lower.batch_join`): the streaming query only triggers
micro-batches (its rows are never read); each call joins the steps staged since the last one.

Exactly once: a micro-batch's rows join the carry, and the steps it read, the clocks and the
retained steps are recorded with them in one atomic write of `output/state.json` (as
`OrderedSink` records its carry). A crash before that write redoes the steps (perhaps with
more); a crash after it but before a release is written releases the same rows again under
the same file name, as `OrderedSink` does. Output leaves in rowtime order once final
(`BatchJoin.release_below`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.io.formats import BOUND
from streamjoin.io.staging import Stager
from streamjoin.lower.batch_join import INF, BatchJoin, Clocks, clock_of
from streamjoin.runtime.ordered_sink import OrderedSink
from streamjoin.runtime.writer import RowWriter

log = logging.getLogger("streamjoin.batch")


class BatchJoinSink(OrderedSink):
    def __init__(self, spark, checkpoint: Path, writer: RowWriter, columns: list[str], batch: BatchJoin):
        super().__init__(checkpoint, writer, columns, 0)
        self.spark, self.batch = spark, batch
        self.stagers = [Stager(spec) for spec in batch.specs]

    def __call__(self, frame, batch_id: int) -> None:
        self.advance()

    def release(self, watermark: str | None) -> None:
        """After a micro-batch: whatever is staged and not joined yet (the trigger's listing may
        run ahead of a call), then what is final."""
        self.advance()

    def settle(self, clock_us: int) -> None:
        self.advance()

    def finish(self) -> None:
        self.advance()
        self._release(None)

    def advance(self) -> None:
        """Join the steps staged since the last call; release what is final."""
        with self.lock:
            self._join_new_steps()
            join = self.state().join
        if join is not None:  # after a restart too: what a crash kept from being written
            below = self.batch.release_below(Clocks(*join["clocks"]))
            self._release(None if below >= INF else below - 1)

    def _join_new_steps(self) -> None:
        state = self.state()
        join = state.join or {"done": [0, 0], "clocks": [None, None], "steps": [{}, {}]}
        done = join["done"]
        present = [_present(s, d) for s, d in zip(self.stagers, done, strict=True)]
        if present == done:
            return
        before = Clocks(*join["clocks"])
        new_stats = [{n: _stats(s, n) for n in range(d, p)} for s, d, p in zip(self.stagers, done, present, strict=True)]
        clocks = []
        for n, spec in enumerate(self.batch.specs):
            tops = [st[3] for st in new_stats[n].values() if st[3] is not None]
            now, was = clock_of(max(tops), spec.lateness_ms) if tops else None, join["clocks"][n]
            clocks.append(was if now is None else now if was is None else max(was, now))
        after = Clocks(*clocks)
        retain = self.batch.retain_from(before)
        old = [[str(s.step_path(int(k))) for k, st in join["steps"][n].items() if st[1] is not None and st[1] >= retain[n]]
               for n, s in enumerate(self.stagers)]
        new = [[str(s.step_path(k)) for k, st in new_stats[n].items() if st[2]] for n, s in enumerate(self.stagers)]
        rows = None
        outer = self.batch.keeps_left or self.batch.keeps_right
        if new[0] or new[1] or (outer and after != before):  # a clock moved: preserved rows may leave
            frame = self.batch.step(self.spark, (new[0], new[1]), (old[0], old[1]), before, after)
            rows = frame.toArrow() if frame is not None else None
        # the steps still holding rows in range after this micro-batch (their stats), by input
        keep = self.batch.retain_from(after)
        steps = []
        for n in range(2):
            merged = {**join["steps"][n], **{str(k): v for k, v in new_stats[n].items()}}
            steps.append({k: v for k, v in merged.items() if v[2] and v[1] is not None and v[1] >= keep[n]})
        state.join = {"done": present, "clocks": [after.left, after.right], "steps": steps}
        state.last_batch += 1
        carry = self._load(state.carry)
        tables = [t for t in (carry, rows) if t is not None and t.num_rows]
        self._save(state, pa.concat_tables(tables) if tables else None)
        log.debug("batch join: steps %s -> %s, clocks %s, %s rows, retained steps %s", done, present, state.join["clocks"],
                  rows.num_rows if rows is not None else 0, [len(s) for s in steps])

    def status(self) -> dict:
        """The rows the join retains (its state): those of the steps still in range."""
        join = self.state().join or {}
        return {"operator_state_rows": sum(st[2] for side in join.get("steps", []) for st in side.values())}


def _present(stager: Stager, done: int) -> int:
    """How many steps are staged, in order (a step's file appears after every earlier one's)."""
    n = done
    while stager.step_path(n).exists():
        n += 1
    return n


def _stats(stager: Stager, step: int) -> list:
    """[lowest data rowtime, highest data rowtime, data rows, highest rowtime bound rows included] (µs)."""
    import pyarrow.parquet as pq

    spec = stager.spec
    table = pq.read_table(stager.step_path(step), columns=[spec.rowtime, BOUND])
    rowtimes = pc.cast(table.column(spec.rowtime), pa.int64())
    data = rowtimes.filter(pc.invert(pc.fill_null(table.column(BOUND), False)))
    low, high = pc.min_max(data).values() if len(data) else (None, None)
    top = pc.max(rowtimes).as_py() if len(rowtimes) else None
    return [low.as_py() if low is not None else None, high.as_py() if high is not None else None, len(data), top]
