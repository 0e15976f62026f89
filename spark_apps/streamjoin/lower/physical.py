"""The physical plan: how a query runs, decided once.

`plan_query` is the one function from (script, query, options, what the checkpoint ran before) to
a small typed value: which engine runs the query (`Run`: Spark's streaming operators,
streamjoin's stateful operator, or the micro-batch loop on Spark's batch engine), each join's
node (`JoinNode`: its engine and implementation, the operator's groups and column-wise engine,
the batch join's probe, where Spark's chain is cut), the views that run as parts of their own
(`Part`), the sink and the emission. Every choice `lower.strategy`'s predicates make is made
here and nowhere else: `lower.lower` dispatches on `PhysicalPlan.run` through one table,
`lower.support` picks its rules by it, `explain` prints it, and a run records it (status.json,
the checkpoint's plan.json). Spark-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from streamjoin.lower.chain_shape import chain_keys
from streamjoin.lower.probe_keys import keyed_query
from streamjoin.lower.strategy import (
    LoweringOptions,
    batch_reason,
    by_column,
    changing_alone,
    custom_reason,
    cuts,
    eager_inner,
    group_keys,
    interval,
    key_column,
    promoting_views,
    rows_join,
    running_aggregate,
    staged_views,
    stream_view,
    uses_custom,
)
from streamjoin.plan.model import ROWS, Emit, Join, JoinKind, Kind, Query, Script


class Engine(StrEnum):
    SPARK = "spark"  # Spark's own operators (Structured Streaming's joins, lookups, aggregation; a batch over tables)
    OPERATOR = "operator"  # streamjoin's stateful operator, in a Spark streaming query (streamjoin.operator)
    BATCH = "batch"  # the micro-batch loop on Spark's batch engine: no streaming query (lower.batch.batch_sink)

    @property
    def label(self) -> str:
        return {"spark": "Spark", "operator": "streamjoin's operator", "batch": "streamjoin's micro-batch loop"}[self]


class Run(StrEnum):
    """How a query as a whole is lowered: the keys of `lower.lower`'s dispatch table."""

    BATCH_INTERVAL = "interval join"  # lower.batch.batch_join (a regular join: an interval without bounds)
    BATCH_CHAIN = "chain of interval joins"  # lower.batch.chain_join
    BATCH_ASOF = "ASOF join"  # lower.batch.asof_batch
    BATCH_ROWS = "ROWS join"  # lower.batch.rows_batch
    OPERATOR = "join"  # lower.custom
    OPERATOR_RUNNING = "join, then running groups"  # lower.changes.running_changes
    SPARK = "streaming query"  # lower.native
    SPARK_CUT_CHAIN = "streaming queries, the chain cut after its outer joins"  # lower.cut_chain
    SPARK_ONE_BATCH = "one batch job once the inputs end"  # a bounded run's aggregating view (physical.bounded_aggregation)
    TABLES = "one batch over the tables"  # a query over tables only (runtime.pipeline.run_table_query)

    @property
    def engine(self) -> Engine:
        if self.name.startswith("BATCH"):
            return Engine.BATCH
        return Engine.OPERATOR if self.name.startswith("OPERATOR") else Engine.SPARK


@dataclass(frozen=True)
class JoinNode:
    number: int  # 1 = the query's first join
    engine: Engine
    implementation: str
    why: str | None = None  # why streamjoin's operator runs it (strategy.custom_reason)
    groups: str | None = None  # the operator's groups: "by the join keys", "by the chain's key" or "one"
    by_column: str | None = None  # the operator's column-wise engine where the columns' types allow: "asof", "rows"
    probe: str | None = None  # the batch interval join's pairs: "keyed" (lower.batch.interval_probe) or "scan"
    probe_in: str | None = None  # where the keyed probe runs: "driver" or "tasks"
    cut_after: bool = False  # Spark's chain is cut after this join (strategy.cuts)

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, False)}

    def describe(self) -> str:
        extra = [f"groups: {self.groups}"] if self.groups else []
        extra += [f"by column: {self.by_column}"] if self.by_column else []
        extra += [f"probe: {self.probe}" + (f", in the {self.probe_in}" if self.probe_in else "")] if self.probe else []
        extra += ["the chain is cut after it"] if self.cut_after else []
        return f"[{self.number}] {self.implementation} on {self.engine.label}" + (f" ({'; '.join(extra)})" if extra else "")


@dataclass(frozen=True)
class Part:
    """A stream view that runs as a part of its own (a query of its own whose rows are staged)."""

    key: str  # where its reader finds it: the readers' views' path and the reader's alias ("V1.V2.a")
    plan: PhysicalPlan  # the view's

    @property
    def run(self) -> Run:
        return self.plan.run

    def to_dict(self) -> dict:
        return {"key": self.key, **self.plan.to_dict()}


