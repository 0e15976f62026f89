"""The batch interval join: a two-stream interval join (`low <= R.rowtime - L.rowtime <= high`,
INNER, LEFT, RIGHT or FULL, EMIT FINAL; INNER also EMIT EAGER) run with Spark's *batch* engine, one join per micro-batch.

Spark's streaming join keeps every row in a state store and probes it row by row; its batch
join is several times faster here (docs/runtime.md, "The batch interval join"). The staged
steps (`io.sources.staging`) are immutable Parquet files, and a row of an input can still meet a row
that has not arrived only while its rowtime is within the range of the other input's clock. So
each micro-batch joins

    new L rows with (retained R rows + new R rows),  and  retained L rows with new R rows,

every pair exactly once (in the micro-batch that reads the later of its two rows), where the
retained rows are read back from the earlier steps that still hold rows in range: no state
store, no copy. A preserved row is NULL-extended when it leaves the range unmatched: an
anti-join of the rows leaving in this micro-batch with the other input's rows that could have
met them (all still retained: see `retain_from`). Rows are final below `release_below`.

Clocks are per input (`io.sources.staging`: max rowtime - lateness, or a bound; staging drops rows
below it as late), so no future L row has a rowtime below cL, none of R below cR:
- an R row can still meet a future L row while  r >= cL + low;
- an L row can still meet a future R row while  l >= cR - high;
- a preserved L row leaving (l < cR - high) needs its partners r >= l + low >= cR_before - high + low
  (and symmetrically for R), which fixes how long each input's rows are retained.

`BatchJoin` builds the Spark jobs; `lower.batch.batch_sink.BatchJoinSink` keeps the steps, the
clocks and the output in the checkpoint and runs a join whenever steps are staged.
"""

from __future__ import annotations

import base64
import functools
import pickle
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from streamjoin.io.formats.columns import OP
from streamjoin.io.formats.files import BOUND
from streamjoin.io.formats.instants import END_US
from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.batch.keyed_probe import DriverProbe, flat_schema, probe_task, staged_fields
from streamjoin.lower.columns import (
    ET_COLUMN,
    ZERO,
    bound_column,
    flat,
    not_bound,
    q,
    rowtime_of,
)
from streamjoin.lower.expressions import extend_with_nulls, project_output, spark_sql
from streamjoin.plan.model import Join, JoinType, Query

if TYPE_CHECKING:
    from streamjoin.lower.physical import JoinNode

INF = 1 << 62  # an input's clock after its end: every rowtime is below it
# the most rows of an input a two-stream join broadcasts (BatchJoin.step); above it Spark shuffles
# both sides. 3M until 2026-11-29, when a bounded run's 1M rows an input were faster and held
# 0.6-0.8 GB less shuffled (bench inner-dense 24.5 -> 21.4 s, full-dense 35.0 -> 29.4 s)
BROADCAST_ROWS = 500_000
# new L rows this many times fewer than R's rows (new and retained): the new rows are broadcast
# and R's are scanned as they are (BatchJoin._pairs_of_few), instead of R's exploded and broadcast
FEW = 4

_LOWEST = -(1 << 62)
# the range of a regular join (no time bound, `lower_batch`): every row stays in range (35,000 years)
UNBOUNDED_MS = 1 << 50
PROBE_PROPERTY = "streamjoin.probe"  # before a join's own id: the job's local property holding its Probe (keyed_rows)
PROBE_TASK_ROWS = 4_000_000  # the retained rows per task of the keyed probe (_probe_tasks)
BUCKET, PARTNER_BUCKET = "__bucket", "__partner_bucket"  # the time buckets of a join (BatchJoin._join, ChainJoin._link)


class Clocks(tuple):
    """The inputs' clocks (µs; None: no row yet, INF: ended), in the order of the join's inputs:
    two for `BatchJoin` (`left`, `right`), one per input for `lower.batch.chain_join.ChainJoin`."""

    def __new__(cls, *values: int | None):
        return super().__new__(cls, values)

    @property
    def left(self) -> int | None:
        return self[0]

    @property
    def right(self) -> int | None:
        return self[1]

    @staticmethod
    def at(value: int | None) -> int:
        return _LOWEST if value is None else value


