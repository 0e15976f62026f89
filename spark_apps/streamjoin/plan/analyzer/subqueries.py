"""Queries inside expressions, rewritten as joins before the query is analysed (issue 67;
docs/semantics-decisions.md, "Subqueries are joins"), as Flink and RisingWave plan them:

- a WHERE conjunct `EXISTS (q)` or `x IN (q)` is a LEFT SEMI JOIN of the query's inputs with q
  (each row at most once, however many rows of q match it); `NOT EXISTS (q)` a LEFT ANTI JOIN;
  `x NOT IN (q)` a LEFT ANTI JOIN that SQL's three-valued logic makes null-aware: a NULL among
  q's values, or a NULL `x` against a q that has rows, is a match (the row is dropped);
- a scalar subquery `(q)` is a LEFT JOIN with a view of at most one row per correlation key
  (decorrelated: q's aggregate grouped by the columns its correlation compares), its value read
  from that view; COUNT over no rows is 0 (the "count bug"). A q that is not an aggregate may
  give several rows: its view counts them and more than one is an error (`raise_error`) that
  stops the run;
- a HAVING conjunct with a subquery filters the grouped rows: the grouped query becomes a view
  and the conjunct a WHERE over it.

The subquery's correlation (its WHERE conjuncts that read the outer query's columns) becomes
the join's condition, its other conjuncts stay in the view. The new joins' right inputs are
hidden (`*` does not select them; an unqualified name does not resolve to them). What cannot be
rewritten so is refused where it is written, with what to write instead."""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from streamjoin.errors import SqlError
from streamjoin.plan.analyzer.domains import deep_outer_refs, domain_join, scalar_domain, unaliased
from streamjoin.plan.analyzer.subquery_values import (
    HIDDEN,
    SUBQUERY,
    aggregates,
    alias_of,
    and_all,
    as_scalar,
    first_row,
    having_as_where,
    in_match,
    query_of,
    scalar_body,
    scalar_value,
    without_from,
)
from streamjoin.plan.conditions import conjuncts
from streamjoin.plan.model import Kind
from streamjoin.plan.scope import Located, ident_name


def as_joins(analyzer, select: exp.Select) -> exp.Select:
    """The select with its subqueries as joins of their views (`analyzer`: plan.analyzer.statements'
    Analyzer, which names the views and numbers them across the script: `analyzer.subqueries`);
    each pass rewrites one level, the views' own subqueries when they are analysed. A query
    without FROM is over one row: `SELECT (SELECT x FROM t) AS x` reads `(VALUES (1)) AS one_row`."""
    if select.args.get("from_") is None and has_subquery(select):
        select = select.copy()
        select.set("from_", exp.From(this=sqlglot.parse_one("SELECT 1 FROM (VALUES (1)) AS one_row(one)").args["from_"].this))
    while has_subquery(select):
        select = without_from(analyzer.where, select)
        if not has_subquery(select):
            break
        before = select.copy()
        rewrite = Rewrite(analyzer.where, lambda node: item_columns(analyzer, node), select,
                          rowtime=lambda node: item_rowtime(analyzer, node), count=analyzer.subqueries)
        select = rewrite.run()
        analyzer.subqueries = rewrite.count
        select = analyzer.parts_as_views(select)
        if select == before:  # what is left is no form of a subquery a join stands for
            node = next(q for key in ("expressions", "where", "having") for q in _nested(select, key))
            inside = node.parent.parent if isinstance(node.parent, exp.Subquery) else node.parent
            analyzer.where.fail(f"a query inside {inside.key.upper()}(...) is not supported", node,
                                "write it as a condition of WHERE (EXISTS / IN (SELECT ...)), a scalar subquery "
                                "that selects one value, or a join of a WITH view")
    return select


def has_subquery(select: exp.Select) -> bool:
    return any(_nested(select, key) for key in ("expressions", "where", "having"))


def item_columns(analyzer, node: exp.Expression) -> tuple[str, ...] | None:
    """A FROM item's column names, where the script knows them (TUMBLE / HOP: its input's and the window's)."""
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        names = [e.alias_or_name for e in node.this.expressions]
        return None if "*" in names or "" in names else tuple(ident_name(n) for n in names)
    if window_call(node):
        inner = item_columns(analyzer, exp.Table(this=node.this.expressions[0].this.copy()))
        return None if inner is None else (*inner, "window_start", "window_end")
    relation = _relation(analyzer, node)
    if relation is None:
        return None
    return (*relation.column_names(), *(("rowtime",) if relation.kind == Kind.STREAM else ()))


