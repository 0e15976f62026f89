"""Correlated subqueries the key decorrelation of plan.analyzer.subqueries does not take
(issue 67): a correlation outside the subquery's WHERE (its select list, a JOIN's ON, GROUP BY,
a derived table in its FROM, a subquery two levels out), a condition other than an equality
under a scalar subquery, a correlated subquery that groups, limits, orders its rows over a window
function or is a UNION. These are decorrelated over a *domain*, as RisingWave and DuckDB do:

- the domain is the outer query's distinct values of the columns the subquery reads
  (`SELECT DISTINCT t1.x AS dom1, ... FROM <the outer query's FROM>`);
- the subquery is written once per domain row: the domain joins its FROM (or the derived tables
  that read the outer columns, which then select the domain's columns too), each outer column
  becomes the domain's, and what works per outer row works per domain row: GROUP BY (grouping
  sets included), window functions (PARTITION BY), DISTINCT ON and LIMIT / OFFSET (a row number
  per domain row) all gain the domain's columns; a RIGHT / FULL JOIN's item is each domain row
  with each of its rows (what the join keeps unmatched is kept per domain row);
- the outer query joins that view on its domain columns, NULL equal to NULL (a domain value is
  an outer row's value, NULL included).

Nothing here changes a subquery that the key decorrelation takes."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.analyzer.subquery_values import (
    HIDDEN,
    SUBQUERY,
    aggregates,
    alias_of,
    and_all,
    first_row,
    in_match,
    query_of,
    scalar_value,
)
from streamjoin.plan.scope import ident_name

LIMITED = "_limited"  # a correlated LIMIT / OFFSET's view of rows numbered per domain row (its name's end)


def deep_outer_refs(rewrite, body: exp.Query, outer: dict) -> list[exp.Column]:
    """The columns written anywhere in `body` (any depth) that are the outer query's."""
    found = []
    for col in body.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            continue
        scope, query = {}, query_of(col)
        while query is not None:
            if isinstance(query, exp.Select):
                scope = {**rewrite.items(query), **scope}  # the nearest query's names first
            if query is body:
                break
            query = query_of(query)
        if query is body and rewrite.owner(col, scope, outer) == "outer":
            found.append(col)
    return found


