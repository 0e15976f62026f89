"""Rows as JSON Lines (the output contract of `run` and the late-rows output): keys are column
names, timestamps `YYYY-MM-DD HH:MM:SS.fff`, SQL NULL as null."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math


def format_value(value):
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        # %Y does not pad years before 1000: the contract is YYYY-MM-DD HH:MM:SS.fff
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond // 1000:03d}"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return value


def format_rows(rows: list[dict]) -> list[str]:
    return [json.dumps({k: format_value(v) for k, v in row.items()}) + "\n" for row in rows]


def format_instant(us: int | None) -> str | None:
    """A clock or watermark for people: `YYYY-MM-DD HH:MM:SS.fff`, or "end of input"."""
    from streamjoin.io.instants import END_US

    if us is None:
        return None
    if us >= END_US:
        return "end of input"
    return format_value(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us))
