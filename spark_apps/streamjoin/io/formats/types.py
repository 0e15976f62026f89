"""SQL column types of the DDL -> Arrow types (Spark takes them from Arrow)."""

from __future__ import annotations

import re

import pyarrow as pa

_SIMPLE = {
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "DOUBLE": pa.float64(),
    "DOUBLE PRECISION": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "BOOL": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
    "TEXT": pa.string(),
    "UNKNOWN": pa.string(),
    "JSON": pa.string(),  # the value's JSON text
    "JSONB": pa.string(),
    "BYTEA": pa.binary(),
}


def arrow_type(sql_type: str) -> pa.DataType:
    """`DECIMAL(10, 2)` -> decimal128(10, 2); `VARCHAR(8)` -> string; unknown types are errors."""
    t = sql_type.upper().strip()
    if t.startswith(("STRUCT<", "ROW(", "ARRAY<")) or t.endswith("[]"):
        return _nested(sql_type.strip())
    base = re.sub(r"\(.*\)", "", t).strip()
    if base in ("VARCHAR", "CHAR", "STRING", "NVARCHAR", "CHARACTER VARYING"):
        return pa.string()
    if base in ("DECIMAL", "NUMERIC"):
        args = [int(x) for x in re.findall(r"\d+", t)] or [38, 18]
        return pa.decimal128(args[0], args[1] if len(args) > 1 else 0)
    if base.startswith("TIMESTAMP"):
        return pa.timestamp("us", tz="UTC")
    if base in _SIMPLE:
        return _SIMPLE[base]
    raise ValueError(f"column type {sql_type} is not supported by the files connector")


def _nested(sql_type: str) -> pa.DataType:
    """`STRUCT<a INT, b VARCHAR>` (RisingWave, Lenses records), `ROW(a INT)`, `ARRAY<T>`, `T[]`:
    structs and lists, their fields' types read the same way (nested to any depth)."""
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        parsed = exp.DataType.build(sql_type, dialect="risingwave")
    except ParseError as error:
        raise ValueError(f"cannot read column type {sql_type}") from error
    return _arrow_of(parsed)


def _arrow_of(node) -> pa.DataType:
    from sqlglot import exp

    kind = node.this
    if kind == exp.DataType.Type.STRUCT:
        fields = []
        for field in node.expressions:  # ColumnDef(name, DataType)
            fields.append(pa.field(field.name, _arrow_of(field.args["kind"])))
        return pa.struct(fields)
    if kind == exp.DataType.Type.ARRAY:
        return pa.list_(_arrow_of(node.expressions[0]))
    return arrow_type(node.sql(dialect="risingwave"))


def arrow_schema(columns) -> pa.Schema:
    return pa.schema([pa.field(c.name, arrow_type(c.type)) for c in columns])
