"""The plan's expressions translated for where they run (a base module: it imports nothing else
from `lower`): Spark SQL over the lowered frames' flat columns, Python over `scope[alias][column]`
(streamjoin's operator), PostgreSQL over one table's own columns (a pushed-down filter)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.expressions import StepBy
from streamjoin.lower.columns import ROWTIME_COLUMN, flat, q, rowtime_column
from streamjoin.plan.model import Query
from streamjoin.plan.windows import interval_ms


def spark_sql(expression: exp.Expression) -> str:
    """The streaming dialect's expression as Spark SQL: `alias.column` becomes the flat column
    `alias__column`, the output ROWTIME the computed `__rowtime`, `FLOOR(ts TO HOUR)`
    `date_trunc('HOUR', ts)`."""
    tree = expression.copy()
    for col in list(tree.find_all(exp.Column)):
        if not col.table and col.name == "ROWTIME" and not col.this.quoted:
            replacement = exp.column(ROWTIME_COLUMN)
        elif col.table:  # alias.column -> `alias__column`
            replacement = exp.Column(this=exp.Identifier(this=flat(col.table, col.name), quoted=True))
        else:
            continue
        tree = replacement if col is tree else tree
        col.replace(replacement)
    for kind, spell in ((exp.Floor, _floor), (exp.Anonymous, _scalar), (exp.Overlaps, _overlaps), (StepBy, _step),
                        (exp.WithinGroup, _percentile), (exp.Filter, _array_agg), (exp.ArrayAgg, _array_agg),
                        (exp.Extract, _epoch)):
        for node in list(tree.find_all(kind)):
            spelt = spell(node)
            if spelt is not None:
                tree = spelt if node is tree else tree
                node.replace(spelt)
    return tree.sql(dialect="spark")


def _epoch(node: exp.Extract) -> exp.Expression | None:
    """EXTRACT(EPOCH FROM ts): the seconds since 1970-01-01 UTC, fractions kept (PostgreSQL's,
    RisingWave's); Spark's EXTRACT has no EPOCH."""
    if node.this.name.upper() != "EPOCH":
        return None
    return exp.var(f"(CAST(unix_micros(CAST({node.expression.sql(dialect='spark')} AS TIMESTAMP)) AS DOUBLE) / 1000000)")


def _array_agg(node: exp.Expression) -> exp.Expression | None:
    """ARRAY_AGG(x) [FILTER (WHERE c)] as SQL's: its NULLs kept and NULL over no rows (Spark's
    collect_list skips NULLs and gives [] over none): each value collected inside a struct."""
    agg = node.this if isinstance(node, exp.Filter) else node
    if not isinstance(agg, exp.ArrayAgg) or isinstance(agg.this, exp.Order | exp.Distinct) or agg.args.get("order") \
            or isinstance(node, exp.ArrayAgg) and isinstance(node.parent, exp.Filter):
        return None
    values = f"collect_list(named_struct('v', {agg.this.sql(dialect='spark')}))"
    if isinstance(node, exp.Filter):
        values += f" FILTER (WHERE {node.expression.this.sql(dialect='spark')})"
    return exp.var(f"(CASE WHEN size({values}) = 0 THEN NULL ELSE transform({values}, e -> e.v) END)")


def _percentile(node: exp.WithinGroup) -> exp.Expression | None:
    """PERCENTILE_DISC / _CONT(p) WITHIN GROUP (ORDER BY x) as Spark spells it (sqlglot's Spark
    writes the approximate PERCENTILE_APPROX for DISC)."""
    function = {exp.PercentileDisc: "percentile_disc", exp.PercentileCont: "percentile_cont"}.get(type(node.this))
    order = node.expression
    if function is None or not isinstance(order, exp.Order) or len(order.expressions) != 1:
        return None
    key = order.expressions[0]
    direction = " DESC" if key.args.get("desc") else ""
    return exp.var(f"{function}({node.this.this.sql(dialect='spark')}) WITHIN GROUP (ORDER BY {key.this.sql(dialect='spark')}{direction})")


def _floor(floor: exp.Floor) -> exp.Expression | None:
    """FLOOR(ts TO HOUR): Spark spells it date_trunc('HOUR', ts)."""
    if not floor.args.get("to"):
        return None
    return exp.Anonymous(this="date_trunc", expressions=[exp.Literal.string(floor.text("to").upper()), floor.this])


def _scalar(call: exp.Anonymous) -> exp.Expression | None:
    """s-Server's and KDA's scalar functions Spark lacks (SCALARS), with their arguments."""
    template = SCALARS.get(call.name.upper())
    if template is None or len(call.expressions) != template.count("__a"):
        return None
    spelt = exp.maybe_parse(template, dialect="spark")
    for column in list(spelt.find_all(exp.Column)):
        if column.name.startswith("__a"):
            column.replace(call.expressions[int(column.name[3:])].copy())
    return spelt


def _step(step: StepBy) -> exp.Expression:
    """STEP(ts BY INTERVAL '20' MINUTE): whole steps since the epoch."""
    span = step_ms(step)
    stepped = exp.maybe_parse(f"timestamp_millis(floor(unix_millis(__ts) / {span}) * {span})", dialect="spark")
    stepped.find(exp.Column).replace(step.this)
    return stepped


# s-Server's and KDA's scalar functions as Spark SQL, `__aN` their N-th argument (formats are Java's
# date patterns in both)
SCALARS = {
    "MILLIS_TO_TIMESTAMP": "timestamp_millis(__a0)",
    "TSDIFF": "(unix_millis(__a0) - unix_millis(__a1))",
    "CHAR_TO_TIMESTAMP": "to_timestamp(__a1, __a0)",
    "TIMESTAMP_TO_CHAR": "date_format(__a1, __a0)",
}


def _overlaps(node: exp.Overlaps) -> exp.Expression | None:
    """s-Server's (Calcite's) `PERIOD(a, b) OVERLAPS PERIOD(c, d)`: each period's ends sorted, then
    `e0 >= s1 AND s0 <= e1` (closed periods: touching ones overlap); None: not two PERIODs."""
    periods = [node.this, node.expression]
    if not all(isinstance(p, exp.Anonymous) and p.name.upper() == "PERIOD" and len(p.expressions) == 2 for p in periods):
        return None
    (a, b), (c, d) = (p.expressions for p in periods)

    def first(x, y, op):  # the earlier (op <=) or later (op >=) end; NULL when an end is (Spark's LEAST skips NULLs)
        return exp.Case(ifs=[exp.If(this=op(this=x.copy(), expression=y.copy()), true=x.copy()),
                             exp.If(this=op(this=y.copy(), expression=x.copy()), true=y.copy())])

    s0, e0, s1, e1 = first(a, b, exp.LTE), first(a, b, exp.GTE), first(c, d, exp.LTE), first(c, d, exp.GTE)
    return exp.Paren(this=exp.and_(exp.GTE(this=e0, expression=s1), exp.LTE(this=s0, expression=e1)))


def step_ms(step: StepBy) -> int:
    """The milliseconds of a STEP's interval (the analyzer has checked it is a fixed length)."""
    interval = step.expression
    unit = interval.args.get("unit")
    return interval_ms(interval.name, unit.name if isinstance(unit, exp.Var) else None)


