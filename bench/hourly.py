"""The hourly enrichment app as deployed (include/apps/hourly_city_sales: spark-submit
`run_app.py`, its own query.sql with a 2-minute lateness, a Delta sink on the embedded S3 server):
how long after the query's clock passes an hour's end that hour is committed and marked complete
in S3 (the target: within 60 s).

    .venv/bin/python bench/hourly.py [--rate 1000] [--hours 3] [--speed 6]

Sales land as one file a second, `rate` sales each, over the app's 200 cities. Their rowtimes run
`speed` times faster than the wall clock (so an hour's 2-minute lateness passes in 20 s at speed 6)
and start a minute before an hour ends; once that hour is marked, they jump to a minute before the
next one. The clock passes an hour's end when the first file holding a rowtime past end + lateness
lands: the latency is from that moment to the hour's `_complete` marker appearing in S3 (polled
every 0.2 s). Each marked hour must hold one row per city (`rows`: 200, the table-preserving join).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # include.ops
APP = ROOT / "include" / "apps" / "hourly_city_sales"
LATENESS = dt.timedelta(minutes=2)  # the app's query.sql: `lateness = '2 MINUTES'` on sales
CITIES = 200
PREFIX = "s3://streamjoin/bench/hourly"


def measure(rate: int = 1000, hours: int = 3, speed: float = 6.0, log=print) -> list[dict]:
    """One run of the app; per hour: its end, the seconds from the clock passing it to its marker,
    the marker's rows and whether they are one per city."""
    sys.path.insert(0, str(APP))
    from generate import city_rows
    from streamjoin.io.sinks.hours import complete_hours, marker
    from streamjoin.io.storage.embedded_s3 import EmbeddedS3
    from streamjoin.runtime.app import App, Control

    from include.ops.supervise import SubprocessLaunch

    work = Path(tempfile.mkdtemp(prefix="streamjoin-hourly-"))
    server = EmbeddedS3(port=0)
    settings = server.start()
    output = f"{PREFIX}/output"
    os.environ.update({**server.env(), "SALES_PATH": str(work / "sales"), "CITY_INFO_PATH": str(work / "city_info"),
                       "CHECKPOINT_PATH": str(work / "checkpoint"), "OUTPUT_PATH": output,
                       "CITY_INFO_SNAPSHOTS_PATH": f"{PREFIX}/snapshots/city_info", "REPORTS_PATH": f"{PREFIX}/reports"})
    (work / "sales").mkdir(parents=True)
    (work / "city_info").mkdir()
    table = city_rows(CITIES)
    with open(work / "city_info" / "city_info.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["city", "region", "store_name"])
        writer.writeheader()
        writer.writerows(table)
    app = App.load(APP)
    rng = random.Random(7)
    names = [c["city"] for c in table]
    process = SubprocessLaunch(app, 3600)
    results, sale_id, n = [], 0, 0
    end = dt.datetime(2024, 1, 1, 1)
    try:
        for _ in range(hours):
            start_wall, start_rowtime = time.time(), end - dt.timedelta(minutes=1)
            passed_at, last_file = None, 0.0
            log(f"hour ending {end:%H:%M}: feeding {rate} sales/s, rowtimes from {start_rowtime:%H:%M:%S} at {speed:g}x")
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"the app exited (code {process.poll()}): {app.checkpoint / 'app.log'}")
                now = time.time()
                if now - last_file >= 1.0:  # one file a second; the marker is polled in between
                    last_file = now
                    upto = start_rowtime + dt.timedelta(seconds=(now - start_wall) * speed)
                    span = dt.timedelta(seconds=speed)
                    rows = []
                    for i in range(rate):  # rowtimes spread over the last `speed` seconds of rowtime, in order
                        sale_id += 1
                        at = upto - span + span * (i + 1) / rate
                        rows.append({"sale_id": sale_id, "city": rng.choice(names), "amount": f"{rng.randrange(100, 50_000) / 100:.2f}",
                                     "sale_time": at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]})
                    n += 1
                    tmp = work / "sales" / f".s-{n:06d}.jsonl"
                    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
                    os.replace(tmp, work / "sales" / f"s-{n:06d}.jsonl")
                    if passed_at is None and upto > end + LATENESS:
                        passed_at = time.time()  # the clock (latest rowtime - lateness) is past the hour's end now
                hour = (end - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H")
                if passed_at is not None and hour in complete_hours(output, settings):
                    seen = time.time()
                    mark = marker(output, hour, settings)
                    results.append({"hour": hour, "latency_s": seen - passed_at, "rows": mark["rows"], "ok": mark["rows"] == CITIES})
                    log(f"hour {hour}: marked {seen - passed_at:.1f} s after the clock passed its end, {mark['rows']} rows")
                    break
                if passed_at is not None and time.time() - passed_at > 300:
                    results.append({"hour": hour, "latency_s": None, "rows": 0, "ok": False})
                    log(f"hour {hour}: no marker 300 s after the clock passed its end")
                    break
                time.sleep(max(0.0, 1.0 - (time.time() - last_file)) if passed_at is None else 0.2)
            end += dt.timedelta(hours=1)
        Control(app.checkpoint).request("stop", "bench done")
        deadline = time.time() + 120
        while process.poll() is None and time.time() < deadline:
            time.sleep(0.5)
    finally:
        if process.poll() is None:
            process.kill()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="sales per second (one file a second)")
    parser.add_argument("--hours", type=int, default=3, help="hour ends to measure")
    parser.add_argument("--speed", type=float, default=6.0, help="rowtime seconds per wall second")
    args = parser.parse_args()
    for r in measure(args.rate, args.hours, args.speed):
        print(json.dumps(r))


if __name__ == "__main__":
    main()
