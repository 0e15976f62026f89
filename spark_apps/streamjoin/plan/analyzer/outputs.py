"""Which materialized views `run` writes. In a file of views alone (RisingWave's `CREATE
MATERIALIZED VIEW`, with no final query, no sink and no pump), RisingWave keeps every
materialized view up to date, so each one that no other statement reads is an output of the file:
several outputs run side by side, each row led by a `"stream"` key naming its view, as an
application's several output streams are (docs/applications.md). A plain `CREATE VIEW` is not
materialized and is not written; a file with one such view (or none) runs its last view
(`Script.final`)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.scope import ident_name, relation_name


def _name(st: exp.Create) -> str:
    return relation_name(st.this.this if isinstance(st.this, exp.Schema) else st.this)


def _view(st: exp.Expression) -> bool:
    return isinstance(st, exp.Create) and (st.text("kind") or "").upper() == "VIEW"


def unread_materialized(statements: list[exp.Expression]) -> list[exp.Create]:
    """The materialized views no other statement reads, in the file's order, when there are two
    or more and the file has no final query, sink or pump; else []."""
    for st in statements:
        kind = (st.text("kind") or "").upper() if isinstance(st, exp.Create) else ""
        if isinstance(st, exp.Query) or kind in ("SINK", "PUMP") or isinstance(st, exp.Insert) and not isinstance(st.expression, exp.Values):
            return []  # a final query, an INSERT INTO a sink (not seed rows), a sink or a pump: those are written
    views = [st for st in statements if _view(st)]
    read = {name.rsplit(".", 1)[-1] for st in views for name in _reads(st.expression)}  # `public.v` reads v (Analyzer.relation)
    unread = [st for st in views if st.meta.get("materialized") and _name(st).rsplit(".", 1)[-1] not in read]
    return unread if len(unread) > 1 else []


def _reads(query: exp.Expression):
    """The names of the relations a query reads: its tables, and the first argument of a table
    function in FROM (`TUMBLE(v, ts, ...)`, `HOP(...)`)."""
    for table in query.find_all(exp.Table):
        function = table.this if isinstance(table.this, exp.Func) else None
        if function is None:
            yield relation_name(table)
        elif function.expressions and isinstance(function.expressions[0], exp.Column):
            column = function.expressions[0]
            yield ".".join(ident_name(p) for p in (column.args.get("db"), column.args.get("table"), column.this) if p is not None)


def as_outputs(statements: list[exp.Expression], where) -> tuple[list[exp.Expression], list[str]]:
    """The statements with each unread materialized view's SELECT led by `'name' AS "stream"`,
    and the outputs' names (`unread_materialized`)."""
    marked = {id(st) for st in unread_materialized(statements)}
    if not marked:
        return statements, []
    out, names = [], []
    for st in statements:
        if id(st) in marked:
            st = st.copy()
            for select in _selects(st.expression):
                if "stream" in {n.lower() for n in select.named_selects}:
                    where.fail(f"'{_name(st)}' has a column named stream, the key that names each row's output view",
                               select, "rename the column")
                select.set("expressions", [exp.alias_(exp.Literal.string(_name(st)), "stream", quoted=True), *select.expressions])
            if isinstance(st.this, exp.Schema) and st.this.expressions:  # CREATE VIEW v (a, b): the key is listed first
                if "stream" in {ident_name(c).lower() for c in st.this.expressions}:
                    where.fail(f"'{_name(st)}' has a column named stream, the key that names each row's output view",
                               st.this, "rename the column")
                st.this.set("expressions", [exp.to_identifier("stream", quoted=True), *st.this.expressions])
            names.append(_name(st))
        out.append(st)
    return out, names


def _selects(query: exp.Expression) -> list[exp.Select]:
    """The SELECTs whose rows are the view's: the query's, or each branch of a UNION."""
    query = query.unnest() if isinstance(query, exp.Subquery) else query
    if isinstance(query, exp.Union):
        return _selects(query.left) + _selects(query.right)
    return [query] if isinstance(query, exp.Select) else []
