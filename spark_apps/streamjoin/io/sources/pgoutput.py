"""PostgreSQL's logical replication output (`pgoutput`, protocol 1) as changes, for io.sources.pg_cdc:
each transaction's inserts, updates and deletes of the published tables as rows with their
CHANGE ('+' the row as it is now, '-' the old key's), typed from PostgreSQL's text output."""

from __future__ import annotations

import datetime as dt
import json
import struct

_PG_EPOCH_US = 946_684_800_000_000  # 2000-01-01 in µs since 1970 (pgoutput's timestamps)
_INTS = {20, 21, 23, 26}  # int8, int2, int4, oid
_FLOATS = {700, 701}  # float4, float8
_BOOL = 16
_TIMESTAMPS = {1114, 1184}  # timestamp, timestamptz


class Decoder:
    """pgoutput (protocol 1) messages into changes: `feed` returns [end LSN] at each commit; the
    transaction's changes, (schema, table, row, commit µs), are in `taken`, and what cannot be
    applied, (schema, table, reason, text), in `bad`."""

    def __init__(self, keys: dict | None = None):
        """`keys`: (schema, table) -> the declared primary key, by which an update that keeps it is
        one '+' (else the relation's replica identity columns: all of them under FULL)."""
        self.keys = keys or {}
        self.relations: dict[int, tuple[str, str, list[tuple[str, int, bool]]]] = {}
        self.taken: list = []
        self.bad: list = []
        self.commit_us: int | None = None

    def feed(self, data: bytes, at: str) -> list:
        kind = data[:1]
        if kind == b"B":
            _, ts, _ = struct.unpack_from(">qqi", data, 1)
            self.commit_us = ts + _PG_EPOCH_US
        elif kind == b"C":
            _, _, end, _ = struct.unpack_from(">bqqq", data, 1)
            return [_lsn_text(end)]
        elif kind == b"R":
            self._relation(data)
        elif kind in (b"I", b"U", b"D"):
            self._row(kind, data)
        elif kind == b"T":
            count, _ = struct.unpack_from(">ib", data, 1)
            for oid in struct.unpack_from(f">{count}I", data, 6):
                schema, name, _ = self.relations.get(oid, ("?", str(oid), []))
                self.bad.append((schema, name, f"table {schema}.{name} was truncated at LSN {at}: streamjoin cannot withdraw "
                                 "rows it was not told about; start the query with a new checkpoint to read the table afresh",
                                 "TRUNCATE"))
        return []

    def _relation(self, data: bytes) -> None:
        oid, = struct.unpack_from(">I", data, 1)
        schema, pos = _string(data, 5)
        name, pos = _string(data, pos)
        pos += 1  # replica identity
        count, = struct.unpack_from(">h", data, pos)
        pos += 2
        columns = []
        for _ in range(count):
            flags = data[pos]
            column, pos = _string(data, pos + 1)
            type_oid, _ = struct.unpack_from(">Ii", data, pos)
            pos += 8
            columns.append((column, type_oid, bool(flags & 1)))
        self.relations[oid] = (schema, name, columns)

    def _row(self, kind: bytes, data: bytes) -> None:
        """An insert, update or delete: '+' the row as it is now, '-' the old key's."""
        oid, = struct.unpack_from(">I", data, 1)
        schema, name, columns = self.relations[oid]
        pos, old, new, full = 5, None, None, False
        while pos < len(data):
            tag = data[pos:pos + 1]
            values, pos = _tuple(data, pos + 1, columns)
            if tag == b"N":
                new = values
            else:  # K (the old key) or O (the old row: REPLICA IDENTITY FULL)
                old, full = values, tag == b"O"
        if kind == b"D":
            self._change(schema, name, columns, old, "-")
            return
        if full:  # an unchanged TOASTed value is not sent in the new row; the old row holds it
            new = {c: old.get(c, v) if v is _UNCHANGED else v for c, v in new.items()}
        unsent = [c for c, v in new.items() if v is _UNCHANGED]
        if unsent:  # neither half of the update is applied: the row keeps its last version
            self.bad.append((schema, name, f"an update of {schema}.{name} did not send {', '.join(unsent)} (an unchanged "
                             "TOASTed value): set ALTER TABLE ... REPLICA IDENTITY FULL so the old row holds it",
                             json.dumps({c: v for c, v in new.items() if v is not _UNCHANGED}, default=str)))
            return
        if old is not None and kind == b"U":  # the key changed (or the row is FULL identity): withdraw the old key
            keys = self.keys.get((schema, name)) or [c for c, _, k in columns if k]
            if not keys or any(old.get(k) != new.get(k) for k in keys):
                self._change(schema, name, columns, old, "-")
        self._change(schema, name, columns, new, "+")

    def _change(self, schema: str, name: str, columns: list, values: dict, change: str) -> None:
        types = {c: t for c, t, _ in columns}
        values = {c: None if v is _UNCHANGED else v for c, v in values.items()}  # an old key's other columns
        self.taken.append((schema, name, dict(typed(values, types), __change=change), self.commit_us))


_UNCHANGED = object()


def _tuple(data: bytes, pos: int, columns: list) -> tuple[dict, int]:
    count, = struct.unpack_from(">h", data, pos)
    pos += 2
    values = {}
    for i in range(count):
        kind = data[pos:pos + 1]
        pos += 1
        name = columns[i][0]
        if kind == b"n":
            values[name] = None
        elif kind == b"u":
            values[name] = _UNCHANGED
        else:  # 't' (text)
            size, = struct.unpack_from(">i", data, pos)
            values[name] = data[pos + 4:pos + 4 + size].decode("utf-8")
            pos += 4 + size
    return values, pos


def _string(data: bytes, pos: int) -> tuple[str, int]:
    end = data.index(b"\0", pos)
    return data[pos:end].decode("utf-8"), end + 1


def typed(values: dict, types: dict) -> dict:
    """PostgreSQL's text values as JSON values: numbers and booleans as such, timestamps in ISO
    form (UTC), the rest as text."""
    out = {}
    for name, text in values.items():
        oid = types.get(name)
        if text is None or text is _UNCHANGED:
            out[name] = text
        elif oid in _INTS:
            out[name] = int(text)
        elif oid in _FLOATS:
            out[name] = float(text) if text not in ("NaN", "Infinity", "-Infinity") else None
        elif oid == _BOOL:
            out[name] = text in ("t", "true")
        elif oid in _TIMESTAMPS:
            out[name] = _iso(text)
        else:
            out[name] = text
    return out


def _iso(text: str) -> str:
    """'2024-01-01 10:00:00.5+00' (a UTC session's output) as '2024-01-01T10:00:00.500000' (UTC)."""
    try:
        at = dt.datetime.fromisoformat(text.replace(" ", "T", 1))
    except ValueError:
        return text
    if at.tzinfo is not None:
        at = at.astimezone(dt.UTC).replace(tzinfo=None)
    return at.isoformat(timespec="microseconds")


def lsn_order(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def _lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"