def same_key(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    """`a IS NOT DISTINCT FROM b` as two equalities a join keys on: the values as text (NULL as '')
    and whether each is NULL."""
    def text(e):
        return exp.func("COALESCE", exp.Cast(this=e.copy(), to=exp.DataType.build("VARCHAR")), exp.Literal.string(""))
    def null(e):
        return exp.Paren(this=exp.Is(this=e.copy(), expression=exp.Null()))
    return exp.and_(exp.EQ(this=text(a), expression=text(b)), exp.EQ(this=null(a), expression=null(b)))


class Domain:
    """One subquery's decorrelation over its outer columns' domain; `alias` names its view."""

    def __init__(self, rewrite, body: exp.Query, outer: dict, alias: str):
        self.rewrite, self.outer, self.alias = rewrite, outer, alias
        self.keys: dict[str, str] = {}  # outer column as written -> its domain column (dom1, ...)
        self.written: list[exp.Column] = []
        for col in deep_outer_refs(rewrite, body, outer):
            if col.sql() not in self.keys:
                self.keys[col.sql()] = f"dom{len(self.keys) + 1}"
                self.written.append(col.copy())
        self.levels = 0
        self.wrapped: set[str] = set()  # the RIGHT / FULL JOIN items that select the domain's columns too

    @property
    def names(self) -> list[str]:
        return list(self.keys.values())

    def fail(self, message: str, node: exp.Expression, hint: str):
        self.rewrite.where.fail(message, node, hint)

    # ---------------------------------------------------------------- the domain
    def view(self) -> exp.Subquery:
        """`(SELECT DISTINCT t1.x AS dom1, ... FROM <the outer FROM>) AS <alias>_domN`."""
        select = self.rewrite.select
        joins = [j for j in (select.args.get("joins") or []) if "subquery" not in j.meta]
        items = [select.args["from_"].this, *(j.this for j in joins)]
        owners = {self._outer_item(c, items) for c in self.written}
        body = exp.select(*(exp.alias_(c.copy(), n, quoted=False) for c, n in zip(self.written, self.names, strict=True)))
        body.set("distinct", exp.Distinct())
        if len(owners) == 1 and None not in owners and not any(j.args.get("side") for j in joins):
            body.set("from_", exp.From(this=owners.pop().copy()))  # the one input the columns are of
        else:
            body.set("from_", exp.From(this=items[0].copy()))
            body.set("joins", [j.copy() for j in joins])
        self.levels += 1
        return exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(f"{self.alias}_dom{self.levels}")))

    def _outer_item(self, col: exp.Column, items: list) -> exp.Expression | None:
        table = ident_name(col.args["table"]) if col.args.get("table") is not None else ""
        for item in items:
            cols = self.rewrite.columns(item)
            if table and alias_of(item) == table or not table and cols is not None and ident_name(col.this) in cols:
                return item
        return None

    def condition(self, view_alias: str) -> exp.Expression:
        """The outer query's join with the subquery's view: each outer column is its domain column."""
        return and_all([same_key(c, exp.column(n, view_alias)) for c, n in zip(self.written, self.names, strict=True)])

    def every_row(self, pushed: exp.Select, value: exp.Expression) -> exp.Select:
        """An aggregate without GROUP BY over the domain: a row for each domain row, its value over
        no rows (`value`, over `<alias>_rows`) where the domain row has none."""
        pushed.set("expressions", [*pushed.expressions, exp.alias_(exp.Count(this=exp.Star()), "n", quoted=False)])
        domain = self.view()
        mine = ident_name(domain.args["alias"].this)
        rows = exp.Subquery(this=pushed, alias=exp.TableAlias(this=exp.to_identifier(f"{self.alias}_rows")))
        on = and_all([same_key(exp.column(n, mine), exp.column(n, f"{self.alias}_rows")) for n in self.names])
        return exp.select(*(exp.alias_(exp.column(n, mine), n, quoted=False) for n in self.names),
                          exp.alias_(value, "value", quoted=False)).from_(domain).join(rows, on=on, join_type="LEFT")

    # ---------------------------------------------------------------- the subquery, per domain row
    def push(self, query: exp.Query, top: bool = False) -> exp.Query:
        """The query written once per domain row: it selects the domain's columns first."""
        if isinstance(query, exp.Subquery):
            query.set("this", self.push(query.this, top))
            return query
        if isinstance(query, exp.Union):
            query.set("this", self.push(query.this, top))
            query.set("expression", self.push(query.expression, top))
            return query
        self._check(query)
        joins = query.args.get("joins") or []
        pushed = []  # the FROM items (derived tables) that read the outer columns: per domain row themselves
        for holder in [query.args["from_"], *joins]:
            item = holder.this
            if isinstance(item, exp.Subquery) and deep_outer_refs(self.rewrite, item.this, self.outer):
                if holder is not query.args["from_"] and holder.args.get("using"):
                    self.fail("a correlated derived table joined with USING is not supported", item, "join it with ON")
                item.set("this", self.push(item.this))
                pushed.append(holder)
        first = query.args["from_"]
        source = alias_of(first.this) if first in pushed else None
        if source is None:  # the domain joins the FROM: each row of it for each domain row
            view = self.view()
            source = ident_name(view.args["alias"].this)
            joins = [exp.Join(this=first.this.copy(), kind="CROSS"), *joins]
            query.set("from_", exp.From(this=view))
        query.set("joins", joins)
        mine, before = self._joined(query, pushed, source)
        refs = deep_outer_refs(self.rewrite, query, self.outer)
        query.set("expressions", [exp.Alias(this=e, alias=exp.to_identifier(e.name)) if any(e is c for c in refs) else e
                                  for e in query.expressions])  # an outer column selected keeps its name
        for col in refs:  # (in a join's ON: the domain row of the rows it joins to)
            holder = col.find_ancestor(exp.Join)
            values = before.get(id(holder), mine)
            col.replace(values[self.names.index(self.keys[col.sql()])].copy())
        self._per_domain(query, mine, top)
        query.set("expressions", [*(exp.alias_(c.copy(), n, quoted=False) for c, n in zip(mine, self.names, strict=True)),
                                  *self._listed(query)])
        merged = self._merged(query)
        if merged is not None:  # the domain's columns as the derived table selects them
            query, mine = merged, [unaliased(e).copy() for e in merged.expressions[:len(self.names)]]
        return self._limited(query, mine)

    def _joined(self, query: exp.Select, pushed: list, source: str) -> tuple[list, dict]:
        """Each join after the domain's meets the same domain row: a derived table that reads the
        outer columns joins on its domain columns; a RIGHT or FULL JOIN's item (whose rows a
        per-domain-row RIGHT / FULL JOIN keeps without a match) is each domain row with each of its
        rows, and the domain's value after it is either side's. Returns the domain's columns after
        the last join, and before each join (by id) those its ON reads."""
        current, before = [exp.column(n, source) for n in self.names], {}
        for holder in query.args.get("joins") or []:
            before[id(holder)] = current
            side = holder.args.get("side")
            carries = any(holder is h for h in pushed)
            if not carries and side in ("RIGHT", "FULL"):
                item = holder.this
                cols = self.rewrite.columns(item)
                if cols is None:
                    self.fail("a correlated subquery's RIGHT or FULL JOIN reads a table, view or derived table with "
                              "named columns", item, "name the columns of what it joins")
                if self.rewrite.rowtime(item) is not None:  # (a derived table over a stream has its own ROWTIME)
                    cols = tuple(c for c in cols if c != "rowtime")
                domain = self.view()
                mine = ident_name(domain.args["alias"].this)
                name = alias_of(item)
                body = exp.select(*(exp.column(n, mine) for n in self.names),
                                  *(exp.column(c, name) for c in cols)).from_(domain)
                body.set("joins", [exp.Join(this=item.copy(), kind="CROSS")])
                holder.set("this", exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(name))))
                self.wrapped.add(name)
            elif not carries:
                continue
            theirs = [exp.column(n, alias_of(holder.this)) for n in self.names]
            same = and_all([same_key(a, b) for a, b in zip(theirs, current, strict=True)])
            on = holder.args.get("on")
            holder.set("on", same if on is None else exp.and_(on, same))
            holder.set("kind", None if holder.args.get("kind") == "CROSS" else holder.args.get("kind"))
            if side == "RIGHT":
                current = theirs
            elif side == "FULL":
                current = [exp.func("COALESCE", a.copy(), b) for a, b in zip(current, theirs, strict=True)]
        return current, before

    def _check(self, query: exp.Query) -> None:
        if not isinstance(query, exp.Select) or query.args.get("from_") is None:
            self.fail("a correlated subquery of this form is not supported", query,
                      "join the outer query with a WITH view of its rows")
        if query.args.get("with_") is not None:
            self.fail("a correlated subquery with its own WITH is not supported", query, "name the WITH views at the top")

    def _merged(self, query: exp.Select) -> exp.Select | None:
        """`SELECT ... FROM (SELECT ... WHERE c) AS x WHERE w [GROUP BY ...]`, x the per-domain derived
        table, a plain filter of its FROM: one select over x's FROM, x's columns read as x selects
        them (over a stream, a changing view read by another view is what `run` cannot chain). An x
        that groups, read by a plain filter: x itself, the filter its HAVING."""
        item = query.args["from_"].this
        if query.args.get("joins") or not isinstance(item, exp.Subquery) or not isinstance(item.this, exp.Select):
            return None
        inner, name = item.this, alias_of(item)
        grouped = not _plain(inner)
        if grouped and (not _plain(query) or any(inner.args.get(k) for k in ("distinct", "limit", "offset", "qualify", "with_"))
                        or any(e.find(exp.Window) for e in inner.expressions)):
            return None
        selected = {e.alias_or_name: unaliased(e) for e in inner.expressions}
        if "" in selected or "*" in selected or any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star)
                                                   for e in [*inner.expressions, *query.expressions]):
            return None
        merged, level = inner.copy(), query.copy()
        level.set("expressions", [exp.Alias(this=e, alias=exp.to_identifier(e.name)) if isinstance(e, exp.Column) else e
                                  for e in level.expressions])  # (each output column keeps its name)
        for col in [c for c in level.find_all(exp.Column) if c.name in selected
                    and (c.table == name or not c.table and query_of(c) is level)]:
            col.replace(selected[col.name].copy())
        if grouped:
            having = [h.this for h in (inner.args.get("having"), level.args.get("where")) if h is not None]
            merged.set("expressions", level.expressions)
            merged.set("having", exp.Having(this=and_all([h.copy() for h in having])) if having else None)
            return merged
        for key in ("expressions", "group", "having", "distinct", "limit", "offset", "order", "qualify"):
            merged.set(key, level.args.get(key))
        where = [w.this for w in (inner.args.get("where"), level.args.get("where")) if w is not None]
        merged.set("where", exp.Where(this=and_all([w.copy() for w in where])) if where else None)
        return merged

    def _listed(self, query: exp.Select) -> list[exp.Expression]:
        """The select list, a `*` as each of the query's own inputs' columns (not the domain's)."""
        out = []
        for e in query.expressions:
            if isinstance(e, exp.Star):
                items = [query.args["from_"].this, *(j.this for j in query.args.get("joins") or [])]
                for i in items:
                    if alias_of(i) in self.wrapped:
                        out += [e.copy() for e in i.this.expressions[len(self.names):]]
                    elif not alias_of(i).startswith(f"{self.alias}_dom"):
                        out.append(exp.Column(this=exp.Star(), table=exp.to_identifier(alias_of(i))))
            else:
                out.append(e)
        return out

    def _per_domain(self, query: exp.Select, mine: list, top: bool) -> None:
        """GROUP BY, window functions and DISTINCT ON gain the domain's columns."""
        group = query.args.get("group")
        if group is not None:
            group.set("expressions", [*(c.copy() for c in mine), *group.expressions])
        elif aggregates(query):
            if not top:
                self.fail("a correlated aggregate without GROUP BY inside a subquery's FROM is not supported", query,
                          "aggregate in the subquery itself, or join a WITH view")
            query.set("group", exp.Group(expressions=[c.copy() for c in mine]))
        for window in [w for w in query.find_all(exp.Window) if query_of(w) is query]:
            window.set("partition_by", [*(c.copy() for c in mine), *(window.args.get("partition_by") or [])])
        distinct = query.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            on = distinct.args["on"]
            on.set("expressions", [*(c.copy() for c in mine), *on.expressions])

    def _limited(self, query: exp.Select, mine: list) -> exp.Query:
        """LIMIT / OFFSET per domain row: a row number over each domain row's rows, ordered as written."""
        limit, offset = query.args.get("limit"), query.args.get("offset")
        if limit is None and offset is None:
            query.set("order", None)  # (a subquery's rows have no order but its LIMIT's)
            return query
        named = [e if isinstance(e, exp.Alias | exp.Column | exp.Star) else exp.alias_(e, f"col{i}", quoted=False)
                 for i, e in enumerate(query.expressions)]
        if any(isinstance(e, exp.Star) or isinstance(e, exp.Column) and isinstance(e.this, exp.Star) for e in named):
            self.fail("a correlated subquery with LIMIT selects its columns by name, not *", query, "name its columns")
        query.set("expressions", named)
        order = query.args.get("order")
        keys = []
        for o in (order.expressions if order is not None else []):
            o = o.copy()
            if isinstance(o.this, exp.Literal) and not o.this.is_string:  # ORDER BY 1: the first column
                o.set("this", unaliased(named[int(o.this.this) - 1]).copy())
            else:
                alias = next((e for e in named if isinstance(e, exp.Alias) and e.alias == o.this.sql()), None)
                if alias is not None and isinstance(o.this, exp.Column) and o.this.args.get("table") is None:
                    o.set("this", alias.this.copy())
            keys.append(o)
        number = exp.Window(this=exp.func("ROW_NUMBER"), partition_by=[c.copy() for c in mine],
                            order=exp.Order(expressions=keys or [exp.Ordered(this=mine[0].copy())]))
        query.set("expressions", [*named, exp.alias_(number, "dom_row", quoted=False)])
        def value(node):
            return int(node.expression.this) if node is not None and isinstance(node.expression, exp.Literal) else None
        first, count = value(offset) or 0, value(limit)
        if offset is not None and value(offset) is None or limit is not None and count is None:
            self.fail("a correlated subquery's LIMIT and OFFSET are numbers", limit or offset, "write them as numbers")
        for key in ("order", "limit", "offset"):
            query.set(key, None)
        rows = exp.Subquery(this=query, alias=exp.TableAlias(this=exp.to_identifier(f"{self.alias}{LIMITED}")))
        kept = [exp.GT(this=exp.column("dom_row"), expression=exp.Literal.number(first))]
        if count is not None:
            kept.append(exp.LTE(this=exp.column("dom_row"), expression=exp.Literal.number(first + count)))
        return exp.select(*(exp.column(e.alias_or_name) for e in named)).from_(rows).where(and_all(kept))