@dataclass
class BatchJoin:
    query: Query
    join: Join
    left: InputSpec
    right: InputSpec
    low_ms: int
    high_ms: int
    # the key columns of each input when a micro-batch's pairs are found by the keyed probe
    # (`keyed_rows`, lower.batch.interval_probe); None: by scanning the retained steps (`step`)
    keyed: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    probe_in: str = "tasks"  # where the keyed probe runs (lower.physical: "driver", "tasks")
    # the keyed probe's frames, planned once per session and number of tasks (`_keyed_frame`)
    _frames: dict = field(default_factory=dict, repr=False, compare=False)
    _tasks: int = field(default=1, repr=False, compare=False)  # the keyed probe's tasks (`_probe_tasks`)
    # the local property of this join's probe jobs: a job of another join (an application's
    # other output) cannot read this one's Probe
    _property: str = field(default_factory=lambda: f"{PROBE_PROPERTY}.{uuid.uuid4().hex}", repr=False, compare=False)

    changes: bool = False  # EMIT CHANGES: every row written is an insert, `op` +I (a regular semi / anti join)

    @property
    def keeps_left(self) -> bool:  # (an anti join's rows are L rows that leave without a partner)
        return self.join.join_type in (JoinType.LEFT, JoinType.FULL, JoinType.ANTI)

    @property
    def keeps_right(self) -> bool:
        return self.join.join_type in (JoinType.RIGHT, JoinType.FULL)

    @property
    def specs(self) -> tuple[InputSpec, InputSpec]:
        return self.left, self.right

    # ------------------------------------------------------------------ time arithmetic (µs)

    def leave_left(self, clocks: Clocks) -> int:
        """L rows below this can meet no future R row (they leave; preserved ones are final)."""
        return _sub(Clocks.at(clocks.right), self.high_ms * 1000)

    def leave_right(self, clocks: Clocks) -> int:
        return _add(Clocks.at(clocks.left), self.low_ms * 1000)

    def retain_from(self, clocks: Clocks) -> tuple[int, int]:
        """The lowest rowtime of each input still needed by a later micro-batch: to meet future
        rows, and to be the partners a leaving preserved row of the other input is checked against."""
        left, right = self.leave_left(clocks), self.leave_right(clocks)
        if self.keeps_right:  # a leaving R row (r >= leave_right) is checked against l >= r - high
            left = min(left, _sub(right, self.high_ms * 1000))
        if self.keeps_left:  # a leaving L row (l >= leave_left) against r >= l + low
            right = min(right, _add(self.leave_left(clocks), self.low_ms * 1000))
        return left, right

    def release_below(self, clocks: Clocks) -> int:
        """Output rows with a rowtime below this are final: a future pair holds a future row (its
        rowtime at least that input's clock, the output rowtime at least that), a future
        NULL-extended row a row that has not left yet."""
        return self.final_below(clocks, clocks, None)

    def final_below(self, joined: Clocks, staged: Clocks, lowest: int | None) -> int:
        """`release_below` before the steps staged but not joined yet are joined: output rows
        below this are final already. A pair still to come holds a row not joined yet: a row of
        such a step (its rowtime at least `lowest`, the lowest data rowtime those steps hold) or a
        future row (at least its input's clock once they are staged: `staged`); the output
        rowtime is at least that row's. A NULL-extended row still to come is a preserved row
        that has not left by the `joined` clocks. So a steady stream's rows are written once the
        clocks pass them, not after the join that moved the clocks."""
        lows = [Clocks.at(staged.left), Clocks.at(staged.right)]
        if lowest is not None:
            lows.append(lowest)
        if self.keeps_left:
            lows.append(self.leave_left(joined))
        if self.keeps_right:
            lows.append(self.leave_right(joined))
        return min(lows)

    # ------------------------------------------------------------------ Spark frames

    @property
    def outer(self) -> bool:
        return self.keeps_left or self.keeps_right

    def side(self, spark, n: int, files: list[str], low_us: int | None = None, high_us: int | None = None):
        return side_frame(spark, self.specs[n], files, low_us, high_us)

    # Spark's equi-join compares every pair of a key; over a long stream most are far apart in
    # time. So rows are also bucketed by time, buckets as wide as the range: a row of one input
    # carries its own bucket, a row of the other the (at most two) buckets its partners lie in,
    # and the join is also on the bucket: each pair meets once, in one bucket.
    def _width_us(self) -> int:
        return max((self.high_ms - self.low_ms) * 1000, 1000)

    @property
    def unbounded(self) -> bool:
        """A regular join: no time range, no time buckets (every row is in every row's range)."""
        return self.high_ms >= UNBOUNDED_MS

    def _own(self, frame, n: int):
        from pyspark.sql import functions as F

        if self.unbounded:
            return frame.withColumn(BUCKET, F.lit(0))

        rowtime = F.unix_micros(F.col(q(flat(self.specs[n].alias, self.specs[n].rowtime))))
        return frame.withColumn(BUCKET, F.floor(rowtime / F.lit(self._width_us())))

    def _reach(self, frame, n: int):
        """Input n's rows, once per bucket of the other input their partners lie in."""
        from pyspark.sql import functions as F

        if self.unbounded:
            return frame.withColumn(PARTNER_BUCKET, F.lit(0))

        rowtime = F.unix_micros(F.col(q(flat(self.specs[n].alias, self.specs[n].rowtime))))
        low, high = (self.low_ms, self.high_ms) if n == 0 else (-self.high_ms, -self.low_ms)
        width = F.lit(self._width_us())
        buckets = F.array_distinct(F.array(F.floor((rowtime + F.lit(low * 1000)) / width),
                                           F.floor((rowtime + F.lit(high * 1000)) / width)))
        return frame.withColumn(PARTNER_BUCKET, F.explode(buckets))

    def _join(self, left, right, how: str, broadcast: bool):
        """L rows with R rows (inner) or L rows without one (left_anti): on the condition and the
        bucket; `broadcast`: R's side is broadcast (no shuffle)."""
        return self._bucket_join(self._own(left, 0), self._reach(right, 1), how, broadcast).drop(BUCKET, PARTNER_BUCKET)

    def _unmatched_right(self, right, left, broadcast: bool):
        return self._bucket_join(self._own(right, 1), self._reach(left, 0), "left_anti", broadcast).drop(BUCKET)

    def _bucket_join(self, own, reach, how: str, broadcast: bool):
        from pyspark.sql import functions as F

        return own.join(F.broadcast(reach) if broadcast else reach, self.condition() & (F.col(BUCKET) == F.col(PARTNER_BUCKET)), how)

    def condition(self):
        from pyspark.sql import functions as F

        from streamjoin.lower.native import join_condition

        query, sides = self.query, [self.left.alias, self.right.alias]
        keys = [spark_sql(e) for pair in self.join.condition.keys for e in pair]
        guard = not_bound(sides, [rowtime_of(query, a) for a in sides], keys)
        return F.expr(" AND ".join(p for p in (join_condition(self.join, query, sides), guard) if p))

    def _pairs_of_few(self, few_l, all_r):
        """The pairs of a few new L rows with all of R's (inner): R's rows keep their own bucket
        and the few L rows, exploded into the R buckets their partners lie in, are broadcast.
        In a steady stream, a second of new rows meets a window of retained ones: exploding and
        broadcasting the window every micro-batch would cost the window's size each time."""
        return self._bucket_join(self._own(all_r, 1), self._reach(few_l, 0), "inner", True).drop(BUCKET, PARTNER_BUCKET)

    def step(self, spark, new: tuple[list, list], old: tuple[list, list], before: Clocks, after: Clocks,
             rows: int | None = None, sizes: tuple[tuple[int, int], tuple[int, int]] | None = None):
        """One micro-batch's output rows (output columns and __rowtime): the pairs with a new
        row, and the preserved rows that leave unmatched. `old`: the retained steps' files,
        read from `retain_from(before)`; `rows`: at most how many rows they hold, per input;
        `sizes`: ((new L rows, retained L rows), (new R rows, retained R rows)), when known."""
        # Spark's hash join on a broadcast side needs no shuffle: 20-35% faster per micro-batch
        # here; up to BROADCAST_ROWS rows (a long window's retained rows can be many more)
        broadcast = rows is not None and rows <= BROADCAST_ROWS
        retain = self.retain_from(before)
        new_l, new_r = self.side(spark, 0, new[0]), self.side(spark, 1, new[1])
        old_l, old_r = self.side(spark, 0, old[0], retain[0]), self.side(spark, 1, old[1], retain[1])
        if not (new[0] or old[0] or new[1] or old[1]):
            return None  # no data rows yet: nothing can pair or leave
        # the columns, no rows. An input with no data rows (an empty file, its rows all late or
        # filtered) still moves its clock: the other input's preserved rows leave by it (issue 38)
        empty_l = self.side(spark, 0, [*new[0], *old[0]][:1], INF)
        empty_r = self.side(spark, 1, [*new[1], *old[1]][:1], INF)
        new_l, new_r = new_l if new_l is not None else empty_l, new_r if new_r is not None else empty_r
        all_l = new_l if old_l is None else old_l.unionByName(new_l)
        all_r = new_r if old_r is None else old_r.unionByName(new_r)
        if self.join.join_type.filters:
            return self._filtered(spark, new, old, before, after, new_l, old_l, new_r, old_r, all_r, broadcast)
        few = sizes is not None and sizes[0][0] * FEW <= sum(sizes[1]) and sizes[0][0] <= BROADCAST_ROWS
        parts = [self._pairs_of_few(new_l, all_r) if few else self._join(new_l, all_r, "inner", broadcast)]
        if old_l is not None:
            parts.append(self._join(old_l, new_r, "inner", broadcast))
        columns = parts[0].columns
        if self.keeps_left:
            leaving = self._leaving(spark, 0, new[0], old[0], self.leave_left(before), self.leave_left(after))
            if leaving is not None:
                parts.append(extend_with_nulls(self._join(leaving, all_r, "left_anti", broadcast), empty_r, columns))
        if self.keeps_right:
            leaving = self._leaving(spark, 1, new[1], old[1], self.leave_right(before), self.leave_right(after))
            if leaving is not None:
                parts.append(extend_with_nulls(self._unmatched_right(leaving, all_l, broadcast), empty_l, columns))
        joined = parts[0]
        for part in parts[1:]:
            joined = joined.unionByName(part)
        return self._project(joined)

    def _filtered(self, spark, new, old, before: Clocks, after: Clocks, new_l, old_l, new_r, old_r, all_r, broadcast: bool):
        """A semi join's rows: L rows with a first partner in this micro-batch (new L rows with
        any, retained ones with a new partner and no retained one); an anti join's: L rows that
        leave (at end of input, for a regular join) without a partner. Both L's columns only."""
        if self.join.join_type == JoinType.ANTI:
            leaving = self._leaving(spark, 0, new[0], old[0], self.leave_left(before), self.leave_left(after))
            return None if leaving is None else self._project(self._join(leaving, all_r, "left_anti", broadcast))
        joined = self._join(new_l, all_r, "left_semi", broadcast)
        if old_l is not None:
            first = self._join(old_l, new_r, "left_semi", broadcast)
            joined = joined.unionByName(first if old_r is None else self._join(first, old_r, "left_anti", broadcast))
        return self._project(joined)

    def keyed_rows(self, spark, dirs: tuple[str, str], new: tuple[list[int], list[int]], old: tuple[list[int], list[int]],
                   before: Clocks, after: Clocks, held: int) -> pa.Table | None:
        """`step`'s rows by the keyed probe (`lower.batch.interval_probe`): in the driver on a local
        master (`lower.batch.keyed_probe.DriverProbe`), else Spark tasks, one per hash bucket of the keys,
        each joining its bucket's new rows with an index of the retained rows that its Python worker
        keeps between micro-batches. `new`, `old`: step numbers; `held`: the retained steps' rows.
        The tasks' frame is planned once (`_keyed_frame`) and run again for every micro-batch, the
        `Probe` a local property of the job: a new frame each time cost the JVM twice the CPU."""
        from streamjoin.lower.batch.interval_probe import Probe, Side

        if not (new[0] or old[0] or new[1] or old[1]):
            return None  # no data rows yet: nothing can pair or leave (one input's may leave unmatched)
        sides = []
        for n, spec in enumerate(self.specs):
            names = tuple(spec.schema.names)
            types = tuple(f.type for f in staged_fields(spec))
            sides.append(Side(dirs[n], self.keyed[n], spec.rowtime, names, tuple(flat(spec.alias, c) for c in names), types))
        driver = self.probe_in == "driver"
        buckets = 1 if driver else self._probe_tasks(spark, held)
        job = Probe(tuple(sides), self.low_ms * 1000, self.high_ms * 1000, (self.keeps_left, self.keeps_right),
                    (tuple(old[0]), tuple(old[1])), (tuple(new[0]), tuple(new[1])),
                    ((self.leave_left(before), self.leave_left(after)), (self.leave_right(before), self.leave_right(after))),
                    buckets, self._property)
        if driver:
            if "driver" not in self._frames:
                self._frames["driver"] = DriverProbe(self.query, self.specs, self._keyed_frame(spark, 1), self._project)
            return self._frames["driver"].rows(spark, job)
        context = spark.sparkContext  # (the job runs from this thread: PySpark pins it to one JVM thread)
        context.setLocalProperty(self._property, base64.b64encode(pickle.dumps(job)).decode("ascii"))
        try:
            return self._keyed_frame(spark, buckets).toArrow()
        finally:
            context.setLocalProperty(self._property, None)

    def _probe_tasks(self, spark, held: int) -> int:
        """The keyed probe's tasks (hash buckets): one while the retained steps hold at most
        PROBE_TASK_ROWS rows, one per PROBE_TASK_ROWS beyond that up to Spark's parallelism; never
        fewer during a run (a change leaves every worker's index to be read again).

        Spark hands a Python task to whichever of its workers is idle, so with several tasks every
        worker comes to keep every bucket's index, each catching up on the steps it missed: at a
        steady 10K rows/s per stream (bench/steady.py, 2026-11-26) two tasks cost 41 us of CPU
        per input row, one 30 (p99 2.5 s both). More tasks pay only for windows whose rows one
        worker would be slow to probe."""
        want = min(spark.sparkContext.defaultParallelism, max(1, -(-held // PROBE_TASK_ROWS)))
        self._tasks = max(self._tasks, want)
        return self._tasks

    def _keyed_frame(self, spark, buckets: int):
        """The keyed probe's frame with `buckets` tasks, planned once per Spark session."""
        key = (spark, buckets)
        if key not in self._frames:
            task = functools.partial(probe_task, self._property)
            frame = spark.range(0, buckets, 1, buckets).mapInArrow(task, flat_schema(self.specs))
            self._frames[key] = self._project(frame)
        return self._frames[key]

    def _leaving(self, spark, n: int, new: list, old: list, was: int, now: int):
        """Input n's rows that leave in this micro-batch: new rows below `now`, retained rows
        from `was` (the earlier ones have left before) to `now`."""
        if now <= _LOWEST:
            return None
        frames = [f for f in (self.side(spark, n, new, None, now), self.side(spark, n, old, was, now) if was < now else None)
                  if f is not None]
        if not frames:
            return None
        return frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])

    def _project(self, joined):
        from pyspark.sql import functions as F

        aliases = [self.left.alias] if self.join.join_type.filters else [self.left.alias, self.right.alias]
        out = project_output(self.query, joined, aliases)
        return out.select(F.lit("+I").alias(OP), "*") if self.changes else out


def side_frame(spark, spec: InputSpec, files: list[str], low_us: int | None = None, high_us: int | None = None,
               extra: tuple[str, ...] = ()):
    """The data rows of an input in its step `files` with `low_us <= rowtime < high_us`, flat
    under its alias as the native lowering names them, or None without files (but for `low_us`
    INF: the input's columns and no rows, files or not); `extra`: more columns (SQL, over the
    staged file). One `where` and one `selectExpr`: a micro-batch builds several of these, and
    every DataFrame call is a round trip to the JVM."""
    from streamjoin.io.formats.instants import SHIFT_US

    if not files and low_us != INF:
        return None
    frame = read_steps(spark, spec, files)
    rowtime = f"unix_micros({q(spec.rowtime)})"
    keep = [f"({q(BOUND)} IS NULL OR NOT {q(BOUND)})"]
    if low_us is not None and low_us > _LOWEST:
        keep.append(f"{rowtime} >= {low_us}")
    if high_us is not None and high_us < INF:
        keep.append(f"{rowtime} < {high_us}")
    alias = spec.alias
    return frame.where(" AND ".join(keep)).selectExpr(
        *[f"{q(c)} AS {q(flat(alias, c))}" for c in spec.schema.names],
        f"false AS {q(bound_column(alias))}",
        f"{rowtime} * 0 AS {q(flat(alias, ZERO))}",
        f"timestamp_micros({rowtime} + {SHIFT_US}) AS {q(flat(alias, ET_COLUMN))}",
        *extra,
    )


def read_steps(spark, spec: InputSpec, files: list[str]):
    """The staged rows of an input's step files, as they are (bound rows and all)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from streamjoin.io.formats.files import staged_schema

    arrow = staged_schema(spec.schema)
    if not files:  # bounds only (an empty file, every row late): no rows; from Arrow, as a
        # Python list's would start Spark's Python workers (~160 MB for no row: Nexmark q8's peak)
        return spark.createDataFrame(arrow.empty_table())
    return spark.read.schema(from_arrow_schema(arrow)).parquet(*files)


def _add(us: int, delta: int) -> int:
    if us >= INF:
        return INF
    return max(us + delta, _LOWEST) if us > _LOWEST else _LOWEST


def _sub(us: int, delta: int) -> int:
    return _add(us, -delta)


def clock_of(top_us: int | None, lateness_ms: int) -> int | None:
    """An input's clock from the highest rowtime its steps hold (bound rows included: a bound
    is staged as bound + lateness, the end of input at END_US)."""
    if top_us is None:
        return None
    return INF if top_us >= END_US else top_us - lateness_ms * 1000


def lower_batch(query: Query, specs: list[InputSpec], node: JoinNode, changes: bool = False):
    """The query as a batch interval join (its plan's join `node`: the probe and where it runs):
    the `BatchJoin` the sink runs, and no streaming frame (no Spark streaming query runs it:
    `lower.batch.batch_sink.BatchJoinQuery`)."""
    from streamjoin.lower.lowered import Lowered
    from streamjoin.lower.physical import key_columns
    from streamjoin.lower.strategy import interval

    join = query.joins[0]
    by_alias = {s.alias: s for s in specs}
    low, high = interval(join) or (-UNBOUNDED_MS, UNBOUNDED_MS)  # none: a regular join (`strategy.regular_reason`)
    keyed = key_columns(join) if node.probe == "keyed" else None
    batch = BatchJoin(query, join, by_alias[join.left_inputs[-1]], by_alias[join.right], low, high, keyed, node.probe_in or "tasks",
                      changes=changes)
    return Lowered(None, list(specs), [*([OP] if changes else []), *(c.name for c in query.output)], 0, batch=batch)
