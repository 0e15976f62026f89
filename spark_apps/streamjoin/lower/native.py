"""A join chain on Spark's own joins (SEMANTICS.md §4-§7): the query's inputs (staged streams,
table snapshots, temporal tables, stream views) joined left-deep, one `DataFrame.join` per join
(how each kind joins: `JOINS`), then WHERE, the output rowtime, and an aggregation or a bucketed
table-preserving join at the end.

Each stream input is a staged file stream (`streamjoin.io`) with a watermark on its engine time
(delay = the input's allowed lateness, so Spark's watermark is the stream clock of §1). Each
stream-stream join's condition is the plan's keys, residual and the co-presence time bounds of
§4 (on engine time), which is also what lets Spark drop state as the clock advances. The output
rowtime (§4) is the latest presence start among the non-null input rows.
"""

from __future__ import annotations

from pathlib import Path

import streamjoin.lower.tables as tables
from streamjoin.io.formats.columns import OP
from streamjoin.io.formats.files import BOUND
from streamjoin.io.formats.types import arrow_schema
from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.aggregate import table_groups
from streamjoin.lower.columns import (
    ET_COLUMN,
    ROWTIME_COLUMN,
    START,
    VIEW_BOUND,
    ZERO,
    any_bound,
    bound_column,
    engine_time,
    et,
    et_of,
    event_time,
    flat,
    inner_only,
    not_bound,
    one_event_time,
    or_bound,
    q,
    rowtime_column,
    rowtime_of,
)
from streamjoin.lower.expressions import spark_sql
from streamjoin.lower.strategy import stream_view
from streamjoin.lower.support import start_bounds
from streamjoin.plan.model import Input, Join, JoinKind, JoinType, Kind, Query, Relation, Script

_SPARK_JOIN = {JoinType.INNER: "inner", JoinType.CROSS: "inner", JoinType.LEFT: "left", JoinType.RIGHT: "right",
               JoinType.FULL: "full", JoinType.SEMI: "left_semi", JoinType.ANTI: "left_anti"}


