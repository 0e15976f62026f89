"""Queries made of other queries: RisingWave's `CREATE SINK s FROM mv` (the view's own query
writes the sink) and UNION ALL views (each branch a view of its own). `analyzer`:
plan.analyzer.statements.Analyzer."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.plan.model import OutputColumn, Query
from streamjoin.plan.scope import ident_name, relation_name


def passed_through(analyzer, select: exp.Expression) -> Query | None:
    """The plan of the view a sink's query passes through whole (`SELECT * FROM mv`: RisingWave's
    CREATE SINK s FROM mv), None for any other query."""
    if not isinstance(select, exp.Select) or len(select.expressions) != 1 or not isinstance(select.expressions[0], exp.Star):
        return None
    if any(select.args.get(k) for k in ("joins", "where", "group", "having", "order", "limit", "distinct", "with_", "laterals")):
        return None
    from_ = select.args.get("from_")
    if from_ is None or not isinstance(from_.this, exp.Table):
        return None
    name = relation_name(from_.this)
    relation = analyzer.relations.get(name)
    if relation is None or not relation.view:
        return None
    return next((q for q in reversed(analyzer.queries) if q.name == name), None)


def union_view(analyzer, name: str, union: exp.Union) -> Query:
    """`q1 UNION ALL q2 [UNION ALL ...]`: each branch a view of its own (`name__1`, ...), and the
    view that passes their rows on, named by the first branch's columns."""
    branches: list[exp.Expression] = []

    def flatten(node: exp.Expression) -> None:
        if isinstance(node, exp.Union):
            if node.args.get("distinct"):
                analyzer.where.fail("UNION without ALL removes duplicate rows: not supported", node.expression,  # the query after UNION
                                "write UNION ALL (every row of each branch)")
            flatten(node.this)
            flatten(node.expression)
        elif isinstance(node, exp.Intersect | exp.Except):
            analyzer.where.fail(f"{node.key.upper()} is not supported", node, "write UNION ALL, or a join")
        else:
            branches.append(node.unnest() if isinstance(node, exp.Subquery) else node)

    flatten(union)
    names = [analyzer.part_view(f"{name}__{n}", branch, branch) for n, branch in enumerate(branches, 1)]
    plans = [analyzer.relations[n] for n in names]
    width = len([c for c in plans[0].columns if not (plans[0].implicit_rowtime and c.name == plans[0].rowtime)])
    for branch, plan in zip(branches[1:], plans[1:], strict=True):
        count = len([c for c in plan.columns if not (plan.implicit_rowtime and c.name == plan.rowtime)])
        if count != width:
            analyzer.where.fail(f"each branch of a UNION ALL selects the same number of columns: {count} here, {width} in the "
                            "first", branch, "select the same columns, in order, in every branch")
    first = analyzer.view_plan(names[0])
    select = exp.select(*[exp.column(c.name, table=names[0], quoted=True) for c in first.output]).from_(
        exp.Table(this=exp.to_identifier(names[0], quoted=True)))  # (quoted: a view named "EVENTS" is EVENTS__1)
    plan = analyzer.query(select, name)
    # every branch is an input (the first is the FROM): what walks a query's inputs (its streams to
    # stage, its views to run, what `run` refuses in them) walks each branch; lower.union merges them
    head = plan.inputs[0]
    more = tuple(replace(head, alias=n, relation=n, columns=tuple(c.name for c in analyzer.relations[n].columns))
                 for n in names[1:])
    return replace(plan, union_of=tuple(names), inputs=(head, *more))


def union_read(analyzer, name: str, union: exp.Union) -> exp.Select:
    """A query that is itself a UNION ALL (a final query, a pump's or a sink's): the union as a
    view of its own (`name__union`), and the SELECT that reads it whole."""
    view = f"{name}__union"
    analyzer.view(view, union, union)
    relation = analyzer.relations[view]
    return exp.select(*[exp.column(c.name, quoted=True) for c in relation.columns
                        if not (relation.implicit_rowtime and c.name == relation.rowtime)]).from_(
        exp.Table(this=exp.to_identifier(view, quoted=True)))


def distinct_as_groups(select: exp.Select) -> exp.Select:
    """`SELECT [STREAM] DISTINCT a, b FROM ...` as `... GROUP BY a, b`: SQL's DISTINCT is a grouping
    by every output column (Calcite's, hence s-Server's and KDA's, streaming DISTINCT groups so; over
    a RisingWave source it is a running aggregate whose group's row comes once). The select as it
    is where it holds DISTINCT ON, GROUP BY, `*` or an aggregate or window function."""
    node = select.args.get("distinct")
    if node is None or node.args.get("on") is not None or select.args.get("group") is not None:
        return select
    if any(e.is_star or e.find(exp.AggFunc, exp.Window) is not None for e in select.expressions):
        return select
    select = select.copy()
    select.set("distinct", None)
    select.set("group", exp.Group(expressions=[e.unalias().copy() for e in select.expressions]))
    return select


def into_columns(analyzer, query: Query, into: exp.Expression) -> Query:
    """RisingWave's `CREATE SINK s INTO t (a, b) AS query`: the query's columns are t's columns
    listed (all of t's, in order, without a list), by position."""
    table = analyzer.relations[relation_name(into.this if isinstance(into, exp.Schema) else into)]
    named = into.expressions if isinstance(into, exp.Schema) else into.this.expressions if isinstance(into.this, exp.Anonymous) else []
    listed = [ident_name(c.this if isinstance(c, exp.Column) else c) for c in named] or \
        [c.name for c in table.columns if c.name != table.rowtime or not table.implicit_rowtime]
    unknown = [c for c in listed if c not in [t.name for t in table.columns]]
    if unknown:
        analyzer.where.fail(f"sink into '{table.name}': it has no column '{unknown[0]}'", into,
                            f"its columns are: {', '.join(c.name for c in table.columns)}")
    if len(listed) != len(query.output):
        analyzer.where.fail(f"the sink's query writes {len(query.output)} columns into {len(listed)} of '{table.name}' "
                            f"({', '.join(listed)})", into, "select one column for each column the sink writes, in order")
    return replace(query, output=tuple(OutputColumn(name, c.expression) for name, c in zip(listed, query.output, strict=True)))


def with_rows_from(select: exp.Expression, name: str) -> exp.Expression:
    """A query of rows written in it as a SELECT from a table of them: `AS VALUES (...), ...` (its
    columns column1, ..., as PostgreSQL names them) and a SELECT of constants without FROM (one row)."""
    if isinstance(select, exp.Values):
        rows = select.copy()
        rows.set("alias", exp.TableAlias(this=exp.to_identifier(f"{name}_values")))
        return exp.select("*").from_(rows)
    if (isinstance(select, exp.Select) and select.args.get("from_") is None and not select.args.get("joins")
            and select.expressions and not any(e.find(exp.Column, exp.Star) for e in select.expressions)):
        one = exp.Values(expressions=[exp.Tuple(expressions=[exp.Literal.number(0)])],
                         alias=exp.TableAlias(this=exp.to_identifier(f"{name}_row")))
        return select.copy().from_(one)
    return select
