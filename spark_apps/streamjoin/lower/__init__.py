"""The logical plan -> Spark Structured Streaming.

`lower()` is the one entry: it gets the query's physical plan (`physical.plan_query`, checked by
`support.checked_plan`) and lowers it by the plan's `Run`, from one table (`_LOWERINGS`): the
micro-batch loop on Spark's batch engine (`batch_join`, `chain_join`, `asof_batch`, `rows_batch`),
streamjoin's own operator (`custom`, `changes`), a chain cut into several Spark queries
(`cut_chain`), or one chain of Spark's joins (`native`, which lowers each join by its kind:
stream-stream, stream-table, ASOF against a table, bucketed, then an aggregation). Views that run
as parts of their own (the plan's `Part`s) are lowered first (`staged_views`).

Base modules that import nothing else from here: `columns` (naming and bound-row conventions),
`expressions` (the plan's expressions as Spark SQL, Python, PostgreSQL), `strategy` (the
predicates the physical plan is decided by), `lowered` (what the runtime gets).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from streamjoin.io.formats.columns import OP
from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.changes import changing_keys, running_changes
from streamjoin.lower.columns import ET_COLUMN
from streamjoin.lower.lowered import Lowered
from streamjoin.lower.physical import PhysicalPlan, Run
from streamjoin.lower.sink_target import sink_spec
from streamjoin.lower.staged_views import lower_staged_views
from streamjoin.lower.strategy import LoweringOptions, in_order, running_aggregate
from streamjoin.lower.support import check_runnable, checked_plan
from streamjoin.plan.model import Emit, Query, Script


@dataclass(frozen=True)
class Lowering:
    """What each way of lowering gets: the plan, the inputs it reads itself, the staged views'
    inputs by where the query finds them, and the options the plan was made with."""

    spark: object
    script: Script
    plan: PhysicalPlan
    specs: list[InputSpec]
    staged: dict[str, InputSpec]
    checkpoint: Path
    options: LoweringOptions

    @property
    def query(self) -> Query:
        return self.plan.source

    def by_alias(self) -> dict[str, InputSpec]:
        return {**{s.alias: s for s in self.specs}, **self.staged}


def lower(spark, script: Script, plan: PhysicalPlan, specs: list[InputSpec], checkpoint: Path | None = None,
          options: LoweringOptions = LoweringOptions()) -> Lowered:
    """The query `plan` runs (`lower.support.checked_plan`: planned and checked) on Spark: the
    lowering its `Run` names, from one table."""
    checkpoint = checkpoint if checkpoint is not None else Path(specs[0].state_dir).parent.parent
    late_root = Path(specs[0].late_dir).parent if specs else checkpoint / "late"
    # views that run as parts of their own run first (lower.staged_views)
    parts, staged, specs, read = lower_staged_views(spark, script, plan, specs, checkpoint, late_root, options)
    lowered = _LOWERINGS[plan.run](Lowering(spark, script, plan, specs, staged, checkpoint, options))
    if plan.run == Run.SPARK_CUT_CHAIN:  # (its parts are the chain's)
        return replace(lowered, plan=plan)
    return replace(lowered, inputs=specs + read, upstream=parts, plan=plan)


def _batch_specs(lowering: Lowering) -> list[InputSpec]:
    """The micro-batch loop's inputs (Spark's batch engine, no streaming frame): a staged view's
    steps read under the view's alias in the query (its columns named as a stream's); the runner
    stages them under the part's name."""
    staged = lowering.staged
    return lowering.specs + [replace(staged[i.alias], alias=i.alias) for i in lowering.query.inputs if i.alias in staged]


def _batch_interval(lowering: Lowering) -> Lowered:
    """Two streams' interval join on the micro-batch loop (lower.batch.batch_join)."""
    from streamjoin.lower.batch.batch_join import lower_batch

    query = lowering.query
    changes = query.emit == Emit.CHANGES and not forced_append(lowering.script, query)  # (a regular semi / anti join)
    return lower_batch(query, _batch_specs(lowering), lowering.plan.joins[0], changes)


def _batch_chain(lowering: Lowering) -> Lowered:
    """A chain of INNER interval joins on the micro-batch loop (lower.batch.chain_join)."""
    from streamjoin.lower.batch.chain_join import lower_chain
    from streamjoin.plan.conditions import chain_reach

    return lower_chain(lowering.query, _batch_specs(lowering), chain_reach(lowering.query))


def _batch_asof(lowering: Lowering) -> Lowered:
    """`r.rowtime <= / < l.rowtime` on the micro-batch loop (lower.batch.asof_batch)."""
    from streamjoin.lower.batch.asof_batch import lower_asof

    return lower_asof(lowering.query, _batch_specs(lowering))


