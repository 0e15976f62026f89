"""The output's aggregates OVER windows of rows (analytic window functions) as `Analytic`s.

s-Server and KDA call them windowed aggregates (`AVG(price) OVER (PARTITION BY ticker RANGE
INTERVAL '1' MINUTE PRECEDING)`, `LAG(x) OVER w` with `WINDOW w AS (...)`), RisingWave OVER
windows (`... ORDER BY ts RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW`). `check`
accepted them before `run` computed them, so what `run` cannot compute is not an error here: it is
the Analytic's `problem`, which `run` names (lower.support)."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from streamjoin.plan.analyzer.names import is_rowtime
from streamjoin.plan.model import Analytic, OutputColumn
from streamjoin.plan.scope import ident_name, interval_to_ms

FUNCTIONS: dict[type, str] = {
    exp.Count: "COUNT",
    exp.Sum: "SUM",
    exp.Avg: "AVG",
    exp.Min: "MIN",
    exp.Max: "MAX",
    exp.Stddev: "STDDEV_SAMP",
    exp.StddevSamp: "STDDEV_SAMP",
    exp.StddevPop: "STDDEV_POP",
    exp.Variance: "VAR_SAMP",
    exp.VariancePop: "VAR_POP",
    exp.FirstValue: "FIRST_VALUE",
    exp.LastValue: "LAST_VALUE",
    exp.NthValue: "NTH_VALUE",
    exp.Lag: "LAG",
}


ALL_ROWS = 2**62  # a ROWS frame of every earlier row (in another column's order: peers after the row left out)


class _Problem(Exception):
    pass


def analytics_of(
    output: tuple[OutputColumn, ...], named: dict[str, exp.Window], qualify: Callable[[exp.Expression], exp.Expression], where
) -> tuple[Analytic, ...]:
    """Every OVER in `output` (qualified), in output order, each once; `named`: the SELECT's
    `WINDOW name AS (...)` definitions, as written (qualified here)."""
    found: dict[str, Analytic] = {}
    for column in output:
        for node in column.expression.find_all(exp.Window):
            if node.find_ancestor(exp.Window) is None and key(node) not in found:
                found[key(node)] = _analytic(node, named, qualify, where)
    return tuple(found.values())


def key(node: exp.Window) -> str:
    """What tells one OVER from another (its SQL may drop a clause its dialect lacks: FROM LAST)."""
    return repr(node)


def _analytic(node: exp.Window, named: dict[str, exp.Window], qualify, where) -> Analytic:
    call, ignore_nulls = node.this, False
    if isinstance(call, (exp.IgnoreNulls, exp.RespectNulls)):
        ignore_nulls, call = isinstance(call, exp.IgnoreNulls), call.this
    function = FUNCTIONS.get(type(call))
    argument = call.this if function else None
    if isinstance(argument, exp.Star):
        argument = None
    base = Analytic(expression=node, function=function or sql_name(call), argument=argument, ignore_nulls=ignore_nulls)
    try:
        if function is None:
            raise _Problem(
                f"{sql_name(call)} OVER a window is not computed by `run` (COUNT, SUM, AVG, MIN, MAX, "
                "STDDEV, VARIANCE, FIRST_VALUE, LAST_VALUE, NTH_VALUE and LAG are)"
            )
        if isinstance(argument, exp.Distinct):
            raise _Problem(f"{function}(DISTINCT ...) OVER a window is not computed by `run` yet")
        spec = _definition(node, named)
        partition = tuple(qualify(p) for p in spec.args.get("partition_by") or [])
        for p in partition:
            if isinstance(p, exp.Anonymous) and p.name.upper() == "SESSION":
                raise _Problem("a session window (PARTITION BY SESSION ...) OVER an aggregate is not computed by `run`")
        ordered_by = _order(spec.args.get("order"), qualify)
        frame, size, lag = _frame(spec.args.get("spec"), where)
        if ordered_by is not None and frame == "unbounded" and spec.args.get("spec") is not None \
                and spec.args["spec"].text("kind").upper() == "ROWS":
            frame, size = "rows", ALL_ROWS  # ROWS UNBOUNDED PRECEDING: up to the row itself, not its peers
        offset, default, from_last = _arguments(call, function)
        return Analytic(
            expression=node,
            function=function,
            argument=argument,
            partition_by=partition,
            frame=frame,
            size=size,
            lag=lag,
            offset=offset,
            from_last=from_last,
            ignore_nulls=ignore_nulls,
            default=default,
            ordered_by=ordered_by,
        )
    except _Problem as problem:
        return Analytic(**{**base.__dict__, "problem": str(problem)})


def sql_name(call: exp.Expression) -> str:
    return (call.name if isinstance(call, exp.Anonymous) else call.key).upper()


def _definition(node: exp.Window, named: dict[str, exp.Window]) -> exp.Window:
    """The window the OVER names or writes (`OVER w` with `WINDOW w AS (...)`)."""
    if (
        node.args.get("alias") is not None
        and node.args.get("spec") is None
        and node.args.get("order") is None
        and not node.args.get("partition_by")
    ):
        name = ident_name(node.args["alias"])
        if name not in named:
            raise _Problem(f"unknown window '{name}'")
        return named[name]
    return node


def _order(order, qualify) -> exp.Expression | None:
    """No ORDER BY or ORDER BY the input's rowtime ascending (rowtime order: None), or ORDER BY one
    other column ascending (returned: the values change as rows come out of its order)."""
    if order is None:
        return None
    keys = order.expressions
    key = keys[0] if len(keys) == 1 else None
    if key is None or key.args.get("desc"):
        raise _Problem(
            f"ORDER BY {order.sql(dialect='postgres')[len('ORDER BY ') :]} in an OVER window: `run` orders "
            "a window by one column, ascending (the rowtime, or another column: a changelog)"
        )
    column = qualify(key.this)
    if is_rowtime(column):
        return None
    if not isinstance(column, exp.Column):
        raise _Problem(f"ORDER BY {key.this.sql(dialect='postgres')} in an OVER window: `run` orders a window by a column")
    return column


def _frame(spec, where) -> tuple[str, int, int]:
    """(frame, size, lag): the window's frame; none written: every earlier row of the partition."""
    if spec is None:
        return "unbounded", 0, 0
    kind = spec.text("kind").upper()
    start, start_side = spec.args.get("start"), (spec.text("start_side") or "").upper()
    end, end_side = spec.args.get("end"), (spec.text("end_side") or "").upper()
    if "FOLLOWING" in (start_side, end_side) and not _zero(end):
        raise _Problem(
            "a window frame that reaches FOLLOWING rows is not computed by `run` (a stream's later rows have not come yet)"
        )
    if _word(start) == "UNBOUNDED":
        if end is not None and not _current(end):
            raise _Problem("UNBOUNDED PRECEDING AND a PRECEDING end is not computed by `run` yet")
        return "unbounded", 0, 0
    if kind == "ROWS":
        if end is not None and not (_current(end) or _zero(end)):
            raise _Problem("ROWS BETWEEN n PRECEDING AND m PRECEDING is not computed by `run` yet")
        if _current(start):
            return "rows", 0, 0
        if not (
            isinstance(start, exp.Literal) and start.is_number and float(start.name).is_integer() and int(float(start.name)) >= 0
        ):
            raise _Problem("ROWS needs a whole number of rows PRECEDING")
        return "rows", int(float(start.name)), 0
    size = 0 if _current(start) else _ms(start, where)
    lag = 0 if end is None or _current(end) or _zero(end) else _ms(end, where)
    if lag > size:
        raise _Problem("RANGE BETWEEN a AND b PRECEDING needs a >= b")
    return "range", size, lag


