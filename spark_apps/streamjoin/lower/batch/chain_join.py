"""The batch interval join of a chain: `a JOIN b ON ... JOIN c ON ...`, three or more streams,
every join INNER with a time range (windows or BETWEEN) to an earlier input, EMIT FINAL, run with
Spark's *batch* engine one micro-batch at a time, as `lower.batch.batch_join` runs two streams (issue 42:
on Spark's chained streaming joins a three-stream chain ran at 0.24x Flink's speed).

Each micro-batch joins the rows that hold at least one new row, each combination once, by the
input of its first new row (the delta rule of incremental joins):

    new 0 x all 1 x ... x all n,   old 0 x new 1 x all 2 x ...,   ...,   old 0 x ... x old n-1 x new n

where *old* rows are those of the retained steps and *all* are old and new. A row of input i is
retained while a future row of any input k could still share a result with it: the chain's time
bounds, closed over the chain (`plan.conditions.chain_reach`: `t_k - t_i <= reach[i][k]`), say it can
while `t_i >= clock_k - reach[i][k]`. An inner result's rowtime is at least each of its rows', so
rows below every input's clock (and the lowest rowtime of steps staged but not joined) are final.

Within a term the inputs join left to right, each on its ON condition and a time bucket of the
earlier input it is closest to in time (`_link`), as `BatchJoin` buckets its two inputs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.batch.batch_join import BUCKET, INF, PARTNER_BUCKET, Clocks, _sub, side_frame
from streamjoin.lower.columns import flat, not_bound, q, rowtime_of
from streamjoin.lower.expressions import project_output, spark_sql
from streamjoin.plan.model import Join, Query

# a micro-batch with at least this many times as many new rows as retained ones (a bounded run's
# slices) joins them all in one chain, less the results of retained rows only (`ChainJoin.step`)
ALL_AT_ONCE = 1.0
# the most rows of an input a chain's joins broadcast: a chain keeps the two-stream join's earlier
# bound (lower.batch.batch_join.BROADCAST_ROWS): bench three-inner took the same time either way, and a
# live chain's windows (0.6-1.2M rows at 10K rows/s) were not measured shuffled
CHAIN_BROADCAST_ROWS = 3_000_000


@dataclass
class ChainJoin:
    query: Query
    specs: tuple[InputSpec, ...]  # in the chain's order: the first join's left input, then each join's right
    reach: tuple[tuple[int, ...], ...]  # ms: t_k - t_i <= reach[i][k] for every result (plan.conditions.chain_reach)
    keyed = None  # no keyed probe: pairs by scanning the retained steps
    keeps_left = keeps_right = outer = False  # INNER joins only: no row leaves NULL-extended

    @property
    def aliases(self) -> list[str]:
        return [s.alias for s in self.specs]

    def retain_from(self, clocks: Clocks) -> tuple[int, ...]:
        """The lowest rowtime of each input a later micro-batch still needs: a row that a future
        row of another input (at least that input's clock) can share a result with."""
        n = len(self.specs)
        return tuple(min(_sub(Clocks.at(clocks[k]), self.reach[i][k] * 1000) for k in range(n) if k != i)
                     for i in range(n))

    def release_below(self, clocks: Clocks) -> int:
        return self.final_below(clocks, clocks, None)

    def final_below(self, joined: Clocks, staged: Clocks, lowest: int | None) -> int:
        """Output rows below this are final: a result still to come holds a row not joined yet, a
        row of a staged step (at least `lowest`) or a future one (at least its input's clock)."""
        lows = [Clocks.at(c) for c in staged]
        if lowest is not None:
            lows.append(lowest)
        return min(lows)

    def step(self, spark, new: tuple[list, ...], old: tuple[list, ...], before: Clocks, after: Clocks,
             rows: int | None = None, sizes=None):
        """One micro-batch's output rows (output columns and __rowtime): every result holding a new
        row. `old`: the retained steps' files, read from `retain_from(before)`; `rows`: at most how
        many rows they hold, per input (a side up to CHAIN_BROADCAST_ROWS is broadcast)."""
        if not any(new):
            return None
        broadcast = rows is not None and rows <= CHAIN_BROADCAST_ROWS
        retain = self.retain_from(before)
        n = len(self.specs)
        if sizes is not None and sum(s[0] for s in sizes) >= ALL_AT_ONCE * sum(s[1] for s in sizes):
            # more new rows than retained ones (a bounded run's slices): one chain over all of
            # them, less the results of retained rows only, costs less than n chains (4M rows a
            # stream: 52 s against 62)
            flagged = [self._flagged(spark, k, new[k], old[k], retain[k]) for k in range(n)]
            if any(f is None for f in flagged):
                return None
            some_new = " OR ".join(q(_new(a)) for a in self.aliases)
            joined = self._chain(flagged, broadcast).where(some_new).drop(*[_new(a) for a in self.aliases])
            return project_output(self.query, joined, self.aliases)
        news = [side_frame(spark, spec, new[k]) for k, spec in enumerate(self.specs)]
        olds = [side_frame(spark, spec, old[k], retain[k]) for k, spec in enumerate(self.specs)]
        terms = []
        for i in range(n):
            frames = [olds[k] if k < i else news[k] if k == i else _union(olds[k], news[k]) for k in range(n)]
            if all(f is not None for f in frames):
                terms.append(self._chain(frames, broadcast))
        if not terms:
            return None
        return project_output(self.query, functools.reduce(_union, terms), self.aliases)

    def _flagged(self, spark, k: int, new: list, old: list, retain: int):
        """Input k's new and retained rows, each marked new or not (`_new`), or None without rows."""
        from pyspark.sql import functions as F

        flag = _new(self.specs[k].alias)
        new_rows, old_rows = side_frame(spark, self.specs[k], new), side_frame(spark, self.specs[k], old, retain)
        return _union(None if new_rows is None else new_rows.withColumn(flag, F.lit(True)),
                      None if old_rows is None else old_rows.withColumn(flag, F.lit(False)))

    def _chain(self, frames: list, broadcast: bool):
        joined = frames[0]
        for r, join in enumerate(self.query.joins, start=1):
            joined = self._link(joined, frames[r], join, r, broadcast)
        return joined

    def _link(self, joined, right, join: Join, r: int, broadcast: bool):
        """The rows joined so far with input r's: on the join's condition and on the time bucket of
        the earlier input whose range to r is the narrowest (rows of r reach at most two buckets)."""
        from pyspark.sql import functions as F

        from streamjoin.lower.native import join_condition

        a = min(range(r), key=lambda i: self.reach[i][r] + self.reach[r][i])
        below, above = self.reach[a][r] * 1000, self.reach[r][a] * 1000  # t_r - below <= t_a <= t_r + above
        width = F.lit(max(below + above, 1000))
        anchor, spec = F.unix_micros(F.col(q(flat(self.aliases[a], self.specs[a].rowtime)))), self.specs[r]
        rowtime = F.unix_micros(F.col(q(flat(spec.alias, spec.rowtime))))
        own = joined.withColumn(BUCKET, F.floor(anchor / width))
        reach = right.withColumn(PARTNER_BUCKET, F.explode(F.array_distinct(F.array(
            F.floor((rowtime - F.lit(below)) / width), F.floor((rowtime + F.lit(above)) / width)))))
        sides = self.aliases[:r + 1]
        keys = [spark_sql(e) for pair in join.condition.keys for e in pair]
        guard = not_bound(sides, [rowtime_of(self.query, s) for s in sides], keys)
        condition = " AND ".join(p for p in (join_condition(join, self.query, sides), guard) if p)
        return own.join(F.broadcast(reach) if broadcast else reach, F.expr(condition) & (F.col(BUCKET) == F.col(PARTNER_BUCKET)),
                        "inner").drop(BUCKET, PARTNER_BUCKET)


def _new(alias: str) -> str:
    return f"__new_{alias}"


def _union(a, b):
    if a is None or b is None:
        return b if a is None else a
    return a.unionByName(b)


def lower_chain(query: Query, specs: list[InputSpec], reach: tuple[tuple[int, ...], ...]):
    """The query as a chain's batch interval join: the `ChainJoin` the sink runs."""
    from streamjoin.lower.lowered import Lowered

    by_alias = {s.alias: s for s in specs}
    order = [query.joins[0].left_inputs[0], *(j.right for j in query.joins)]
    chain = ChainJoin(query, tuple(by_alias[a] for a in order), reach)
    return Lowered(None, list(specs), [c.name for c in query.output], 0, batch=chain)


__all__ = ["INF", "ChainJoin", "lower_chain"]
