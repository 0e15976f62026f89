"""A semi or anti join after joins of streams bounded in time (issue 67): `a JOIN b` in an
interval, then `EXISTS` / `NOT EXISTS` / `IN` over a third stream bounded against a's rowtime.
streamjoin's operator runs a semi / anti join as the only join of its query, so the outer
query's own joins become a view of their own (`joined`, its columns `a__id`, `b__id`, ...,
each input's rowtime as `a__rowtime`), and the semi / anti join reads it, as Flink runs the
two joins one after the other:

- the view's rows are the joined rows, its rowtime theirs (the later of a's and b's), so the
  query's output rowtime is what it was;
- the subquery's condition on `a.ROWTIME` is kept as written (on `a__rowtime`), and bounds the
  view's rowtime too, widened by how much earlier than a joined row's rowtime a's can be (the
  chain's reach, plan.conditions.chain_reach): `low <= c - a <= high` and `0 <= R - a <= D`
  give `low - D <= c - R <= high`, the time bound the operator keeps its state by.

Nothing changes where the joins before the semi / anti join are not all joins of streams
bounded in time, or its time bound does not read exactly one of their inputs' rowtimes."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.errors import SqlError
from streamjoin.plan.analyzer.query import QueryAnalysis
from streamjoin.plan.analyzer.subqueries import item_columns
from streamjoin.plan.analyzer.subquery_values import SUBQUERY, alias_of, and_all
from streamjoin.plan.conditions import chain_reach, conjuncts
from streamjoin.plan.model import Query
from streamjoin.plan.scope import ident_name

ALIAS = "joined"
COMPARISONS = (exp.LT, exp.LTE, exp.GT, exp.GTE)


def joins_as_view(analyzer, select: exp.Select) -> exp.Select:
    """The select reading its own joins as a view where a semi / anti join after them needs it
    (`analyzer`: plan.analyzer.statements' Analyzer, which plans the view), else as it is."""
    def analysed(part: exp.Select) -> Query | None:
        try:
            return QueryAnalysis(analyzer, part, {}).run(ALIAS, None)
        except SqlError:  # (refused as written: left to the select's own analysis)
            return None
    joined = split(select, analysed, lambda node: item_columns(analyzer, node))
    return select if joined is None else analyzer.parts_as_views(joined)


def split(select: exp.Select, analysed, columns) -> exp.Select | None:
    """The select reading its own joins as a view (a derived table `joined`, which
    Analyzer.parts_as_views makes a view), or None where nothing needs it. `analysed(select)`:
    its plan, None where it is refused; `columns(item)`: a FROM item's column names
    (plan.analyzer.subqueries.item_columns)."""
    written = select.args.get("joins") or []
    first = next((n for n, j in enumerate(written) if _filters(j)), None)
    if not first or not all(_filters(j) for j in written[first:]) or any(SUBQUERY in j.meta for j in written[:first]):
        return None
    items = [select.args["from_"].this, *(j.this for j in written[:first])]
    names = {}
    for item in items:
        cols = columns(item)
        if cols is None:
            return None
        names[alias_of(item)] = tuple(dict.fromkeys(cols))  # (a stream's ROWTIME, declared and implied, once)
    kept, outer = _where_parts(select, names)
    prefix = exp.Select(expressions=[exp.Star()], hint=select.args.get("hint"), from_=select.args["from_"].copy(),
                        joins=[j.copy() for j in written[:first]])
    if kept:
        prefix.set("where", exp.Where(this=and_all([k.copy() for k in kept])))
    plan = analysed(prefix)
    if plan is None or not plan.joins or not all(j.kind.stream_stream for j in plan.joins):
        return None
    reach = chain_reach(plan)
    if reach is None:
        return None
    order = [plan.joins[0].left_inputs[0], *(j.right for j in plan.joins)]
    spread = {a: max(0, *reach[n]) for n, a in enumerate(order)}  # how much earlier a's rowtime can be than a joined row's
    joins = []
    for join in written[first:]:
        widened = [w for part in conjuncts(join.args.get("on")) if (w := _widened(part, spread)) is not None]
        if not widened:
            return None  # no time bound against the joined rows: as written
        join = join.copy()
        join.set("on", and_all([join.args["on"].copy(), *widened]))
        joins.append(join)
    return _rewritten(select, items, written[:first], joins, names, kept, outer)


def _filters(join: exp.Join) -> bool:
    return str(join.args.get("kind") or "").upper() in ("SEMI", "ANTI")


def _where_parts(select: exp.Select, names: dict) -> tuple[list, list]:
    """The WHERE's conjuncts on the joined inputs alone (the view's), and the others."""
    where = select.args.get("where")
    kept, outer = [], []
    for part in conjuncts(where.this) if where is not None else []:
        inside = all(_owner(c, names) for c in part.find_all(exp.Column) if not isinstance(c.this, exp.Star))
        (kept if inside else outer).append(part)
    return kept, outer


def _owner(col: exp.Column, names: dict) -> str | None:
    table = ident_name(col.args["table"]) if col.args.get("table") is not None else ""
    if table:
        return table if table in names else None
    owners = [a for a, cols in names.items() if ident_name(col.this) in cols]
    return owners[0] if len(owners) == 1 else None


def _name_in(name: str, cols: tuple[str, ...]) -> str:
    """A column as the input names it (ROWTIME is every stream's, however written)."""
    return name if name in cols else next((c for c in cols if c.lower() == name.lower()), name)


def _moved_rowtime(node: exp.Expression, spread: dict) -> str | None:
    """`a.ROWTIME` or `a.ROWTIME +/- INTERVAL ...` of a joined input a: a."""
    node = node.unnest()
    if isinstance(node, exp.Add | exp.Sub) and isinstance(node.expression, exp.Interval):
        return _moved_rowtime(node.this, spread)
    return _rowtime_of(node, spread) if isinstance(node, exp.Column) else None


def _rowtime_of(col: exp.Column, spread: dict) -> str | None:
    """The joined input whose rowtime `col` is (`a.ROWTIME`), else None."""
    table = ident_name(col.args["table"]) if col.args.get("table") is not None else None
    return table if ident_name(col.this).lower() == "rowtime" and table in spread else None


def _widened(part: exp.Expression, spread: dict) -> exp.Expression | None:
    """The conjunct with each joined input's rowtime replaced by the joined row's bound on it
    (`R - D <= a.ROWTIME <= R`): where a.ROWTIME is on the lower side of a comparison, `R - D`;
    on the upper, `R`. None: the conjunct compares no joined input's rowtime so."""
    if isinstance(part, exp.Between):
        low = exp.GTE(this=part.this.copy(), expression=part.args["low"].copy())
        high = exp.LTE(this=part.this.copy(), expression=part.args["high"].copy())
        both = [_widened(low, spread), _widened(high, spread)]
        return and_all(both) if None not in both else None
    if not isinstance(part, COMPARISONS):
        return None
    smaller, larger = (part.this, part.expression) if isinstance(part, exp.LT | exp.LTE) else (part.expression, part.this)
    mine = [(side, _moved_rowtime(side, spread), lower) for side, lower in ((smaller, True), (larger, False))]
    if sum(1 for _, alias, _ in mine if alias) != 1 or any(alias is None and side.find(exp.Column) is None
                                                           for side, alias, _ in mine):
        return None
    out = part.copy()
    for col, alias in [(c, a) for c in out.find_all(exp.Column) if (a := _rowtime_of(c, spread))]:
        lower = next(lower for _, a, lower in mine if a == alias)
        bound = exp.column("rowtime", ALIAS)
        if lower and spread[alias]:
            bound = exp.Paren(this=exp.Sub(this=bound, expression=exp.Interval(
                this=exp.Literal.string(str(spread[alias])), unit=exp.var("MILLISECOND"))))
        col.replace(bound)
    return out


def _rewritten(select: exp.Select, items: list, moved: list, joins: list, names: dict, kept: list, outer: list) -> exp.Select:
    view = exp.Select(expressions=[exp.alias_(exp.column(c, a, quoted=True), f"{a}__{c}", quoted=True)
                                   for a, cols in names.items() for c in cols])
    view.set("hint", select.args.get("hint"))
    view.set("from_", exp.From(this=items[0].copy()))
    view.set("joins", [j.copy() for j in moved])
    if kept:
        view.set("where", exp.Where(this=and_all([k.copy() for k in kept])))
    out = select.copy()
    out.set("from_", None)
    out.set("joins", joins)
    out.set("where", exp.Where(this=and_all([o.copy() for o in outer])) if outer else None)
    listed = []
    for e in out.expressions:
        if isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            table = ident_name(e.args["table"]) if isinstance(e, exp.Column) and e.args.get("table") else None
            listed += [exp.alias_(exp.column(f"{a}__{c}", ALIAS, quoted=True), c, quoted=True) for a, cols in names.items()
                       if table in (None, a) for c in cols if c.lower() != "rowtime"]
        elif isinstance(e, exp.Column) and _owner(e, names):
            listed.append(exp.alias_(e, ident_name(e.this), quoted=True))
        else:
            listed.append(e)
    out.set("expressions", listed)
    for col, owner in [(c, o) for c in out.find_all(exp.Column) if not isinstance(c.this, exp.Star) and (o := _owner(c, names))]:
        col.replace(exp.column(f"{owner}__{_name_in(ident_name(col.this), names[owner])}", ALIAS, quoted=True))
    out.set("from_", exp.From(this=exp.Subquery(this=view, alias=exp.TableAlias(this=exp.to_identifier(ALIAS)))))
    return out
