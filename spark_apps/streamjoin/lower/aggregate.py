"""Streaming `GROUP BY FLOOR(ROWTIME TO unit) [, cols]` (or TUMBLE's `window_start`) on Spark
(SEMANTICS.md §7): one tumbling event-time window per bucket, so Spark's append mode emits a
group's row once the watermark (the stream clock) passes the bucket end, and drops its state.
The row's rowtime is the bucket start."""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoin, to_sql
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


def aggregate(joined, query: m.Query, rowtime_column: str):
    """`joined`: the query's inputs after joins and WHERE (bound rows removed); returns the
    output columns plus `__rowtime` (the bucket start)."""
    from pyspark.sql import functions as F

    from streamjoin.lower.stream_join import ROWTIME_COLUMN, spark_sql

    agg = query.aggregation
    keys = {k: f"__k{i}" for i, k in enumerate(agg.keys) if k != agg.bucket}
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
    grouped = joined.groupBy(
        F.window(F.col(rowtime_column), f"{size} milliseconds").alias("__w"),
        *[F.expr(spark_sql(k)).alias(name) for k, name in keys.items()],
    )
    measures = [F.expr(spark_sql(text)).alias(name) for text, name in aggregates.items()]
    result = grouped.agg(*measures) if measures else grouped.count()
    result = result.withColumn(BUCKET, F.col("__w.start")).withColumn(BUCKET_END, F.col("__w.end"))
    selected = [F.expr(tree.sql(dialect="spark")).alias(name) for name, tree in outputs]
    return result.select(*selected, F.col(BUCKET).alias(ROWTIME_COLUMN))


def _is_tumble(query: m.Query, alias: str) -> bool:
    return any(i.alias == alias and i.time_window is not None for i in query.inputs)
