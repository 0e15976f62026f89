"""`UPDATE` and `DELETE` on a table the file seeds with `INSERT INTO t VALUES` (RisingWave's tests
change their tables so between the queries they check): applied, in the order written, to the
table's rows, so that a query reads the table as it stands at the end of the file. Each statement
is evaluated by sqlglot's Python executor over the rows (SQL's NULL logic: a row whose WHERE is
NULL is left alone).

Each statement is an instant of the script's clock, its epoch (RisingWave's tests flush after each,
`SET RW_IMPLICIT_FLUSH`): a table keeps, beside its rows, the epoch each row took its values at
(option `epochs`) and the versions its UPDATEs and DELETEs ended (`retired`: [from, to, row]), which
a process-time temporal join reads (plan.rewrites.script_time).

    UPDATE t SET w = w + 1 WHERE k = 1;   DELETE FROM t WHERE k > 2;   DELETE FROM t;
"""

from __future__ import annotations

import json
from dataclasses import replace

from sqlglot import exp
from sqlglot.errors import SqlglotError

from streamjoin.plan.model import Kind, Relation
from streamjoin.plan.scope import Located, ident_name, offset_of, relation_name


def changed(relations: dict[str, Relation], st: exp.Update | exp.Delete, where: Located, epoch: int = 0) -> Relation:
    """The table `st` changes, with its rows as they stand after it (at `epoch`)."""
    target = st.this
    name = relation_name(target)
    relation = relations.get(name)
    if relation is None or relation.view or relation.kind != Kind.TABLE or relation.option("connector") not in (None, "values"):
        what = "UPDATE" if isinstance(st, exp.Update) else "DELETE"
        where.fail(f"{what} changes a table the file declares without a connector and seeds with INSERT INTO ... "
                   f"VALUES; '{name}' is not one", target, "change the rows in the input's files instead")
    before = json.loads(relation.option("rows") or "[]")
    epochs, retired = epochs_of(relation, len(before)), json.loads(relation.option("retired") or "[]")
    columns = [c.name for c in relation.columns]
    condition = st.args.get("where").this if st.args.get("where") is not None else exp.true()
    hit = [r["m"] for r in _select(before, columns, [exp.func("COALESCE", condition.copy(), exp.false())], None, ["m"])]
    retired += [[e, epoch, row] for e, row, h in zip(epochs, before, hit, strict=True) if h]
    if isinstance(st, exp.Delete):
        rows = [row for row, h in zip(before, hit, strict=True) if not h]
        epochs = [e for e, h in zip(epochs, hit, strict=True) if not h]
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
        rows = _select(before, columns, chosen, None)
        epochs = [epoch if h else e for e, h in zip(epochs, hit, strict=True)]
    return with_rows(relation, rows, epochs, retired)


def epochs_of(relation: Relation, count: int) -> list[int]:
    """The epoch each of the table's `count` rows took its values at (0: before the file's first statement)."""
    epochs = json.loads(relation.option("epochs") or "[]")
    return epochs + [0] * (count - len(epochs))


def with_rows(relation: Relation, rows: list[dict], epochs: list[int], retired: list) -> Relation:
    options = {**dict(relation.options), "connector": "values", "rows": json.dumps(rows, default=str),
               "epochs": json.dumps(epochs)}
    if retired:
        options["retired"] = json.dumps(retired, default=str)
    return replace(relation, options=tuple(sorted(options.items())))


def _select(rows: list[dict], columns: list[str], values: list[exp.Expression], condition,
            names: list[str] | None = None) -> list[dict]:
    """`SELECT values FROM rows [WHERE condition]` by sqlglot's executor, as dicts of `names` (`columns`)."""
    from sqlglot.executor import execute

    names = names or columns
    if not rows:  # (the executor reads a table's columns from its rows: an empty one has none)
        return []
    query = exp.select(*[exp.alias_(v, c, quoted=True) for v, c in zip(values, names, strict=True)]).from_("t")
    if condition is not None:
        query = query.where(condition)
    try:
        result = execute(query, tables={"t": [{c: r.get(c) for c in columns} for r in rows]})
    except (SqlglotError, Exception) as error:  # noqa: BLE001 - the executor raises plain exceptions too
        raise ValueError(f"cannot evaluate {query.sql()}: {error}") from None
    return [dict(zip(names, row, strict=True)) for row in result.rows]


