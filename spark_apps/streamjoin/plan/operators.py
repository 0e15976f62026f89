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
    # equal windows are paired per window by the operator itself: their columns are not input columns
    window = ("window_start", "window_end")
    keys = tuple((a, b) for a, b in join.condition.keys if not (_column(a) in window and _column(b) in window))
    if join.join_type == "CROSS":
        return ()
    if join.kind == m.CHANGELOG and "_key" in query.input(join.right).columns and "_key" not in {_column(b) for _, b in keys}:
        return ()  # a table row may change its join key: its old version must be in the same group
    for n, alias in enumerate((join.left_inputs[-1], join.right)):
        window = query.input(alias).window
        if isinstance(window, RowsWindow):
            side_keys = {_column(pair[n]) for pair in keys}
            if not keys or None in side_keys or not side_keys <= set(window.partition_by):
                return ()
    return keys


def cuts(query: m.Query) -> list[int]:
    """The joins after which `run` cuts the chain into another Spark query: every outer
    stream-stream join that a later stream-stream join follows. Spark's later join would run its
    watermark ahead of the NULL-extended rows such a join emits late (and miss their matches),
    so its output is released in rowtime order, with rowtime bounds, as the next query's input
    (docs/runtime.md, "Outer joins inside a chain"). A stream-table join keeps no state: late
    rows meet the snapshot like any other."""
    return [
        n for n, j in enumerate(query.joins)
        if j.join_type in ("LEFT", "RIGHT", "FULL") and j.kind in _STREAM_STREAM
        and any(later.kind in _STREAM_STREAM for later in query.joins[n + 1:])
    ]


def describe(query: m.Query, join: m.Join) -> list[str]:
    """explain's lines about the operator of one join."""
    if join.kind == m.ASOF_TABLE:
        return ["operator: a stateless lookup of each stream row's nearest row in the broadcast snapshot"]
    if join.kind not in (*_STREAM_STREAM, m.ASOF, m.WINDOW_TVF, m.CHANGELOG):
        return []
    reason = custom_reason(query, join)
    if reason is None:
        lines = [f"operator: {NATIVE} (time-range condition from the windows; state dropped by the watermark)"]
        if query.joins.index(join) in cuts(query):
            lines.append("    then: the chain is cut here; this join's rows, released in rowtime order, are the "
                         "input of the next Spark query (an outer join followed by another join)")
        return lines
    keys = group_keys(query, join)
    if keys:
        groups = "groups: by the join keys " + ", ".join(f"{a} = {b}" for a, b in keys) + " (parallel)"
    elif join.kind == m.CHANGELOG:
        groups = "groups: ONE group: a table row keyed by _key may change its join key, so it runs on one task"
    else:
        groups = "groups: ONE group: the join is one ordered sequence (no key partitions every window), so it runs on one task"
    return [f"operator: {CUSTOM}", f"    why: {reason}", f"    {groups}"]


def _column(expression: str) -> str | None:
    from streamjoin.dialect import StreamJoin

    tree = sqlglot.parse_one(expression, read=StreamJoin)
    return tree.name if isinstance(tree, exp.Column) else None


def changelog_query(script: m.Script, query: m.Query) -> m.Query:
    """Lenses' stream-table join where the table is a `SELECT TABLE` view over a stream (a
    compacted topic): the query as a changelog join of the two underlying streams, or the query
    itself when it is not one. The stream side may be a pass-through view (`SELECT STREAM *`)."""
    import dataclasses

    if len(query.joins) != 1 or len(query.inputs) != 2 or query.aggregation is not None:
        return query
    join = query.joins[0]
    relations = {r.name: r for r in script.relations}
    views = {q.name: q for q in script.queries}
    table_alias, stream_alias = (join.right, join.left_inputs[0]) if join.join_type != "RIGHT" else (join.left_inputs[0], join.right)
    table, stream = query.input(table_alias), query.input(stream_alias)

    def source(item: m.Input, kind: str) -> m.Relation | None:
        relation = relations[item.relation]
        if not relation.view:
            return relation if kind == m.STREAM and relation.kind == m.STREAM else None
        view = views[relation.name]
        passthrough = (not view.joins and view.aggregation is None and not view.where and len(view.inputs) == 1
                       and all(o.expression == f"{view.inputs[0].alias}.{o.name}" for o in view.output))
        under = relations.get(view.inputs[0].relation)
        if view.kind != kind or not passthrough or under is None or under.view or under.kind != m.STREAM:
            return None
        return under

    table_stream, stream_stream = source(table, m.TABLE), source(stream, m.STREAM)
    if table.kind != m.TABLE or table_stream is None or stream_stream is None or join.kind != m.SNAPSHOT:
        return query
    if join.join_type not in ("INNER", "LEFT", "RIGHT"):
        return query
    from streamjoin.plan.windows import CURRENT_ROW

    new_stream = dataclasses.replace(stream, relation=stream_stream.name, kind=m.STREAM, rowtime=stream_stream.rowtime,
                                     window=CURRENT_ROW, columns=stream_stream.column_names())
    new_table = dataclasses.replace(table, relation=table_stream.name, kind=m.STREAM, rowtime=table_stream.rowtime,
                                    window=CURRENT_ROW, window_source="changelog", columns=table_stream.column_names(),
                                    pushed_filters=())
    # the stream is the left input of the operator, whatever side it was written on
    flipped = join.join_type == "RIGHT"
    keys = tuple((b, a) for a, b in join.condition.keys) if flipped else join.condition.keys
    key = "_key" if "_key" in table_stream.column_names() else "the join keys"
    state = (
        f"'{table_alias}': the latest row per key ({key}) of its changelog stream, for the whole run (a compacted topic)",
        f"'{stream_alias}' rows that found no table row: they wait for one until end of input "
        "(FINAL: NULL-extended then; EAGER and CHANGES: NULL-extended at once)",
    )
    new_join = dataclasses.replace(join, kind=m.CHANGELOG, join_type="LEFT" if flipped else join.join_type,
                                   right=table_alias, left_inputs=(stream_alias,), state=state,
                                   condition=dataclasses.replace(join.condition, keys=keys))
    residual = join.condition.residual + table.pushed_filters
    new_join = dataclasses.replace(new_join, condition=dataclasses.replace(new_join.condition, residual=residual))
    return dataclasses.replace(query, inputs=(new_stream, new_table), joins=(new_join,))
