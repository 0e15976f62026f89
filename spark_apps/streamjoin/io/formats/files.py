"""Reading input files as Arrow in a declared schema: JSON Lines and CSV (every field as text
first, then cast), Parquet, and the rowtime-bound marker (`_bound`) of SEMANTICS §1. Used by
the stager (streams) and by table snapshots alike."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

BOUND = "_bound"
_TS = pa.timestamp("us", tz="UTC")


def staged_schema(schema: pa.Schema) -> pa.Schema:
    fields = [pa.field(f.name, _TS if pa.types.is_timestamp(f.type) else f.type) for f in schema]
    return pa.schema([*fields, pa.field(BOUND, pa.bool_())])


def read_text(source, fmt: str, declared: pa.Schema | None = None) -> pa.Table:
    """JSON Lines or CSV, every column as text first: conform() applies the declared types.

    `source` is a local path, the file's bytes (UTF-8), or a binary file object. With the
    `declared` schema, JSON Lines are read by Arrow's JSON reader where the values it infers
    convert to the declared types as the text would (`_typed_json`)."""
    import csv
    import io

    if not isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        source = source.read()
    local = isinstance(source, (str, os.PathLike))
    if fmt == "json" and declared is not None:
        typed = _typed_json(source, declared)
        if typed is not None:
            return typed
    if fmt == "json":
        text = Path(source).read_text() if local else bytes(source).decode("utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        names = list(dict.fromkeys(k for r in rows for k in r))
        return pa.table({n: pa.array([as_text(r.get(n)) for r in rows], pa.string()) for n in names})
    import pyarrow.csv as pcsv

    if local:
        with open(source, newline="") as f:
            header = next(csv.reader(f), [])
    else:
        header = next(csv.reader(io.TextIOWrapper(io.BytesIO(source), encoding="utf-8", newline="")), [])
        source = pa.BufferReader(source)
    text = pcsv.ConvertOptions(strings_can_be_null=True, column_types={n: pa.string() for n in header})
    return pcsv.read_csv(source, convert_options=text)


def _typed_json(source, declared: pa.Schema) -> pa.Table | None:
    """JSON Lines through Arrow's reader (C++, several times faster than json.loads per line), or
    None where its inferred types could read differently from the text: a number for a
    timestamp, a fraction for an integer or text, a date-like text for text, nested values, or
    a file it cannot parse (the line reader then says where)."""
    import pyarrow.json as pj

    try:
        data = pa.BufferReader(bytes(source)) if isinstance(source, (bytes, bytearray, memoryview)) else source
        table = pj.read_json(data, read_options=pj.ReadOptions(block_size=1 << 24))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError):
        return None
    wanted = {f.name.lower(): f.type for f in declared}
    wanted[BOUND] = pa.bool_()
    keep = []
    for name, kind in zip(table.column_names, table.schema.types, strict=True):
        target = wanted.get(name.lower())
        if target is None:
            continue  # not a declared column
        keep.append(name)
        if pa.types.is_null(kind) or pa.types.is_string(kind):
            continue
        if pa.types.is_timestamp(target):
            ok = pa.types.is_timestamp(kind)
        elif pa.types.is_decimal(target) and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            # Arrow casts a number to a decimal only with room for any number of its type: as text,
            # the shortest that reads back (as Python's str), like the line reader
            table = table.set_column(table.column_names.index(name), name, pc.cast(table.column(name), pa.string()))
            ok = True
        elif pa.types.is_floating(target):
            ok = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        else:
            ok = pa.types.is_integer(kind) or pa.types.is_boolean(kind)
        if not ok:
            return None
    return table.select(keep)


def as_text(value):
    if value is None:
        return None
    if isinstance(value, dict | list):  # a record or a list: its JSON, read back by cast_column
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def conform(table: pa.Table, schema: pa.Schema, rowtime: str, path: str) -> pa.Table:
    """Cast to the declared schema (missing columns are NULL), plus the bound marker."""
    out = {}
    n = table.num_rows
    table = match_names(table, schema, path)
    for f in schema:
        if f.name not in table.column_names:
            out[f.name] = pa.nulls(n, _TS if pa.types.is_timestamp(f.type) else f.type)
            continue
        col = table.column(f.name)
        try:
            out[f.name] = cast_column(col, f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise ValueError(f"{path}: column {f.name} does not read as {f.type}: {error}") from None
    bound = table.column(BOUND) if BOUND in table.column_names else pa.nulls(n, pa.bool_())
    out[BOUND] = pc.fill_null(cast_column(bound, pa.bool_()), False)
    return pa.table(out, schema=staged_schema(schema))


def match_names(table: pa.Table, schema: pa.Schema, path: str) -> pa.Table:
    """Unquoted SQL names are case-insensitive: a declared `orderid` reads the field `orderId`."""
    present = set(table.column_names)
    renames = {}
    for f in schema:
        if f.name in present:
            continue
        matches = [c for c in table.column_names if c.lower() == f.name.lower()]
        if len(matches) > 1:
            raise ValueError(f"{path}: fields {', '.join(matches)} all match column {f.name}")
        if matches:
            renames[matches[0]] = f.name
    return table.rename_columns([renames.get(c, c) for c in table.column_names]) if renames else table


def cast_column(col, target: pa.DataType):
    if pa.types.is_struct(target) or pa.types.is_list(target):  # a declared STRUCT<...> / ARRAY<...>
        if not pa.types.is_string(col.type):
            return pc.cast(col, target)
        try:
            return pa.array([None if v is None else _nested(json.loads(v), target) for v in col.to_pylist()], target)
        except (ValueError, TypeError, pa.ArrowTypeError) as error:
            raise pa.ArrowInvalid(f"does not read as {target}: {error}") from None
    if pa.types.is_timestamp(target):
        if pa.types.is_timestamp(col.type):
            return pc.cast(col, _TS) if col.type.tz else pc.assume_timezone(pc.cast(col, pa.timestamp("us")), "UTC")
        text = pc.cast(col, pa.string())
        try:
            return pc.assume_timezone(pc.cast(text, pa.timestamp("us")), "UTC")  # ISO 8601, 'T' or ' '
        except pa.ArrowInvalid:  # a zone offset ('+00:00', 'Z': TIMESTAMPTZ text), on some values or all
            try:
                return pc.cast(text, _TS)
            except pa.ArrowInvalid:
                return _zoned(text)
    if pa.types.is_boolean(target) and pa.types.is_string(col.type):
        lowered = pc.utf8_lower(col)
        return pc.equal(lowered, "true")
    return pc.cast(col, target)


def _zoned(text) -> pa.Array:
    """Timestamps as text, some with a zone offset and some without (UTC), one by one."""
    values = []
    for v in text.to_pylist():
        try:
            values.append(_nested(v, _TS))
        except ValueError:
            raise pa.ArrowInvalid(f"Failed to parse string: '{v}' as a scalar of type timestamp") from None
    return pa.array(values, _TS)


def _nested(value, kind: pa.DataType):
    """A JSON value read for a STRUCT / ARRAY column: its timestamps, which JSON writes as text
    ('2026-11-27 10:00:25', ISO 8601), as datetimes (pyarrow takes numbers only)."""
    import datetime as dt

    if value is None:
        return None
    if pa.types.is_struct(kind) and isinstance(value, dict):
        return {kind.field(i).name: _nested(value.get(kind.field(i).name), kind.field(i).type) for i in range(kind.num_fields)}
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and isinstance(value, list):
        return [_nested(v, kind.value_type) for v in value]
    if pa.types.is_timestamp(kind) and isinstance(value, str):
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    return value
