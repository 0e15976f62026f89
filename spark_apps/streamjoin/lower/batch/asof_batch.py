"""The batch ASOF join: `l ASOF [LEFT] JOIN r ON keys AND r.rowtime <= (or <) l.rowtime` of two
streams on Spark's *batch* engine, for a bounded run (`--until-idle`), as the batch interval join
runs an interval join (`lower.batch.batch_join`, `lower.batch.batch_sink`: the same staged steps, clocks and
release of final rows).

A left row is decided once no right row that could be its match can still come: future right rows
have `r >= cR` (the right input's clock), so a left row `l < cR` (`<`: `l <= cR`) leaves. Each
micro-batch takes the left rows that leave and every right row staged so far below them, in one
frame ordered per key by (rowtime, right before left at one rowtime for `<=` and after for `<`,
arrival), and gives each left row the last right row before it (a window function): the latest
right row of its key at or before its instant, ties at a rowtime to the latest arrival, as
SEMANTICS.md §8 and the operator's engines (`operator.asof_columns`) decide. A right row of a NULL
key matches nothing; a left row of one is NULL-extended (LEFT) or dropped (INNER).

Right rows are retained for ever (the latest of a key may be the match of any later left row),
which is why a live run keeps the operator, whose state holds the latest right row per key."""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.batch.batch_join import _LOWEST, BROADCAST_ROWS, FEW, INF, UNBOUNDED_MS, BatchJoin, Clocks, _add, side_frame
from streamjoin.lower.columns import flat, q
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.model import JoinType, Query

_L, _R, _M = "__asof_l", "__asof_r", "__asof_match"
_T, _SIDE, _FILE, _IDX = "__asof_t", "__asof_side", "__asof_file", "__asof_idx"


@dataclass
class AsofBatchJoin(BatchJoin):
    strict: bool = False  # `r.rowtime < l.rowtime` (else `<=`)

    @property
    def outer(self) -> bool:
        return True  # left rows leave as the right input's clock moves, matched or not

    def leave_left(self, clocks: Clocks) -> int:
        return _add(Clocks.at(clocks.right), 1 if self.strict else 0)

    def leave_right(self, clocks: Clocks) -> int:
        return _LOWEST  # never: a later left row may take it

    def retain_from(self, clocks: Clocks) -> tuple[int, int]:
        return self.leave_left(clocks), _LOWEST

    def final_below(self, joined: Clocks, staged: Clocks, lowest: int | None) -> int:
        """An output row's rowtime is its left row's: one still to come holds a left row that has
        not left by the `joined` clocks, or one not joined yet (at least `lowest` or the left clock)."""
        lows = [Clocks.at(staged.left), self.leave_left(joined), *([lowest] if lowest is not None else [])]
        return min(lows)

    def step(self, spark, new: tuple[list, list], old: tuple[list, list], before: Clocks, after: Clocks,
             rows: int | None = None, sizes=None):
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        upto = self.leave_left(after)
        leaving = self._leaving(spark, 0, new[0], old[0], self.leave_left(before), upto)
        if leaving is None:
            return None
        # the right rows below the leaving ones, with where each arrived (its step file, its row there);
        # none yet: the columns, no rows
        right_files = [*old[1], *new[1]]
        arrival = (f"_metadata.file_path AS {_FILE}", f"_metadata.row_index AS {_IDX}")
        right = (side_frame(spark, self.right, right_files, None, upto, arrival) if right_files else
                 self.side(spark, 1, [], INF).withColumn(_FILE, F.lit("")).withColumn(_IDX, F.lit(0).cast("long")))
        carried = F.struct(*[F.col(q(c)) for c in right.columns if c not in (_FILE, _IDX)])
        keys = [(spark_sql(a), spark_sql(b)) for a, b in self.join.condition.keys]
        names = [f"__asof_k{i}" for i in range(len(keys))]
        # at one rowtime: `<=` takes a right row of the left row's instant (right first), `<` does not
        ties = (0, 1) if self.strict else (1, 0)  # (left, right)
        lefts = leaving.select(*[F.expr(k).alias(n) for (k, _), n in zip(keys, names, strict=True)],
                               F.unix_micros(F.col(q(flat(self.left.alias, self.left.rowtime)))).alias(_T),
                               F.lit(ties[0]).alias(_SIDE), F.lit("").alias(_FILE), F.lit(0).cast("long").alias(_IDX),
                               F.struct(*[F.col(q(c)) for c in leaving.columns]).alias(_L),
                               F.lit(None).cast(right.select(carried).schema[0].dataType).alias(_R))
        rights = right.where(" AND ".join(f"({k}) IS NOT NULL" for _, k in keys)).select(
            *[F.expr(k).alias(n) for (_, k), n in zip(keys, names, strict=True)],
            F.unix_micros(F.col(q(flat(self.right.alias, self.right.rowtime)))).alias(_T),
            F.lit(ties[1]).alias(_SIDE), F.col(_FILE), F.col(_IDX),
            F.lit(None).cast(lefts.schema[_L].dataType).alias(_L), carried.alias(_R))
        if sizes is not None and sum(sizes[0]) * FEW <= sum(sizes[1]) and sum(sizes[0]) <= BROADCAST_ROWS:
            # few left rows can leave (the end of a bounded run: those the right clock had not passed):
            # only their keys' right rows are sorted, not every right row again
            rights = rights.join(F.broadcast(lefts.select(*names).distinct()), names, "left_semi")
        window = (Window.partitionBy(*names).orderBy(_T, _SIDE, _FILE, _IDX)
                  .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        matched = (lefts.unionByName(rights).withColumn(_M, F.last(_R, ignorenulls=True).over(window))
                   .where(F.col(_L).isNotNull()))
        if self.join.join_type == JoinType.INNER:
            matched = matched.where(F.col(_M).isNotNull())
        joined = matched.select(f"{_L}.*", f"{_M}.*")
        return self._project(joined)


def lower_asof(query: Query, specs: list[InputSpec]):
    """The query as a batch ASOF join (`strategy.batch_reason`): the `AsofBatchJoin` the sink runs,
    no streaming frame (`lower.batch.batch_sink.BatchJoinQuery`)."""
    return lower_one_join(AsofBatchJoin, query, specs, strict=query.joins[0].condition.asof.op == ">")


def lower_one_join(kind: type[BatchJoin], query: Query, specs: list[InputSpec], **extra):
    """The query's one join as a `kind` of batch join over its two inputs with no time range (the
    batch ASOF and ROWS joins), for the batch sink to run: no streaming frame."""
    from streamjoin.lower.lowered import Lowered

    join = query.joins[0]
    by_alias = {s.alias: s for s in specs}
    batch = kind(query, join, by_alias[join.left_inputs[-1]], by_alias[join.right], -UNBOUNDED_MS, UNBOUNDED_MS, None, **extra)
    return Lowered(None, list(specs), [c.name for c in query.output], 0, batch=batch)