def local_sql(expression: exp.Expression, alias: str) -> str:
    """An expression over one input's own (unprefixed) columns, as Spark SQL."""
    tree = expression.copy()
    for col in list(tree.find_all(exp.Column)):
        if col.table == alias:
            replacement = exp.Column(this=exp.Identifier(this=col.name, quoted=True))
            if col is tree:
                tree = replacement
            else:
                col.replace(replacement)
    return tree.sql(dialect="spark")


def python_code(expression: exp.Expression) -> str:
    """Python source over `scope[alias][column]` (sqlglot's executor environment: SQL NULL
    semantics) for streamjoin's operator and the ASOF lookup."""
    from sqlglot.executor.python import Python

    return Python().generator(identify=True, comments=False).generate(expression)


def postgres_sql(expression: exp.Expression, alias: str) -> str | None:
    """An expression over one table input as PostgreSQL SQL over its unqualified columns, or None
    when it names another input (it is then applied after reading)."""
    tree = expression.copy()
    for col in tree.find_all(exp.Column):
        if col.table != alias:
            return None
        col.set("table", None)
    return tree.sql(dialect="postgres")


def project_output(query: Query, joined, aliases: list[str]):
    """The query's WHERE, output columns and __rowtime over joined flat rows of `aliases`."""
    from pyspark.sql import functions as F

    if query.where is not None:
        joined = joined.where(F.expr(spark_sql(query.where)))
    joined = joined.withColumn(ROWTIME_COLUMN, rowtime_column(query, aliases))
    return joined.select(*[F.expr(spark_sql(c.expression)).alias(c.name) for c in query.output], F.col(ROWTIME_COLUMN))


def extend_with_nulls(rows, other, columns: list[str]):
    """`rows` of one input NULL-extended with the other input's columns, as `columns`."""
    from pyspark.sql import functions as F

    types = dict(other.dtypes)
    return rows.select(*[F.col(q(c)) if c in rows.columns else F.lit(None).cast(types[c]).alias(c) for c in columns])
