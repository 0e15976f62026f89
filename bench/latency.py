"""Put-to-stdout latency of a running `streamjoin run` (bench/kinesis_source.py, bench/kafka_source.py):
the query starts, a producer sends `rate` records a second for `seconds`, each carrying its send
time (`sent_ms`); a reader timestamps each output line; latency = line read - record sent."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

STARTUP_S = 25  # the query starts (Spark session, first empty batches) before any record is sent


def measure(sql: Path, work: Path, rate: int, seconds: int, send: Callable[[int, int], None],
            bounds: Callable[[], None]) -> dict:
    """`send(first, end)`: records first..end-1, each `{"k": n, "sent_ms": now}`; `bounds()`: a rowtime
    bound on every part, which moves the clock past the last records (else they wait for a later row)."""
    errors = open(work / "latency.err", "w")
    query = subprocess.Popen([sys.executable, "-m", "streamjoin.cli", "run", str(sql)], stdout=subprocess.PIPE,
                             stderr=errors, env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    latencies: list[float] = []

    def read() -> None:
        for line in query.stdout:
            now = time.time() * 1000
            latencies.append(now - json.loads(line)["sent_ms"])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(STARTUP_S)
    sent, start = 0, time.time()
    while time.time() - start < seconds:
        due = int((time.time() - start) * rate)
        send(sent, due)
        sent = due
        time.sleep(0.05)
    time.sleep(1)
    bounds()
    time.sleep(10)  # the last records come through
    query.terminate()
    query.wait(timeout=60)
    reader.join(timeout=5)
    errors.close()
    if len(latencies) != sent:
        print("\n".join((work / "latency.err").read_text().splitlines()[-12:]), file=sys.stderr)
    ordered = sorted(latencies)
    pick = (lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else (lambda q: float("nan"))
    return {"rate": rate, "seconds": seconds, "sent": sent, "received": len(latencies),
            "p50_ms": pick(0.5), "p95_ms": pick(0.95), "max_ms": ordered[-1] if ordered else float("nan"),
            "mean_ms": statistics.fmean(ordered) if ordered else float("nan")}


def sent_now(n: int) -> bytes:
    return json.dumps({"k": n, "sent_ms": int(time.time() * 1000)}).encode()