def _plain(query: exp.Select) -> bool:
    """No grouping, aggregate, DISTINCT, LIMIT, window function or WITH: its rows are its FROM's, filtered."""
    return not aggregates(query) and not any(query.args.get(k) for k in (
        "group", "having", "distinct", "limit", "offset", "qualify", "with_")) \
        and not any(e.find(exp.Window) for e in query.expressions)


def unaliased(node: exp.Expression) -> exp.Expression:
    return node.this if isinstance(node, exp.Alias) else node


def domain_join(rewrite, written: str, body: exp.Query, value: exp.Expression | None, outer: dict) -> exp.Join:
    """A correlated EXISTS / IN the key decorrelation does not take: a semi / anti join of the
    subquery's rows per domain row (plan.analyzer.domains) on the domain's columns."""
    rewrite.count += 1
    alias = f"{written.lower().replace(' ', '_')}_{rewrite.count}"
    body = _first_rows(body.copy(), value)
    domain = Domain(rewrite, body, outer, alias)
    branches = [body] if isinstance(body, exp.Select) else [b.unnest() for b in body.find_all(exp.Select)
                                                              if query_of(b) is None or isinstance(query_of(b), exp.Union)]
    every = isinstance(body, exp.Select) and aggregates(body) and not any(
        body.args.get(k) for k in ("group", "having", "limit", "offset"))
    for branch in branches:
        if value is None and any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star) for e in branch.expressions):
            branch.set("expressions", [exp.alias_(exp.Literal.number(1), "one", quoted=False)])
        elif value is not None:
            branch.set("expressions", [exp.alias_(unaliased(branch.expressions[0]).copy(), "value", quoted=False)])
    if every and value is None:  # an aggregate without GROUP BY is a row, for every domain row
        view = domain.view().this
    elif every:  # ... whose value over no rows is the aggregate's over none (COUNT: 0)
        expression = unaliased(body.expressions[0]).copy()
        view = domain.every_row(domain.push(body, top=True), scalar_value(None, expression, f"{alias}_rows", True, True))
    else:
        view = domain.push(body, top=True)
    condition = domain.condition(alias)
    if value is not None:
        mine = exp.column("value", alias)
        equal = in_match(written, value, mine)
        condition = exp.and_(equal, condition)
    join = exp.Join(this=exp.Subquery(this=view, alias=exp.TableAlias(this=exp.to_identifier(alias))), side="LEFT",
                    kind="ANTI" if written.startswith("NOT") else "SEMI", on=condition)
    join.meta[SUBQUERY], join.meta[HIDDEN] = written, True
    return join


