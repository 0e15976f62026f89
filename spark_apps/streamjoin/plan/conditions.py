"""Splitting a join condition into equi-keys, time bounds between rowtimes, and a residual; how
far apart in time a chain of joins' inputs can be (`chain_reach`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.plan.model import Condition, Query, TimeBound
from streamjoin.plan.scope import Located, interval_to_ms

# For a comparison `x OP y`, the bound it puts on x - y: (low, high), None = unbounded.
_COMPARISONS = {exp.LTE: "<=", exp.LT: "<", exp.GTE: ">=", exp.GT: ">"}
_FLIP = {"<=": ">=", "<": ">", ">=": "<=", ">": "<"}


@dataclass(frozen=True)
class Ref:
    """A resolved column: which input, which column, and whether it is that input's rowtime."""

    alias: str
    column: str
    is_rowtime: bool


def conjuncts(expression: exp.Expression | None) -> list[exp.Expression]:
    if expression is None:
        return []
    expression = expression.unnest()
    if isinstance(expression, exp.And):
        return conjuncts(expression.this) + conjuncts(expression.expression)
    return [expression]


def refs_of(expression: exp.Expression) -> set[str]:
    """Aliases referenced by a qualified expression (columns carry the resolved Ref in meta)."""
    return {c.meta["ref"].alias for c in expression.find_all(exp.Column) if "ref" in c.meta}


def one_sided(residual, left: set[str], right: str) -> tuple[list, list, list]:
    """A residual's conjuncts as (on the left inputs only, on the right input only, on both).
    A conjunct that names no input counts as the left's (it holds or fails for every row)."""
    lefts, rights, both = [], [], []
    for part in residual:
        refs = refs_of(part) or set(left)
        (lefts if refs <= left else rights if refs == {right} else both).append(part)
    return lefts, rights, both


def split(condition: exp.Expression | None, left: set[str], right: str, where: Located) -> Condition:
    """Split a qualified condition for the join of `left` aliases with the `right` alias."""
    keys: list[tuple[exp.Expression, exp.Expression]] = []
    bounds: list[TimeBound] = []
    residual: list[exp.Expression] = []
    for part in conjuncts(condition):
        key = _equi_key(part, left, right)
        if key:
            keys.append(key)
            continue
        bound = _time_bound(part, left, right, where)
        if bound is not None and bound[0] is not None:
            bounds.append(bound[0])
            if bound[1]:  # strict comparisons stay exact in the residual
                residual.append(part.copy())
            continue
        residual.append(part.copy())
    return Condition(
        keys=tuple(keys),
        time_bounds=tuple(merge_bounds(bounds)),
        residual=tuple(residual),
        expression=condition,
    )


def _equi_key(part, left, right) -> tuple[exp.Expression, exp.Expression] | None:
    if not isinstance(part, exp.EQ):
        return None
    a, b = refs_of(part.this), refs_of(part.expression)
    if a and b and a <= left and b == {right}:
        return part.this.copy(), part.expression.copy()
    if a and b and b <= left and a == {right}:
        return part.expression.copy(), part.this.copy()
    return None


def rowtime_term(node: exp.Expression, where: Located) -> tuple[str, int] | None:
    """`a.rt`, `a.rt + INTERVAL ...`, `a.rt - INTERVAL ...` -> (alias, offset ms)."""
    node = node.unnest()
    if isinstance(node, exp.Column) and "ref" in node.meta and node.meta["ref"].is_rowtime:
        return node.meta["ref"].alias, 0
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.expression, exp.Interval):
        base = rowtime_term(node.this, where)
        if base:
            ms = interval_to_ms(node.expression, where)
            return base[0], base[1] + (ms if isinstance(node, exp.Add) else -ms)
    return None


def _time_bound(part, left, right, where) -> tuple[TimeBound, bool] | None:
    """A bound on right.rowtime - left.rowtime, and whether it came from a strict comparison."""
    if isinstance(part, exp.Between):
        x = rowtime_term(part.this, where)
        low = rowtime_term(part.args["low"], where)
        high = rowtime_term(part.args["high"], where)
        if x and low and high and low[0] == high[0] and x[0] != low[0]:
            # x + ox in [y + ol, y + oh]  =>  x - y in [ol - ox, oh - ox]
            return _orient(x[0], low[0], low[1] - x[1], high[1] - x[1], left, right), False
        return None
    op = _COMPARISONS.get(type(part))
    if op is None:
        return None
    x, y = rowtime_term(part.this, where), rowtime_term(part.expression, where)
    if not (x and y) or x[0] == y[0]:
        return None
    # x + ox OP y + oy  =>  x - y OP oy - ox
    diff = y[1] - x[1]
    low, high = (None, diff) if op in ("<=", "<") else (diff, None)
    return _orient(x[0], y[0], low, high, left, right), op in ("<", ">")


def _orient(x, y, low, high, left, right) -> TimeBound | None:
    """Turn a bound on x - y into a bound on right - left."""
    if x == right and y in left:
        return TimeBound(y, right, low, high, "condition")
    if y == right and x in left:
        return TimeBound(
            x, right, -high if high is not None else None, -low if low is not None else None, "condition"
        )
    return None


def merge_bounds(bounds: list[TimeBound]) -> list[TimeBound]:
    """Intersect bounds on the same pair of inputs."""
    merged: dict[tuple[str, str, str], TimeBound] = {}
    for b in bounds:
        if b is None:
            continue
        key = (b.left, b.right, b.origin)
        old = merged.get(key)
        if old is None:
            merged[key] = b
            continue
        low = max((v for v in (old.low_ms, b.low_ms) if v is not None), default=None)
        high = min((v for v in (old.high_ms, b.high_ms) if v is not None), default=None)
        merged[key] = TimeBound(b.left, b.right, low, high, b.origin)
    return list(merged.values())


def chain_reach(query: Query) -> tuple[tuple[int, ...], ...] | None:
    """`reach[i][k]`: the most `t_k - t_i` (ms) can be in a result of the chain, for its inputs in
    order (the first join's left input, then each join's right), from every time bound of its
    joins closed over the chain (shortest paths of the bounds' difference constraints); None when
    two inputs are not bounded both ways, or the bounds admit no result."""
    order = [query.joins[0].left_inputs[0], *(j.right for j in query.joins)]
    index = {a: n for n, a in enumerate(order)}
    n, none = len(order), None
    d = [[0 if i == k else none for k in range(n)] for i in range(n)]

    def tighten(i: int, k: int, value: int | None) -> None:
        if value is not None and (d[i][k] is None or value < d[i][k]):
            d[i][k] = value

    for join in query.joins:
        for b in join.condition.time_bounds:
            if b.left not in index or b.right not in index:
                return None
            left, right = index[b.left], index[b.right]  # low <= t_right - t_left <= high
            tighten(left, right, b.high_ms)
            tighten(right, left, None if b.low_ms is None else -b.low_ms)
    for m in range(n):
        for i in range(n):
            for k in range(n):
                if d[i][m] is not None and d[m][k] is not None:
                    tighten(i, k, d[i][m] + d[m][k])
    if any(d[i][k] is None for i in range(n) for k in range(n)) or any(d[i][i] < 0 for i in range(n)):
        return None
    return tuple(tuple(row) for row in d)
