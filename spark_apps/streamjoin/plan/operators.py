"""Which operator runs a join, and why (for `explain` and the lowering): Spark's native
stream-stream join where it gives SEMANTICS.md's answer, streamjoin's own stateful operator
(`streamjoin.operator`, on transformWithStateInPandas) where it cannot."""

from __future__ import annotations

import os

import sqlglot
from sqlglot import exp

from streamjoin.plan import model as m
from streamjoin.plan.windows import RowsWindow

NATIVE = "Spark's native stream-stream join"
CUSTOM = "streamjoin's stateful join operator (transformWithStateInPandas, RocksDB state, event-time timers)"
_STREAM_STREAM = (m.STREAM_STREAM_WINDOW, m.INTERVAL)


def custom_reason(query: m.Query, join: m.Join) -> str | None:
    """Why `join` needs the custom operator, or None when Spark's join (or a table join) runs it.

    STREAMJOIN_JOIN_OPERATOR=custom sends two-stream RANGE joins to the custom operator too (to
    measure it against the native join, bench/custom_operator_throughput.py)."""
    if join.kind == m.ASOF:
        return "Spark has no ASOF join"
    if join.kind == m.WINDOW_TVF:
        return "a window join pairs rows per window and drops the window when it closes"
    if join.kind == m.CHANGELOG:
        return "the table changes by key while the query runs: a later table row meets the stream rows still waiting for one"
    if join.kind not in _STREAM_STREAM:
        return None
    rows = [a for a in (*join.left_inputs, join.right) if isinstance(query.input(a).window, RowsWindow)]
    if rows:
        return f"ROWS windows ({', '.join(rows)}) count rows, which Spark's join cannot"
    if query.emit != "FINAL":
        return f"EMIT {query.emit}: Spark's join emits NULL-extended rows only once they are final"
    if os.environ.get("STREAMJOIN_JOIN_OPERATOR", "").lower() == "custom" and len(query.inputs) == 2:
        return "STREAMJOIN_JOIN_OPERATOR=custom"
    return None


def uses_custom(query: m.Query) -> bool:
    return any(custom_reason(query, j) for j in query.joins)


def group_keys(query: m.Query, join: m.Join) -> tuple[tuple[str, str], ...]:
    """The key pairs the operator partitions by (hash groups); () = one group for everything.

    A ROWS window counts rows across the whole input (or its PARTITION BY), so grouping by the
    join keys is only right when every ROWS side's keys are columns it is partitioned by."""
    keys = tuple((a, b) for a, b in join.condition.keys if not (_column(a) == "window_start" and _column(b) == "window_start"))
    if join.join_type == "CROSS":
        return ()
    for n, alias in enumerate((join.left_inputs[-1], join.right)):
        window = query.input(alias).window
        if isinstance(window, RowsWindow):
            side_keys = {_column(pair[n]) for pair in keys}
            if not keys or None in side_keys or not side_keys <= set(window.partition_by):
                return ()
    return keys


def describe(query: m.Query, join: m.Join) -> list[str]:
    """explain's lines about the operator of one join."""
    if join.kind not in (*_STREAM_STREAM, m.ASOF, m.WINDOW_TVF, m.CHANGELOG):
        return []
    reason = custom_reason(query, join)
    if reason is None:
        return [f"operator: {NATIVE} (time-range condition from the windows; state dropped by the watermark)"]
    keys = group_keys(query, join)
    if keys:
        groups = "groups: by the join keys " + ", ".join(f"{a} = {b}" for a, b in keys) + " (parallel)"
    else:
        groups = "groups: ONE group: the join is one ordered sequence (no key partitions every window), so it runs on one task"
    return [f"operator: {CUSTOM}", f"    why: {reason}", f"    {groups}"]


def _column(expression: str) -> str | None:
    from streamjoin.dialect import StreamJoin

    tree = sqlglot.parse_one(expression, read=StreamJoin)
    return tree.name if isinstance(tree, exp.Column) else None
