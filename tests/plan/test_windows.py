"""Interval literals and window derivation (SEMANTICS.md §3)."""

import pytest
from streamjoin.plan import compile_sql
from streamjoin.plan.windows import BucketWindow, RangeWindow, RowsWindow, format_ms, interval_ms


@pytest.mark.parametrize(
    ("value", "unit", "to", "ms"),
    [
        ("1", "MINUTE", None, 60_000),
        ("1:30", "MINUTE", "SECOND", 90_000),
        ("2 03:04:05", "DAY", "SECOND", 2 * 86_400_000 + 3 * 3_600_000 + 4 * 60_000 + 5_000),
        ("1 minute", None, None, 60_000),
        ("10 SECONDS", None, None, 10_000),
        ("0.5", "SECOND", None, 500),
    ],
)
def test_interval_literals_convert_to_milliseconds(value, unit, to, ms):
    assert interval_ms(value, unit, to) == ms


def test_calendar_intervals_are_refused():
    with pytest.raises(ValueError, match="calendar"):
        interval_ms("1", "MONTH")


def test_format_picks_the_largest_exact_unit():
    assert [format_ms(x) for x in (60_000, 90_000, 3_600_000, 1)] == ["1 MINUTE", "90 SECOND", "1 HOUR", "1 MILLISECOND"]


DDL = "CREATE STREAM s (k INT, v INT); CREATE STREAM r (k INT);\n"


def window_of(over: str):
    q = compile_sql(DDL + f"SELECT STREAM * FROM s {over} AS x JOIN r ON x.k = r.k WINDOW w AS (ROWS 2 PRECEDING);").final
    return q.input("x").window


@pytest.mark.parametrize(
    ("over", "window"),
    [
        ("", RangeWindow(0)),
        ("OVER (RANGE CURRENT ROW)", RangeWindow(0)),
        ("OVER (RANGE INTERVAL '1' MINUTE PRECEDING)", RangeWindow(60_000)),
        ("OVER (RANGE BETWEEN INTERVAL '2' MINUTE AND INTERVAL '1' MINUTE PRECEDING)", RangeWindow(120_000, 60_000)),
        ("OVER (ROWS 5 PRECEDING)", RowsWindow(5)),
        ("OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW)", RowsWindow(5)),
        ("OVER (ROWS CURRENT ROW)", RowsWindow(0)),
        ("OVER (PARTITION BY k ROWS 3 PRECEDING)", RowsWindow(3, ("k",))),
        ("OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW)", BucketWindow("HOUR")),
        ("OVER w", RowsWindow(2)),
    ],
)
def test_each_window_form_derives_its_window(over, window):
    assert window_of(over) == window


def test_lagged_range_window_bounds_follow_the_presence_intervals():
    q = compile_sql(
        DDL + "SELECT STREAM * FROM s OVER (RANGE BETWEEN INTERVAL '2' MINUTE AND INTERVAL '1' MINUTE PRECEDING) AS x "
        "JOIN r OVER (RANGE INTERVAL '30' SECOND PRECEDING) ON x.k = r.k;"
    ).final
    [bound] = q.joins[0].condition.time_bounds
    # x present [tx+1m, tx+2m], r present [tr, tr+30s]: they meet when tr in [tx+30s, tx+2m]
    assert (bound.low_ms, bound.high_ms) == (30_000, 120_000)
