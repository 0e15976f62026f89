"""The bucketed table-preserving join (SEMANTICS.md §7): `stream OVER (ORDER BY FLOOR(ROWTIME TO
unit) RANGE CURRENT ROW) RIGHT JOIN table`.

Spark has no streaming join that keeps unmatched rows of a static side, so the stream side runs
as the streaming query and the join happens when a bucket closes: the sink (io.sinks.ordered_sink) holds
the stream rows until the clock passes their bucket's end, then calls this with the closed
buckets (every bucket from the first stream row's, including buckets without stream rows) and
their rows. One Spark batch join gives the matched rows (rowtime = the stream row's) plus,
per bucket, every table row that matched nothing, NULL-extended, with rowtime = the bucket start.
"""

from __future__ import annotations

import pyarrow as pa

from streamjoin.lower.columns import ROWTIME_COLUMN
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.model import Join, Query
from streamjoin.plan.windows import UNIT_MS

_TS = pa.timestamp("us", tz="UTC")


class BucketedJoin:
    def __init__(self, spark, query: Query, join: Join, table_frame, carried: list[str], unit: str):
        self.spark, self.query, self.join, self.table = spark, query, join, table_frame
        self.carried = carried
        self.empty = None  # an empty table of the carried columns (set by lower from the frame's schema)
        self.unit_us = UNIT_MS[unit.upper()] * 1000

    def bucket_of(self, us: int) -> int:
        return (us // self.unit_us) * self.unit_us

    def __call__(self, rows: pa.Table, buckets: list[int]) -> pa.Table:
        """Output rows (the query's columns plus __rowtime) of the given closed buckets, sorted."""
        return self.frame(rows, buckets).orderBy(ROWTIME_COLUMN).toArrow()

    def frame(self, rows: pa.Table, buckets: list[int]):
        """The same as a Spark DataFrame (unordered), for sinks that write from the executors."""
        from pyspark.sql import functions as F

        keys = [f"{spark_sql(a)} = {spark_sql(b)}" for a, b in self.join.condition.keys]
        condition = " AND ".join(keys + [f"({spark_sql(r)})" for r in self.join.condition.residual]) or "true"
        rows = rows if rows is not None else self.empty
        stream = self.spark.createDataFrame(rows.select(self.carried))
        stream = stream.withColumn(
            "__sbucket", F.timestamp_micros(F.floor(F.unix_micros(F.col(ROWTIME_COLUMN)) / self.unit_us) * self.unit_us)
        )
        matched = stream.join(self.table, F.expr(condition), "inner").drop("__sbucket")
        closed = self.spark.createDataFrame(pa.table({"__bucket": pa.array(buckets, pa.int64()).cast(_TS)}))
        unmatched = (
            closed.crossJoin(self.table)
            .join(stream, F.expr(f"({condition}) AND __sbucket = __bucket"), "left_anti")
            .withColumn(ROWTIME_COLUMN, F.col("__bucket"))
            .drop("__bucket")
        )
        joined = matched.unionByName(unmatched, allowMissingColumns=True)
        if self.query.where is not None:
            joined = joined.where(F.expr(spark_sql(self.query.where)))
        selected = [F.expr(spark_sql(c.expression)).alias(c.name) for c in self.query.output]
        return joined.select(*selected, F.col(ROWTIME_COLUMN))
