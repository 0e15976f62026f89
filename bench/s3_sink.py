"""The S3 sink: 1M joined rows into a Delta table on the embedded S3 server. Reports sink
throughput (rows/s and MB/s of Parquet written) and the commit latency per micro-batch.

    .venv/bin/python bench/s3_sink.py [--stream-rows 1000000] [--batches 10] [--format delta|parquet]

A stream of sales joined with a 10k-row product snapshot (about 9% of sales find no product and
are dropped by the inner join), fed one file per micro-batch, `INSERT INTO` a sink partitioned
by hour. Timings come from the sink itself: `write` is the executors writing Parquet into S3,
`commit` the driver's Delta (or manifest) commit.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from snapshot_join import generate

SQL = """CREATE STREAM sales (product_id INT, qty INT, rowtime TIMESTAMP)
  WITH (connector = 'files', format = 'parquet', path = '{stream}');
CREATE TABLE products (id INT PRIMARY KEY, name VARCHAR, price DECIMAL(10, 2))
  WITH (connector = 'files', format = 'parquet', path = '{table}');
CREATE SINK sold WITH (connector = 's3', path = 's3://streamjoin/bench/sold', format = '{fmt}', partitioned_by = 'hour');
INSERT INTO sold
SELECT STREAM ROWTIME AS sold_at, s.product_id, s.qty, p.name, p.price
FROM sales AS s JOIN products AS p ON s.product_id = p.id;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stream-rows", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--format", choices=("delta", "parquet"), default="delta")
    args = parser.parse_args()
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3
    from streamjoin.runtime.pipeline import Pipeline
    from streamjoin.runtime.session import spark_session

    root = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    server = EmbeddedS3(port=0)
    server.start()
    os.environ.update(server.env())
    try:
        table, staged = generate(root, 10_000, args.stream_rows, args.batches)
        stream = root / "stream"
        stream.mkdir()
        spark = spark_session("streamjoin-bench")
        pipeline = Pipeline.from_sql(SQL.format(stream=stream, table=table, fmt=args.format), "bench")
        runner = pipeline.runner(spark, root / "ckpt", str(root / "late"), late_root=root / "late").start()
        started = time.perf_counter()
        for f in sorted(staged.iterdir()):  # one file per micro-batch, as a producer would deliver
            shutil.move(f, stream / f.name)
            runner.process_available()
        runner.end_of_input()
        elapsed = time.perf_counter() - started
        status = runner.stop("finished")
        timings = runner.sink.table.timings
        rows = sum(t["rows"] for t in timings)
        mb = sum(t["bytes"] for t in timings) / 1e6
        commits = [t["commit_s"] * 1000 for t in timings]
        writes = [t["write_s"] for t in timings]
        print(f"{args.format} sink on the embedded S3: {rows:,} joined rows in {len(timings)} batches "
              f"({status['rows_emitted']:,} emitted, {sum(t['files'] for t in timings)} files, {mb:.1f} MB Parquet)")
        print(f"end to end: {elapsed:6.1f} s  {rows / elapsed:10,.0f} rows/s  {mb / elapsed:6.2f} MB/s")
        print(f"sink only (executor writes + commits): {sum(writes) + sum(commits) / 1000:6.1f} s  "
              f"{rows / (sum(writes) + sum(commits) / 1000):10,.0f} rows/s  {mb / (sum(writes) + sum(commits) / 1000):6.2f} MB/s")
        print(f"commit latency per batch: min {min(commits):.0f} ms, median {statistics.median(commits):.0f} ms, "
              f"max {max(commits):.0f} ms; executor write per batch: median {statistics.median(writes):.2f} s")
        spark.stop()
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
