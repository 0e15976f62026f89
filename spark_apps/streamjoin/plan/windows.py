"""Windows on join inputs (SEMANTICS.md §3) and interval arithmetic in milliseconds."""

from __future__ import annotations

import re
from dataclasses import dataclass

UNIT_MS = {
    "MILLISECOND": 1,
    "SECOND": 1_000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
}
CALENDAR_UNITS = ("MONTH", "YEAR")
BUCKET_UNITS = ("SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR")


@dataclass(frozen=True)
class RangeWindow:
    """`RANGE [BETWEEN a AND] b PRECEDING`: a row is present from rowtime + lag to rowtime + size.

    `RANGE CURRENT ROW` (and no OVER at all) is `RangeWindow(0)`.
    """

    size_ms: int
    lag_ms: int = 0

    def describe(self) -> str:
        if self.size_ms == 0:
            return "CURRENT ROW (present only at its own rowtime)"
        if self.lag_ms:
            return (
                f"RANGE BETWEEN {format_ms(self.size_ms)} AND {format_ms(self.lag_ms)} PRECEDING "
                f"(present from rowtime + {format_ms(self.lag_ms)} to rowtime + {format_ms(self.size_ms)})"
            )
        return f"RANGE {format_ms(self.size_ms)} PRECEDING (present until rowtime + {format_ms(self.size_ms)})"


@dataclass(frozen=True)
class UnboundedWindow:
    """`RANGE | ROWS UNBOUNDED PRECEDING` on both inputs of a join: a regular join, every row
    present for as long as the query runs (RisingWave's join without a time bound, spelt out)."""

    def describe(self) -> str:
        return "UNBOUNDED PRECEDING (every row, for as long as the query runs)"


@dataclass(frozen=True)
class RowsWindow:
    """`ROWS n PRECEDING`: present until n later rows of the same input (partition) arrived."""

    count: int
    partition_by: tuple[str, ...] = ()

    def describe(self) -> str:
        head = "ROWS CURRENT ROW" if self.count == 0 else f"ROWS {self.count} PRECEDING"
        scope = f"per partition ({', '.join(self.partition_by)})" if self.partition_by else "over the whole input"
        later = self.count + 1
        return f"{head} (evicted when {later} later row{'s' * (later > 1)} arrived, counted {scope})"


@dataclass(frozen=True)
class BucketWindow:
    """`ORDER BY FLOOR(ROWTIME TO unit) RANGE CURRENT ROW`: present until its bucket closes."""

    unit: str

    def describe(self) -> str:
        return f"bucket FLOOR(ROWTIME TO {self.unit}) (present until the {self.unit.lower()} ends)"


Window = RangeWindow | RowsWindow | BucketWindow
CURRENT_ROW = RangeWindow(0)


def format_ms(ms: int) -> str:
    """The largest exact unit: 60000 -> '1 MINUTE', 90000 -> '90 SECOND'."""
    if ms == 0:
        return "0 SECOND"
    for unit in ("DAY", "HOUR", "MINUTE", "SECOND"):
        if ms % UNIT_MS[unit] == 0:
            return f"{ms // UNIT_MS[unit]} {unit}"
    return f"{ms} MILLISECOND"


_SPAN_FIELDS = ("DAY", "HOUR", "MINUTE", "SECOND")


def interval_ms(value: str, unit: str | None, to_unit: str | None = None) -> int:
    """Milliseconds of an interval literal: ('1', 'MINUTE'), ('1:30', 'MINUTE', 'SECOND'),
    ('1 minute', None), ('2 03:04', 'DAY', 'MINUTE'). Raises ValueError for calendar units
    and malformed text."""
    text = value.strip()
    if unit is None:
        match = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*([A-Za-z]+)", text)
        if not match:
            raise ValueError(f"cannot read interval '{value}'")
        text, unit = match.group(1), match.group(2)
    unit = _singular(unit)
    if unit in CALENDAR_UNITS or (to_unit and _singular(to_unit) in CALENDAR_UNITS):
        raise ValueError(f"{unit} is a calendar unit; its length in milliseconds varies")
    if unit not in UNIT_MS:
        raise ValueError(f"unknown interval unit {unit}")
    if not to_unit:
        return round(float(text) * UNIT_MS[unit])
    to_unit = _singular(to_unit)
    fields = _SPAN_FIELDS[_SPAN_FIELDS.index(unit) : _SPAN_FIELDS.index(to_unit) + 1]
    parts = re.split(r"[ :]", text)
    if len(parts) != len(fields):
        raise ValueError(f"interval '{value}' does not match {unit} TO {to_unit}")
    return sum(round(float(p) * UNIT_MS[f]) for p, f in zip(parts, fields, strict=True))


def _singular(unit: str) -> str:
    unit = unit.upper()
    return unit[:-1] if unit.endswith("S") and unit[:-1] in (*UNIT_MS, *CALENDAR_UNITS) else unit