def _batch_rows(lowering: Lowering) -> Lowered:
    """Two ROWS CURRENT ROW windows on the micro-batch loop (lower.batch.rows_batch)."""
    from streamjoin.lower.batch.rows_batch import lower_rows

    return lower_rows(lowering.query, _batch_specs(lowering))


def _operator(lowering: Lowering) -> Lowered:
    """The query on streamjoin's operator (lower.custom); a changing table read alone: its changelog."""
    from streamjoin.lower.custom import lower_custom

    script, query = lowering.script, lowering.query
    columns = [c.name for c in query.output]
    frame = lower_custom(lowering.spark, lowering.plan, lowering.by_alias(), lowering.options, changing_keys(script, query))
    if query.emit == Emit.CHANGES and forced_append(script, query):  # the sink keeps the inserts only (RisingWave)
        from pyspark.sql import functions as F

        frame = frame.where(F.col("__meta") | (F.col(OP) == "+I"))
    elif query.emit == Emit.CHANGES:
        columns.insert(0, OP)
    return Lowered(frame, [], columns, 0, sink=sink_spec(script, query), custom=True, emit=query.emit,
                   order=query.order_within)


def _running(lowering: Lowering) -> Lowered:
    """A GROUP BY without a time bucket over regular joins or a table that changes (lower.changes)."""
    from pyspark.sql import functions as F

    script, query = lowering.script, lowering.query
    frame = running_changes(lowering.spark, script, lowering.plan, lowering.by_alias(), lowering.options)
    columns = [c.name for c in query.output]
    if forced_append(script, query):
        frame = frame.where(F.col(OP) == "+I").drop(OP)
    else:
        columns.insert(0, OP)
    return Lowered(frame, [], columns, 0, sink=sink_spec(script, query), prompt=True)


def _native(lowering: Lowering):
    from streamjoin.lower.native import NativeLowering

    return NativeLowering(lowering.spark, lowering.script, {s.alias: s for s in lowering.specs}, lowering.checkpoint,
                          lowering.staged, lowering.query)


def _cut_chain(lowering: Lowering) -> Lowered:
    """A chain cut into several Spark queries (lower.cut_chain): its parts are the chain's."""
    from streamjoin.lower.cut_chain import lower_cut_chain

    return lower_cut_chain(_native(lowering), lowering.query, lowering.specs)


def _spark(lowering: Lowering) -> Lowered:
    """The query on Spark's own operators (lower.native)."""
    from streamjoin.lower.native import order_delay

    script, query = lowering.script, lowering.query
    native = _native(lowering)
    columns = [c.name for c in query.output]
    frame, bucketed = native.query_frame(query)
    frame = frame.drop(ET_COLUMN)
    if running_aggregate(query) or query.changing_analytics():  # a changelog (lower.running, lower.analytic_changes)
        from pyspark.sql import functions as F

        if forced_append(script, query):
            frame = frame.where(F.col(OP) == "+I").drop(OP)
        else:
            columns.insert(0, OP)
    if query.emit == Emit.CHANGES and OP not in columns:  # stream-table joins decide each row at once: a changelog of inserts
        from pyspark.sql import functions as F

        frame = frame.select(F.lit("+I").alias(OP), "*")
        columns.insert(0, OP)
    return Lowered(frame, [], columns, order_delay(query), native.snapshots, bucketed, sink_spec(script, query),
                   prompt=in_order(query), order=query.order_within)


_LOWERINGS = {Run.BATCH_INTERVAL: _batch_interval, Run.BATCH_CHAIN: _batch_chain, Run.BATCH_ASOF: _batch_asof,
              Run.BATCH_ROWS: _batch_rows, Run.OPERATOR: _operator, Run.OPERATOR_RUNNING: _running, Run.SPARK: _spark,
              Run.SPARK_CUT_CHAIN: _cut_chain,
              Run.TABLES: _spark}  # (a query over tables in `Pipeline.run` is one batch: run_table_query)


def forced_append(script: Script, query: Query) -> bool:
    """The query's sink is declared `force_append_only = 'true'` (RisingWave's FORMAT PLAIN ENCODE
    JSON (force_append_only = 'true')): of a changelog it takes the inserts, as plain rows."""
    sink = next((r for r in script.sinks if r.name == query.sink), None) if query.sink else None
    return sink is not None and (sink.option("force_append_only") or "").lower() == "true"


__all__ = ["Lowered", "LoweringOptions", "check_runnable", "checked_plan", "lower"]
