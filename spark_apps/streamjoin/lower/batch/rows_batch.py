"""The batch ROWS join: `l OVER (PARTITION BY keys ROWS CURRENT ROW) [INNER] JOIN r OVER
(PARTITION BY keys ROWS CURRENT ROW) ON l.keys = r.keys` of two streams, each window partitioned
by exactly its join-key columns, on Spark's *batch* engine for a bounded run (`--until-idle`), as
the batch ASOF join (`lower.batch.asof_batch`) runs its join: the same staged steps, clocks and release
of final rows (`lower.batch.batch_sink`).

In SEMANTICS.md §2 order (rowtime, left before right, arrival), a row that arrives pairs with the
other side's present row of its key: with ROWS CURRENT ROW on both sides, the latest row of that
key that arrived before it (a row stays present until the next row of its key on its side
arrives). So each row is in at most one pair made at its arrival, and every pair is made at the
arrival of the later of its rows, once: the output is, for every row, the last row of the other
side before it in that order, which one window function per side over the rows of both (ordered
per key) gives, with one sort (`operator.rows_columns` counts the same per key with numpy).

A left row is decided once every right row before it has come: future right rows have `r >= cR`
and one at the left row's rowtime comes after it, so a left row `l <= cR` leaves; a right row
once every left row at or before its rowtime has come, `r < cL`. The latest row of a key may be
any earlier row, so both inputs' steps are retained for ever: a live run keeps the operator,
whose state holds the latest row per key and side."""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.batch.asof_batch import lower_one_join
from streamjoin.lower.batch.batch_join import _LOWEST, BatchJoin, Clocks, _add, side_frame
from streamjoin.lower.columns import flat, q
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.model import Query

_L, _R, _EMIT = "__rows_l", "__rows_r", "__rows_emit"
_PL, _PR = "__rows_pl", "__rows_pr"  # a pair's left and right rows
_T, _SIDE, _FILE, _IDX = "__rows_t", "__rows_side", "__rows_file", "__rows_idx"


@dataclass
class RowsBatchJoin(BatchJoin):
    @property
    def outer(self) -> bool:
        return True  # rows leave (are decided) as the other input's clock moves

    def leave_left(self, clocks: Clocks) -> int:
        return _add(Clocks.at(clocks.right), 1)

    def leave_right(self, clocks: Clocks) -> int:
        return Clocks.at(clocks.left)

    def retain_from(self, clocks: Clocks) -> tuple[int, int]:
        return _LOWEST, _LOWEST  # the latest row of a key, on either side, may be the partner of any later row

    def final_below(self, joined: Clocks, staged: Clocks, lowest: int | None) -> int:
        """An output row's rowtime is its later row's (the one that left last): one still to come
        holds a row that has not left by the `joined` clocks, or one not joined yet."""
        lows = [Clocks.at(staged.left), Clocks.at(staged.right), self.leave_left(joined), self.leave_right(joined),
                *([lowest] if lowest is not None else [])]
        return min(lows)

    def _events(self, spark, n: int, new: list, old: list, was: int, upto: int, below: int):
        """Input n's rows below `below` (every row that can be the latest before a leaving row),
        keyed, ordered and carried as a struct, each marked whether it leaves now (new rows below
        `upto`, retained ones from `was` to `upto`); None without files."""
        from pyspark.sql import functions as F

        spec = self.specs[n]
        rowtime = f"unix_micros({q(spec.rowtime)})"
        arrival = (f"_metadata.file_path AS {_FILE}", f"_metadata.row_index AS {_IDX}")
        frames = [side_frame(spark, spec, files, None, below, (*arrival, f"{emit} AS {_EMIT}"))
                  for files, emit in ((new, f"{rowtime} < {upto}"), (old, f"{rowtime} >= {was} AND {rowtime} < {upto}"))
                  if files]
        if not frames:
            return None
        rows = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
        keys = [spark_sql(pair[n]) for pair in self.join.condition.keys]
        carried = F.struct(*[F.col(q(c)) for c in rows.columns if c not in (_FILE, _IDX, _EMIT)])
        return rows.where(" AND ".join(f"({k}) IS NOT NULL" for k in keys)).select(  # a NULL key matches nothing
            *[F.expr(k).alias(f"__rows_k{i}") for i, k in enumerate(keys)],
            F.unix_micros(F.col(q(flat(spec.alias, spec.rowtime)))).alias(_T), F.lit(n).alias(_SIDE),
            F.col(_FILE), F.col(_IDX), F.col(_EMIT), carried.alias(_L if n == 0 else _R))

    def step(self, spark, new: tuple[list, list], old: tuple[list, list], before: Clocks, after: Clocks,
             rows: int | None = None, sizes=None):
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        upto = (self.leave_left(after), self.leave_right(after))
        was = (self.leave_left(before), self.leave_right(before))
        if upto == was and not (new[0] or new[1]):
            return None
        below = max(upto)
        sides = [self._events(spark, n, new[n], old[n], was[n], upto[n], below) for n in (0, 1)]
        if sides[0] is None or sides[1] is None:
            return None  # an input without data rows yet: nothing pairs (the join is INNER)
        left, right = sides
        left = left.withColumn(_R, F.lit(None).cast(right.schema[_R].dataType))
        right = right.withColumn(_L, F.lit(None).cast(left.schema[_L].dataType))
        names = [c for c in left.columns if c.startswith("__rows_k")]
        window = (Window.partitionBy(*names).orderBy(_T, _SIDE, _FILE, _IDX)
                  .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        events = left.unionByName(right)
        latest_r = F.last(_R, ignorenulls=True).over(window)
        latest_l = F.last(_L, ignorenulls=True).over(window)
        matched = (events.select(_SIDE, _EMIT, F.when(F.col(_SIDE) == 0, F.col(_L)).otherwise(latest_l).alias(_PL),
                                 F.when(F.col(_SIDE) == 1, F.col(_R)).otherwise(latest_r).alias(_PR))
                   .where(F.col(_EMIT) & F.col(_PL).isNotNull() & F.col(_PR).isNotNull()))
        return self._project(matched.select(f"{_PL}.*", f"{_PR}.*"))


def lower_rows(query: Query, specs: list[InputSpec]):
    """The query as a batch ROWS join (`strategy.batch_reason`): the `RowsBatchJoin` the sink runs,
    no streaming frame (`lower.batch.batch_sink.BatchJoinQuery`)."""
    return lower_one_join(RowsBatchJoin, query, specs)
