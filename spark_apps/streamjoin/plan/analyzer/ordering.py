"""s-Server's streaming `ORDER BY ROWTIME, c1 [DESC], ...`: rows leave in rowtime order, and rows of
one rowtime in the order of the later keys (a view's rows are sorted so when it is staged,
lower.staged_views; the final query's by its sink). `run` carries out no other ORDER BY."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.expressions import StepBy
from streamjoin.errors import SqlError
from streamjoin.plan.analyzer.names import is_rowtime
from streamjoin.plan.model import OutputColumn, sql
from streamjoin.plan.scope import ident_name


def order_within(select: exp.Select, scope, output: tuple[OutputColumn, ...]) -> tuple[tuple[str, bool], ...] | None:
    """() for ORDER BY the rowtime alone; the later keys as output columns (name, descending);
    None: no ORDER BY, a t-sort (WITHIN), or an ORDER BY `run` does not carry out."""
    order = select.args.get("order")
    if order is None or order.args.get("within") is not None or order.expressions[0].args.get("desc"):
        return None
    first = order.expressions[0].this
    by_name = {o.name: o for o in output}
    if isinstance(first, exp.Column) and not first.table and ident_name(first.this) in by_name \
            and not is_rowtime(first) and not is_rowtime(by_name[ident_name(first.this)].expression):
        return None  # an output column by its alias (ORDER BY n, where n is COUNT(*)): not the rowtime
    if not is_rowtime(scope.qualify(first, output_rowtime=True)) and not _time_bucket(first, select, scope):
        return None
    keys = []
    for key in order.expressions[1:]:
        node = key.this
        name = ident_name(node.this) if isinstance(node, exp.Column) and not node.table else None
        if name not in {o.name for o in output}:
            try:
                qualified = sql(scope.qualify(node.copy(), output_rowtime=True))
            except SqlError:  # not a column of the inputs (an output alias's expression): not carried out
                return None
            name = next((o.name for o in output if sql(o.expression) == qualified), None)
        if name is None:
            return None
        keys.append((name, bool(key.args.get("desc"))))
    return tuple(keys)


def _time_bucket(first: exp.Expression, select: exp.Select, scope) -> bool:
    """The first key is the query's GROUP BY time bucket (`ORDER BY FLOOR(s.ROWTIME TO MINUTE), k`
    under `GROUP BY FLOOR(s.ROWTIME TO MINUTE), k`): a bucket's rows all leave at its one rowtime,
    so this orders as `ORDER BY ROWTIME, k`."""
    group = select.args.get("group")
    if group is None or isinstance(first, exp.Column):
        return False
    try:
        key = scope.qualify(first.copy(), output_rowtime=True)
        timed = [g for g in (scope.qualify(g.copy(), output_rowtime=True) for g in group.expressions)
                 if any(is_rowtime(c) for c in g.find_all(exp.Column))]
    except SqlError:
        return False
    # the one GROUP BY key of the rowtime is the bucket (another, EXTRACT(SECOND ...), varies within it)
    return len(timed) == 1 and sql(timed[0]) == sql(key) and isinstance(key, (exp.Floor, exp.TimestampTrunc, StepBy))


def table_sort(select: exp.Select, scope, output: tuple[OutputColumn, ...], unrun: tuple[str, ...]) -> dict:
    """ORDER BY output columns (by name or as selected) and LIMIT n, which a query over tables
    only carries out in its batch (PostgreSQL's NULL order: last ascending, first descending)."""
    order, limit = select.args.get("order"), select.args.get("limit")
    keys, done = [], []
    if order is not None and order.args.get("within") is None:
        selected = {sql(o.expression): o.name for o in output}
        for key in order.expressions:
            node, name = key.this, None
            if isinstance(node, exp.Literal) and node.is_int and 1 <= int(node.name) <= len(output):  # ORDER BY 1
                name = output[int(node.name) - 1].name
            elif isinstance(node, exp.Column) and not node.table and ident_name(node.this) in {o.name for o in output}:
                name = ident_name(node.this)
            else:
                try:
                    name = selected.get(sql(scope.qualify(node.copy(), output_rowtime=True)))
                except SqlError:
                    name = None
            if name is None:
                keys = []
                break
            desc = bool(key.args.get("desc"))
            nulls_first = key.args.get("nulls_first")
            keys.append((name, desc, desc if nulls_first is None else bool(nulls_first)))
        if keys:
            done.append(order.sql(dialect="postgres"))
    count = None
    expression = limit.args.get("expression") if limit is not None else None
    if isinstance(expression, exp.Literal) and expression.is_int:
        count = int(expression.name)
        done.append(limit.sql(dialect="postgres"))
    return {"table_order": tuple(keys), "table_limit": count, "table_unrun": tuple(u for u in unrun if u not in done)}
