"""The reference app (include/apps/hourly_city_sales) over 5 hours of generated sales for 200
cities: exactly one row per city per hour, the right totals, NULL exactly for silent cities."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "include" / "apps" / "hourly_city_sales"
sys.path.insert(0, str(APP))

from app import run_app, summary  # noqa: E402
from generate import expected_totals  # noqa: E402


def test_the_hourly_app_gives_one_row_per_city_per_hour_with_correct_totals(spark, tmp_path):
    lines = []
    rows, status, g = run_app(spark, tmp_path / "app", report=lines.append, cities=200, hours=5, sales_per_hour=1500, late_rows=4)
    hours = summary(rows)
    assert len(hours) == 5 and all(count == 200 for count, _ in hours.values())
    assert len(lines) == 5  # one report line per hour, as hours close
    expected = expected_totals(g)
    for r in rows:
        hour = r["sales_hour"][:19]
        total = expected.get((hour, r["city"]))
        if hour and r["city"] in g.silent[hour]:
            assert r["total_sales"] is None and r["sales"] is None
        else:
            assert Decimal(str(r["total_sales"])) == total, (hour, r["city"])
    for hour, (_, silent) in hours.items():
        assert set(silent) == g.silent[hour[:19]]
    assert sum(r["sales"] or 0 for r in rows) == len(g.sales)  # no on-time sale lost or counted twice
    assert status["late_rows"] == 4 and status["snapshots"][0]["rows"] == 200
    assert status["sink"]["complete_through"] == max(hours)[:13].replace(" ", "T")
    assert [r["sales_hour"] for r in rows] == sorted(r["sales_hour"] for r in rows)
    late = list((tmp_path / "app" / "late").rglob("*.jsonl"))
    assert sum(len(p.read_text().splitlines()) for p in late) == 4
