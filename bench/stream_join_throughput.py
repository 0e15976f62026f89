"""Throughput of a 2-stream RANGE join: the compiled query (`streamjoin run` machinery) against
the same join written by hand in PySpark (Spark's file source, watermarks, time-range join), in
one run, on the same parquet files. Prints input rows/s for both and their ratio.

    .venv/bin/python bench/stream_join_throughput.py [--rows 1000000] [--files 10] [--rounds 2]

Each round runs both jobs on fresh checkpoints; the order alternates between rounds, since the
first job in a session pays for a cold JVM (class loading, JIT).

The hand-written job processes what is there and stops (no staging, no ordering stage, output
only counted); the compiled query runs as `streamjoin run --until-idle` does, from analysing the
SQL to the flushed, ordered, written output, so the ratio includes the price of those guarantees.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def generate(root: Path, name: str, rows: int, files: int, seed: int, keys: int = 100_000) -> Path:
    import numpy as np

    rng = np.random.default_rng(seed)
    out = root / name
    out.mkdir(parents=True)
    per_file = rows // files
    for i in range(files):
        start = i * per_file
        rowtime_us = (1_700_000_000_000 + np.arange(start, start + per_file)) * 1000  # one row per ms
        table = pa.table(
            {
                "k": pa.array(rng.integers(0, keys, per_file), pa.int32()),
                "v": pa.array(rng.integers(0, 1000, per_file), pa.int32()),
                "rowtime": pa.array(rowtime_us, pa.timestamp("us", tz="UTC")),
            }
        )
        pq.write_table(table, out / f"part-{i:04d}.parquet")
    return out


SQL = """CREATE STREAM a (k INT, v INT, rowtime TIMESTAMP) WITH (connector = 'files', format = 'parquet', path = '{a}');
CREATE STREAM b (k INT, v INT, rowtime TIMESTAMP) WITH (connector = 'files', format = 'parquet', path = '{b}');
SELECT STREAM ROWTIME, a.k, a.v AS av, b.v AS bv
FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) ON a.k = b.k;
"""


def compiled(spark, a: Path, b: Path, work: Path) -> tuple[float, int]:
    """As `streamjoin run --until-idle` runs it: staged, joined, released in order, flushed."""
    from streamjoin.runtime.pipeline import Pipeline

    started = time.perf_counter()
    pipeline = Pipeline.from_sql(SQL.format(a=a, b=b), "bench")
    runner = pipeline.runner(spark, work / "ckpt", str(work / "out"), until_idle=True, late_root=work / "late").start()
    runner.end_of_input()
    status = runner.stop("finished")
    return time.perf_counter() - started, status["rows_emitted"]


def by_hand(spark, a: Path, b: Path, work: Path) -> tuple[float, int]:
    from pyspark.sql import functions as F

    started = time.perf_counter()  # from building the frames, as the compiled job from its SQL
    schema = "k INT, v INT, rowtime TIMESTAMP"
    left = spark.readStream.schema(schema).parquet(str(a)).withWatermark("rowtime", "0 seconds").alias("a")
    right = spark.readStream.schema(schema).parquet(str(b)).withWatermark("rowtime", "0 seconds").alias("b")
    joined = left.join(
        right,
        F.expr("a.k = b.k AND b.rowtime >= a.rowtime - INTERVAL 1 SECOND AND b.rowtime <= a.rowtime + INTERVAL 1 SECOND"),
    ).select(F.greatest("a.rowtime", "b.rowtime").alias("rowtime"), "a.k", F.col("a.v").alias("av"), F.col("b.v").alias("bv"))
    count = [0]

    def sink(frame, _):
        count[0] += frame.count()

    query = joined.writeStream.foreachBatch(sink).option("checkpointLocation", str(work / "hand")).start()
    query.processAllAvailable()
    query.stop()
    return time.perf_counter() - started, count[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per input")
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds of both jobs; the order alternates (the first job of a session runs on a cold JVM)")
    args = parser.parse_args()
    from streamjoin.runtime.session import spark_session

    root = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    try:
        a = generate(root, "a", args.rows, args.files, 1)
        b = generate(root, "b", args.rows, args.files, 2)
        spark = spark_session("streamjoin-bench")
        total = 2 * args.rows
        print(f"inputs: 2 x {args.rows} rows in {args.files} parquet files each; RANGE 1 SECOND both sides, key over 100k values")
        ratios = []
        for n in range(args.rounds):
            work = root / f"round{n}"
            jobs = [("hand", lambda w=work: by_hand(spark, a, b, w / "hand")), ("ours", lambda w=work: compiled(spark, a, b, w / "ours"))]
            results = {name: job() for name, job in (jobs if n % 2 == 0 else jobs[::-1])}
            hand_s, hand_rows = results["hand"]
            ours_s, ours_rows = results["ours"]
            first = "hand-written" if n % 2 == 0 else "compiled"
            print(f"round {n + 1} ({first} first):")
            print(f"  hand-written PySpark: {hand_s:8.1f} s  {total / hand_s:12,.0f} input rows/s  ({hand_rows} output rows)")
            print(f"  compiled query:       {ours_s:8.1f} s  {total / ours_s:12,.0f} input rows/s  ({ours_rows} output rows)")
            print(f"  compiled / hand-written throughput: {hand_s / ours_s:.2f}")
            ratios.append(hand_s / ours_s)
        if len(ratios) > 1:
            print(f"mean over {len(ratios)} rounds: {sum(ratios) / len(ratios):.2f}")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
