"""The shape of a chain of joins, from its conditions (Spark-free): the column of each input that
groups a chain of regular joins on streamjoin's operator (`chain_keys`); how far apart in time its
inputs' rows can be in one result is plan.conditions.chain_reach (the batch chain join's ranges)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.model import Join, Query, Script


def chain_keys(script: Script, query: Query) -> tuple[tuple[exp.Expression, ...], ...]:
    """A chain of regular joins' group key: one column of each input (in join order) that the
    joins' equalities make equal in every combination they pair, so that a group holds every row
    a combination can need (`a JOIN b ON a.k = b.k JOIN c ON b.k = c.k`: a.k, b.k, c.k). ((...),)
    or () when no such column joins every input, or a changing input's may change (not its whole
    primary key): then the chain runs as one group."""
    aliases = (query.joins[0].left_inputs[0], *(j.right for j in query.joins))
    pairs = [list(_column_pairs(j)) for j in query.joins]
    parent: dict = {}

    def find(node):
        while parent.get(node, node) != node:
            node = parent[node]
        return node

    for a, b in (p for join_pairs in pairs for p in join_pairs):
        parent[find(a)] = find(b)
    for root in {find(b) for join_pairs in pairs for _, b in join_pairs}:
        if not all(any(find(a) == find(b) == root for a, b in join_pairs) for join_pairs in pairs):
            continue  # a join that pairs its rows by other columns: rows of one combination in several groups
        columns: dict = {}
        for node in sorted({n for join_pairs in pairs for pair in join_pairs for n in pair}):
            if find(node) == root:
                columns.setdefault(node[0], []).append(node[1])
        if any(len(c) > 1 for c in columns.values()):  # (a row whose two such columns differ: partners in two groups)
            continue
        columns = {a: c[0] for a, c in columns.items()}
        if set(columns) == set(aliases) and not any(
                script.relation(query.input(a).relation).changing
                and not set(script.relation(query.input(a).relation).primary_key) <= {columns[a]} for a in aliases):
            return (tuple(exp.column(columns[a], table=a) for a in aliases),)
    return ()


def _column_pairs(join: Join):
    """A join's equalities of two plain columns, as ((alias, column), (alias, column))."""
    for a, b in join.condition.keys:
        if isinstance(a, exp.Column) and isinstance(b, exp.Column) and a.table and b.table:
            yield (a.table, a.name), (b.table, b.name)
