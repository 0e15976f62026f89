"""Streaming `GROUP BY FLOOR(ROWTIME TO unit) [, cols]` (or a TUMBLE / HOP window's
`window_start`) on Spark (SEMANTICS.md §7): one event-time window per bucket, so Spark's append
mode emits a group's row once the watermark (the stream clock) passes the bucket end, and drops
its state. The row's rowtime is the bucket start. And a GROUP BY over tables as one batch
(`table_groups`: GROUPING SETS, ROLLUP and CUBE too)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.io.formats.instants import SHIFT_US
from streamjoin.lower.columns import ET_COLUMN, ROWTIME_COLUMN, any_bound, q
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.model import Aggregation, Query, sql
from streamjoin.plan.windows import UNIT_MS

AGGREGATES = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg, exp.WithinGroup)  # WITHIN GROUP: PERCENTILE_DISC / _CONT
BUCKET, BUCKET_END = "__bucket", "__bucket_end"
_BOUND_GROUP, _BOUNDS = "__bound_group", "__bounds"


def bucket_ms(aggregation: Aggregation) -> int:
    if aggregation.window is not None:
        return aggregation.window.size_ms
    return UNIT_MS[(aggregation.bucket_unit or "").upper()]


def aggregate(joined, query: Query, event_time_column: str):
    """`joined`: the query's inputs after joins and WHERE (bound rows marked); returns the
    output columns plus `__rowtime` (the bucket start) and `__et` (its engine time).
    `event_time_column`: the engine time (instants.SHIFT_US after the rowtime) of the rows."""
    from pyspark.sql import functions as F

    agg = query.aggregation
    keys, aggregates, outputs, having = grouped_columns(query)
    size = bucket_ms(agg)
    slide = agg.window.slide_ms if agg.window else size
    # buckets start where rowtime - offset is a multiple of the slide: in engine time, SHIFT later
    start = (SHIFT_US // 1000 + (agg.window.offset_ms if agg.window else 0)) % slide
    # rowtime bounds reach the aggregation (they move its watermark), each in a group of its own
    # that is never written: a writer's bound is no row, and its group closes like any other once
    # the clock passes it. The filter reads an aggregate: on the grouping key Spark would push
    # it below the aggregation and the watermark, and no bound would move the clock.
    streams = query.streams()
    flag = F.expr(any_bound(streams) if streams else "false")
    grouped = joined.groupBy(
        F.window(F.col(q(event_time_column)), f"{size} milliseconds", f"{slide} milliseconds",
                 f"{start} milliseconds").alias("__w"),
        *[F.expr(spark_sql(k)).alias(name) for k, name in keys.values()],
        flag.alias(_BOUND_GROUP),
    )
    measures = [F.expr(_measure(node)).alias(name) for node, name in aggregates.values()] or [F.count(F.lit(1)).alias("count")]
    result = grouped.agg(*measures, F.max(flag).alias(_BOUNDS))
    # HAVING over the group's keys and aggregates, as the output's expressions are; in one predicate
    # with the bound test (an aggregate), which Spark cannot split and push below the watermark
    keep = f"CASE WHEN {_BOUNDS} THEN false ELSE coalesce(({having.sql(dialect='spark')}), false) END" if having is not None else None
    result = result.where(F.expr(keep) if keep else ~F.col(_BOUNDS))
    shift = F.lit(SHIFT_US)
    result = (result.withColumn(BUCKET, F.timestamp_micros(F.unix_micros(F.col("__w.start")) - shift))
              .withColumn(BUCKET_END, F.timestamp_micros(F.unix_micros(F.col("__w.end")) - shift)))
    selected = [F.expr(tree.sql(dialect="spark")).alias(name) for name, tree in outputs]
    return result.select(*selected, F.col(BUCKET).alias(ROWTIME_COLUMN), F.col("__w.start").alias(ET_COLUMN))


def grouped_columns(query: Query, every: bool = False):
    """A GROUP BY query's columns: ({key SQL: (key, its column __kN)}, {aggregate SQL: (aggregate,
    its column __aN)}, [(output name, its expression over those columns)], HAVING over them).
    The bucket is BUCKET (ROWTIME too), a TUMBLE / HOP window's window_end BUCKET_END. `every`:
    each aggregate function Spark has (ARRAY_AGG, ...) is one, as in a batch over tables."""
    agg = query.aggregation
    # window_start is the bucket; a TUMBLE / HOP window's window_end is the bucket's end
    keys = {sql(k): (k, f"__k{i}") for i, k in enumerate(agg.keys) if k != agg.bucket and not _window_end(query, k)}
    aggregates: dict[str, tuple[exp.Expression, str]] = {}

    def rewrite(node):
        text = sql(node)
        if (agg.bucket is not None and text == sql(agg.bucket)) or (
                isinstance(node, exp.Column) and not node.table and node.name == "ROWTIME"):
            return exp.column(BUCKET)
        if isinstance(node, exp.Column) and node.name in ("window_start", "window_end") and _windowed(query, node.table):
            return exp.column(BUCKET if node.name == "window_start" else BUCKET_END)
        if text in keys:
            return exp.column(keys[text][1])
        kinds = exp.AggFunc if every else AGGREGATES
        if (isinstance(node, kinds) or isinstance(node, exp.Filter) and isinstance(node.this, kinds)) \
                and node.find_ancestor(exp.Window) is None:
            return exp.column(aggregates.setdefault(text, (node, f"__a{len(aggregates)}"))[1])  # FILTER (WHERE ...) with it
        return node

    outputs = [(o.name, o.expression.transform(rewrite)) for o in query.output]
    having = query.having.transform(rewrite) if query.having is not None else None  # its aggregates computed too
    return keys, aggregates, outputs, having


def _measure(node: exp.Expression) -> str:
    """An aggregate as Spark SQL. Spark's streaming aggregation has no DISTINCT aggregates; a
    DISTINCT one runs over the group's set of distinct values (`collect_set` skips NULLs, as
    the DISTINCT aggregates do; with several arguments a row counts when none is NULL). Which
    DISTINCT aggregates run is checked before (`support`)."""
    written, condition = node, None
    if isinstance(node, exp.Filter):  # AGG(...) FILTER (WHERE c): Spark's own, but for DISTINCT (below)
        written, node, condition = node, node.this, spark_sql(node.expression.this)
    distinct = node.this
    if not isinstance(distinct, exp.Distinct):
        return spark_sql(written)
    args = [spark_sql(e) for e in distinct.expressions]
    if condition is not None:  # a row the FILTER rejects gives NULL, which the distinct set skips
        args = [f"CASE WHEN {condition} THEN {a} END" for a in args]
    if isinstance(node, exp.Min | exp.Max):  # the same with or without DISTINCT
        return spark_sql(written.__class__(this=node.__class__(this=distinct.expressions[0].copy()), expression=written.expression.copy())
                         if condition is not None else node.__class__(this=distinct.expressions[0].copy()))
    if len(args) == 1:
        values = f"collect_set({args[0]})"
    else:
        present = " AND ".join(f"({a}) IS NOT NULL" for a in args)
        values = f"collect_set(CASE WHEN {present} THEN struct({', '.join(args)}) END)"
    return f"CAST(size({values}) AS BIGINT)"  # COUNT(DISTINCT ...)


def _windowed(query: Query, alias: str) -> bool:
    """Whether `alias` is the TUMBLE / HOP input whose windows are the aggregation's buckets (a
    running aggregate's windows, on a column that is not the rowtime, are columns of their own:
    lower.running.window_columns)."""
    return query.aggregation.bucket is not None and any(i.alias == alias and i.time_window is not None for i in query.inputs)


def _window_end(query: Query, key: exp.Expression) -> bool:
    """Whether a GROUP BY key is the window_end of a TUMBLE / HOP input (set by its window_start)."""
    return isinstance(key, exp.Column) and key.name == "window_end" and _windowed(query, key.table)


def table_groups(query: Query, joined):
    """A GROUP BY over tables, as one batch: the grouped frame and its output columns (HAVING
    applied). Without GROUP BY keys, one row even over no rows (COUNT(*) = 0), as SQL says.
    GROUPING SETS, ROLLUP and CUBE: a GROUP BY for each set, its other keys NULL, their rows
    together (a set written twice gives its rows twice, as SQL says)."""
    from dataclasses import replace

    from pyspark.sql import functions as F

    flat, sets = grouping_sets(query.aggregation.keys)
    if sets is not None:
        query = replace(query, aggregation=replace(query.aggregation, keys=tuple(flat)))
    keys, aggregates, outputs, having = grouped_columns(query, every=True)
    by = [F.expr(spark_sql(k)).alias(name) for k, name in keys.values()]
    measures = [F.expr(spark_sql(node)).alias(name) for node, name in aggregates.values()]
    if sets is None:
        grouped = joined.groupBy(*by).agg(*measures) if measures else joined.select(*by).distinct()
    else:
        names = [keys[sql(k)][1] for k in flat]
        base = joined.select("*", *by)
        grouped = None
        for members in sets:
            mine = [names[i] for i in sorted(set(members))]
            part = base.groupBy(*mine).agg(*measures, F.count(F.lit(1)).alias("__rows"))
            part = part.select(*(F.col(n) if n in mine else F.lit(None).cast(base.schema[n].dataType).alias(n) for n in names),
                               *(F.col(name) for _, name in aggregates.values()))
            grouped = part if grouped is None else grouped.unionAll(part)
    if having is not None:
        grouped = grouped.where(F.expr(spark_sql(having)))
    return grouped, [F.expr(spark_sql(tree)).alias(name) for name, tree in outputs]


def grouping_sets(keys) -> tuple[list, list[list[int]] | None]:
    """GROUP BY keys with GROUPING SETS / ROLLUP / CUBE: (the distinct key expressions, each set as
    their indexes); (keys, None) for plain keys."""
    if not any(isinstance(k, exp.GroupingSets | exp.Rollup | exp.Cube) for k in keys):
        return list(keys), None
    flat: list = []

    def members(node) -> list[int]:
        parts = node.expressions if isinstance(node, exp.Tuple) else [node.this if isinstance(node, exp.Paren) else node]
        out = []
        for part in parts:
            if sql(part) not in [sql(f) for f in flat]:
                flat.append(part)
            out.append([sql(f) for f in flat].index(sql(part)))
        return out

    sets: list[list[int]] = [[]]
    for key in keys:
        if isinstance(key, exp.GroupingSets):
            options = [members(e) for e in key.expressions]
        elif isinstance(key, exp.Rollup | exp.Cube):
            parts = [members(e) for e in key.expressions]
            if isinstance(key, exp.Rollup):
                options = [sum(parts[:n], []) for n in range(len(parts), -1, -1)]
            else:
                options = [sum((p for bit, p in enumerate(parts) if mask >> bit & 1), [])
                           for mask in range(2 ** len(parts) - 1, -1, -1)]
        else:
            options = [members(key)]
        sets = [s + o for s in sets for o in options]
    return flat, sets
