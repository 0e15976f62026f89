"""Syntax nodes that the streaming dialect adds to sqlglot's tree."""

from __future__ import annotations

from sqlglot import exp


class SelectKind(exp.Expression):
    """`SELECT STREAM` / `SELECT TABLE`: carried in the SELECT's hint slot."""

    arg_types = {"this": True}


class Within(exp.Expression):
    """Lenses `WITHIN 5s`: the time distance allowed between the two rows of a join."""

    arg_types = {"this": True}  # an exp.Interval


class Description(exp.Expression):
    """s-Server `CREATE VIEW v DESCRIPTION '...' AS ...`."""

    arg_types = {"this": True}


EMIT_MODES = ("FINAL", "EAGER", "CHANGES")


class StepBy(exp.Expression):
    """s-Server `STEP(ts BY INTERVAL 'n' unit)`: `ts` rounded down to a multiple of the interval
    (counted from the epoch). A one-unit step is parsed as `FLOOR(ts TO unit)` instead."""

    arg_types = {"this": True, "expression": True}  # expression: an exp.Interval


class SpanOf(exp.Expression):
    """s-Server `(ts1 - ts2) SECOND`: the difference of two instants as an interval of that unit."""

    arg_types = {"this": True, "unit": True}  # this: the parenthesized difference; unit: an exp.Var