def table_as(analyzer, st: exp.Create) -> None:
    """RisingWave's `CREATE TABLE t AS query` over tables: t holds the query's rows as the tables
    stand, a view of kind TABLE (`run` computes it once, from their snapshots). The rows are the
    query's at the statement: a later INSERT / UPDATE / DELETE of a table it reads, or of t, is
    refused (`seed_rows`). Over a stream, refused: its rows would be the stream's so far."""
    name = relation_name(st.this.this if isinstance(st.this, exp.Schema) else st.this)
    query = st.expression
    if isinstance(st.this, exp.Schema):  # CREATE TABLE t (a, b) AS ...: its columns named so
        query = analyzer.renamed(query, st.this, st)
    analyzer.view(name, query, st)
    plan = analyzer.view_plan(name)
    streams = [i.relation for i in plan.inputs if analyzer.relations[i.relation].kind == Kind.STREAM]
    if streams or plan.kind != Kind.TABLE:
        analyzer.where.fail(f"CREATE TABLE {name} AS a query over streams ({', '.join(streams) or 'a stream'}) is not "
                            "supported: its rows would be the streams' so far", st.this,
                            f"CREATE MATERIALIZED VIEW {name} AS ... (its rows as the streams come)")
    for i in plan.inputs:
        analyzer.filled_from[i.relation] = name
    analyzer.filled_from[name] = name
    analyzer.notes.append(f"line {analyzer.where.position(st)[0]}: CREATE TABLE {name} AS ...: the query's rows over the "
                          "tables as they stand (a view of them)")


def seed_rows(analyzer, st: exp.Insert | exp.Update | exp.Delete) -> None:
    """`INSERT INTO t [(columns)] VALUES (...), ...` into a table the file declares without a
    connector (RisingWave's tests and demos seed their tables so): the rows are the table's
    (`connector = 'values'`, read as its snapshot), added to any inserted before. `UPDATE` and
    `DELETE` change them, in order (plan.analyzer.dml)."""
    analyzer.epoch += 1
    target = st.this.this if isinstance(st.this, exp.Schema) else st.this
    if relation_name(target) in analyzer.filled_from:
        table = analyzer.filled_from[relation_name(target)]
        analyzer.where.fail(f"'{relation_name(target)}' is changed after CREATE TABLE {table} AS ... read it: not supported "
                            f"({table} holds the query's rows at its statement, here a view of the tables as they end)",
                            target, f"change the tables before CREATE TABLE {table} AS ..., or make {table} a view")
    if isinstance(st, exp.Update | exp.Delete):
        try:
            relation = changed(analyzer.relations, st, analyzer.where, analyzer.epoch)
        except ValueError as error:
            analyzer.where.fail(str(error), st, "write the change with plain column comparisons and arithmetic")
        analyzer.relations[relation.name] = relation
        return

    target = st.this.this if isinstance(st.this, exp.Schema) else st.this
    name = relation_name(target)
    relation = analyzer.relations.get(name)
    if relation is None or relation.view:
        analyzer.where.fail(f"INSERT INTO '{name}' VALUES: '{name}' is not a declared table", target,
                        f"declare it first: CREATE TABLE {name} (...)")
    connector = relation.option("connector")
    if (connector and connector != "values") or relation.option("path"):  # a stream too: RisingWave's APPEND ONLY table
        analyzer.where.fail(f"INSERT INTO '{name}' VALUES seeds a table or stream declared without a connector; '{name}' is "
                            f"read from {connector or relation.option('path')!r}", target, "put the rows in the input's files instead")
    listed = [ident_name(c) for c in st.this.expressions] if isinstance(st.this, exp.Schema) else []
    implicit = relation.rowtime if relation.implicit_rowtime else None  # not one of `*`: the stager fills it
    columns = listed or [c.name for c in relation.columns if c.name != implicit]
    rows = json.loads(relation.option("rows") or "[]")
    epochs, retired = epochs_of(relation, len(rows)), json.loads(relation.option("retired") or "[]")
    # a table's primary key: a row inserted under a key the table holds overwrites it (RisingWave's
    # default ON CONFLICT OVERWRITE); a stream (an APPEND ONLY table) keeps every row
    key = relation.primary_key if relation.kind == Kind.TABLE else ()
    held = {tuple(r.get(k) for k in key): n for n, r in enumerate(rows)} if key else {}
    for row in st.expression.expressions:
        values = row.expressions if isinstance(row, exp.Tuple) else [row]
        if len(values) != len(columns):
            analyzer.where.fail(f"a row of {len(values)} values for {len(columns)} columns ({', '.join(columns)})", row,
                            "give one value per column, in order")
        row = {c: literal_value(v, analyzer.where, st) for c, v in zip(columns, values, strict=True)}
        for column in relation.columns:  # a column the INSERT does not list: its DEFAULT, else NULL
            if column.name not in row and column.name != implicit:
                row[column.name] = default_value(column, st, analyzer.where)
        at = held.setdefault(tuple(row.get(k) for k in key), len(rows)) if key else len(rows)
        if at < len(rows):
            retired.append([epochs[at], analyzer.epoch, rows[at]])
            rows[at], epochs[at] = row, analyzer.epoch
            continue
        rows.append(row)
        epochs.append(analyzer.epoch)
    analyzer.relations[name] = with_rows(relation, rows, epochs, retired)


