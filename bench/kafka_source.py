"""The Kafka input (connector 'kafka') against the embedded broker (Tansu): records read per second
per partition, and end-to-end latency (put -> row on stdout) of a running query at a fixed rate.

    .venv/bin/python bench/kafka_source.py [--records 200000] [--partitions 2] [--rate 200] [--seconds 30]

1. **read**: `--records` records put across `--partitions` partitions, then read and staged by
   the input's stager to the end (`run --until-idle`'s path: every partition read to its end).
2. **latency**: `streamjoin run` (no --until-idle) of `SELECT STREAM ...` on the stream to
   stdout while a producer puts `--rate` records a second for `--seconds`, each carrying its
   send time; a reader timestamps each output line. Latency = line read - record sent.

The broker is Tansu with its topics in memory, in a process of its own. The report goes to stdout
and, with --report, to a Markdown file (make bench: docs/benchmarks-kafka.md).
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


def read_throughput(records: int, partitions: int, work: Path, servers: str) -> dict:
    from streamjoin.io.formats.types import arrow_schema
    from streamjoin.io.sources.staging import InputSpec, Stager
    from streamjoin.io.storage.kafka_broker import put
    from streamjoin.plan.model import Column

    topic = f"bench-{uuid.uuid4().hex[:8]}"
    base = dt.datetime(2024, 1, 1)
    lines = [json.dumps({"k": i, "v": i % 97, "rowtime": (base + dt.timedelta(milliseconds=i)).isoformat(sep=" ")}).encode()
             for i in range(records)]
    started = time.perf_counter()
    put(topic, lines, key="k", partitions=partitions, servers=servers)
    put_s = time.perf_counter() - started
    columns = (Column("k", "BIGINT"), Column("v", "INT"), Column("rowtime", "TIMESTAMP"))
    kafka = {"topic": topic, "bootstrap": servers, "start": "earliest", "start_timestamp_us": None, "idle_ms": 10_000,
             "broker_timeout_ms": 60_000, "fills": {}}
    spec = InputSpec(alias="s", path=f"kafka://{topic}", format="json", schema=arrow_schema(columns), rowtime="rowtime",
                     lateness_ms=0, state_dir=str(work / "state"), late_dir=str(work / "late"), kafka=kafka)
    stager = Stager(spec)
    (stager.dir / "END").touch()
    started = time.perf_counter()
    stager.advance()
    read_s = time.perf_counter() - started
    stager.close()
    m = stager.manifest()
    assert m.rows + m.late_rows == records, (m.rows, m.late_rows, records)
    return {"records": records, "partitions": partitions, "put_s": put_s, "read_s": read_s, "late": m.late_rows,
            "records_per_s": records / read_s, "records_per_s_per_partition": records / read_s / partitions}


def latency(rate: int, seconds: int, partitions: int, work: Path, servers: str) -> dict:
    from confluent_kafka import Producer
    from streamjoin.io.storage.kafka_broker import create_topic

    topic = f"lat-{uuid.uuid4().hex[:8]}"
    create_topic(servers, topic, partitions)
    sql = work / "latency.sql"
    sql.write_text(f"CREATE STREAM s (k BIGINT, sent_ms BIGINT) WITH (connector = 'kafka', topic = '{topic}', "
                   "idle_timeout = '2 SECONDS');\nSELECT STREAM k, sent_ms FROM s;\n")
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 0})

    def send(first: int, end: int) -> None:
        for n in range(first, end):
            producer.produce(topic, value=sent_now(n), partition=n % partitions)
        producer.poll(0)

    def bounds() -> None:  # at each record's timestamp: the rowtime here
        producer.flush(30)
        for p in range(partitions):
            producer.produce(topic, value=b'{"_bound": true}', partition=p)
        producer.flush(30)

    return measure(sql, work, rate, seconds, send, bounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rate", type=int, default=200, help="records a second in the latency run")
    parser.add_argument("--seconds", type=int, default=30, help="length of the latency run")
    parser.add_argument("--report", help="also write the report here (Markdown)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "spark_apps"))
    from streamjoin.io.storage.kafka_broker import EmbeddedKafka
    from streamjoin.io.storage.kafka_client import BOOTSTRAP_ENV

    work = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    with EmbeddedKafka(port=0, log_path=str(work / "tansu.log")) as broker:
        os.environ[BOOTSTRAP_ENV] = broker.servers
        print(f"read: {args.records} records over {args.partitions} partitions ...", file=sys.stderr, flush=True)
        r = read_throughput(args.records, args.partitions, work, broker.servers)
        print(f"latency: {args.rate} records/s for {args.seconds} s ...", file=sys.stderr, flush=True)
        lat = latency(args.rate, args.seconds, args.partitions, work, broker.servers)
    text = (f"# Kafka input (`bench/kafka_source.py`, embedded broker: Tansu 0.6, topics in memory)\n\n"
            f"| read | records | partitions | put | read and staged | records/s | records/s per partition |\n"
            f"|---|---|---|---|---|---|---|\n"
            f"| to the end (`--until-idle`) | {r['records']:,} | {r['partitions']} | {r['put_s']:.1f} s | {r['read_s']:.1f} s | "
            f"{r['records_per_s']:,.0f} | {r['records_per_s_per_partition']:,.0f} |\n\n"
            f"| latency (put -> stdout) | rate | sent | received | p50 | p95 | max |\n|---|---|---|---|---|---|---|\n"
            f"| `streamjoin run`, {args.partitions} partitions | {lat['rate']}/s for {lat['seconds']} s | {lat['sent']:,} | "
            f"{lat['received']:,} | {lat['p50_ms']:,.0f} ms | {lat['p95_ms']:,.0f} ms | {lat['max_ms']:,.0f} ms |\n\n"
            "Measured on this 2-core machine, the broker and the query sharing it; the read figure is the stager's "
            "(confluent-kafka's consumer, JSON parsed by Arrow, Parquet steps written).\n")
    print(text)
    if args.report:
        Path(args.report).write_text(text)
    return 0 if lat["received"] == lat["sent"] else 1


if __name__ == "__main__":
    sys.exit(main())