@dataclass(frozen=True)
class PhysicalPlan:
    query: str
    run: Run
    joins: tuple[JoinNode, ...] = ()
    parts: tuple[Part, ...] = ()
    sink: str = "output"  # "output" (--output: JSON Lines, a topic, a stream) or the INSERT INTO sink's name
    emit: str = "FINAL"
    rules: Engine = Engine.SPARK  # the rules `run` checks the query by (lower.support): SPARK's or OPERATOR's
    # the operator's group key (its pairs; a chain's one column per input); () = one group
    group_key: tuple = field(default=(), compare=False, repr=False)
    source: Query | None = field(default=None, compare=False, repr=False)  # the query planned
    operator_groups: int | None = None  # the operator's hash groups of its group key (its state is kept by them)

    @property
    def engine(self) -> Engine:
        return self.run.engine

    def part(self, key: str) -> Part | None:
        return next((p for p in self.parts if p.key == key), None)

    def to_dict(self) -> dict:
        return {"query": self.query, "engine": str(self.engine), "run": str(self.run),
                "joins": [j.to_dict() for j in self.joins], "parts": [p.to_dict() for p in self.parts],
                "sink": self.sink, "emit": self.emit,
                **({"operator_groups": self.operator_groups} if self.operator_groups is not None else {})}

    def lines(self) -> list[str]:
        """The plan as explain prints it."""
        into = "--output" if self.sink == "output" else f"sink {self.sink}"
        lines = [f"plan: {self.run} on {self.engine.label}; emit {self.emit}; into {into}"]
        lines += [f"  {j.describe()}" for j in self.joins]
        lines += [f"  part {p.key}: view {p.plan.query}, {p.run} on {p.plan.engine.label} (run first; its rows staged)"
                  for p in self.parts]
        return lines


def resumed(options: LoweringOptions, recorded: str | None) -> LoweringOptions:
    """The options that keep a resumed query on the engine its checkpoint ran on (`recorded`:
    `runtime.checkpoint.ran_on`): "spark" (a Spark streaming query) or "batch" (the micro-batch
    loop); the other would join the staged inputs again from their first step."""
    if recorded == "spark" and options.join_operator in ("auto", "batch"):
        return replace(options, join_operator="native")  # (streamjoin's operator where Spark's join cannot)
    if recorded == "batch" and options.join_operator == "auto":
        return replace(options, join_operator="batch")
    return options


class EngineConflict(ValueError):
    """A join operator forced (STREAMJOIN_JOIN_OPERATOR) on a checkpoint another engine ran."""


def plan_query(script: Script, query: Query, options: LoweringOptions = LoweringOptions(),
               recorded: str | None = None, top: bool = True) -> PhysicalPlan:
    """How `query` runs (`top`: the query `run` runs; else a view as a part of its own). On a
    checkpoint (`recorded`: the engine it ran on, "spark" or "batch") the query keeps that engine:
    by default (`auto`) it is planned so; a join operator forced onto the other engine is refused
    (EngineConflict), where it once ran on the checkpoint's engine without a word."""
    run = _run(script, query, options) if top or _tables(query) else _part_run(script, query, options, inner=False)
    if recorded is not None and top and run != Run.TABLES and _family(run) != recorded:
        if options.join_operator != "auto":
            raise EngineConflict(
                f"the checkpoint's query ran on {_FAMILY[recorded]}; STREAMJOIN_JOIN_OPERATOR={options.join_operator} "
                f"would run it on {_FAMILY[_family(run)]}, which would join its inputs again from the first row: unset it "
                "(the default follows the checkpoint) or start the query on a new checkpoint")
        options = resumed(options, recorded)
        run = _run(script, query, options)
    return _planned(script, query, options, run, _parts(script, query, options) if top and run != Run.TABLES else (), top)


_FAMILY = {"batch": "streamjoin's micro-batch loop", "spark": "a Spark streaming query"}


def _family(run: Run) -> str:
    """What a checkpoint records of the engine (runtime.checkpoint.ran_on)."""
    return "batch" if run.engine == Engine.BATCH else "spark"


