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
}


def arrow_type(sql_type: str) -> pa.DataType:
    """`DECIMAL(10, 2)` -> decimal128(10, 2); `VARCHAR(8)` -> string; unknown types are errors."""
    t = sql_type.upper().strip()
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


def arrow_schema(columns) -> pa.Schema:
    return pa.schema([pa.field(c.name, arrow_type(c.type)) for c in columns])
