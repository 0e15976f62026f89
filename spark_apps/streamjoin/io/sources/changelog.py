"""Tables fed by their changes (RisingWave's `FORMAT DEBEZIUM ENCODE JSON`), read from files: each
change event becomes a row of the table's columns plus `CHANGE`: '+' for the row as it is now
(inserted, read in a snapshot, or updated) and '-' for a row deleted by its primary key.

A Debezium event is a JSON object `{"before": {...}, "after": {...}, "op": "c" | "r" | "u" | "d"}`,
alone or under `"payload"` (with its `"schema"` beside it), one per line. An event that is not
one (not JSON, no `op`, no row) is a dead letter naming its line, as any unreadable row is.

>>> rows, bad = read_debezium(b'{"op": "d", "before": {"id": 1}}', "f.json", "t")
>>> rows, bad
([{'id': 1, '__change': '-'}], [])
"""

from __future__ import annotations

import json

CHANGE = "__change"  # '+': the row as it is now; '-': deleted
_OPS = {"c": ("after", "+"), "r": ("after", "+"), "u": ("after", "+"), "d": ("before", "-")}


def read_debezium(data: bytes, source: str, alias: str | None) -> tuple[list[dict], list[dict]]:
    """(each event's row with its CHANGE, the events that are not Debezium events as dead letters)."""
    from streamjoin.io.sources.rejects import dead_letter

    rows, rejected = [], []
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        text = line.strip()
        if not text:
            continue
        try:
            event = json.loads(text)
        except ValueError as error:
            rejected.append(dead_letter(alias, source, n, text, f"not JSON: {error}"))
            continue
        if isinstance(event, dict) and isinstance(event.get("payload"), dict):
            event = event["payload"]  # the envelope with its schema beside it
        op = event.get("op") if isinstance(event, dict) else None
        if op not in _OPS:
            rejected.append(dead_letter(alias, source, n, text, "not a Debezium event: op must be c, r, u or d"))
            continue
        side, change = _OPS[op]
        row = event.get(side)
        if not isinstance(row, dict):
            rejected.append(dead_letter(alias, source, n, text, f"a Debezium '{op}' event needs its '{side}' row"))
            continue
        rows.append({**row, CHANGE: change})
    return rows, rejected