def _planned(script: Script, query: Query, options: LoweringOptions, run: Run, parts: tuple[Part, ...],
             top: bool = True) -> PhysicalPlan:
    """The plan's nodes once its `Run` is chosen. Its rules: the query `run` runs is checked by the
    operator's where a join needs the operator live, also when a bounded run batches it (what
    `check` accepts runs both ways); a view, by the engine its part runs on (`_part_run`)."""
    group_key = _group_key(script, query) if run.engine == Engine.OPERATOR else ()
    joins = tuple(_join_node(script, query, n, options, run, group_key) for n in range(len(query.joins)))
    custom = runs_custom(script, query, options) if top else uses_custom(query)
    rules = Engine.OPERATOR if custom else Engine.SPARK
    return PhysicalPlan(query.name, run, joins, parts, query.sink or "output", str(query.emit), rules, group_key, query,
                        options.operator_groups if group_key else None)


def runs_custom(script: Script, query: Query, options: LoweringOptions) -> bool:
    """`uses_custom`, but for joins that need the operator only for EMIT EAGER, which the batch join runs."""
    return uses_custom(query, options) and not (eager_inner(query) and not uses_custom(replace(query, emit=Emit.FINAL), options)
                                                and batch_reason(script, query, options) is None)


def changing_keys(script: Script, query: Query) -> tuple:
    """Each input's primary key in regular joins (two inputs, or a chain's) when it is a table fed
    by its changes, else ()."""
    if not query.joins and changing_alone(script, query):  # a changing table's groups, read alone
        return (script.relation(query.inputs[0].relation).primary_key,)
    if not query.joins or query.joins[0].kind != JoinKind.REGULAR:
        return ((), ())
    aliases = (query.joins[0].left_inputs[0], *(j.right for j in query.joins))
    relations = [script.relation(query.input(a).relation) for a in aliases]
    return tuple(r.primary_key if r.changing else () for r in relations)


def _run(script: Script, query: Query, options: LoweringOptions) -> Run:
    if _tables(query):
        return Run.TABLES
    if batch_reason(script, query, options) is None:
        if len(query.joins) > 1:
            return Run.BATCH_CHAIN
        if query.joins[0].kind == JoinKind.ASOF:  # `r.rowtime <= / < l.rowtime`
            return Run.BATCH_ASOF
        return Run.BATCH_ROWS if rows_join(query, query.joins[0]) else Run.BATCH_INTERVAL
    if uses_custom(query, options) or changing_alone(script, query):  # (a changing table's rows: its changelog)
        return Run.OPERATOR_RUNNING if running_aggregate(query) else Run.OPERATOR
    return Run.SPARK_CUT_CHAIN if cuts(query) else Run.SPARK


def _tables(query: Query) -> bool:
    """A SELECT TABLE that is not a running aggregate (a changelog): one batch over tables."""
    return query.kind != Kind.STREAM and not running_aggregate(query)


def _part_run(script: Script, view: Query, options: LoweringOptions, inner: bool) -> Run:
    """How a view runs as a part of its own (`inner`: it reads staged inputs itself). Its join's
    operator is the default choice: the join options measure the query `run` runs."""
    custom = uses_custom(view)
    if running_aggregate(view) and (custom or changing_alone(script, view)):  # the groups of a changelog
        return Run.OPERATOR_RUNNING
    if custom:
        return Run.OPERATOR
    if options.bounded and not inner and view.changelog_key() is None and bounded_aggregation(script, view):
        return Run.SPARK_ONE_BATCH
    return Run.SPARK


def bounded_aggregation(script: Script, view: Query) -> bool:
    """Whether a bounded run computes the view's rows as one Spark batch job once its inputs have
    ended, instead of a streaming query: a GROUP BY per time bucket (TUMBLE / HOP windows,
    FLOOR(ROWTIME TO unit)) over one declared stream, without joins, OVER windows or UNION. Its
    rows are those the streaming query writes: every bucket closes at end of input (SEMANTICS §1),
    and a staged step holds no row late to the clock, so none is dropped either way. (Nexmark q8:
    two such views joined; 80K rows through two streaming queries cost ~20 CPU s in the JVM.)"""
    agg = view.aggregation
    return (agg is not None and agg.bucket is not None and not view.joins and not view.analytics and not view.union_of
            and len(view.inputs) == 1 and view.inputs[0].kind == Kind.STREAM
            and not script.relation(view.inputs[0].relation).view)


def _parts(script: Script, query: Query, options: LoweringOptions) -> tuple[Part, ...]:
    """The views that run as parts of their own, innermost first (as `lower.staged_views` lowers them)."""
    parts: list[Part] = []

    def stage(reader: Query, path: str) -> bool:
        """Plan the parts `reader` (read at `path`) needs; whether its own frame reads a staged input."""
        reads = False
        level = {sv.alias for sv in (staged_views(script, reader, options) if not path else promoting_views(script, reader))}
        for item in reader.inputs:
            if not stream_view(script, item):
                continue
            view = script.view(script.relation(item.relation).name)
            inner_path = f"{path}{view.name}."
            if item.alias not in level:
                reads = stage(view, inner_path) or reads  # runs inline: its own promoting views are staged
                continue
            inner = stage(view, inner_path)
            parts.append(Part(path + item.alias, _planned(script, view, options, _part_run(script, view, options, inner), (),
                                                          top=False)))
            reads = True
        return reads

    stage(query, "")
    return tuple(parts)