def _ms(node, where) -> int:
    if not isinstance(node, exp.Interval):
        raise _Problem("a RANGE frame is measured in time: use an INTERVAL (RANGE INTERVAL '1' MINUTE PRECEDING)")
    ms = interval_to_ms(node, where)
    if ms < 0:
        raise _Problem("a RANGE frame needs a non-negative interval")
    return ms


def _arguments(call: exp.Expression, function: str) -> tuple[int, exp.Expression | None, bool]:
    """(LAG's offset or NTH_VALUE's n, LAG's default, NTH_VALUE FROM LAST)."""
    if function == "LAG":
        offset = call.args.get("offset")
        n = 1 if offset is None else _count(offset, "LAG's offset")
        return n, call.args.get("default"), False
    if function == "NTH_VALUE":
        n = _count(call.args.get("offset"), "NTH_VALUE's n")
        if n < 1:
            raise _Problem("NTH_VALUE's n counts from 1")
        return n, None, call.args.get("from_first") is False
    return 1, None, False


def _count(node, what: str) -> int:
    if not (isinstance(node, exp.Literal) and node.is_number and float(node.name).is_integer()):
        raise _Problem(f"{what} must be a whole number")
    return int(float(node.name))


def _word(node) -> str:
    return str(getattr(node, "name", node) or "").upper()


def _current(node) -> bool:
    return node is not None and _word(node) == "CURRENT ROW"


def _zero(node) -> bool:
    return isinstance(node, exp.Literal) and node.is_number and float(node.name) == 0
