"""What `run` runs: one table of rules, each a condition and the message `Unsupported` carries
when a query breaks it (exit 2, before Spark starts or any data is read). Spark-free.

A rule is `(what it checks, function)`; the function gets a `Context` and returns None, or the
message. Rules run in table order and the first message wins. `NATIVE_RULES` hold for queries on
Spark's joins (and views, recursively), `CUSTOM_RULES` for a query whose join needs streamjoin's
operator (the physical plan's `rules`); `checked_plan` picks the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

import streamjoin.lower.strategy as strategy
from streamjoin.errors import Unsupported
from streamjoin.io.connectors import LOGS, STREAM_CONNECTORS
from streamjoin.io.formats.columns import OP
from streamjoin.lower.clauses import changing_outside_regular, check_table_query, clauses_not_run
from streamjoin.lower.columns import lag
from streamjoin.lower.inputs import (
    cdc_options,
    check_stream_path,
    csv_problem,
    kafka_options,
    kinesis_options,
)
from streamjoin.lower.physical import Engine, PhysicalPlan, Run, plan_query
from streamjoin.lower.sink_target import sink_spec
from streamjoin.lower.strategy import LoweringOptions, alone, chain_problem, cuts, running_aggregate, staged_views
from streamjoin.plan.analyzer.domains import LIMITED
from streamjoin.plan.model import Emit, JoinKind, JoinType, Kind, Query, Relation, Script, sql
from streamjoin.plan.windows import BucketWindow, RangeWindow


@dataclass(frozen=True)
class Context:
    script: Script
    query: Query
    top: bool  # the query `run` runs (not a view it reads)
    options: LoweringOptions

    def relation(self, alias: str) -> Relation:
        return self.script.relation(self.query.input(alias).relation)


Rule = tuple[str, Callable[[Context], str | None]]


def check_runnable(script: Script, query: Query, options: LoweringOptions = LoweringOptions()) -> None:
    """Raise Unsupported for what this runtime does not run yet, naming it."""
    checked_plan(script, query, options)


def checked_plan(script: Script, query: Query, options: LoweringOptions = LoweringOptions(),
                 recorded: str | None = None) -> PhysicalPlan:
    """The query's physical plan (`lower.physical.plan_query`; `recorded`: the engine its
    checkpoint ran on), once `run` is known to run it: Unsupported names what it does not run yet."""
    plan = plan_query(script, query, options, recorded)
    if plan.run == Run.TABLES:  # a SELECT TABLE ... (a GROUP BY over streams: a changelog, planned as a stream's)
        check_table_query(script, query)
        return plan
    check_query(Context(script, query, True, options), plan.rules)
    sink_spec(script, query)
    return plan


def check_query(ctx: Context, rules: Engine | None = None) -> None:
    """The rules of the engine whose semantics the query needs (`PhysicalPlan.rules`: a view's are
    planned here): the operator's where a join needs it live, also when a bounded run batches it,
    so that what `check` accepts runs both ways."""
    if rules is None:
        rules = plan_query(ctx.script, ctx.query, ctx.options, top=False).rules
    rules = CUSTOM_RULES if rules == Engine.OPERATOR else NATIVE_RULES
    for _, rule in (("DISTINCT, UNION ALL", clauses_not_run), ("changing tables in regular joins", changing_outside_regular),
                    ("semi and anti joins of what they run on", _filter_joins), *rules):
        message = rule(ctx)
        if message:
            raise Unsupported(message)


def relation_option(script: Script, sink: str, key: str) -> str | None:
    return next((r.option(key) for r in script.sinks if r.name == sink), None)


def start_bounds(join, before: list[str], query: Query) -> tuple[int, int] | None:
    """(L, H) with `L <= right.rowtime - start <= H` for every match of `join`, where `start` is
    the output rowtime (latest presence start) of a row of the inputs `before`: what lets
    Spark drop state between an intermediate stream and `join.right`. None if an input of
    `before` has no two-sided time bound with the right input."""
    lows, highs = [], []
    for alias in before:
        mine = [b for b in join.condition.time_bounds if b.left == alias and b.right == join.right]
        low = max((b.low_ms for b in mine if b.low_ms is not None), default=None)
        high = min((b.high_ms for b in mine if b.high_ms is not None), default=None)
        if low is None or high is None:
            return None
        lows.append(low - lag(query.input(alias)))
        highs.append(high - lag(query.input(alias)))
    return min(lows), max(highs)


# ---------------------------------------------------------------------------- queries on Spark's joins


def _analytic_window(ctx: Context) -> str | None:
    from streamjoin.lower.analytic import analytic_problem

    sink = sink_spec(ctx.script, ctx.query) if ctx.top and ctx.query.changing_analytics() else None  # (a changelog)
    return analytic_problem(ctx.query) or (_changelog_sink(ctx, sink, True) if sink is not None else None)


def _emit_mode(ctx: Context) -> str | None:
    q = ctx.query
    if q.emit == Emit.CHANGES and strategy.changing_alone(ctx.script, q) and (ctx.top or q.changelog_key() is not None):
        return None
    if q.emit != Emit.FINAL and (not ctx.top or q.aggregation is not None or any(j.kind == JoinKind.BUCKETED for j in q.joins)):
        if not ctx.top and any(n.endswith(LIMITED) for n in (q.name, *(i.relation for i in q.inputs))):
            return (f"a correlated subquery's OFFSET, or LIMIT in another order than of the value it selects, over "
                    f"sources (view {q.name}: its rows numbered per outer value, a view of a changelog another view "
                    "reads) is not supported by `run` yet: `ORDER BY v LIMIT 1` of its own value v runs (each outer "
                    "value's MIN / MAX), as does EXISTS with LIMIT; else read tables")
        return f"EMIT {q.emit} of an aggregation, a bucketed join or a view is not supported by `run` yet; EMIT FINAL is"
    return None


def _inputs(ctx: Context) -> str | None:
    """Each input: a window function only under GROUP BY, a view runnable itself, a table
    readable, a stream with a supported connector and path, RANGE windows on joined streams."""
    q = ctx.query
    stream_joined = {a for j in q.joins if j.kind.stream_stream for a in (j.right, *j.left_inputs)}
    for i in q.inputs:
        relation = ctx.script.relation(i.relation)
        if i.time_window is not None and q.aggregation is None and any(j.kind == JoinKind.WINDOW_TVF for j in q.joins):
            return f"input '{i.alias}': {i.time_window.function} window joins are not supported by `run` yet"
        if relation.view:
            message = _view_input(ctx, i.alias, ctx.script.view(relation.name))
        elif i.kind == Kind.TABLE:
            message = _table(relation)
        else:
            message = _stream(relation, i.alias)
        if message:
            return message
        if not relation.view and i.kind == Kind.STREAM and i.alias in stream_joined and not isinstance(i.window, RangeWindow):
            return f"input '{i.alias}': {type(i.window).__name__} windows are not supported by `run` yet (RANGE windows are)"
    return None


def _view_input(ctx: Context, alias: str, view: Query) -> str | None:
    if view.kind == Kind.TABLE:
        return _table_view(ctx.script, view)
    check_query(Context(ctx.script, view, False, ctx.options))  # raises for the view's own reasons
    if alias in {sv.alias for sv in staged_views(ctx.script, ctx.query)}:  # runs as a part of its own
        if not ctx.top and running_aggregate(ctx.query):
            return _running(ctx)  # the running aggregate's own reason: in a view
        if not ctx.top and not (alone(view) or ctx.query.analytics):
            return f"input '{alias}': an aggregating view joined with a stream inside a view is not supported by `run` yet"
        if cuts(ctx.query):
            return f"input '{alias}': a view that runs as a query of its own (it aggregates, or promotes a new rowtime) in a chain cut after an outer join is not supported by `run` yet"
    return None


def _stream(relation: Relation, alias: str) -> str | None:
    connector = (relation.option("connector") or "files").lower()
    if connector not in (*STREAM_CONNECTORS, "values"):  # values: rows the program inserted (inputs.seed_folder)
        return (f"input '{alias}': connector '{relation.option('connector')}' is not supported for streams yet "
                "(use 'files', 's3', 'kinesis', 'kafka' or, for a table, 'postgres-cdc')")
    if connector in (*LOGS, "values"):
        try:
            if connector == "postgres-cdc":
                cdc_options(relation, "")
            elif connector != "values":
                (kinesis_options if connector == "kinesis" else kafka_options)(relation)
        except Unsupported as error:
            return str(error)
        return None
    if not relation.option("path"):
        return f"stream '{relation.name}' needs WITH (path = '...') to be read"
    if problem := csv_problem(relation):
        return problem
    if "${" not in relation.option("path"):  # else checked once expanded (inputs.input_specs)
        try:
            check_stream_path(relation, connector, relation.option("path"))
        except Unsupported as error:
            return str(error)
    return None


def _table(relation: Relation) -> str | None:
    connector = (relation.option("connector") or "files").lower()
    if connector in ("files", "s3") and not relation.option("path"):
        return f"table '{relation.name}' needs WITH (path = '...') to be read"
    if connector == "postgres" and not (relation.option("url") and (relation.option("table") or relation.option("query"))):
        return f"table '{relation.name}': connector 'postgres' needs url and table (or query)"
    if connector not in ("files", "postgres", "s3", "values", "kafka"):
        return (f"table '{relation.name}': connector '{connector}' is not supported (use 'files', 'postgres', 's3' or "
                "'kafka', or seed it with INSERT INTO ... VALUES)")
    return None


def _table_view(script: Script, view: Query) -> str | None:
    if view.joins or view.aggregation is not None or len(view.inputs) != 1:
        # a view of tables only (a subquery's grouped view, plan.analyzer.subqueries): one batch of them
        if all(i.kind == Kind.TABLE and not i.temporal for i in view.inputs) and not view.union_of:
            problems = [_table_view(script, script.view(r.name)) if r.view else _table(r)
                        for r in (script.relation(i.relation) for i in view.inputs)]
            return next((p for p in problems if p), None)
        return f"table view '{view.name}': `run` takes table views over one stream or table, or over tables only"
    if view.unrun or view.union_of or view.distinct is not None:
        what = view.unrun[0] if view.unrun else "UNION ALL" if view.union_of else "DISTINCT"
        return f"table view '{view.name}': {what} is not carried out in a table view by `run` yet (it refuses rather than drop it)"
    relation = script.relation(view.inputs[0].relation)
    if (relation.option("connector") or "").lower() == "kafka" and relation.kind == Kind.STREAM:
        return None  # the topic's records as they are when the query starts
    if relation.view and script.view(relation.name).kind == Kind.TABLE:
        return _table_view(script, script.view(relation.name))  # a table view of a table view: its rows first
    if not relation.view and relation.option("connector") == "values":
        return None  # rows the program wrote (VALUES, INSERT INTO ... VALUES)
    if relation.view or relation.option("connector", "files") != "files" or not relation.option("path"):
        return f"table view '{view.name}': its source must be a declared files stream or table with a path, or a Kafka topic"
    return None


def _filter_joins(ctx: Context) -> str | None:
    """Semi and anti joins (EXISTS, IN, NOT EXISTS, NOT IN, LEFT SEMI / ANTI JOIN) run over tables
    (one batch), for a stream against a table's snapshot (each row decided against it), as
    regular joins (RisingWave's: streams without a time bound, tables that change) and of two
    streams bounded in time (RANGE windows, interval joins, TUMBLE / HOP windows joined on their
    start: streamjoin's operator) so far."""
    for j in ctx.query.joins:
        if j.join_type.filters and j.kind not in (JoinKind.SNAPSHOT, JoinKind.REGULAR, JoinKind.STREAM_STREAM_WINDOW,
                                                  JoinKind.INTERVAL, JoinKind.WINDOW_TVF):
            written = f"{j.subquery} (SELECT ...)" if j.subquery else f"{j.join_type} JOIN"
            return (f"{written} is a {'semi' if j.join_type == JoinType.SEMI else 'anti'} join, here a {j.kind}: semi and "
                    "anti joins run over tables, for a stream against a table's snapshot, as regular joins and as "
                    "joins of two streams in RANGE windows, an interval or TUMBLE / HOP windows so far")
    return None


def _join_kinds(ctx: Context) -> str | None:
    q = ctx.query
    for j in q.joins:
        if not (j.kind.stream_stream or j.kind.with_table or j.kind == JoinKind.BUCKETED):
            return f"{j.kind}s are not supported by `run` yet"
        if j.kind == JoinKind.ASOF_TABLE and _asof_both_sides(j):
            return _asof_both_sides(j)
        if j.kind == JoinKind.BUCKETED:
            if j is not q.joins[-1] or not ctx.top or q.aggregation is not None:
                return "a bucketed table-preserving join must be the last join of the final query in `run`"
            if q.input(j.right).kind != Kind.TABLE or j.join_type != JoinType.RIGHT:
                return "a bucketed table-preserving join runs as `stream OVER (bucket) RIGHT JOIN table` in `run`"
            if not isinstance(q.input(j.left_inputs[-1]).window, BucketWindow):
                return "the stream of a bucketed table-preserving join must be its last input before the table"
    return None


def _cut_chains(ctx: Context) -> str | None:
    q = ctx.query
    if not cuts(q):
        return None
    first = q.joins[cuts(q)[0]]
    where = f"a {first.join_type} JOIN followed by another join"
    if not ctx.top:
        return f"{where} inside a view is not supported by `run` yet; put the chain in the final query"
    if any(j.kind == JoinKind.BUCKETED for j in q.joins):
        return f"{where} and a bucketed table-preserving join in one query are not supported by `run` yet"
    if sink_spec(ctx.script, q) is not None:
        return f"{where} writes to --output (JSON Lines) in `run` yet, not to an S3 sink"
    streams = q.streams()
    for n in cuts(q):
        before = [a for a in streams if a in (*q.joins[n].left_inputs, q.joins[n].right)]
        for j in q.joins[n + 1:]:
            if j.right in streams and start_bounds(j, before, q) is None:
                return (f"{where}: the later join with '{j.right}' needs a time bound (windows or a time range) "
                        f"between '{j.right}' and each of {', '.join(repr(a) for a in before)}")
    return None


def _aggregation(ctx: Context) -> str | None:
    q, agg = ctx.query, ctx.query.aggregation
    if agg is None:
        return None
    if agg.bucket is None:
        return _running(ctx)
    if (agg.bucket_unit or "").upper() in ("MONTH", "YEAR"):
        return f"GROUP BY FLOOR(ROWTIME TO {agg.bucket_unit}) is not supported by `run` yet (SECOND to DAY are)"
    streams = [q.input(a) for a in q.streams()]
    if len(streams) != 1 or any(not j.kind.with_table for j in q.joins):
        return "`run` aggregates one stream (joined with tables only); aggregate joined streams in a later issue"
    stream = streams[0]
    relation = ctx.script.relation(stream.relation)
    if relation.view and ctx.script.view(relation.name).aggregation is not None:
        return "an aggregation over an aggregating view is not supported by `run` yet"
    if stream.window is not None and lag(stream):
        return "an aggregation over a lagged window is not supported by `run` yet"
    for o in q.output:
        for node in o.expression.find_all(exp.Count, exp.Sum, exp.Min, exp.Max, exp.Avg):
            if isinstance(node.this, exp.Distinct) and not (
                isinstance(node, exp.Count) or (isinstance(node, exp.Min | exp.Max) and len(node.this.expressions) == 1)
            ):
                return f"{sql(node)}: of the DISTINCT aggregates, `run` supports COUNT, MIN and MAX in streams yet"
    return None


def _running(ctx: Context) -> str | None:
    from streamjoin.lower.running import running_problem

    if problem := running_problem(ctx.script, ctx.query, ctx.top):
        return problem
    sink = sink_spec(ctx.script, ctx.query) if ctx.top and running_aggregate(ctx.query) else None
    return _changelog_sink(ctx, sink, True) if sink is not None else None


NATIVE_RULES: tuple[Rule, ...] = (
    ("aggregates OVER windows of rows over one stream", _analytic_window),
    ("EMIT EAGER / CHANGES only for the final query's joins", _emit_mode),
    ("inputs that can be read, views that run, RANGE windows", _inputs),
    ("join kinds that run, a bucketed join last", _join_kinds),
    ("a cut chain's later joins bound in time", _cut_chains),
    ("GROUP BY over one stream and a time bucket", _aggregation),
)


# ---------------------------------------------------------------------------- streamjoin's operator


def _custom_shape(ctx: Context) -> str | None:
    q = ctx.query
    regular = all(j.kind == JoinKind.REGULAR for j in q.joins)
    if q.aggregation is not None and regular and running_aggregate(q):  # lower._running_over_custom
        from streamjoin.lower.running import changes_problem

        if problem := changes_problem(q):
            return problem
    elif not ctx.top and q.emit != Emit.FINAL and q.changelog_key() is None:  # (a view of regular joins: lower.changes)
        return (f"a view whose join emits EMIT {q.emit} rows (they change or come out of rowtime order) is not "
                "supported by `run` yet: a view's join on streamjoin's operator runs as a part of its own under EMIT FINAL")
    elif q.aggregation is not None:
        return "an aggregation over a join that needs streamjoin's operator is not supported by `run` yet"
    if problem := chain_problem(q, regular):
        return problem
    join = q.joins[0]
    staged = {sv.alias for sv in staged_views(ctx.script, q, ctx.options)}
    for i in q.inputs:
        relation = ctx.script.relation(i.relation)
        if (relation.view and i.alias not in staged) or i.kind != Kind.STREAM:
            return (f"input '{i.alias}': {join.kind}s with streamjoin's operator read declared streams or aggregating "
                    "views in `run` yet, not tables or other views")
        if i.alias in staged:
            continue
        if i.time_window and i.time_window.column != relation.rowtime and not regular:  # (regular: lower.custom's row windows)
            return f"input '{i.alias}': {i.time_window.function} must window the stream's rowtime ({relation.rowtime})"
    for i in q.inputs:
        if isinstance(i.window, BucketWindow):
            return (f"input '{i.alias}': a bucket window (ORDER BY FLOOR(ROWTIME TO ...)) joined with another stream "
                    "runs on Spark's join under EMIT FINAL only; use TUMBLE(...) window joins")
    return None


_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _custom_condition(ctx: Context) -> str | None:
    from streamjoin.lower.custom import compile_condition

    q = ctx.query
    if q.emit == Emit.CHANGES and any(o.name == OP for o in q.output):
        return f"EMIT CHANGES adds a column '{OP}': rename the output column '{OP}'"
    for join in q.joins[1:]:  # a chain of regular joins
        try:
            compile_condition(join)
        except Unsupported as error:
            return str(error)
    join = q.joins[0]
    if join.kind == JoinKind.ASOF:
        asof = join.condition.asof
        lrt = f"{join.left_inputs[0]}.{q.input(join.left_inputs[0]).rowtime}"
        rrt = f"{join.right}.{q.input(join.right).rowtime}"
        if _plain(asof.left) != lrt or _plain(asof.right) != rrt:
            return f"an ASOF join of two streams orders by their rowtimes: write {rrt} {_FLIP[asof.op]} {lrt}"
        if _asof_both_sides(join):
            return _asof_both_sides(join)
        if q.emit == Emit.EAGER:
            return "EMIT EAGER is not defined for ASOF joins (SEMANTICS §6 covers window joins): use FINAL or CHANGES"
    try:
        compile_condition(join)  # fails here, before any data is read, if Python cannot evaluate it
    except Unsupported as error:
        return str(error)
    return None


def _custom_inputs(ctx: Context) -> str | None:
    staged = {sv.alias for sv in staged_views(ctx.script, ctx.query, ctx.options)}
    for i in ctx.query.inputs:
        relation = ctx.script.relation(i.relation)
        if i.alias in staged:
            check_query(Context(ctx.script, ctx.script.view(relation.name), False, ctx.options))
            continue
        connector = (relation.option("connector") or "files").lower()
        if connector not in (*STREAM_CONNECTORS, "values"):
            return f"input '{i.alias}': connector '{connector}' is not supported for streams yet (use 'files', 's3', 'kinesis', 'kafka' or, for a table, 'postgres-cdc')"
        if not relation.option("path") and connector not in (*LOGS, "values"):
            return f"stream '{relation.name}' needs WITH (path = '...') to be read"
        if problem := csv_problem(relation):
            return problem
    sink = sink_spec(ctx.script, ctx.query)
    if sink is None:
        return None
    if ctx.query.joins[0].kind != JoinKind.REGULAR:
        return "a join on streamjoin's own operator writes to --output (JSON Lines) in `run` yet, not to an S3 sink"
    return _changelog_sink(ctx, sink, ctx.query.emit == Emit.CHANGES or running_aggregate(ctx.query))


def _changelog_sink(ctx: Context, sink, changes: bool) -> str | None:
    forced = (relation_option(ctx.script, sink.name, "force_append_only") or "").lower() == "true"
    if changes and sink.type != "upsert" and not forced:
        return (f"the query writes a changelog (its results change as rows arrive) into sink '{sink.name}', which "
                "appends: declare it type = 'upsert', primary_key = 'col, ...' (format 'delta'), as RisingWave's sinks, "
                "or force_append_only = 'true' (its inserts only)")
    missing = [k for k in sink.primary_key if k not in [c.name for c in ctx.query.output]]
    if missing:
        return f"sink '{sink.name}': primary_key names {', '.join(missing)}, which the query does not write"
    return None


def _asof_both_sides(join) -> str | None:
    """An ASOF join runs ON conditions on one side each (`lower.custom.asof_filters`), not one
    that compares both sides: its nearest row would depend on it."""
    from streamjoin.plan.conditions import one_sided

    _, _, both = one_sided(join.condition.residual, set(join.left_inputs), join.right)
    if not both:
        return None
    return (f"an ASOF join's ON takes equality keys, one inequality and conditions on one side each, not "
            f"{sql(both[0])}, which compares both sides (the nearest row would depend on it: not supported yet); "
            "moving it to WHERE would change the meaning (WHERE drops the rows that ON keeps NULL-extended)")


def _plain(expression: exp.Expression) -> str:
    return f"{expression.table}.{expression.name}" if isinstance(expression, exp.Column) else sql(expression)


CUSTOM_RULES: tuple[Rule, ...] = (
    ("one join of two declared streams", _custom_shape),
    ("a condition the operator evaluates", _custom_condition),
    ("inputs that can be read, output to JSON Lines", _custom_inputs),
)