class NativeLowering:
    """Builds the frames of one query (and of the stream views it reads); collects the snapshots
    its tables were loaded from."""

    def __init__(self, spark, script: Script, specs: dict[str, InputSpec], checkpoint: Path,
                 staged: dict[str, InputSpec] | None = None, query: Query | None = None, batch: bool = False):
        """`staged`: inputs (by alias) that an earlier part stages for this query (lower.staged_views);
        `query`: the query it lowers (None: tables only); `batch`: its streams as batch frames of
        the steps staged when the frame is built (lower.staged_views' bounded parts)."""
        self.spark, self.script, self.specs, self.checkpoint = spark, script, specs, checkpoint
        self.batch = batch
        self.staged = staged or {}
        self.snapshots = []
        # whether Spark's stream-stream join reads the stream frames (their watermark: stream_frame)
        self.joins_streams = query is not None and joins_streams(script, query)

    def query_frame(self, query: Query, prefix: str = "", bounds: bool = False):
        """(streaming frame of output columns + __rowtime + __et, BucketedJoin or None).
        `bounds`: keep the inputs' bound rows, marked in a column `__bound` (a view read by a
        join: its bounds must reach that join's clock, `view_frame`)."""
        frames = {i.alias: self.input_frame(query, i, prefix) for i in query.inputs}
        if query.aggregation is None:  # a TUMBLE / HOP stream's rows with their windows' columns (a HOP row per window)
            from streamjoin.lower.running import input_windows

            frames.update({i.alias: input_windows(frames[i.alias], i) for i in query.inputs if i.time_window is not None})
        if query.union_of:  # its branches' rows, merged (lower.union): then one stream, the first branch's
            from dataclasses import replace

            from streamjoin.lower.union import union_all

            merged = union_all(self.script, query, frames)
            query = replace(query, inputs=query.inputs[:1])
            frames = {query.inputs[0].alias: merged}
        joined, bucketed_join = self.join_chain(query, frames, frames[query.inputs[0].alias], query.joins)
        return self.finish(query, frames, joined, bucketed_join, bounds)

    def join_chain(self, query: Query, frames: dict, joined, joins, before: tuple[str, ...] = ()):
        """Join `joins` onto `joined`; `before`: the stream inputs an intermediate stream (the
        output of an earlier query of a cut chain) brings, NULL for its NULL-extended rows.
        Returns (the joined frame, the bucketed join that ends the chain or None)."""
        streams = query.streams()
        for join in joins:
            if join.kind == JoinKind.BUCKETED:
                return joined, join  # joined when its bucket closes: lower.bucketed
            if join.kind == JoinKind.ASOF_TABLE:  # ties by the table's primary key, if it declares one
                from streamjoin.lower.asof_table import asof_lookup

                key = self.script.relation(query.input(join.right).relation).primary_key
                joined = asof_lookup(joined, frames[join.right], query, join, key)
            else:
                joined = JOINS[join.kind](joined, frames[join.right], query, join, before)
            sides = [a for a in (*join.left_inputs, join.right) if a in streams]
            if join.kind.stream_stream and join is not joins[-1]:
                joined = one_event_time(joined, sides)
        return joined, None

    def table_frame(self, query: Query):
        """A query over tables only (RisingWave's materialized views of tables): one batch
        DataFrame of its output columns, from the tables' snapshots."""
        from pyspark.sql import functions as F

        from streamjoin.lower.running import input_windows

        if query.union_of:  # UNION ALL of views of tables: every row of each branch, columns by position
            branches = [self.table_frame(self.script.view(b)) for b in query.union_of]
            names = [c.name for c in query.output]
            out = branches[0].toDF(*names)
            for branch in branches[1:]:
                out = out.unionAll(branch.toDF(*names))
            return out
        frames = {i.alias: self.table_input(query, i) for i in query.inputs}
        for i in query.inputs:  # TUMBLE / HOP over a table (RisingWave): each row's windows, as columns
            if i.time_window is not None:
                frames[i.alias] = input_windows(frames[i.alias], i)
        joined, _ = self.join_chain(query, frames, frames[query.inputs[0].alias], query.joins)
        if query.where is not None:
            joined = joined.where(F.expr(spark_sql(query.where)))
        selected = [F.expr(spark_sql(c.expression)).alias(c.name) for c in query.output]
        if query.aggregation is not None:  # the groups of the tables' rows as they stand (SQL's GROUP BY)
            joined, selected = table_groups(query, joined)
        if query.distinct == ():  # SELECT DISTINCT: one row per distinct output row
            out = joined.select(*selected).distinct()
        elif query.distinct:  # DISTINCT ON (...): one row per value (which one: any, as SQL says)
            on = [f"__distinct_{n}" for n in range(len(query.distinct))]
            keyed = joined.select(*selected, *[F.expr(spark_sql(e)).alias(k) for e, k in zip(query.distinct, on, strict=True)])
            out = keyed.dropDuplicates(on).drop(*on)
        else:
            out = joined.select(*selected)
        if query.table_order:  # ORDER BY output columns, NULLs as PostgreSQL places them
            out = out.orderBy(*[(F.col(q(name)).desc_nulls_first() if nulls_first else F.col(q(name)).desc_nulls_last()) if desc
                                else (F.col(q(name)).asc_nulls_first() if nulls_first else F.col(q(name)).asc_nulls_last())
                                for name, desc, nulls_first in query.table_order])
        return out.limit(query.table_limit) if query.table_limit is not None else out

    def table_input(self, query: Query, item: Input):
        """An input of a query over tables: a table's snapshot, or a view of tables as one batch of
        its own (its joins, filters and window functions: RisingWave's views of views of tables)."""
        from pyspark.sql import functions as F

        relation = self.script.relation(item.relation)
        if not relation.view:
            return self.input_frame(query, item, "")
        view = self.script.view(relation.name)
        return self.table_frame(view).select(*[F.col(q(c.name)).alias(flat(item.alias, c.name)) for c in view.output])

    def finish(self, query: Query, frames: dict, joined, bucketed_join, bounds: bool = False):
        from pyspark.sql import functions as F

        streams = query.streams()
        if query.where is not None and bucketed_join is None:
            joined = joined.where(F.expr(or_bound(spark_sql(query.where), streams)))
        # a view's bound rows go on, marked, to the joins that read it (their guards reject them)
        keep_bounds = bounds and bucketed_join is None and query.aggregation is None
        if not keep_bounds and (not inner_only(query) or (not query.joins and query.aggregation is None)):
            # an inner join's own guard keeps bound rows out. Without joins, an aggregation needs
            # its bound row to move the watermark past its last group (Spark pushes a filter
            # below the watermark); it puts bound rows in groups of their own, never written.
            joined = joined.where(F.expr(not_bound(streams, [rowtime_of(query, a) for a in streams])))
        if bucketed_join is not None:
            return self.bucketed(query, frames, joined, bucketed_join)
        if query.aggregation is not None and query.aggregation.bucket is None:  # a running aggregate: a changelog
            from streamjoin.lower.running import running_frame

            joined = joined.where(F.expr(not_bound(streams, [rowtime_of(query, a) for a in streams])))
            return running_frame(joined.withColumn(ROWTIME_COLUMN, rowtime_column(query, streams)), query, ROWTIME_COLUMN), None
        if query.aggregation is not None:
            from streamjoin.lower.aggregate import aggregate

            return aggregate(joined, query, et(streams[0])), None
        joined = joined.withColumn(ROWTIME_COLUMN, rowtime_column(query, streams))
        outputs = [c.expression for c in query.output]
        selected = []
        if query.changing_analytics():  # OVER windows in another column's order: a changelog
            from streamjoin.lower.analytic_changes import add_changing_analytics

            joined, selected = add_changing_analytics(joined, query, streams[0]), [F.col(OP)]
        elif query.analytics:  # aggregates OVER windows of rows: one stream's rows (lower.support)
            from streamjoin.lower.analytic import add_analytics

            joined = add_analytics(joined, query, streams[0])
        if query.analytics:
            from streamjoin.lower.analytic import with_values

            outputs = [with_values(e, query) for e in outputs]
        selected += [F.expr(spark_sql(e)).alias(c.name) for e, c in zip(outputs, query.output, strict=True)]
        if keep_bounds:
            selected.append(F.expr(any_bound(streams) if streams else "false").alias(VIEW_BOUND))
        return joined.select(*selected, F.col(ROWTIME_COLUMN), event_time(query, streams).alias(ET_COLUMN)), None

    def bucketed(self, query: Query, frames: dict, joined, join: Join):
        """The stream side of a bucketed table-preserving join, and the join that runs per bucket."""
        from pyspark.sql.pandas.types import to_arrow_schema

        from streamjoin.lower.bucketed import BucketedJoin

        streams = query.streams()
        left = [a for a in streams if a in join.left_inputs]
        joined = joined.withColumn(ROWTIME_COLUMN, rowtime_column(query, left))
        internal = {bound_column(a) for a in streams} | {flat(a, ZERO) for a in streams} | {et(a) for a in streams}
        carried = [c for c in joined.columns if c not in internal]
        bucket = query.input(join.left_inputs[-1]).window
        frame = joined.select(*carried)
        bucketed = BucketedJoin(self.spark, query, join, frames[join.right], carried, bucket.unit)
        bucketed.empty = to_arrow_schema(frame.schema, timezone="UTC").empty_table()
        return frame, bucketed

    def input_frame(self, query: Query, item: Input, prefix: str):
        relation = self.script.relation(item.relation)
        ordered = bool(query.analytics)  # its rows' order among equal rowtimes (lower.analytic)
        if prefix + item.alias in self.staged:  # a part of its own writes it (lower.staged_views)
            return stream_frame(self.spark, self.staged[prefix + item.alias], item.alias, ordered, self.joins_streams, self.batch)
        if relation.view and self.script.view(relation.name).kind == Kind.STREAM:
            return self.view_frame(item, relation, prefix)
        if item.kind == Kind.STREAM:
            return stream_frame(self.spark, self.specs[prefix + item.alias], item.alias, ordered, self.joins_streams, self.batch)
        if item.temporal:
            join = next(j for j in query.joins if j.right == item.alias)
            if not relation.given:  # rows the program inserted: read once, below
                tables.check_temporal_key(relation, join)
                return tables.temporal_frame(self.spark, relation, item.alias)
        view_rows = self.table_view_rows(relation) if relation.view else None
        frame, snapshot = tables.load_snapshot(
            self.spark, relation, item.alias, query, item, self.checkpoint / "snapshots", view_rows
        )
        self.snapshots.append(snapshot)
        return frame

    def view_frame(self, item: Input, relation: Relation, prefix: str):
        """A stream view's output as an input: its columns flat under the input's alias."""
        from pyspark.sql import functions as F

        view = self.script.view(relation.name)
        # its bound rows too: a filter or projection that dropped them would hold back the
        # watermark (Spark pushes filters below it), and the outer joins reading the view would
        # never release their last NULL-extended rows (issue 38)
        frame, _ = self.query_frame(view, f"{prefix}{relation.name}.", bounds=True)
        out = [c.name for c in view.output]
        cols = [F.col(q(c)).alias(flat(item.alias, c)) for c in out]
        if relation.rowtime not in out:
            cols.append(F.col(ROWTIME_COLUMN).alias(flat(item.alias, relation.rowtime)))
        return frame.select(
            *cols,
            F.col(ET_COLUMN).alias(et(item.alias)),
            (F.col(VIEW_BOUND) if VIEW_BOUND in frame.columns else F.lit(False)).alias(bound_column(item.alias)),
            (F.unix_micros(F.col(ROWTIME_COLUMN)) * 0).alias(flat(item.alias, ZERO)),
        )

    def table_view_rows(self, relation: Relation):
        """A `SELECT TABLE` view over a stream (Lenses): the stream's rows as they are now; with a
        `_key` column, the latest row per key (a compacted topic)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        from streamjoin.env import expand
        from streamjoin.io.sources.tables import read_files

        view = self.script.view(relation.name)
        if view.joins or view.aggregation is not None or len(view.inputs) != 1:  # a view of tables only: one batch
            return self.table_frame(view).toArrow()
        item = view.inputs[0]
        source = self.script.relation(item.relation)
        fmt = (source.option("format") or ("json" if source.kind == Kind.STREAM else "csv")).lower()
        if source.view:  # a table view of a table view (s-Server's VALUES splitter views): its rows first
            rows = self.table_view_rows(source)
        elif (source.option("connector") or "").lower() == "values":  # rows the program wrote (VALUES, INSERT)
            from streamjoin.io.sources.tables import read_table

            rows = read_table(source.name, dict(source.options), arrow_schema(source.columns)).rows
        elif (source.option("connector") or "").lower() == "kafka":  # the topic as it is now
            from streamjoin.io.sources.kafka import read_all
            from streamjoin.lower.inputs import kafka_options

            rows = read_all(kafka_options(source), arrow_schema(source.columns), source.rowtime, source.arrival_rowtime)
        else:
            rows = read_files(expand(source.option("path")), fmt, arrow_schema(source.columns), source.option("pattern"))
        frame = self.spark.createDataFrame(rows.rename_columns([flat(item.alias, c) for c in rows.column_names]))
        if source.kind == Kind.STREAM:
            frame = frame.withColumn(ROWTIME_COLUMN, F.col(q(flat(item.alias, source.rowtime))))
        if view.where is not None:
            frame = frame.where(F.expr(spark_sql(view.where)))
        order = [F.col(ROWTIME_COLUMN).desc()] if source.kind == Kind.STREAM else []
        frame = frame.select(*[F.expr(spark_sql(c.expression)).alias(c.name) for c in view.output], *(
            [F.col(ROWTIME_COLUMN)] if order else []))
        if "_key" in frame.columns and order:
            latest = Window.partitionBy("_key").orderBy(*order)
            frame = frame.withColumn("__n", F.row_number().over(latest)).where("__n = 1").drop("__n")
        return frame.drop(ROWTIME_COLUMN).toArrow()


# ---------------------------------------------------------------------------- how each kind of join joins


def _dataframe_join(joined, right, query: Query, join: Join, before: tuple[str, ...]):
    """A stream-stream, stream-table or table-table join: one DataFrame.join on the condition
    (keys, time bounds, residual) and the guard against bound rows and NULL keys."""
    from pyspark.sql import functions as F

    streams = query.streams()
    sides = [a for a in (*join.left_inputs, join.right) if a in streams]
    keys = [e for pair in join.condition.keys for e in pair]
    guard = not_bound(sides, [rowtime_of(query, a) for a in sides], [spark_sql(k) for k in keys])
    condition = " AND ".join(p for p in (join_condition(join, query, sides, before), guard) if p)
    return joined.join(right, F.expr(condition), _SPARK_JOIN[join.join_type])


JOINS = {
    JoinKind.STREAM_STREAM_WINDOW: _dataframe_join,
    JoinKind.INTERVAL: _dataframe_join,
    JoinKind.SNAPSHOT: _dataframe_join,
    JoinKind.TEMPORAL: _dataframe_join,
    JoinKind.TABLE_TABLE: _dataframe_join,
    JoinKind.WINDOW_TVF: _dataframe_join,  # of tables only (one batch): equal windows are keys of the condition
}


def join_condition(join: Join, query: Query, sides: list[str], before: tuple[str, ...] = ()) -> str | None:
    """`sides`: the stream inputs of the join (their bound rows pass residual filters).
    `before`: the inputs of an intermediate stream on the left (a cut chain, see lower.cut_chain)."""
    c = join.condition
    parts = [f"{spark_sql(a)} = {spark_sql(b)}" for a, b in c.keys]
    if not parts and join.kind.with_table:
        parts.append("true")
    elif not parts:  # Spark's stream-stream join needs an equality: all rows share one key
        parts.append(f"{q(flat(join.left_inputs[0], ZERO))} = {q(flat(join.right, ZERO))}")
    for b in c.time_bounds:
        # engine times (Spark drops state by them); an intermediate input (`before`) has none
        if b.left in before:
            right, left = rowtime_of(query, b.right), rowtime_of(query, b.left)
        else:
            right, left = et_of(b.right), et_of(b.left)
        bound = []
        if b.low_ms is not None:
            bound.append(f"{right} >= {left} + INTERVAL {b.low_ms} MILLISECONDS")
        if b.high_ms is not None:
            bound.append(f"{right} <= {left} + INTERVAL {b.high_ms} MILLISECONDS")
        if b.left in before and b.origin != "condition" and bound:
            # co-presence (§4) counts the non-null rows only: a NULL-extended input has no window
            bound = [f"({left} IS NULL OR ({' AND '.join(bound)}))"]
        parts.extend(bound)
    if before and join.right in query.streams():
        low, high = start_bounds(join, list(before), query)  # implied by the bounds above, on the event time
        right = et_of(join.right)
        parts.append(f"{right} >= {q(START)} + INTERVAL {low} MILLISECONDS")
        parts.append(f"{right} <= {q(START)} + INTERVAL {high} MILLISECONDS")
    parts.extend(or_bound(spark_sql(r), sides) for r in c.residual)
    return " AND ".join(parts) if parts else None


def joins_streams(script: Script, query: Query) -> bool:
    """Whether `query`, or a stream view it reads, joins two streams on Spark's join."""
    if any(j.kind.stream_stream for j in query.joins):
        return True
    return any(joins_streams(script, script.view(i.relation)) for i in query.inputs if stream_view(script, i))


