"""`UPDATE` and `DELETE` on a table the file seeds with `INSERT INTO t VALUES` (RisingWave's tests
change their tables so between the queries they check): applied, in the order written, to the
table's rows, so that a query reads the table as it stands at the end of the file. Each statement
is evaluated by sqlglot's Python executor over the rows (SQL's NULL logic: a row whose WHERE is
NULL is left alone).

    UPDATE t SET w = w + 1 WHERE k = 1;   DELETE FROM t WHERE k > 2;   DELETE FROM t;
"""

from __future__ import annotations

import json
from dataclasses import replace

from sqlglot import exp
from sqlglot.errors import SqlglotError

from streamjoin.plan.model import Kind, Relation
from streamjoin.plan.scope import Located, ident_name, relation_name


def changed(relations: dict[str, Relation], st: exp.Update | exp.Delete, where: Located) -> Relation:
    """The table `st` changes, with its rows as they stand after it."""
    target = st.this
    name = relation_name(target)
    relation = relations.get(name)
    if relation is None or relation.view or relation.kind != Kind.TABLE or relation.option("connector") not in (None, "values"):
        what = "UPDATE" if isinstance(st, exp.Update) else "DELETE"
        where.fail(f"{what} changes a table the file declares without a connector and seeds with INSERT INTO ... "
                   f"VALUES; '{name}' is not one", target, "change the rows in the input's files instead")
    rows = json.loads(relation.option("rows") or "[]")
    columns = [c.name for c in relation.columns]
    condition = st.args.get("where").this if st.args.get("where") is not None else exp.true()
    if isinstance(st, exp.Delete):
        kept = _select(rows, columns, [exp.column(c) for c in columns],
                       exp.not_(exp.func("COALESCE", condition.copy(), exp.false())))
        rows = kept
    else:
        sets = {}
        for assignment in st.expressions:
            column = ident_name(assignment.this.this if isinstance(assignment.this, exp.Column) else assignment.this)
            if column not in columns:
                where.fail(f"UPDATE {name} SET {column}: '{name}' has no column '{column}'", assignment,
                           f"columns are: {', '.join(columns)}")
            sets[column] = assignment.expression
        chosen = [exp.Case(ifs=[exp.If(this=exp.func("COALESCE", condition.copy(), exp.false()), true=sets[c].copy())],
                           default=exp.column(c)) if c in sets else exp.column(c) for c in columns]
        rows = _select(rows, columns, chosen, None)
    options = {**dict(relation.options), "connector": "values", "rows": json.dumps(rows, default=str)}
    return replace(relation, options=tuple(sorted(options.items())))


def _select(rows: list[dict], columns: list[str], values: list[exp.Expression], condition) -> list[dict]:
    """`SELECT values FROM rows [WHERE condition]` by sqlglot's executor, as dicts of `columns`."""
    from sqlglot.executor import execute

    query = exp.select(*[exp.alias_(v, c, quoted=True) for v, c in zip(values, columns, strict=True)]).from_("t")
    if condition is not None:
        query = query.where(condition)
    try:
        result = execute(query, tables={"t": [{c: r.get(c) for c in columns} for r in rows]})
    except (SqlglotError, Exception) as error:  # noqa: BLE001 - the executor raises plain exceptions too
        raise ValueError(f"cannot evaluate {query.sql()}: {error}") from None
    return [dict(zip(columns, row, strict=True)) for row in result.rows]
