"""Throughput of streamjoin's own join operator (transformWithStateInPandas) against Spark's
native stream-stream join on the same 2-stream RANGE query, and of an ASOF join on the operator,
in one run on the same parquet files. Prints input rows/s and the custom / native ratio.

    .venv/bin/python bench/custom_operator_throughput.py [--rows 1000000] [--files 10] [--keys 1000]

Both joins run through the compiled `streamjoin run` machinery (staging, ordering, end-of-input
flush); Settings(join_operator='custom') (STREAMJOIN_JOIN_OPERATOR=custom) sends the RANGE join to the custom operator.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from stream_join_throughput import generate  # the same inputs as the native-vs-hand-written bench

RANGE = """CREATE STREAM a (k INT, v INT, rowtime TIMESTAMP) WITH (connector = 'files', format = 'parquet', path = '{a}');
CREATE STREAM b (k INT, v INT, rowtime TIMESTAMP) WITH (connector = 'files', format = 'parquet', path = '{b}');
SELECT STREAM ROWTIME, a.k, a.v AS av, b.v AS bv
FROM a OVER (RANGE INTERVAL '1' SECOND PRECEDING) JOIN b OVER (RANGE INTERVAL '1' SECOND PRECEDING) ON a.k = b.k;
"""
ASOF = """CREATE STREAM a (k INT, v INT, rowtime TIMESTAMP) WITH (connector = 'files', format = 'parquet', path = '{a}');
CREATE STREAM b (k INT, v INT, rowtime TIMESTAMP) WITH (connector = 'files', format = 'parquet', path = '{b}');
SELECT STREAM ROWTIME, a.k, a.v AS av, b.v AS bv
FROM a ASOF LEFT JOIN b ON a.k = b.k AND b.rowtime <= a.rowtime;
"""


def run(spark, sql: str, work: Path, custom: bool) -> tuple[float, int, dict]:
    from streamjoin.runtime.pipeline import Pipeline
    from streamjoin.settings import Settings

    settings = Settings(join_operator="custom" if custom else "auto")
    runner = Pipeline.from_sql(sql, "bench", settings).runner(spark, work / "ckpt", str(work / "out"), late_root=work / "late")
    assert runner.lowered.custom == custom or "ASOF" in sql
    started = time.perf_counter()
    runner.start()
    runner.process_available()
    runner.end_of_input()
    status = runner.stop("finished")
    return time.perf_counter() - started, status["rows_emitted"], status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per input")
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--keys", type=int, default=1000, help="distinct join keys")
    args = parser.parse_args()
    from streamjoin.runtime.session import spark_session

    root = Path(tempfile.mkdtemp(prefix="streamjoin-bench-"))
    try:
        a = generate(root, "a", args.rows, args.files, 1, args.keys)
        b = generate(root, "b", args.rows, args.files, 2, args.keys)
        spark = spark_session("streamjoin-bench")
        total = 2 * args.rows
        native_s, native_rows, _ = run(spark, RANGE.format(a=a, b=b), root / "native", custom=False)
        custom_s, custom_rows, _ = run(spark, RANGE.format(a=a, b=b), root / "custom", custom=True)
        asof_s, asof_rows, _ = run(spark, ASOF.format(a=a, b=b), root / "asof", custom=True)
        print(f"inputs: 2 x {args.rows} rows in {args.files} parquet files each, {args.keys} keys, one row per ms per input")
        print(f"RANGE 1 SECOND join, native:   {native_s:8.1f} s  {total / native_s:10,.0f} input rows/s  ({native_rows} rows out)")
        print(f"RANGE 1 SECOND join, custom:   {custom_s:8.1f} s  {total / custom_s:10,.0f} input rows/s  ({custom_rows} rows out)")
        print(f"ASOF LEFT join (custom):       {asof_s:8.1f} s  {total / asof_s:10,.0f} input rows/s  ({asof_rows} rows out)")
        print(f"custom / native throughput on the RANGE join: {native_s / custom_s:.2f}")
        assert native_rows == custom_rows, "the two operators disagree on the RANGE join"
        spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
