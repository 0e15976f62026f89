"""Data generator for the hourly city sales app: a city table and a stream of sales.

Every hour some cities sell nothing (`silent_fraction`); sales come in one JSON Lines file per
ten minutes, in rowtime order, so a run that picks files up as they appear sees them arrive;
`late_rows` extra sales for the first hour come in a last file, after their hour has closed.

    python include/apps/hourly_city_sales/generate.py --out data/hourly_city_sales --hours 5
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import random
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).parent
CONFIG = tomllib.loads((HERE / "app.toml").read_text())["generator"]
FILE_MINUTES = 10


@dataclass
class Generated:
    cities: list[dict]
    sales: list[dict]  # on time, in rowtime order
    late: list[dict]  # arrive after their hour closed
    silent: dict[str, set[str]] = field(default_factory=dict)  # hour -> cities without sales
    files: list[Path] = field(default_factory=list)  # the sales files, in arrival order


def city_rows(n: int) -> list[dict]:
    regions = ["north", "south", "east", "west"]
    return [
        {"city": f"city_{i:03d}", "region": regions[i % len(regions)], "store_name": f"store {i}"} for i in range(n)
    ]


def generate(out: Path, cities: int = CONFIG["cities"], hours: int = CONFIG["hours"],
             sales_per_hour: int = CONFIG["sales_per_hour"], silent_fraction: float = CONFIG["silent_fraction"],
             late_rows: int = CONFIG["late_rows"], start: str = CONFIG["start"], seed: int = CONFIG["seed"],
             write_late: bool = True) -> Generated:
    """Write `out/city_info/city_info.csv` and `out/sales/*.jsonl`; return what was written."""
    rng = random.Random(seed)
    t0 = dt.datetime.fromisoformat(start)
    table = city_rows(cities)
    names = [c["city"] for c in table]
    result = Generated(table, [], [])
    sale_id = 0
    for h in range(hours):
        hour = t0 + dt.timedelta(hours=h)
        silent = set(rng.sample(names, round(cities * silent_fraction)))
        selling = [c for c in names if c not in silent]
        result.silent[hour.strftime("%Y-%m-%d %H:%M:%S")] = silent
        offsets = sorted(rng.randrange(3_600_000) for _ in range(sales_per_hour))
        for off in offsets:
            sale_id += 1
            result.sales.append(_sale(sale_id, rng.choice(selling), rng, hour + dt.timedelta(milliseconds=off)))
    for _ in range(late_rows):
        sale_id += 1
        result.late.append(_sale(sale_id, rng.choice(names), rng, t0 + dt.timedelta(milliseconds=rng.randrange(3_600_000))))

    (out / "city_info").mkdir(parents=True, exist_ok=True)
    with open(out / "city_info" / "city_info.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["city", "region", "store_name"])
        writer.writeheader()
        writer.writerows(table)
    sales_dir = out / "sales"
    sales_dir.mkdir(parents=True, exist_ok=True)
    chunks: dict[int, list[dict]] = {}
    for s in result.sales:
        at = dt.datetime.fromisoformat(s["sale_time"])
        chunks.setdefault(int((at - t0).total_seconds() // (FILE_MINUTES * 60)), []).append(s)
    # files are named by the instant their rows start, so a later run (--start of another hour)
    # never writes a name the app has read: it remembers files by name (issue 43)
    for n in sorted(chunks):
        begins = t0 + dt.timedelta(minutes=n * FILE_MINUTES)
        result.files.append(_write(sales_dir / f"sales-{begins:%Y%m%dT%H%M}.jsonl", chunks[n]))
    if write_late and result.late:  # after this run's files (in name order, the order they are read)
        ends = t0 + dt.timedelta(hours=hours)
        result.files.append(_write(sales_dir / f"sales-{ends:%Y%m%dT%H%M}-late.jsonl", result.late))
    return result


def expected_totals(g: Generated) -> dict[tuple[str, str], Decimal]:
    """(hour, city) -> total of the on-time sales."""
    totals: dict[tuple[str, str], Decimal] = {}
    for s in g.sales:
        key = (s["sale_time"][:13] + ":00:00", s["city"])
        totals[key] = totals.get(key, Decimal(0)) + Decimal(s["amount"])
    return totals


def _sale(sale_id: int, city: str, rng: random.Random, at: dt.datetime) -> dict:
    return {
        "sale_id": sale_id,
        "city": city,
        "amount": f"{rng.randrange(100, 50_000) / 100:.2f}",
        "sale_time": at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
    }


def _write(path: Path, rows: list[dict]) -> Path:
    tmp = path.with_name("." + path.name)
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.rename(path)  # appears whole: the stream never reads half a file
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("data/hourly_city_sales"))
    for key, value in CONFIG.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value)
    args = vars(parser.parse_args())
    out = args.pop("out")
    g = generate(out, **args)
    print(f"{len(g.cities)} cities, {len(g.sales)} sales in {len(g.silent)} hours, {len(g.late)} late rows -> {out}")


if __name__ == "__main__":
    main()