def default_value(column, st: exp.Insert, where: Located):
    """A column's DEFAULT for a seed row that does not list it: a literal, or the current time
    (CURRENT_TIMESTAMP, NOW(): the instant the file is read, as an INSERT run then would); NULL
    without one. Any other DEFAULT is refused at the INSERT, naming it, rather than read as NULL."""
    import datetime as dt

    from sqlglot import parse_one

    if column.default is None:
        return None
    node = parse_one(column.default)
    if isinstance(node, exp.CurrentTimestamp | exp.CurrentDate) or (isinstance(node, exp.Anonymous) and node.name.upper() == "NOW"):
        now = dt.datetime.now(dt.UTC)
        return now.date().isoformat() if isinstance(node, exp.CurrentDate) else now.strftime("%Y-%m-%d %H:%M:%S.%f")
    try:
        return literal_value(node, where)
    except Exception:  # noqa: BLE001 - where.fail raises SqlError at the default's own (reparsed) text: say it at the INSERT
        where.fail(f"INSERT INTO leaves out column '{column.name}', whose DEFAULT {column.default} is not a literal "
                   "or the current time", st, f"list '{column.name}' and give its value")


def literal_value(node: exp.Expression, where: Located, at: exp.Expression | None = None):
    """A seed row's value: a literal (a string, a number, TRUE/FALSE, NULL, a negative number, a
    typed literal such as TIMESTAMP '...', an ARRAY of literals, a CAST of one); anything else is
    refused at it (at `at`, the statement, where the parser kept no position for it)."""
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return node.this
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return -float(node.this.name) if "." in node.this.name or "e" in node.this.name.lower() else -int(node.this.name)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.name
        return float(node.name) if "." in node.name or "e" in node.name.lower() else int(node.name)
    if isinstance(node, exp.Cast | exp.TryCast) and isinstance(node.this, exp.Literal | exp.Neg | exp.Null | exp.Array | exp.Boolean):
        return literal_value(node.this, where, at)
    if isinstance(node, exp.Array):  # ARRAY[1, 2], ARRAY[] (its CAST's type is the column's)
        return [literal_value(e, where, at) for e in node.expressions]
    where.fail(f"a seed row's value must be a literal, not {node.sql(dialect='postgres')}", node if offset_of(node) is not None else at,
               "write the value itself: 1, 'text', NULL, ARRAY[1, 2]")
