"""Table-filter pushdown: conjuncts on one table input alone (in the ON of an inner
stream-table join, or in WHERE) are applied while its snapshot is loaded (`Input.pushed_filters`,
`filter before loading` in explain). A table's rows a filter removes could not have joined."""

from __future__ import annotations

from dataclasses import replace

from streamjoin.plan.conditions import conjuncts, refs_of
from streamjoin.plan.model import JoinKind, JoinType, Kind, Query, Script


def push_table_filters(script: Script) -> Script:
    """Every query with its table inputs' pushed filters set."""
    return replace(script, queries=tuple(_push(q) for q in script.queries))


def _push(query: Query) -> Query:
    pushed: dict[str, list] = {i.alias: [] for i in query.inputs}
    for join in query.joins:
        table = query.input(join.right)
        if join.kind == JoinKind.SNAPSHOT and table.kind == Kind.TABLE and join.join_type == JoinType.INNER:
            pushed[table.alias] += [p.copy() for p in conjuncts(join.condition.expression) if refs_of(p) == {table.alias}]
    preserved = {j.right for j in query.joins if j.join_type in (JoinType.LEFT, JoinType.FULL)}
    for part in conjuncts(query.where):
        refs = refs_of(part)
        if len(refs) == 1:
            (alias,) = refs
            item = query.input(alias)
            if item.kind == Kind.TABLE and alias not in preserved and not item.temporal:
                pushed[alias].append(part.copy())
    inputs = tuple(replace(i, pushed_filters=tuple(pushed[i.alias])) if pushed[i.alias] else i for i in query.inputs)
    return replace(query, inputs=inputs)
