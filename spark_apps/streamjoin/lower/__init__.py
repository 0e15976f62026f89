"""The logical plan -> Spark Structured Streaming.

`lower()` is the one entry: it checks what `run` runs (`support`), then dispatches by how the
query's joins run (`strategy`): streamjoin's own operator (`custom`), a chain cut into several
Spark queries (`cut_chain`), or one chain of Spark's joins (`native`, which dispatches each join
by its kind: stream-stream, stream-table, ASOF against a table, bucketed, then an aggregation).

Base modules that import nothing else from here: `columns` (naming and bound-row conventions),
`expressions` (the plan's expressions as Spark SQL, Python, PostgreSQL), `strategy` (which
operator, where a chain is cut), `lowered` (what the runtime gets).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from streamjoin.io.staging import InputSpec
from streamjoin.lower.changes import changing_keys, running_changes
from streamjoin.lower.columns import ET_COLUMN
from streamjoin.lower.lowered import OP, Lowered
from streamjoin.lower.staged_views import lower_staged_views
from streamjoin.lower.strategy import (
    LoweringOptions,
    batch_reason,
    chain_keys,
    changing_alone,
    cuts,
    in_order,
    rows_join,
    running_aggregate,
    uses_custom,
)
from streamjoin.lower.support import check_runnable, sink_spec
from streamjoin.plan.model import Emit, JoinKind, Query, Script


def _lower_batch(spark, query: Query, specs: list[InputSpec], options: LoweringOptions) -> Lowered:
    """The query on Spark's batch engine (`strategy.batch_reason`): no streaming frame."""
    if len(query.joins) > 1:  # a chain of INNER interval joins (lower.chain_join)
        from streamjoin.lower.chain_join import lower_chain
        from streamjoin.lower.strategy import chain_reach

        return lower_chain(query, specs, chain_reach(query))
    if query.joins[0].kind == JoinKind.ASOF:  # `r.rowtime <= / < l.rowtime` (lower.asof_batch)
        from streamjoin.lower.asof_batch import lower_asof

        return lower_asof(query, specs)
    if rows_join(query, query.joins[0]):  # two ROWS CURRENT ROW windows (lower.rows_batch)
        from streamjoin.lower.rows_batch import lower_rows

        return lower_rows(query, specs)
    from streamjoin.lower.batch_join import lower_batch

    return lower_batch(spark, query, specs, options)


def lower(spark, script: Script, query: Query, specs: list[InputSpec], checkpoint: Path | None = None,
          options: LoweringOptions = LoweringOptions()) -> Lowered:
    check_runnable(script, query, options)
    checkpoint = checkpoint if checkpoint is not None else Path(specs[0].state_dir).parent.parent
    late_root = Path(specs[0].late_dir).parent if specs else checkpoint / "late"
    columns = [c.name for c in query.output]
    # aggregating views joined with streams run first, as parts of their own (lower.staged_views)
    parts, staged, specs, read = lower_staged_views(spark, script, query, specs, checkpoint, late_root, options)
    inputs = specs + read
    if batch_reason(script, query, options) is None:  # (parts: the stream views of a regular join, staged)
        if not parts:
            return _lower_batch(spark, query, specs, options)
        # the join reads a staged view's steps under the view's alias in the query (its columns
        # named as a stream's); the runner stages them under the part's name
        own = [replace(staged[i.alias], alias=i.alias) for i in query.inputs if i.alias in staged]
        return replace(_lower_batch(spark, query, specs + own, options), inputs=inputs, upstream=parts)
    if (uses_custom(query, options) or changing_alone(script, query)) and running_aggregate(query):  # a changelog's groups
        return _running_over_custom(spark, script, query, {**{s.alias: s for s in specs}, **staged}, options, inputs, parts)
    if uses_custom(query, options) or changing_alone(script, query):  # (a changing table's rows: its changelog)
        from streamjoin.lower.custom import lower_custom

        frame = lower_custom(spark, query, {**{s.alias: s for s in specs}, **staged}, options, changing_keys(script, query),
                             chain_keys(script, query) if len(query.joins) > 1 else ())
        if query.emit == Emit.CHANGES and forced_append(script, query):  # the sink keeps the inserts only (RisingWave)
            from pyspark.sql import functions as F

            frame = frame.where(F.col("__meta") | (F.col(OP) == "+I"))
        elif query.emit == Emit.CHANGES:
            columns.insert(0, OP)
        return Lowered(frame, inputs, columns, 0, sink=sink_spec(script, query), custom=True, emit=query.emit, upstream=parts,
                       order=query.order_within)
    from streamjoin.lower.native import NativeLowering, order_delay

    lowering = NativeLowering(spark, script, {s.alias: s for s in specs}, checkpoint, staged, query)
    if cuts(query):
        from streamjoin.lower.cut_chain import lower_cut_chain

        return lower_cut_chain(lowering, query, specs)
    frame, bucketed = lowering.query_frame(query)
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
    return Lowered(frame, inputs, columns, order_delay(query), lowering.snapshots, bucketed, sink_spec(script, query),
                   upstream=parts, prompt=in_order(query), order=query.order_within)


def forced_append(script: Script, query: Query) -> bool:
    """The query's sink is declared `force_append_only = 'true'` (RisingWave's FORMAT PLAIN ENCODE
    JSON (force_append_only = 'true')): of a changelog it takes the inserts, as plain rows."""
    sink = next((r for r in script.sinks if r.name == query.sink), None) if query.sink else None
    return sink is not None and (sink.option("force_append_only") or "").lower() == "true"


def _running_over_custom(spark, script: Script, query: Query, specs: dict, options: LoweringOptions, inputs: list,
                         parts: list) -> Lowered:
    """A GROUP BY without a time bucket over regular joins or a table that changes (lower.changes)."""
    from pyspark.sql import functions as F

    frame = running_changes(spark, script, query, specs, options)
    columns = [c.name for c in query.output]
    if forced_append(script, query):
        frame = frame.where(F.col(OP) == "+I").drop(OP)
    else:
        columns.insert(0, OP)
    return Lowered(frame, inputs, columns, 0, sink=sink_spec(script, query), upstream=parts, prompt=True)


__all__ = ["Lowered", "LoweringOptions", "check_runnable", "lower"]
