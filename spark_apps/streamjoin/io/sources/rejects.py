"""Rows that cannot be read: found line by line, set aside with where they were and why.

The fast readers (io/formats/files.py) read a whole file at once and stop at its first bad row without
saying where. When they fail, or a row has no usable rowtime, the file is read again here, one
line at a time: every line that parses and whose values read as the declared types is kept, and
every other becomes a rejected record

    {"input": ALIAS, "source": FILE, "line": N, "column": COL or null, "raw": TEXT, "reason": WHY}

(`line` counts from 1, the CSV header included; `column`, when the JSON parser names one, counts
from 1 as well). A stream input writes them as dead letters (`on_error = 'dead_letter'`, the
default) or fails with the first one as `FILE:LINE:COL: WHY` (`on_error = 'fail'`); a table fails
with the first one (a table must be whole). docs/reliability.md.
"""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.io.formats.files import BOUND, as_text, cast_column, conform, match_names, staged_schema
from streamjoin.io.formats.instants import EARLIEST_US, END_US
from streamjoin.io.formats.jsonlines import format_instant

RAW_LIMIT = 65_536  # characters of a rejected line kept (a huge line is cut, and says so)
ON_ERROR = ("dead_letter", "fail")


class RejectedRow(ValueError):
    """Raised with the first rejected record where rejected rows must stop the read."""

    def __init__(self, record: dict):
        self.record = record
        where = ":".join(str(p) for p in (record["source"], record.get("line"), record.get("column")) if p is not None)
        super().__init__(f"{where}: {record['reason']}")


def read_lenient(data: bytes, fmt: str, schema: pa.Schema, rowtime: str | None, source: str,
                 alias: str | None = None, latest_us: int | None = None,
                 future_limit_ms: int | None = None) -> tuple[pa.Table, list[dict]]:
    """(the rows that read, conformed to `schema` with the bound marker; the rejected records).
    A row needs a rowtime (`rowtime`, unless None) within 0001-01-01 .. 7999-12-31, and at most
    `latest_us` (the wall clock plus the stream's `future_limit_ms`) when that is given."""
    def reject(line: int | None, raw, reason: str, column: int | None = None) -> dict:
        return dead_letter(alias, source, line, raw, reason, column)

    rejected: list[dict] = []
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(pa.BufferReader(data))
        except (pa.ArrowException, OSError) as error:
            return staged_schema(schema).empty_table(), [reject(None, None, f"not a readable Parquet file: {error}")]
        lines = list(range(1, table.num_rows + 1))  # a Parquet "line" is the row number
        raws = [None] * table.num_rows
    else:
        rows, lines, raws = _parse_lines(data, fmt, reject, rejected)
        names = list(dict.fromkeys(k for r in rows for k in r))
        table = pa.table({n: pa.array([as_text(r.get(n)) for r in rows], pa.string()) for n in names})

    bad = _bad_values(table, schema, source)
    if rowtime is not None:
        try:
            conformed = conform(table.filter(pa.array([i not in bad for i in range(table.num_rows)], pa.bool_())),
                                schema, rowtime, source)
        except ValueError:
            conformed = None
        if conformed is not None:
            good = [i for i in range(table.num_rows) if i not in bad]
            times = pc.cast(conformed.column(rowtime), pa.int64()).to_pylist()
            is_bound = pc.fill_null(conformed.column(BOUND), False).to_pylist()
            for i, t, b in zip(good, times, is_bound, strict=True):
                if t is None and not b:
                    bad[i] = f"no rowtime: {rowtime} is missing or NULL"
                elif t is not None and not EARLIEST_US <= t < END_US:
                    bad[i] = f"rowtime {rowtime} outside the supported range 0001-01-01 to 7999-12-31"
                elif t is not None and latest_us is not None and t > latest_us and not b:
                    bad[i] = (f"rowtime {rowtime} {format_instant(t)} is more than future_limit ({future_limit_ms} ms) "
                              f"ahead of the wall clock {format_instant(latest_us - (future_limit_ms or 0) * 1000)}")
    for i in sorted(bad):
        rejected.append(reject(lines[i], raws[i] if raws[i] is not None else _row_text(table, i), bad[i]))
    keep = pa.array([i not in bad for i in range(table.num_rows)], pa.bool_())
    kept = conform(table.filter(keep), schema, rowtime, source)
    rejected.sort(key=lambda r: (r["line"] is None, r["line"] or 0))
    return kept, rejected


def dead_letter(alias: str | None, source: str, line: int | None, raw, reason: str, column: int | None = None,
                sequence: str | None = None) -> dict:
    """One rejected record (a huge raw text is cut, and the reason says so)."""
    text = raw if isinstance(raw, str) or raw is None else bytes(raw).decode("utf-8", errors="replace")
    record = {"input": alias, "source": source, "line": line, "column": column, "reason": reason}
    if sequence is not None:
        record["sequence"] = sequence  # a Kinesis record: its sequence number in the shard `source` names
    if text is not None and len(text) > RAW_LIMIT:
        record["reason"] += f" (line of {len(text)} characters; raw cut to the first {RAW_LIMIT})"
        text = text[:RAW_LIMIT]
    record["raw"] = text
    return record


def first_rejected(data: bytes, fmt: str, schema: pa.Schema, rowtime: str | None, source: str) -> RejectedRow | None:
    """The first row of a file that cannot be read, as an error to raise (None: every row reads)."""
    _, rejected = read_lenient(data, fmt, schema, rowtime, source)
    return RejectedRow(rejected[0]) if rejected else None


def _parse_lines(data: bytes, fmt: str, reject, rejected: list[dict]):
    """(rows as dicts, their line numbers, their raw text) of a JSON Lines or CSV file."""
    rows, lines, raws = [], [], []
    if fmt == "json":
        for number, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8").rstrip("\r")
            except UnicodeDecodeError as error:
                rejected.append(reject(number, raw, f"not UTF-8 text: {error}"))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                rejected.append(reject(number, text, f"malformed JSON: {error.msg}", error.colno))
                continue
            if not isinstance(value, dict):
                rejected.append(reject(number, text, f"not a JSON object: {type(value).__name__}"))
                continue
            rows.append(value)
            lines.append(number)
            raws.append(text)
        return rows, lines, raws
    text = data.decode("utf-8", errors="replace")
    physical = text.splitlines()
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return rows, lines, raws
    for values in reader:
        number = reader.line_num
        raw = physical[number - 1] if number - 1 < len(physical) else ",".join(values)
        if not values or values == [""]:
            continue
        if len(values) != len(header):
            rejected.append(reject(number, raw, f"{len(values)} fields where the header has {len(header)}"))
            continue
        rows.append({h: (v if v != "" else None) for h, v in zip(header, values, strict=True)})
        lines.append(number)
        raws.append(raw)
    return rows, lines, raws


def _bad_values(table: pa.Table, schema: pa.Schema, source: str) -> dict[int, str]:
    """Row index -> why, for each row with a value that does not read as its column's type."""
    bad: dict[int, str] = {}
    table = match_names(table, schema, source)
    for field in schema:
        if field.name not in table.column_names:
            continue
        column = table.column(field.name)
        try:
            cast_column(column, field.type)
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        for i, value in enumerate(column.to_pylist()):
            if value is None or i in bad:
                continue
            try:
                cast_column(pa.array([value], column.type), field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                bad[i] = f"column {field.name}: {json.dumps(value, default=str)} does not read as {field.type}"
    return bad


def _row_text(table: pa.Table, i: int) -> str:
    return json.dumps({k: v for k, v in table.slice(i, 1).to_pylist()[0].items()}, default=str)