def staged_inputs(script: Script, query: Query, options: LoweringOptions, top: bool = True) -> list[str]:
    """The inputs of `query` that are views run as parts of their own: the query `run` runs
    stages `strategy.staged_views`, a view running as a part `strategy.promoting_views`."""
    return [sv.alias for sv in (staged_views(script, query, options) if top else promoting_views(script, query))]


def _group_key(script: Script, query: Query) -> tuple:
    """The operator's group key: the join's key pairs (strategy.group_keys) or a chain's key, one
    column per input (chain_shape.chain_keys); () = one group, also when a changing table's row may
    change its join key (its old version must be in the same group)."""
    if not query.joins:
        return ()
    keys = group_keys(query, query.joins[0]) if len(query.joins) == 1 else chain_keys(script, query)
    if keys and any(pk and pk[0] != ROWS and not set(pk) <= {key_column(pair[n]) for pair in keys}
                    for n, pk in enumerate(changing_keys(script, query))):
        return ()
    return keys


def _join_node(script: Script, query: Query, n: int, options: LoweringOptions, run: Run, group_key: tuple) -> JoinNode:
    join = query.joins[n]
    if run == Run.TABLES:
        return JoinNode(n + 1, Engine.SPARK, "join in one batch over the tables' rows")
    if run.engine == Engine.BATCH:
        return _batch_node(script, query, join, n, options, run)
    if join.kind == JoinKind.ASOF_TABLE:
        return JoinNode(n + 1, Engine.SPARK, "ASOF lookup in the broadcast table snapshot")
    if join.kind.with_table:
        return JoinNode(n + 1, Engine.SPARK, "lookup in the table snapshot" if join.kind != JoinKind.TEMPORAL
                        else "lookup in the table as of each micro-batch")
    if join.kind == JoinKind.BUCKETED:
        return JoinNode(n + 1, Engine.SPARK, "bucketed join preserving the table")
    reason = custom_reason(query, join, options)
    if run.engine == Engine.OPERATOR and reason is not None:
        chain = len(query.joins) > 1
        groups = ("by the chain's key" if chain else "by the join keys") if group_key else "one"
        return JoinNode(n + 1, Engine.OPERATOR, "regular chain" if chain else _OPERATOR_JOINS.get(join.kind, "window join"),
                        why=reason, groups=groups, by_column=None if chain else by_column(query, join, options))
    return JoinNode(n + 1, Engine.SPARK, "stream-stream join", cut_after=n in cuts(query))


_OPERATOR_JOINS = {JoinKind.ASOF: "ASOF join", JoinKind.WINDOW_TVF: "window join (TUMBLE / HOP)",
                   JoinKind.REGULAR: "regular join", JoinKind.CHANGELOG: "changelog join",
                   JoinKind.INTERVAL: "window join", JoinKind.STREAM_STREAM_WINDOW: "window join"}


def _batch_node(script: Script, query: Query, join: Join, n: int, options: LoweringOptions, run: Run) -> JoinNode:
    if run != Run.BATCH_INTERVAL:
        return JoinNode(n + 1, Engine.BATCH, {Run.BATCH_CHAIN: "chain of interval joins", Run.BATCH_ASOF: "ASOF join",
                                              Run.BATCH_ROWS: "ROWS join"}[run])
    span = interval(join)  # none: a regular join (an interval without bounds: strategy.regular_reason)
    wanted = options.batch_probe == "keyed" or (options.batch_probe == "auto" and not options.bounded)
    keyed = wanted and span is not None and keyed_query(script, query, join)
    place = (options.probe_in if options.probe_in != "auto" else "driver" if options.local else "tasks") if keyed else None
    return JoinNode(n + 1, Engine.BATCH, "regular join" if join.kind == JoinKind.REGULAR else "interval join",
                    probe="keyed" if keyed else "scan", probe_in=place)


def key_columns(join: Join) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Each input's key columns, in key-pair order (a keyed probe's join: plain columns)."""
    return tuple(a.name for a, _ in join.condition.keys), tuple(b.name for _, b in join.condition.keys)


__all__ = ["Engine", "JoinNode", "Part", "PhysicalPlan", "Run", "key_columns", "plan_query", "resumed", "staged_inputs"]
