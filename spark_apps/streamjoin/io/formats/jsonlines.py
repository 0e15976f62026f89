"""Rows as JSON Lines (the output contract of `run` and the late-rows output): keys are column
names, timestamps `YYYY-MM-DD HH:MM:SS.fff`, SQL NULL as null, bytes (BYTEA: a Kafka record's key)
as their UTF-8 text, or as PostgreSQL writes bytea (`\\x` and hex) when they are not UTF-8."""

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
    if isinstance(value, dt.timedelta):
        return format_interval(value)
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return "\\x" + bytes(value).hex()
    return value


def format_interval(value: dt.timedelta) -> str:
    """An INTERVAL as PostgreSQL and RisingWave print one: `00:05:00`, `1 day 02:00:00.5`,
    `-00:00:03`, `-2 days`; microseconds only where there are some."""
    us = round(value / dt.timedelta(microseconds=1))
    sign, us = ("-" if us < 0 else ""), abs(us)
    days, us = divmod(us, 86_400_000_000)
    seconds, micros = divmod(us, 1_000_000)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" + (f".{micros:06d}".rstrip("0") if micros else "")
    if not days:
        return sign + clock
    text = f"{sign}{days} day{'s' if days != 1 else ''}"
    return text if not seconds and not micros else f"{text} {sign}{clock}"


def format_rows(rows: list[dict]) -> list[str]:
    return [json.dumps({k: format_value(v) for k, v in row.items()}) + "\n" for row in rows]


def format_instant(us: int | None) -> str | None:
    """A clock or watermark for people: `YYYY-MM-DD HH:MM:SS.fff`, or "end of input"."""
    from streamjoin.io.formats.instants import END_US

    if us is None:
        return None
    if us >= END_US:
        return "end of input"
    return format_value(dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us))


_SIMPLE = r"^[\x20\x21\x23-\x5b\x5d-\x7e]*$"  # printable ASCII without quote or backslash: JSON as it is


def format_lines(table) -> list:
    """`format_rows` of a whole Arrow table at once, column by column in Arrow's kernels (the
    same text: keys in column order, `, ` and `: ` as json.dumps writes them); a column Arrow
    cannot format exactly as json.dumps does (floats, decimals, text that needs escapes) goes
    value by value through `format_value`. Returns the lines' chunks (Arrow string arrays)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return []
    if table.num_columns == 0:
        return [pa.array(["{}\n"] * table.num_rows)]
    parts = []
    for n, name in enumerate(table.column_names):
        parts += [pa.scalar(("{" if n == 0 else ", ") + json.dumps(name) + ": "), _json_text(table.column(n).combine_chunks())]
    parts.append(pa.scalar("}\n"))
    return [pc.binary_join_element_wise(*parts, "")]


def _json_text(column):
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type
    if pa.types.is_null(kind):
        return pa.array(["null"] * len(column))
    if pa.types.is_integer(kind):
        text = pc.cast(column, pa.string())
    elif pa.types.is_boolean(kind):
        text = pc.if_else(column, "true", "false")
    elif pa.types.is_timestamp(kind):
        text = _quoted(_instants(column.cast(pa.timestamp(kind.unit)).cast(pa.timestamp("us"))))
    elif pa.types.is_date(kind):
        text = _quoted(pc.utf8_lpad(pc.cast(column.cast(pa.date32()), pa.string()), 10, "0"))
    elif (pa.types.is_string(kind) or pa.types.is_large_string(kind)) and pc.all(
            pc.match_substring_regex(column, _SIMPLE)).as_py() is not False:
        text = _quoted(column.cast(pa.string()))
    else:
        return pa.array([json.dumps(format_value(v)) for v in column.to_pylist()], pa.string())
    return pc.fill_null(text, "null")


def _instants(naive):
    """`YYYY-MM-DD HH:MM:SS.fff` of UTC instants (µs), from their parts (several times faster
    than Arrow's strftime)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    day = pc.utf8_lpad(pc.cast(pc.cast(naive, pa.date32()), pa.string()), 10, "0")
    ms = np.mod(pc.fill_null(pc.cast(naive, pa.int64()), 0).to_numpy(zero_copy_only=False), 86_400_000_000) // 1000
    hour, ms = np.divmod(ms, 3_600_000)
    minute, ms = np.divmod(ms, 60_000)
    second, ms = np.divmod(ms, 1000)

    def pad(values, width):
        return pc.utf8_lpad(pc.cast(pa.array(values), pa.string()), width, "0")

    return pc.binary_join_element_wise(day, pa.scalar(" "), pad(hour, 2), pa.scalar(":"), pad(minute, 2), pa.scalar(":"),
                                       pad(second, 2), pa.scalar("."), pad(ms, 3), "")


def _quoted(text):
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(pa.scalar('"'), text, pa.scalar('"'), "")