def order_delay(query: Query) -> int:
    """How long after the watermark a NULL-extended row may still come: every preserved row
    waits at most for its partners' reach, which no window sum exceeds. Stream-table joins
    decide at once."""
    if all(j.join_type in (JoinType.INNER, JoinType.CROSS) or j.kind.with_table or j.kind == JoinKind.BUCKETED
           for j in query.joins):
        return 0
    return sum(getattr(i.window, "size_ms", 0) for i in query.inputs if i.kind == Kind.STREAM)


def stream_frame(spark, spec: InputSpec, alias: str, sequence: bool = False, joined: bool = True, batch: bool = False):
    """A staged stream input with its watermark on its engine time, columns flat under `alias`
    (and, with `sequence`, each row's position in its input: `io.sources.source.SEQUENCE`); `joined`:
    Spark's stream-stream join reads it; `batch`: the steps staged now, as a batch frame."""
    from pyspark.sql import functions as F

    from streamjoin.io.sources.source import staged_stream

    df = staged_stream(spark, spec, sequence, batch).withColumn(ET_COLUMN, engine_time(F.col(q(spec.rowtime))))
    # Bound rows must reach the watermark operator, and Spark pushes any filter on them below
    # it. So they go through: no join condition accepts them, and they leave after the joins.
    # Spark's join drops a row at or below its watermark, SEMANTICS §1 only a row below the clock
    # (max rowtime - lateness): one millisecond more keeps a row at the clock itself, on time,
    # which the stager passes on (a bound T staged as T + lateness likewise lets a row at T
    # follow). An aggregation alone drops by window end and closes a bucket once the clock
    # reaches its end: the clock itself there.
    df = df.withWatermark(ET_COLUMN, f"{spec.lateness_ms + (1 if joined else 0)} milliseconds")
    names = {c: flat(alias, c) for c in df.columns if c != BOUND}
    return df.select(
        *[F.col(q(c)).alias(n) for c, n in names.items()],
        F.col(BOUND).alias(bound_column(alias)),
        (F.unix_micros(F.col(q(spec.rowtime))) * 0).alias(flat(alias, ZERO)),
    )
