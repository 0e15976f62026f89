"""Changelogs in tests: random Debezium events by primary key, the SQL join of plain rows, and a
changelog (`op` +I / -D) folded to the rows it leaves (tests/lower/test_regular_joins.py and the
tests of the inputs that carry changes)."""

from __future__ import annotations

import random
from collections import Counter


def debezium_events(rng: random.Random, keys: list[int], columns, count: int, state: dict) -> list[dict]:
    """Random inserts, updates and deletes by primary key `id`, applied to `state` (id -> row)."""
    events = []
    for _ in range(count):
        pk = rng.choice(keys)
        after = {"id": pk, **{c: rng.choice(values) for c, values in columns.items()}}
        if pk not in state:
            events.append({"op": rng.choice(["c", "r"]), "before": None, "after": after})
            state[pk] = after
        elif rng.random() < 0.35:
            events.append({"payload": {"op": "d", "before": state.pop(pk), "after": None}})  # the envelope form
        else:
            events.append({"op": "u", "before": state[pk], "after": after})
            state[pk] = after
    return events


def sql_join_rows(left: list[dict], right: list[dict], on, join_type: str, out) -> Counter:
    """The SQL join of two lists of rows: `out(l, r)` per result row (None for a missing side)."""
    result = Counter()
    for a in left:
        partners = [b for b in right if on(a, b)]
        result.update(out(a, b) for b in partners)
        if not partners and join_type in ("LEFT", "FULL"):
            result[out(a, None)] += 1
    if join_type in ("RIGHT", "FULL"):
        result.update(out(None, b) for b in right if not any(on(a, b) for a in left))
    return result


def fold_by(rows: list[dict], columns: tuple[str, ...]) -> Counter:
    content = Counter()
    for r in rows:
        key = tuple(r[c] for c in columns)
        if r["op"] == "+I":
            content[key] += 1
        else:
            assert content[key] > 0, f"-D of {key}, which is not in the view"
            content[key] -= 1
    return +content
