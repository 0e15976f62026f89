"""`make demo`: run the hourly city sales app (include/apps/hourly_city_sales) end to end on
local files and print, per hour, the row count and the cities with no sales."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "include" / "apps" / "hourly_city_sales"))


def main() -> int:
    from app import CONFIG, run_app, summary
    from streamjoin.runtime.session import spark_session

    root = ROOT / "data" / CONFIG["name"]
    gen = CONFIG["generator"]
    print(f"hourly_city_sales: {gen['cities']} cities, {gen['hours']} hours, {gen['sales_per_hour']} sales per hour, "
          f"{gen['late_rows']} late rows; files under {root.relative_to(ROOT)}", flush=True)
    started = time.time()
    spark = spark_session("streamjoin-demo")
    try:
        rows, status, g = run_app(spark, root, report=lambda line: print(line, flush=True))
    finally:
        spark.stop()
    hours = summary(rows)
    ok = all(count == gen["cities"] for count, _ in hours.values())
    print(f"{len(rows)} rows in {len(hours)} hours ({'one row per city per hour' if ok else 'ROW COUNTS DIFFER'}); "
          f"{status['late_rows']} late rows in {root.relative_to(ROOT)}/output/late; snapshot "
          f"{status['snapshots'][0]['rows']} cities, sha256 {status['snapshots'][0]['sha256'][:12]}; "
          f"{time.time() - started:.0f} s")
    return 0 if ok and len(hours) == gen["hours"] else 1


if __name__ == "__main__":
    sys.exit(main())
