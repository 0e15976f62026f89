"""Integer division as the peers do it: `a / b` of two integer operands is an integer, truncated
toward zero (PostgreSQL and RisingWave; Calcite's INTEGER / INTEGER in s-Server and KDA), where
Spark's `/` always gives a double (7 / 2 was 3.5 before 2026-11-27). The operands' types come from
the declared columns, literals, casts and the arithmetic over them; a division whose operand type
is not known stays as written.

>>> import sqlglot
>>> tree = sqlglot.parse_one("t.k / 2 + 7 / 2.0", read="postgres")
>>> integer_division(tree, lambda table, column: "INT").sql(dialect="spark")
't.k DIV 2 + 7 / 2.0'
>>> integer_division(sqlglot.parse_one("(t.k / 2 + 1) / 2", read="postgres"), lambda t, c: "INT").sql(dialect="spark")
'(t.k DIV 2 + 1) DIV 2'
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

_INTEGERS = {"INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "INT2", "INT4", "INT8", "SERIAL", "BIGSERIAL", "LONG"}
_INTEGER_FUNCTIONS = (exp.Count,)


def integer_division(tree: exp.Expression, column_type: Callable[[str, str], str | None]) -> exp.Expression:
    """`tree` with each division of two integer operands as exp.IntDiv (Spark's `DIV`, which
    truncates toward zero); `column_type(table, column)`: a qualified column's declared type."""
    for div in reversed(list(tree.find_all(exp.Div))):  # innermost first: `7 / 2 / 2` is (7 DIV 2) DIV 2
        if is_integer(div.this, column_type) and is_integer(div.expression, column_type):
            replacement = exp.IntDiv(this=div.this.copy(), expression=div.expression.copy())
            if div is tree:
                tree = replacement
            else:
                div.replace(replacement)
    return tree


def is_integer(node: exp.Expression, column_type: Callable[[str, str], str | None]) -> bool:
    """Whether the expression's value is an integer, as far as the plan knows."""
    if isinstance(node, exp.Paren | exp.Neg):
        return is_integer(node.this, column_type)
    if isinstance(node, exp.Literal):
        return not node.is_string and node.this.lstrip("-").isdigit()
    if isinstance(node, exp.Cast):
        return _integer_type(node.to.sql())
    if isinstance(node, exp.Column) and node.table:
        return _integer_type(column_type(node.table, node.name) or "")
    if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Mod | exp.IntDiv):
        return is_integer(node.this, column_type) and is_integer(node.expression, column_type)
    if isinstance(node, _INTEGER_FUNCTIONS):
        return True
    if isinstance(node, exp.Sum | exp.Min | exp.Max) and not isinstance(node.this, exp.Distinct):
        return is_integer(node.this, column_type)
    return False


def _integer_type(text: str) -> bool:
    return text.upper().split("(")[0].strip() in _INTEGERS


def output_type(node: exp.Expression, column_type: Callable[[str, str], str | None]) -> str:
    """A view column's type for later divisions: INTEGER where the expression is one, the column's
    own where it passes one through, else UNKNOWN."""
    if is_integer(node, column_type):
        return "INTEGER"
    if isinstance(node, exp.Column) and node.table:
        return column_type(node.table, node.name) or "UNKNOWN"
    return "UNKNOWN"
