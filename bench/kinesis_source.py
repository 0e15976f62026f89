"""The Kinesis input (connector 'kinesis') against the embedded server: records read per second per
shard, and end-to-end latency (put -> row on stdout) of a running query at a fixed rate.

    .venv/bin/python bench/kinesis_source.py [--records 100000] [--shards 2] [--rate 200] [--seconds 30]

1. **read**: `--records` records put across `--shards` shards, then read and staged by the
   input's stager to the end (`run --until-idle`'s path: every shard read until caught up).
2. **latency**: `streamjoin run` (no --until-idle) of `SELECT STREAM ...` on the stream to
   stdout while a producer puts `--rate` records a second for `--seconds`, each carrying its
   send time; a reader timestamps each output line. Latency = line read - record sent.

The server is moto (Python, in a process of its own): it, not Kinesis, bounds these figures. The
report goes to stdout and, with --report, to a Markdown file (make bench: docs/benchmarks-kinesis.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

from latency import measure, sent_now

ROOT = Path(__file__).resolve().parents[1]


def read_throughput(records: int, shards: int, work: Path) -> dict:
    from streamjoin.io.formats.types import arrow_schema
    from streamjoin.io.sources import kinesis
    from streamjoin.io.sources.staging import InputSpec, Stager
    from streamjoin.plan.model import Column

    stream = f"bench-{uuid.uuid4().hex[:8]}"
    base = dt.datetime(2024, 1, 1)
    lines = [json.dumps({"k": i, "v": i % 97, "rowtime": (base + dt.timedelta(milliseconds=i)).isoformat(sep=" ")}).encode()
             for i in range(records)]
    started = time.perf_counter()
    kinesis.put(stream, lines, key="k", shards=shards)
    put_s = time.perf_counter() - started
    columns = (Column("k", "BIGINT"), Column("v", "INT"), Column("approximate_arrival", "TIMESTAMP"), Column("rowtime", "TIMESTAMP"))
    spec = InputSpec(alias="s", path=f"kinesis://{stream}", format="json", schema=arrow_schema(columns), rowtime="rowtime",
                     lateness_ms=0, state_dir=str(work / "state"), late_dir=str(work / "late"), storage=kinesis.settings_from_env(),
                     kinesis={"stream": stream, "start": "trim_horizon", "start_timestamp_us": None, "idle_ms": 10_000})
    stager = Stager(spec)
    (stager.dir / "END").touch()
    started = time.perf_counter()
    stager.advance()
    read_s = time.perf_counter() - started
    m = stager.manifest()
    assert m.rows + m.late_rows == records, (m.rows, m.late_rows, records)
    return {"records": records, "shards": shards, "put_s": put_s, "read_s": read_s, "late": m.late_rows,
            "records_per_s": records / read_s, "records_per_s_per_shard": records / read_s / shards}


def latency(rate: int, seconds: int, shards: int, work: Path) -> dict:
    from streamjoin.io.sources import kinesis

    stream = f"lat-{uuid.uuid4().hex[:8]}"
    client = kinesis.client()
    client.create_stream(StreamName=stream, ShardCount=shards)
    client.get_waiter("stream_exists").wait(StreamName=stream, WaiterConfig={"Delay": 0.2, "MaxAttempts": 100})
    sql = work / "latency.sql"
    sql.write_text(f"CREATE STREAM s (k BIGINT, sent_ms BIGINT) WITH (connector = 'kinesis', stream = '{stream}', "
                   "rowtime = 'approximate_arrival', idle_timeout = '2 SECONDS');\nSELECT STREAM k, sent_ms FROM s;\n")

    def send(first: int, end: int) -> None:
        batch = [{"Data": sent_now(n), "PartitionKey": str(n)} for n in range(first, end)]
        for i in range(0, len(batch), 500):
            client.put_records(StreamName=stream, Records=batch[i:i + 500])

    def bounds() -> None:  # at each shard's arrival: the rowtime here
        for shard in client.list_shards(StreamName=stream)["Shards"]:
            client.put_record(StreamName=stream, Data=b'{"_bound": true}', PartitionKey="bound",
                              ExplicitHashKey=shard["HashKeyRange"]["StartingHashKey"])

    return measure(sql, work, rate, seconds, send, bounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--rate", type=int, default=200, help="records a second in the latency run")
    parser.add_argument("--seconds", type=int, default=30, help="length of the latency run")
    parser.add_argument("--report", help="also write the report here (Markdown)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "spark_apps"))
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3

    server = EmbeddedS3(port=0)
    server.start()
    os.environ.update(server.env())
    work = Path(tempfile.mkdtemp(prefix="bench-kinesis-"))
    try:
        print(f"read: {args.records} records over {args.shards} shards ...", file=sys.stderr, flush=True)
        r = read_throughput(args.records, args.shards, work)
        print(f"latency: {args.rate} records/s for {args.seconds} s ...", file=sys.stderr, flush=True)
        lat = latency(args.rate, args.seconds, args.shards, work)
    finally:
        server.stop()
    text = (f"# Kinesis input (`bench/kinesis_source.py`, embedded server: moto)\n\n"
            f"| read | records | shards | put | read and staged | records/s | records/s per shard |\n|---|---|---|---|---|---|---|\n"
            f"| to the end (`--until-idle`) | {r['records']:,} | {r['shards']} | {r['put_s']:.1f} s | {r['read_s']:.1f} s | "
            f"{r['records_per_s']:,.0f} | {r['records_per_s_per_shard']:,.0f} |\n\n"
            f"| latency (put -> stdout) | rate | sent | received | p50 | p95 | max |\n|---|---|---|---|---|---|---|\n"
            f"| `streamjoin run`, {args.shards} shards | {lat['rate']}/s for {lat['seconds']} s | {lat['sent']:,} | "
            f"{lat['received']:,} | {lat['p50_ms']:,.0f} ms | {lat['p95_ms']:,.0f} ms | {lat['max_ms']:,.0f} ms |\n\n"
            "moto, a Python server in a process of its own, serves the records: it bounds both figures "
            "(a real Kinesis shard serves up to 2 MB/s and 5 GetRecords calls a second).\n")
    print(text)
    if args.report:
        Path(args.report).write_text(text)
    return 0 if lat["received"] == lat["sent"] else 1


if __name__ == "__main__":
    sys.exit(main())