def _first_rows(body: exp.Query, value: exp.Expression | None) -> exp.Query:
    """A LIMIT without OFFSET that needs no row numbers: EXISTS holds over the first n rows where it
    holds over all; IN's `ORDER BY v LIMIT 1` of its own value v is each domain row's MIN / MAX of
    v (NULL where the order puts NULLs first and there is one: `first_row`), on the domain rows
    that have rows (HAVING COUNT(*) > 0: an aggregate over none would be a row). Over sources,
    row numbers over a changelog are what `run` cannot keep; these are a running aggregate."""
    limit = body.args.get("limit") if isinstance(body, exp.Select) else None
    count = limit.expression if isinstance(limit, exp.Limit) else None
    if not isinstance(count, exp.Literal) or count.is_string or body.args.get("offset") is not None or aggregates(body) \
            or body.args.get("group") or body.args.get("distinct") is not None or any(e.find(exp.Window) for e in body.expressions):
        return body
    if value is None and int(count.this) >= 1:
        body.set("limit", None)
        body.set("order", None)
    elif value is not None and (first := first_row(body)) is not None:
        first.set("having", exp.Having(this=exp.GT(this=exp.Count(this=exp.Star()), expression=exp.Literal.number(0))))
        return first
    return body


def scalar_domain(rewrite, sub: exp.Subquery, body: exp.Select, outer: dict) -> exp.Expression:
    """A correlated scalar subquery the key decorrelation does not take: its value per domain
    row (plan.analyzer.domains), at most one row each."""
    rewrite.count += 1
    alias = f"scalar_{rewrite.count}"
    body = body.copy()
    expression = unaliased(body.expressions[0]).copy()
    body.set("expressions", [exp.alias_(unaliased(body.expressions[0]), "value", quoted=False)])
    aggregate = aggregates(body) and not any(body.args.get(k) for k in ("group", "having", "limit", "offset"))
    domain = Domain(rewrite, body, outer, alias)
    view = domain.push(body, top=True)
    names = [exp.column(n) for n in domain.names]
    if aggregate:  # its rows' count (n): a domain row without rows is the aggregate over none
        view.set("expressions", [*view.expressions, exp.alias_(exp.Count(this=exp.Star()), "n", quoted=False)])
    else:  # its rows, counted: more than one stops the run
        view = exp.select(*names, exp.alias_(exp.Min(this=exp.column("value")), "value", quoted=False),
                          exp.alias_(exp.Count(this=exp.Star()), "n", quoted=False)).from_(
            exp.Subquery(this=view, alias=exp.TableAlias(this=exp.to_identifier(f"{alias}_rows")))).group_by(*names)
    rewrite.scalar_join(view, alias, domain.condition(alias))
    return scalar_value(sub, expression, alias, aggregate, True)
