"""Names and positions: identifier normalisation, where a node stands in the SQL text,
and raising errors that point at it."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.errors import SqlError, position_of
from streamjoin.plan.windows import interval_ms


def ident_name(node: exp.Expression | str | None) -> str:
    """Unquoted identifiers are case-insensitive (folded to lower case); quoted ones are exact."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.lower()
    if isinstance(node, exp.Identifier):
        return node.name if node.quoted else node.name.lower()
    if isinstance(node, (exp.Column, exp.TableAlias)):
        return ident_name(node.this)
    return node.name.lower()


def relation_name(table: exp.Table) -> str:
    """`stocks.order_quantity` -> 'stocks.order_quantity' (each part normalised)."""
    parts = [table.args.get(k) for k in ("catalog", "db", "this")]
    return ".".join(ident_name(p) for p in parts if p is not None)


def offset_of(node: exp.Expression | None) -> int | None:
    """The smallest source offset recorded on the node or below it."""
    if not isinstance(node, exp.Expression):  # e.g. a window frame bound held as a plain string
        return None
    best = None
    for sub in node.walk():
        meta = sub.meta if hasattr(sub, "_meta") and sub._meta else {}
        for key in ("offset", "start"):
            if key in meta and (best is None or meta[key] < best):
                best = meta[key]
    return best


@dataclass
class Located:
    """The SQL text being analysed, so errors can say FILE:LINE:COL."""

    sql: str
    filename: str = "<sql>"

    def position(self, node: exp.Expression | None) -> tuple[int, int]:
        offset = offset_of(node)
        return position_of(self.sql, offset) if offset is not None else (1, 1)

    def fail(self, message: str, node: exp.Expression | None, hint: str | None = None):
        line, col = self.position(node)
        raise SqlError(message, self.filename, line, col, hint)


def signed_interval(node: exp.Expression, what: str, where: Located) -> int:
    """Milliseconds of `INTERVAL '...' unit`, `-INTERVAL ...` or `INTERVAL '-...' unit`."""
    negative = isinstance(node, exp.Neg)
    inner = node.this if negative else node
    if not isinstance(inner, exp.Interval):
        where.fail(f"{what} must be an interval", node, "e.g. INTERVAL '1' SECOND (or a negative one)")
    ms = interval_to_ms(inner, where)
    return -ms if negative else ms


def interval_to_ms(interval: exp.Interval, where: Located) -> int:
    """Milliseconds of an interval node; calendar units and bad literals are errors."""
    unit = interval.args.get("unit")
    value = interval.this.name if interval.this is not None else ""
    try:
        if isinstance(unit, exp.IntervalSpan):
            return interval_ms(value, unit.this.name, unit.expression.name)
        return interval_ms(value, unit.name if unit is not None else None)
    except ValueError as error:
        where.fail(
            f"unsupported interval {interval.sql('risingwave')}: {error}",
            interval,
            "use SECOND, MINUTE, HOUR or DAY, e.g. INTERVAL '1' MINUTE",
        )
