"""The Arrow paths that replaced Python loops give the same text: output lines formatted column by
column (io.formats.jsonlines.format_lines) and JSON Lines inputs read by Arrow's reader (io.formats.files)."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from streamjoin.io.formats.files import conform, read_text
from streamjoin.io.formats.jsonlines import format_lines, format_rows

INSTANTS = st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(7999, 12, 31, 23, 59, 59, 999999))


def _text(table: pa.Table) -> str:
    return "".join(line for chunk in format_lines(table) for line in chunk.to_pylist())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(
    st.none() | st.integers(-(2**63), 2**63 - 1),
    st.none() | st.text(),
    st.none() | INSTANTS,
    st.none() | st.booleans(),
    st.none() | st.floats(allow_nan=True, allow_infinity=True),
    st.none() | st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(7999, 12, 31)),
    st.none() | st.decimals(places=2, min_value=-1000, max_value=1000, allow_nan=False),
), max_size=30))
def test_output_lines_formatted_by_arrow_equal_the_row_by_row_text(rows):
    table = pa.table({
        "i": pa.array([r[0] for r in rows], pa.int64()),
        "s": pa.array([r[1] for r in rows], pa.string()),
        "t": pa.array([r[2] for r in rows], pa.timestamp("us", tz="UTC")),
        "b": pa.array([r[3] for r in rows], pa.bool_()),
        "f": pa.array([r[4] for r in rows], pa.float64()),
        "d": pa.array([r[5] for r in rows], pa.date32()),
        "m": pa.array([r[6] for r in rows], pa.decimal128(10, 2)),
        "n": pa.nulls(len(rows)),
    })
    assert _text(table) == "".join(format_rows(table.to_pylist()))


def test_an_empty_release_formats_to_nothing():
    assert format_lines(pa.table({"a": pa.array([], pa.int64())})) == []


SCHEMA = pa.schema([("k", pa.int32()), ("name", pa.string()), ("price", pa.float64()), ("ts", pa.timestamp("us")),
                    ("ok", pa.bool_()), ("day", pa.string()), ("amount", pa.decimal128(12, 2))])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({"ts": INSTANTS.map(lambda v: v.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3].rjust(23, "0"))}, optional={
    "k": st.none() | st.integers(-(2**31), 2**31 - 1),
    "Name": st.none() | st.text(max_size=5),
    "price": st.none() | st.integers(-100, 100) | st.floats(-1e6, 1e6, allow_nan=False),
    "ok": st.none() | st.booleans(),
    "day": st.none() | st.dates(min_value=dt.date(1000, 1, 1)).map(str) | st.text(max_size=3),
    "extra": st.none() | st.integers() | st.text(max_size=3),
    "amount": st.none() | st.integers(-10**9, 10**9) | st.decimals(places=2, min_value=-10**6, max_value=10**6).map(float),
}), min_size=1, max_size=20))
def test_json_lines_read_by_arrow_conform_as_the_line_reader_reads_them(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("json") / "rows.json"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    fast = conform(read_text(str(path), "json", SCHEMA), SCHEMA, "ts", str(path))
    slow = conform(read_text(str(path), "json"), SCHEMA, "ts", str(path))
    assert fast.to_pylist() == slow.to_pylist()


def test_decimal_text_is_an_integer_when_whole():
    table = pa.table({"m": pa.array([decimal.Decimal("2.00")], pa.decimal128(5, 2))})
    assert _text(table) == '{"m": 2}\n'


def test_an_interval_column_is_written_as_postgresql_and_risingwave_print_intervals():
    # corpus risingwave/09 selects a timestamp difference; a timedelta is no JSON value
    values = [dt.timedelta(minutes=5), dt.timedelta(days=1, hours=2, milliseconds=500), dt.timedelta(seconds=-3),
              dt.timedelta(days=-2), None]
    table = pa.table({"lateness": pa.array(values, pa.duration("us"))})
    assert [json.loads(line)["lateness"] for line in _text(table).splitlines()] == [
        "00:05:00", "1 day 02:00:00.5", "-00:00:03", "-2 days", None]
    assert _text(table) == "".join(format_rows(table.to_pylist()))


def test_a_struct_column_reads_the_timestamps_json_writes_as_text_in_its_fields_and_lists():
    """Nexmark's events (corpus risingwave/14) hold STRUCT<..., "date_time" TIMESTAMP, ...> columns,
    whose JSON writes each instant as text: every row was a dead letter before 2026-11-28."""
    from streamjoin.io.formats.files import cast_column

    kind = pa.struct([("id", pa.int64()), ("at", pa.timestamp("us", tz="UTC")), ("seen", pa.list_(pa.timestamp("us", tz="UTC")))])
    text = pa.array(['{"id": 7, "at": "2026-11-27 10:00:25", "seen": ["2026-11-27T10:00:00Z", null]}', None, '{"id": 8}'])
    got = cast_column(text, kind).to_pylist()
    utc = dt.UTC
    assert got == [{"id": 7, "at": dt.datetime(2026, 11, 27, 10, 0, 25, tzinfo=utc),
                    "seen": [dt.datetime(2026, 11, 27, 10, 0, tzinfo=utc), None]}, None, {"id": 8, "at": None, "seen": None}]
    try:
        cast_column(pa.array(['{"id": 1, "at": "yesterday"}']), kind)
    except pa.ArrowInvalid as error:  # a dead letter naming the type, as any unreadable value
        assert "does not read as struct" in str(error)
    else:
        raise AssertionError("an instant that is not one must not read")
