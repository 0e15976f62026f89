"""The values of subqueries (plan.analyzer.subqueries): a scalar subquery's view (one row per
correlation key: its value and its rows' count) and the expression that reads it, a HAVING
condition with a subquery as a WHERE over the grouped rows, and subqueries without FROM (over
one row) as the expressions they stand for."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.conditions import conjuncts
from streamjoin.plan.scope import Located, ident_name

SUBQUERY = "subquery"  # exp.Join.meta key: how the join was written (model.Join.subquery)
HIDDEN = "hidden"  # exp.Join.meta key: its right input is the subquery's view, not a column source


def scalar_body(body: exp.Select, expression: exp.Expression, keys: list, aggregate: bool, correlated: bool,
                 alias: str) -> exp.Select:
    """A scalar subquery's view: its correlation keys (k1, ...), its value and its rows' count (n)."""
    value = exp.alias_(expression.copy(), "value", quoted=False)
    count = exp.alias_(exp.Count(this=exp.Star()), "n", quoted=False)
    if aggregate and not correlated:  # one row, always (SQL's aggregate over no rows included)
        body.set("expressions", [value])
        return body
    if aggregate:
        body.set("expressions", [*keys, value, count])
    elif correlated:  # rows of a plain query: at most one per key, or the run stops
        body.set("expressions", [*keys, exp.alias_(exp.Min(this=expression.copy()), "value", quoted=False), count])
    elif any(body.args.get(k) for k in ("group", "having", "limit", "distinct")) or aggregates(body):
        body.set("expressions", [value])  # its rows as the query gives them, counted
        return exp.select(exp.alias_(exp.Min(this=exp.column("value")), "value", quoted=False), count).from_(
            exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(f"{alias}_rows"))))
    else:
        body.set("expressions", [exp.alias_(exp.Min(this=expression.copy()), "value", quoted=False), count])
    if keys:
        body.set("group", exp.Group(expressions=[k.this.copy() for k in keys]))
    return body


def in_match(written: str, value: exp.Expression, mine: exp.Expression) -> exp.Expression:
    """IN's `value = mine`; NOT IN's SQL three-valued match, null-aware: a NULL on either side is
    UNKNOWN, which drops the row as a match does."""
    equal = exp.EQ(this=value.copy(), expression=mine.copy())
    if written != "NOT IN":
        return equal
    return exp.Paren(this=exp.or_(equal, exp.Is(this=value.copy(), expression=exp.Null()),
                                  exp.Is(this=mine.copy(), expression=exp.Null())))


def as_scalar(node: exp.Exists | exp.In) -> exp.Expression:
    """EXISTS (q) / x IN (q) where no semi or anti join can stand for it (under OR, NOT or CASE, in
    the select list): a scalar subquery over q's rows, as RisingWave plans it. EXISTS is `COUNT(*)
    > 0`; IN is SQL's three-valued IN: TRUE if a row equals x, else FALSE over no rows, else NULL
    when x or a row's value is NULL, else FALSE. Over no rows (a correlation key without any)
    the aggregates are those over none (plan.analyzer.subqueries' count bug): FALSE."""
    body = node.this if isinstance(node, exp.Exists) else node.args["query"]
    body = body.unnest() if isinstance(body, exp.Subquery) else body
    plain = isinstance(body, exp.Select) and not aggregates(body) and not any(
        body.args.get(k) for k in ("group", "having", "limit", "offset", "distinct", "qualify", "with_")) \
        and not any(e.find(exp.Window) for e in body.expressions)
    rows = "exists_rows" if isinstance(node, exp.Exists) else "in_rows"
    count = exp.Count(this=exp.Star())
    if isinstance(node, exp.Exists):
        value = exp.GT(this=count, expression=exp.Literal.number(0))
    else:
        first = body.expressions[0] if isinstance(body, exp.Select) else None
        mine = (first.this if isinstance(first, exp.Alias) else first).copy() if plain else exp.column("v", rows)

        def number_of(condition):
            return exp.Sum(this=exp.Case(ifs=[exp.If(this=condition, true=exp.Literal.number(1))],
                                         default=exp.Literal.number(0)))
        x = node.this
        value = exp.Case(ifs=[
            exp.If(this=exp.GT(this=number_of(exp.EQ(this=mine.copy(), expression=x.copy())), expression=exp.Literal.number(0)),
                   true=exp.true()),
            exp.If(this=exp.EQ(this=count.copy(), expression=exp.Literal.number(0)), true=exp.false()),
            exp.If(this=exp.or_(exp.Is(this=x.copy(), expression=exp.Null()), exp.GT(
                this=number_of(exp.Is(this=mine.copy(), expression=exp.Null())), expression=exp.Literal.number(0))),
                   true=exp.Null())], default=exp.false())
    if plain:
        query = body.copy()
        query.set("expressions", [exp.alias_(value, "value", quoted=False)])
    else:
        inner = body.copy()
        if not isinstance(node, exp.Exists):  # its one column, named v (a UNION's: its first branch's)
            branch = inner
            while isinstance(branch, exp.Union):
                branch = branch.this.unnest() if isinstance(branch.this, exp.Subquery) else branch.this
            head = branch.expressions[0]
            branch.expressions[0].replace(exp.alias_((head.this if isinstance(head, exp.Alias) else head).copy(), "v",
                                                     quoted=False))
        query = exp.select(exp.alias_(value, "value", quoted=False)).from_(
            exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(rows))))
    return exp.Paren(this=exp.Subquery(this=query))


def first_row(body: exp.Select) -> exp.Select | None:
    """A correlated `(SELECT v FROM t WHERE t.k = o.k [ORDER BY v [DESC]] LIMIT 1)`: an aggregate
    of each key's rows that is the value of one of them, MIN(v) (MAX(v) ordered DESC): any row's
    without ORDER BY, the first row's when the order is the value's own. None: another LIMIT
    (plan.analyzer.domains takes it)."""
    limit = body.args["limit"].expression if isinstance(body.args["limit"], exp.Limit) else None
    order = body.args.get("order")
    value = body.expressions[0].this if isinstance(body.expressions[0], exp.Alias) else body.expressions[0]
    keys = order.expressions if order is not None else []
    if (not isinstance(limit, exp.Literal) or limit.this != "1" or body.args.get("offset") or len(keys) > 1
            or keys and keys[0].this.sql() != value.sql()):
        return None
    body = body.copy()
    pick = (exp.Max if keys and keys[0].args.get("desc") else exp.Min)(this=value.copy())
    if keys and keys[0].args.get("nulls_first"):  # (DESC in PostgreSQL's order): a NULL value is the first row's
        pick = exp.Case(ifs=[exp.If(this=exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Count(this=value.copy())),
                                    true=exp.Null())], default=pick)
    body.set("expressions", [exp.alias_(pick, body.expressions[0].alias_or_name or "value", quoted=False)])
    for key in ("order", "limit"):
        body.set(key, None)
    return body


def scalar_value(sub: exp.Subquery, expression: exp.Expression, alias: str, aggregate: bool,
                  correlated: bool) -> exp.Expression:
    """What reads a scalar subquery's value from its view: more than one row stops the run
    (`raise_error`); COUNT of a correlation key without rows is 0, not NULL (the count bug)."""
    value = exp.column("value", alias)
    if not aggregate:
        error = exp.Anonymous(this="raise_error", expressions=[exp.Literal.string(
            f"scalar subquery produced more than one row: {sub.sql(dialect='postgres')}")])
        return exp.Case(ifs=[exp.If(this=exp.GT(this=exp.column("n", alias), expression=exp.Literal.number(1)),
                                    true=error)], default=value)
    if not correlated or expression.find(exp.Count) is None:
        return value
    empty = exp.Paren(this=expression.copy())  # over no rows: COUNT 0, every other aggregate NULL
    for agg in list(empty.find_all(exp.AggFunc)):
        agg.replace(exp.Literal.number(0) if isinstance(agg, exp.Count) else exp.Null())
    return exp.Case(ifs=[exp.If(this=exp.Is(this=exp.column("n", alias), expression=exp.Null()), true=empty)],
                    default=value)


def without_from(where: Located, select: exp.Select) -> exp.Select:
    """The select with its subqueries that have no FROM (a query over one row: `EXISTS (SELECT
    t2.d WHERE t2.d IS NULL)`, `x IN (SELECT y + 1)`, `(SELECT x * 2)`) written as the expressions
    they are: EXISTS is its WHERE being TRUE (UNKNOWN is no row), IN its WHERE and the equality,
    a scalar subquery its value where its WHERE holds (else NULL); NOT and NOT IN follow."""
    select = select.copy()
    for node in list(select.find_all(exp.Exists, exp.In, exp.Subquery)):
        if query_of(node) is not select:  # (a deeper query's, or inside one replaced already)
            continue
        if isinstance(node, exp.Subquery) and isinstance(node.parent, exp.In | exp.Exists):
            continue
        body = node.this if not isinstance(node, exp.In) else node.args.get("query")
        body = body.unnest() if isinstance(body, exp.Subquery) else body
        if not isinstance(body, exp.Select) or body.args.get("from_") is not None:
            continue
        if aggregates(body) or any(body.args.get(k) for k in ("group", "having", "limit", "offset", "joins")):
            where.fail("a subquery without FROM that aggregates, groups or limits is not supported", body,
                       "write its value as an expression of the outer query")
        if not isinstance(node, exp.Exists) and len(body.expressions) != 1:
            where.fail(f"this subquery selects {len(body.expressions)} columns; it must select one", body,
                       "select the one value to compare")
        condition = body.args["where"].this.copy() if body.args.get("where") is not None else None
        holds = exp.func("COALESCE", condition, exp.false()) if condition is not None else exp.true()
        value = None if isinstance(node, exp.Exists) else body.expressions[0]
        value = value.this if isinstance(value, exp.Alias) else value
        if isinstance(node, exp.Exists):
            replacement = holds
        elif isinstance(node, exp.In):
            equal = exp.EQ(this=node.this.copy(), expression=value.copy())
            replacement = equal if condition is None else exp.and_(holds, equal)
        else:
            replacement = value.copy() if condition is None else exp.Case(ifs=[exp.If(this=condition, true=value.copy())])
        node.replace(exp.Paren(this=replacement))
    return select


def having_as_where(where: Located, select: exp.Select) -> exp.Select:
    """`... GROUP BY ... HAVING c` where c holds a subquery: the grouped rows as a view
    (`grouped`), with the aggregates and keys c reads as columns of their own (h1, h2, ...),
    and c a WHERE over it; ORDER BY, LIMIT and OFFSET move to the query that reads it."""
    having = select.args["having"].this
    parts = conjuncts(having)
    with_sub = [p for p in parts if any(q.find_ancestor(exp.Query) is select for q in p.find_all(exp.Query))]
    rest = [p for p in parts if p not in with_sub]
    inner = select.copy()
    inner.set("having", exp.Having(this=and_all([p.copy() for p in rest])) if rest else None)
    outer_moves = {k: inner.args.get(k) for k in ("order", "limit", "offset")}
    for k in outer_moves:
        inner.set(k, None)
    names = [_output_ident(e) for e in inner.expressions]
    if any(n is None for n in names):
        where.fail("a HAVING condition with a subquery needs the query's output columns named", select,
                        "name each output column with AS")
    hidden, filters = [], []
    for part in with_sub:
        part = part.copy()
        for node in list(_grouped_terms(part, select)):
            name = f"h{len(hidden) + 1}"
            hidden.append(exp.alias_(node.copy(), name, quoted=False))
            node.replace(exp.column(name, "grouped"))
        filters.append(part)
    inner.set("expressions", [*inner.expressions, *hidden])
    outer = exp.select(*(exp.Column(this=n, table=exp.to_identifier("grouped")) for n in names)).from_(
        exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("grouped"))))
    outer.set("where", exp.Where(this=and_all(filters)))
    for k, v in outer_moves.items():
        if v is not None:
            outer.set(k, v)
    return outer


def _grouped_terms(node: exp.Expression, select: exp.Select):
    """The aggregates and plain columns of a HAVING conjunct outside its subqueries."""
    for n in list(node.find_all(exp.AggFunc, exp.Column)):
        if n.find_ancestor(exp.Query) is not None:
            continue
        if isinstance(n, exp.Column) and n.find_ancestor(exp.AggFunc) is not None:
            continue
        yield n


def _output_ident(node: exp.Expression) -> exp.Identifier | None:
    """The identifier an output column is named by (None: a star, or an unnamed expression)."""
    if isinstance(node, exp.Alias):
        return node.args["alias"].copy()
    if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier):
        return node.this.copy()
    return None


def aggregates(select: exp.Select) -> bool:
    return any(a.find_ancestor(exp.Window) is None and query_of(a) is select
               for e in select.expressions for a in e.find_all(exp.AggFunc))


def query_of(node: exp.Expression) -> exp.Expression | None:
    """The nearest SELECT (or other query) a node is written in."""
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select | exp.Union):
        parent = parent.parent
    return parent


def and_all(parts: list[exp.Expression]) -> exp.Expression | None:
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = exp.And(this=out, expression=p)
    return out


def alias_of(node: exp.Expression) -> str:
    """A FROM item's name in its query: its alias, or the table's name."""
    alias = node.args.get("alias")
    if alias is not None and alias.this is not None:
        return ident_name(alias.this)
    return ident_name(node.this) if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier) else ""
