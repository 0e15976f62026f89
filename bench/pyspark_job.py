"""The benchmark's interval join written by hand in PySpark Structured Streaming: Spark's JSON
file source, watermarks, the time-range join, every result row to stdout as JSON Lines.

    .venv/bin/python bench/pyspark_job.py L_DIR R_DIR INNER WINDOW_MS CHECKPOINT
    .venv/bin/python bench/pyspark_job.py L_DIR TABLE_DIR SNAPSHOT WINDOW_MS CHECKPOINT

SNAPSHOT: the stream joined with the table (`id`, `name`, `price`) as a static DataFrame (a
stream-static join; WINDOW_MS is not used).

INNER only: a streaming outer join emits a NULL-extended row when the watermark passes it, and
Spark has no end of input for a stream, so the rows near the end would never come out (an
`availableNow` run stops with them held): the hand-written job cannot give the exact FULL count.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(left: str, right: str, join: str, window_ms: int) -> None:
    if join not in ("INNER", "SNAPSHOT"):
        raise SystemExit("the hand-written PySpark job runs INNER and SNAPSHOT only (see the docstring)")
    spark = (SparkSession.builder.master("local[*]").appName("bench-pyspark")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "8g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    schema = "rowtime TIMESTAMP, k INT, v INT"

    def read(path):
        return (spark.readStream.schema(schema).option("timestampFormat", "yyyy-MM-dd HH:mm:ss.SSS")
                .option("maxFilesPerTrigger", 1).json(path).withWatermark("rowtime", "0 seconds"))

    lhs = read(left).alias("l")
    if join == "SNAPSHOT":
        table = spark.read.schema("id INT, name STRING, price DOUBLE").json(right).alias("t")
        joined = lhs.join(table, F.expr("l.k = t.id"))
        columns = [F.col("l.rowtime").alias("rowtime"), F.col("l.k").alias("k"), F.col("l.v").alias("lv"), F.col("t.name"), F.col("t.price")]
    else:
        rhs = read(right).alias("r")
        seconds = window_ms / 1000
        joined = lhs.join(rhs, F.expr(f"l.k = r.k AND r.rowtime BETWEEN l.rowtime - INTERVAL {seconds:g} SECONDS "
                                  f"AND l.rowtime + INTERVAL {seconds:g} SECONDS"))
        columns = [F.col("l.rowtime").alias("rowtime"), F.col("l.k").alias("k"), F.col("l.v").alias("lv"), F.col("r.v").alias("rv")]
    lines = joined.select(F.to_json(F.struct(*columns)).alias("j"))
    out = sys.stdout.buffer

    def write(batch, _batch_id):
        for part in batch.toArrow().column("j").chunks:
            if len(part):
                out.write(("\n".join(part.to_pylist()) + "\n").encode())
        out.flush()

    query = lines.writeStream.foreachBatch(write).trigger(availableNow=True).option(
        "checkpointLocation", sys.argv[5]).start()
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