def window_call(node: exp.Expression) -> bool:
    """`TUMBLE(s, ts, size)` / `HOP(s, ts, slide, size)` as a FROM item, over a named input."""
    call = node.this if isinstance(node, exp.Table) else None
    return isinstance(call, exp.Anonymous) and str(call.this).upper() in ("TUMBLE", "HOP") and bool(call.expressions) \
        and isinstance(call.expressions[0], exp.Column) and isinstance(call.expressions[0].this, exp.Identifier)


def item_rowtime(analyzer, node: exp.Expression) -> str | None:
    """A FROM item's rowtime column when it is a declared stream or a stream view."""
    relation = _relation(analyzer, node)
    return relation.rowtime if relation is not None and relation.kind == Kind.STREAM else None


def _relation(analyzer, node: exp.Expression):
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
        return None
    try:
        return analyzer.relation(node)
    except SqlError:
        return None


def _nested(select: exp.Select, key: str) -> list[exp.Query]:
    """The queries written inside the select's `key` clause (not inside a deeper query)."""
    value = select.args.get(key)
    return [q for node in (value if isinstance(value, list) else [value]) if node is not None
            for q in node.find_all(exp.Select, exp.Union) if q is not node and query_of(q) is select]


@dataclass
class Rewrite:
    """One SELECT's subqueries as joins; `columns(table)` gives a FROM item's column names."""

    where: Located
    columns: object  # Callable[[exp.Expression], tuple[str, ...] | None]
    select: exp.Select
    rowtime: object = None  # Callable[[exp.Expression], str | None]: a FROM item's rowtime column, if a stream
    joins: list[exp.Join] = field(default_factory=list)
    count: int = 0

    # ---------------------------------------------------------------- scopes
    def items(self, select: exp.Select) -> dict[str, tuple[str, ...] | None]:
        """alias -> column names (None: not known here) of a SELECT's FROM items."""
        out = {}
        for item in (select.args.get("from_"), *(select.args.get("joins") or [])):
            if item is None:
                continue
            out[alias_of(item.this)] = self.columns(item.this)
        return out

    def owner(self, col: exp.Column, inner: dict, outer: dict) -> str | None:
        """'inner', 'outer' or None (a name neither knows: the analysis of the view says so)."""
        table = ident_name(col.args["table"]) if col.args.get("table") is not None else ""
        name = ident_name(col.this)
        if table:
            return "inner" if table in inner else "outer" if table in outer else None
        if any(cols is not None and name in cols for cols in inner.values()):
            return "inner"
        if any(cols is not None and name in cols for cols in outer.values()):
            return "outer"
        return None

    def outer_refs(self, node: exp.Expression, body: exp.Select, inner: dict, outer: dict) -> list[exp.Column]:
        return [c for c in node.find_all(exp.Column) if not isinstance(c.this, exp.Star)
                and query_of(c) is body and self.owner(c, inner, outer) == "outer"]

    # ---------------------------------------------------------------- the rewrite
    def run(self) -> exp.Select:
        select = self.select = self.select.copy()
        if _nested(select, "having"):
            return having_as_where(self.where, select)
        outer = self.items(select)
        where = select.args.get("where")
        kept = []
        for part in conjuncts(where.this if where is not None else None):
            join = self.filtering(part, outer)
            if join is None:
                kept.append(part)
            else:
                self.joins.append(join)
        for n, node in [*enumerate(kept), *((None, e) for e in select.expressions)]:  # under OR, NOT, CASE, SELECT
            for q in [q for q in node.find_all(exp.Exists, exp.In) if query_of(q) is select
                      and (isinstance(q, exp.Exists) or q.args.get("query") is not None)]:
                if q is node and n is not None:
                    kept[n] = node = as_scalar(q)
                else:
                    q.replace(as_scalar(q))
        for n, node in [*enumerate(kept), *((None, e) for e in select.expressions)]:
            for sub in [s for s in node.find_all(exp.Subquery) if query_of(s) is select and isinstance(s.this, exp.Query)
                        and not isinstance(s.parent, exp.In)]:
                value = self.scalar(sub, outer)
                if sub is node and n is not None:
                    kept[n] = value
                else:
                    sub.replace(value)
        left = [n for n in (*kept, *(e for e in select.expressions)) if any(
            isinstance(q, exp.Exists) or isinstance(q, exp.In) and q.args.get("query") for q in n.find_all(exp.Exists, exp.In))]
        if left:
            node = next(q for n in left for q in n.find_all(exp.Exists, exp.In))
            self.where.fail("EXISTS and IN (SELECT ...) are supported as conditions of WHERE joined by AND", node,
                            "write it as a WHERE condition of its own (... AND EXISTS (...)), not under OR, NOT or CASE")
        select.set("where", exp.Where(this=and_all(kept)) if kept else None)
        select.set("joins", [*(select.args.get("joins") or []), *self.joins])
        return select

    def filtering(self, part: exp.Expression, outer: dict) -> exp.Join | None:
        """A WHERE conjunct that is EXISTS / NOT EXISTS / IN / NOT IN (SELECT ...) as its semi or anti join."""
        negated = isinstance(part, exp.Not)
        node = part.this if negated else part
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Exists):
            body, value = node.this, None
        elif isinstance(node, exp.In) and node.args.get("query") is not None:
            body, value = node.args["query"], node.this
        else:
            return None
        body = body.unnest() if isinstance(body, exp.Subquery) else body
        written = ("NOT " if negated else "") + ("EXISTS" if value is None else "IN")
        if not isinstance(body, exp.Select):
            if deep_outer_refs(self, body, outer):  # a correlated UNION: each branch over the domain
                return domain_join(self, written, body, value, outer)
            return self.join_of(written, body, value, [], outer)
        if value is not None and len(body.expressions) != 1:
            self.where.fail(f"{written} (SELECT ...) compares one column; this subquery selects {len(body.expressions)}",
                            body, "select the one column to compare")
        inner = self.items(body)
        correlated = [p for p in conjuncts(body.args["where"].this if body.args.get("where") else None)
                      if self.outer_refs(p, body, inner, outer)]
        # `x IN (SELECT SUM(a) FROM t WHERE t.k = o.k)`: one value per correlation key (no COUNT: it
        # is 0 for a key without rows, which no group of the view has; no NOT IN: its NULL there
        # drops the row, which no row of the view would)
        grouped = bool(correlated) and written == "IN" and aggregates(body) and self.equalities(correlated, body, outer) \
            and not any(body.args.get(k) for k in ("group", "having", "limit", "offset")) \
            and not body.expressions[0].find(exp.Count)
        # EXISTS selects nothing it compares; IN compares its one column, which may read the outer
        # query's (`t1.y IN (SELECT t1.y FROM t2 WHERE ...)`) unless it aggregates
        if self.outside_where(body, inner, outer, select_list=value is None or not aggregates(body)) \
                or self.far_ref(body, outer) or correlated and not grouped and (
                    body.args.get("group") or aggregates(body) or body.args.get("limit") or body.args.get("offset")
                    or body.args.get("distinct") is not None and value is not None):
            return domain_join(self, written, body, value, outer)
        return self.join_of(written, body, value, correlated, outer, grouped)

    def equalities(self, correlated: list, body: exp.Select, outer: dict) -> bool:
        """Whether each correlated conjunct compares an outer expression with an inner one by `=`."""
        inner = self.items(body)
        return all(isinstance(p, exp.EQ) and bool(self.outer_refs(p.this, body, inner, outer))
                   != bool(self.outer_refs(p.expression, body, inner, outer))
                   and all(self.owner(c, inner, outer) == "outer" for side in (p.this, p.expression)
                           if self.outer_refs(side, body, inner, outer) for c in side.find_all(exp.Column))
                   for p in correlated)

    def join_of(self, written: str, body: exp.Query, value: exp.Expression | None, correlated: list, outer: dict,
                grouped: bool = False) -> exp.Join:
        self.count += 1
        alias = f"{written.lower().replace(' ', '_')}_{self.count}"
        body = body.copy()
        if self.inlined(body, grouped):  # one stream or table, filtered: joined itself, its WHERE in the ON
            return self.inline_join(written, body, value, alias, outer)
        compared = None  # IN's column when it reads the outer query's columns: compared in the condition
        if value is not None and isinstance(body, exp.Select) and self.outer_refs(body.expressions[0], body, self.items(body), outer):
            compared = body.expressions[0].this if isinstance(body.expressions[0], exp.Alias) else body.expressions[0]
        condition, projected, compared = self.decorrelate(body, correlated, alias, outer, compared)
        if grouped:
            body.set("group", exp.Group(expressions=[k.this.copy() for k in projected]))
        if value is not None:
            if compared is not None:
                mine = compared
            elif isinstance(body, exp.Select):
                projected.insert(0, exp.alias_(body.expressions[0].copy(), "value", quoted=False))
            else:  # a UNION: its first column, as written
                body = exp.select(exp.alias_(exp.column(_first_name(body)), "value")).from_(
                    exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(f"{alias}_rows"))))
            mine = compared if compared is not None else exp.column("value", alias)
            equal = in_match(written, value, mine)
            condition = and_all([equal, *([condition] if condition is not None else [])])
        if isinstance(body, exp.Select):
            body.set("expressions", projected or [exp.alias_(exp.Literal.number(1), "one")])
            if value is None:
                body.set("distinct", None)
        view = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        from_ = body.args.get("from_") if isinstance(body, exp.Select) else None
        if from_ is not None and not body.args.get("joins") and from_.this.args.get("window") is not None:
            view.set("window", from_.this.args["window"].pop())  # `FROM s OVER (RANGE ...)`: the join's window of s
        join = exp.Join(this=view, side="LEFT", kind="ANTI" if written.startswith("NOT") else "SEMI",
                        on=condition if condition is not None else exp.true())
        join.meta[SUBQUERY] = written
        join.meta[HIDDEN] = True
        return join

    def inlined(self, body: exp.Query, grouped: bool) -> bool:
        """A subquery that reads one declared stream, table or view and filters it (no join,
        grouping, aggregate, DISTINCT or LIMIT): its semi or anti join joins that input itself."""
        if not isinstance(body, exp.Select) or grouped or aggregates(body) or body.args.get("joins"):
            return False
        if any(body.args.get(k) for k in ("group", "having", "limit", "offset", "qualify", "with_")):
            return False
        if any(q is not body for q in body.find_all(exp.Select)):  # its own subqueries: a view's joins
            return False
        item = body.args.get("from_").this
        return isinstance(item, exp.Table) and (isinstance(item.this, exp.Identifier) or window_call(item)) \
            and self.columns(item) is not None \
            and not any(isinstance(e, exp.Window) for n in body.expressions for e in n.find_all(exp.Window))

    def inline_join(self, written: str, body: exp.Select, value: exp.Expression | None, alias: str, outer: dict) -> exp.Join:
        """`EXISTS (SELECT ... FROM t AS x WHERE c)`: `LEFT SEMI JOIN t AS alias ON c` with x's
        columns read as alias's (the outer query may use x's name itself); IN adds `value = column`."""
        inner = self.items(body)
        for col in [c for c in body.find_all(exp.Column) if not isinstance(c.this, exp.Star) and query_of(c) is body
                    and self.owner(c, inner, outer) == "inner"]:
            col.meta["written"] = col.sql()  # (what an error names)
            col.set("table", exp.to_identifier(alias))
        where = body.args.get("where")
        parts = conjuncts(where.this if where is not None else None)
        if value is not None:
            mine = body.expressions[0].this if isinstance(body.expressions[0], exp.Alias) else body.expressions[0]
            equal = in_match(written, value, mine)
            parts = [equal, *parts]
        table = body.args["from_"].this.copy()
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        join = exp.Join(this=table, side="LEFT", kind="ANTI" if written.startswith("NOT") else "SEMI",
                        on=and_all([p.copy() for p in parts]) if parts else exp.true())
        join.meta[SUBQUERY] = written
        join.meta[HIDDEN] = True
        return join

    def decorrelate(self, body: exp.Query, correlated: list, alias: str, outer: dict,
                    compared: exp.Expression | None = None) -> tuple[exp.Expression | None, list, exp.Expression | None]:
        """Takes the correlated conjuncts out of `body`'s WHERE: (them, over `alias`'s columns k1, k2,
        ..., which the body selects: the `projected` list; `compared` over them too)."""
        if not isinstance(body, exp.Select) or not correlated and compared is None:
            return None, [], None
        inner = self.items(body)
        texts = {p.sql() for p in correlated}
        where = body.args.get("where")
        rest = [p for p in conjuncts(where.this if where is not None else None) if p.sql() not in texts]
        body.set("where", exp.Where(this=and_all(rest)) if rest else None)
        projected, seen, parts = [], {}, []
        rowtimes = self.passed_rowtimes(body)
        for part in [*correlated, *([compared] if compared is not None else [])]:
            part = part.copy()
            for col in [c for c in part.find_all(exp.Column) if self.owner(c, inner, outer) == "inner"]:
                key = col.sql()
                if self.owner_alias(col, inner) in rowtimes and ident_name(col.this) in (
                        "rowtime", rowtimes[self.owner_alias(col, inner)]):
                    seen[key] = "rowtime"  # the view's rowtime is its stream's: a time bound of the join
                if key not in seen:
                    seen[key] = f"k{len(seen) + 1}"
                    projected.append(exp.alias_(col.copy(), seen[key], quoted=False))
                replacement = exp.column(seen[key], alias)
                if col is part:
                    part = replacement
                else:
                    col.replace(replacement)
            parts.append(part)
        if compared is not None:
            compared = parts.pop()
        return and_all(parts), projected, compared

    def passed_rowtimes(self, body: exp.Select) -> dict[str, str]:
        """{alias: rowtime column} of a subquery that reads one stream and keeps its rows' rowtimes
        (no join, no aggregate): a correlated condition on that rowtime bounds the join in time."""
        items = [i for i in (body.args.get("from_"), *(body.args.get("joins") or [])) if i is not None]
        if self.rowtime is None or len(items) != 1 or aggregates(body) or body.args.get("group"):
            return {}
        rowtime = self.rowtime(items[0].this)
        return {alias_of(items[0].this): rowtime} if rowtime else {}

    def owner_alias(self, col: exp.Column, inner: dict) -> str | None:
        if col.args.get("table") is not None:
            return ident_name(col.args["table"])
        name = ident_name(col.this)
        return next((a for a, cols in inner.items() if cols is not None and name in cols), None)

    def far_ref(self, body: exp.Select, outer: dict) -> exp.Column | None:
        """An outer column read by a subquery inside the subquery (two levels out)."""
        for deeper in body.find_all(exp.Select):
            if deeper is body:
                continue
            scope = {**self.items(body), **self.items(deeper)}
            far = [c for c in deeper.find_all(exp.Column) if not isinstance(c.this, exp.Star) and query_of(c) is deeper
                   and self.owner(c, scope, outer) == "outer"]
            if far:
                return far[0]
        return None

    def outside_where(self, body: exp.Select, inner: dict, outer: dict, select_list: bool = False) -> exp.Column | None:
        """An outer column read outside the subquery's WHERE (`select_list`: the select list may)."""
        for key in ("joins", "group", "having", "order") if select_list else ("expressions", "joins", "group", "having", "order"):
            value = body.args.get(key)
            for node in value if isinstance(value, list) else [value]:
                refs = self.outer_refs(node, body, inner, outer) if node is not None else []
                if refs:
                    return refs[0]
        return None

    def scalar(self, sub: exp.Subquery, outer: dict) -> exp.Expression:
        """A scalar subquery as a LEFT JOIN of a view of at most one row per correlation key: the
        expression that reads its value."""
        body = sub.this
        if not isinstance(body, exp.Select) or len(body.expressions) != 1:
            self.where.fail("a scalar subquery selects one column", sub, "select one value: (SELECT MAX(v) FROM t)")
        inner = self.items(body)
        correlated = [p for p in conjuncts(body.args["where"].this if body.args.get("where") else None)
                      if self.outer_refs(p, body, inner, outer)]
        plain = body
        if correlated and body.args.get("limit") and not aggregates(body) and not body.args.get("group"):
            plain = first_row(body)  # `LIMIT 1`: one row of each key's, MIN / MAX of its value
        # an aggregate without GROUP BY: one row (per correlation key), always
        aggregate = plain is not None and aggregates(plain) and not any(
            plain.args.get(k) for k in ("group", "having", "limit", "offset"))
        if deep_outer_refs(self, body, outer) and (
                plain is None or self.outside_where(body, inner, outer) or self.far_ref(body, outer)
                or not self.equalities(correlated, body, outer) or correlated and (
                    any(e.find(exp.Window) for e in body.expressions)
                    or not aggregate and (plain.args.get("group") or aggregates(plain)))):
            return scalar_domain(self, sub, body, outer)
        self.count += 1
        alias = f"scalar_{self.count}"
        body = plain.copy()
        expression = unaliased(body.expressions[0])
        condition, keys, _ = self.decorrelate(body, correlated, alias, outer)
        body = scalar_body(body, expression, keys, aggregate, bool(correlated), alias)
        self.scalar_join(body, alias, condition)
        return scalar_value(sub, expression, alias, aggregate, bool(correlated))

    def scalar_join(self, body: exp.Select, alias: str, condition: exp.Expression | None) -> None:
        view = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        join = exp.Join(this=view, side="LEFT", on=condition) if condition is not None else exp.Join(this=view, kind="CROSS")
        join.meta[SUBQUERY], join.meta[HIDDEN] = "scalar", True
        self.joins.append(join)


def _first_name(union: exp.Query) -> str:
    first = union
    while isinstance(first, exp.Union):
        first = first.this
    return first.unnest().expressions[0].alias_or_name if isinstance(first, exp.Subquery) else first.expressions[0].alias_or_name
