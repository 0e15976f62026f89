"""Streaming `GROUP BY FLOOR(ROWTIME TO unit) [, cols]` (or TUMBLE's `window_start`) on Spark
(SEMANTICS.md §7): one tumbling event-time window per bucket, so Spark's append mode emits a
group's row once the watermark (the stream clock) passes the bucket end, and drops its state.
The row's rowtime is the bucket start."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoin, to_sql
from streamjoin.errors import Unsupported
from streamjoin.plan import model as m
from streamjoin.plan.windows import UNIT_MS

_AGGREGATES = (exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg)
BUCKET, BUCKET_END = "__bucket", "__bucket_end"


def bucket_ms(aggregation: m.Aggregation) -> int:
    unit = (aggregation.bucket_unit or "").upper()
    if unit in UNIT_MS:
        return UNIT_MS[unit]
    # TUMBLE: "TUMBLE <size> ms"
    return int(unit.split()[1])


def aggregate(joined, query: m.Query, event_time_column: str):
    """`joined`: the query's inputs after joins and WHERE (bound rows removed); returns the
    output columns plus `__rowtime` (the bucket start) and `__et` (its engine time).
    `event_time_column`: the engine time (instants.SHIFT_US after the rowtime) of the rows."""
    from pyspark.sql import functions as F

    from streamjoin.io.instants import SHIFT_US
    from streamjoin.lower.stream_join import ET_COLUMN, ROWTIME_COLUMN, spark_sql

    agg = query.aggregation
    # window_start is the bucket; a TUMBLE / HOP window's window_end is the bucket's end
    keys = {k: f"__k{i}" for i, k in enumerate(agg.keys) if k != agg.bucket and not _window_end(query, k)}
    aggregates: dict[str, str] = {}

    def rewrite(node):
        text = to_sql(node)
        if text == agg.bucket or (isinstance(node, exp.Column) and not node.table and node.name == "ROWTIME"):
            return exp.column(BUCKET)
        if isinstance(node, exp.Column) and node.name in ("window_start", "window_end") and _is_tumble(query, node.table):
            return exp.column(BUCKET if node.name == "window_start" else BUCKET_END)
        if text in keys:
            return exp.column(keys[text])
        if isinstance(node, _AGGREGATES):
            name = aggregates.setdefault(text, f"__a{len(aggregates)}")
            return exp.column(name)
        return node

    outputs = [(o.name, sqlglot.parse_one(o.expression, read=StreamJoin).transform(rewrite)) for o in query.output]
    size = bucket_ms(agg)
    slide = agg.window.slide_ms if agg.window else size
    # buckets start where rowtime - offset is a multiple of the slide: in engine time, SHIFT later
    start = (SHIFT_US // 1000 + (agg.window.offset_ms if agg.window else 0)) % slide
    grouped = joined.groupBy(
        F.window(F.col(event_time_column), f"{size} milliseconds", f"{slide} milliseconds",
                 f"{start} milliseconds").alias("__w"),
        *[F.expr(spark_sql(k)).alias(name) for k, name in keys.items()],
    )
    measures = [F.expr(_measure(text, spark_sql)).alias(name) for text, name in aggregates.items()]
    result = grouped.agg(*measures) if measures else grouped.count()
    shift = F.lit(SHIFT_US)
    result = (result.withColumn(BUCKET, F.timestamp_micros(F.unix_micros(F.col("__w.start")) - shift))
              .withColumn(BUCKET_END, F.timestamp_micros(F.unix_micros(F.col("__w.end")) - shift)))
    selected = [F.expr(tree.sql(dialect="spark")).alias(name) for name, tree in outputs]
    return result.select(*selected, F.col(BUCKET).alias(ROWTIME_COLUMN), F.col("__w.start").alias(ET_COLUMN))


def check_distinct(query: m.Query) -> None:
    """Raise Unsupported for a DISTINCT aggregate `aggregate` cannot run."""
    for o in query.output:
        for node in sqlglot.parse_one(o.expression, read=StreamJoin).find_all(*_AGGREGATES):
            if isinstance(node.this, exp.Distinct) and not (
                isinstance(node, exp.Count) or (isinstance(node, exp.Min | exp.Max) and len(node.this.expressions) == 1)
            ):
                raise Unsupported(f"{to_sql(node)}: of the DISTINCT aggregates, `run` supports COUNT, MIN and MAX in streams yet")


def _measure(text: str, spark_sql) -> str:
    """An aggregate as Spark SQL. Spark's streaming aggregation has no DISTINCT aggregates; a
    DISTINCT one runs over the group's set of distinct values (`collect_set` skips NULLs, as
    the DISTINCT aggregates do; with several arguments a row counts when none is NULL)."""
    node = sqlglot.parse_one(text, read=StreamJoin)
    distinct = node.this if isinstance(node, _AGGREGATES) else None
    if not isinstance(distinct, exp.Distinct):
        return spark_sql(text)
    args = [spark_sql(to_sql(e)) for e in distinct.expressions]
    if len(args) == 1:
        values = f"collect_set({args[0]})"
    else:
        present = " AND ".join(f"({a}) IS NOT NULL" for a in args)
        values = f"collect_set(CASE WHEN {present} THEN struct({', '.join(args)}) END)"
    if isinstance(node, exp.Count):
        return f"CAST(size({values}) AS BIGINT)"
    if isinstance(node, exp.Min | exp.Max) and len(args) == 1:  # the same with or without DISTINCT
        return spark_sql(to_sql(node.__class__(this=distinct.expressions[0])))
    raise Unsupported(f"{to_sql(node)} is not supported")  # check_distinct said so before


def _is_tumble(query: m.Query, alias: str) -> bool:
    return any(i.alias == alias and i.time_window is not None for i in query.inputs)


def _window_end(query: m.Query, key: str) -> bool:
    """Whether a GROUP BY key is the window_end of a TUMBLE / HOP input (set by its window_start)."""
    tree = sqlglot.parse_one(key, read=StreamJoin)
    return isinstance(tree, exp.Column) and tree.name == "window_end" and _is_tumble(query, tree.table)
