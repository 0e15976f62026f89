"""The hourly app's test inputs and waits, shared by the app operations tests and the app DAG
tests (the `app_env` fixture is in conftest.py)."""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from pathlib import Path

from streamjoin.io.sinks.hours import read_hour_arrow

CITIES = [("Berlin", "north"), ("Lima", "south"), ("Oslo", "north")]
SPARK = {
    "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # spark-submit
    "PYSPARK_PYTHON": sys.executable,
}


def write_cities(folder: Path, cities) -> None:
    folder.mkdir(exist_ok=True)
    with open(folder / "cities.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["city", "region", "store_name"])
        writer.writerows((c, r, f"store {c}") for c, r in cities)


def put_sales(app_env_sales: Path, name: str, rows: list[tuple]) -> None:
    tmp = app_env_sales / f".{name}"
    tmp.write_text("".join(json.dumps({"sale_id": i, "city": c, "amount": a, "sale_time": t}) + "\n" for i, c, a, t in rows))
    os.replace(tmp, app_env_sales / name)


def wait_for(condition, timeout=180, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def hour_rows(output: str, hour: str) -> list[tuple]:
    table = read_hour_arrow(output, hour)
    return sorted((r["city"], r["region"], r["sales"]) for r in table.to_pylist())
