"""`make demo`: run the hourly city sales app (include/apps/hourly_city_sales) end to end.

Starts the embedded S3 server, generates a city table and a few hours of sales on local files,
runs the enrichment join (hourly totals per city RIGHT OUTER JOIN the city table) into a Delta
table on the embedded S3, prints per hour the row count and the cities with no sales as each
hour is marked complete, then lists the objects the run wrote.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "include" / "apps" / "hourly_city_sales"))
OUTPUT = "s3://streamjoin/apps/hourly_city_sales/output"
SNAPSHOTS = "s3://streamjoin/snapshots/city_info"


def main() -> int:
    from app import CONFIG, run_app, summary
    from streamjoin.io import s3
    from streamjoin.io.embedded_s3 import EmbeddedS3
    from streamjoin.io.hours import complete_hours, marker
    from streamjoin.runtime.session import spark_session

    root = ROOT / "data" / CONFIG["name"]
    gen = CONFIG["generator"]
    server = EmbeddedS3(port=0)
    settings = server.start()
    os.environ.update(server.env())
    print(f"embedded S3 on {settings.endpoint_url} (bucket streamjoin); output {OUTPUT}", flush=True)
    print(f"hourly_city_sales: {gen['cities']} cities, {gen['hours']} hours, {gen['sales_per_hour']} sales per hour, "
          f"{gen['late_rows']} late rows; input files under {root.relative_to(ROOT)}", flush=True)
    started = time.time()
    spark = spark_session("streamjoin-demo")
    try:
        rows, status, g = run_app(spark, root, report=lambda line: print(line, flush=True), output=OUTPUT,
                                  snapshots=SNAPSHOTS)
        hours = summary(rows)
        ok = all(count == gen["cities"] for count, _ in hours.values()) and len(hours) == gen["hours"]
        print(f"{len(rows)} rows in {len(hours)} hours ({'one row per city per hour' if ok else 'ROW COUNTS DIFFER'}); "
              f"{status['late_rows']} late rows in {root.relative_to(ROOT)}/late; snapshot "
              f"{status['snapshots'][0]['rows']} cities, sha256 {status['snapshots'][0]['sha256'][:12]}; "
              f"{time.time() - started:.0f} s")
        objects = s3.list_files(OUTPUT, settings, recursive=True)
        data = [o for o in objects if o.endswith(".parquet")]
        log = [o for o in objects if "/_delta_log/" in o]
        print(f"objects written under {OUTPUT}: {len(data)} Parquet files, {len(log)} Delta log entries, "
              f"{len(complete_hours(OUTPUT, settings))} completeness markers:")
        for hour in complete_hours(OUTPUT, settings):
            mark = marker(OUTPUT, hour, settings)
            files = [o for o in data if f"/hour={hour}/" in o]
            print(f"  {OUTPUT}/hour={hour}/  {len(files)} files, {mark['rows']} rows, "
                  f"marker _complete/hour={hour}.json (table version {mark['table_version']})")
        print("the embedded server keeps objects in memory: they are gone when the demo exits "
              "(run `streamjoin s3 serve` to keep one up)")
        return 0 if ok else 1
    finally:
        spark.stop()
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
