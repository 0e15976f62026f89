"""Inverse distribution aggregates: `PERCENTILE_DISC(p) WITHIN GROUP (ORDER BY x)` and
`PERCENTILE_CONT(...)` (SQL's spelling), and the call form `PERCENTILE_DISC(x, p)` that
s-Server programs use (a user-defined aggregate there, with the standard's meaning), which is
read as the first. DISC gives the first value whose cumulative share reaches p; CONT interpolates
linearly between the two values around it; NULLs are skipped (as PostgreSQL computes them)."""

from __future__ import annotations

from sqlglot import exp

PERCENTILES = {"PERCENTILE_DISC": exp.PercentileDisc, "PERCENTILE_CONT": exp.PercentileCont}


def within_group(select: exp.Expression) -> exp.Expression:
    """`select` with each `PERCENTILE_DISC(x, p)` / `PERCENTILE_CONT(x, p)` call in SQL's form."""

    def rewrite(node):
        if isinstance(node, exp.Anonymous) and node.name.upper() in PERCENTILES and len(node.expressions) == 2:
            value, share, kind = *node.expressions, PERCENTILES[node.name.upper()]
        elif isinstance(node, tuple(PERCENTILES.values())) and node.args.get("expression") is not None \
                and not isinstance(node.parent, exp.WithinGroup):  # sqlglot reads the call form so
            value, share, kind = node.this, node.expression, type(node)
        else:
            return node
        return exp.WithinGroup(this=kind(this=share.copy()),
                               expression=exp.Order(expressions=[exp.Ordered(this=value.copy(), nulls_first=False)]))

    if not any(_call_form(n) for n in select.walk()):
        return select
    return select.transform(rewrite)


def _call_form(node: exp.Expression) -> bool:
    return (isinstance(node, exp.Anonymous) and node.name.upper() in PERCENTILES) or (
        isinstance(node, tuple(PERCENTILES.values())) and node.args.get("expression") is not None)


def is_percentile(node: exp.Expression) -> bool:
    return isinstance(node, exp.WithinGroup) and isinstance(node.this, (exp.PercentileDisc, exp.PercentileCont))
