"""A stream joined with a 1M-row table snapshot: snapshot load time, join throughput (stream
rows/s through the compiled query, output ordered and written), peak driver memory.

    .venv/bin/python bench/snapshot_join.py [--table-rows 1000000] [--stream-rows 1000000] [--files 10]

Peak driver memory is the high-water mark of resident memory (VmHWM) of the JVM driver and of
this Python process, read from /proc.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SQL = """CREATE STREAM sales (product_id INT, qty INT, rowtime TIMESTAMP)
  WITH (connector = 'files', format = 'parquet', path = '{stream}');
CREATE TABLE products (id INT PRIMARY KEY, name VARCHAR, price DECIMAL(10, 2))
  WITH (connector = 'files', format = 'parquet', path = '{table}');
SELECT STREAM ROWTIME, s.product_id, s.qty, p.name, p.price
FROM sales AS s JOIN products AS p ON s.product_id = p.id;
"""


def generate(root: Path, table_rows: int, stream_rows: int, files: int) -> tuple[Path, Path]:
    import numpy as np

    rng = np.random.default_rng(3)
    table, stream = root / "products", root / "sales"
    table.mkdir(parents=True)
    stream.mkdir(parents=True)
    ids = np.arange(table_rows, dtype=np.int32)
    pq.write_table(
        pa.table({
            "id": ids,
            "name": pa.array([f"product {i}" for i in range(table_rows)]),
            "price": pa.array(rng.integers(100, 100_000, table_rows) / 100).cast(pa.decimal128(10, 2)),  # cents
        }),
        table / "products.parquet",
    )
    per_file = stream_rows // files
    for i in range(files):
        start = i * per_file
        pq.write_table(
            pa.table({
                "product_id": pa.array(rng.integers(0, table_rows * 11 // 10, per_file), pa.int32()),  # ~9% miss
                "qty": pa.array(rng.integers(1, 10, per_file), pa.int32()),
                "rowtime": pa.array((1_700_000_000_000 + np.arange(start, start + per_file)) * 1000, pa.timestamp("us", tz="UTC")),
            }),
            stream / f"part-{i:04d}.parquet",
        )
    return table, stream


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--stream-rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    from streamjoin.runtime.pipeline import Pipeline
    from streamjoin.runtime.session import spark_session

    root = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    try:
        table, stream = generate(root, args.table_rows, args.stream_rows, args.files)
        spark = spark_session("streamjoin-bench")
        pipeline = Pipeline.from_sql(SQL.format(stream=stream, table=table), "bench")
        started = time.perf_counter()
        runner = pipeline.runner(spark, root / "ckpt", str(root / "out"), late_root=root / "late")  # loads the snapshot
        load_s = time.perf_counter() - started
        started = time.perf_counter()
        runner.start()
        runner.process_available()
        runner.end_of_input()
        status = runner.stop("finished")
        join_s = time.perf_counter() - started
        jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        snap = status["snapshots"][0]
        print(f"table: {args.table_rows:,} rows (parquet); stream: {args.stream_rows:,} rows in {args.files} files")
        print(f"snapshot load:  {load_s:6.1f} s  ({snap['rows']:,} rows, sha256 {snap['sha256'][:12]})")
        print(f"join:           {join_s:6.1f} s  {args.stream_rows / join_s:10,.0f} stream rows/s  ({status['rows_emitted']:,} rows out)")
        print(f"peak driver memory: JVM {peak_rss_mb(jvm):,.0f} MB, Python {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
