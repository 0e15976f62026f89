"""How each join runs (physical choices the plan leaves open, for `explain` and `lower`): Spark's
native stream-stream join where it gives SEMANTICS.md's answer, streamjoin's own stateful operator
(`streamjoin.operator`, on transformWithStateInPandas) where it cannot, and where a chain of
joins is cut into several Spark queries. Spark-free: `check` and `explain` use it without Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from streamjoin.lower.probe_keys import keyed_query
from streamjoin.plan.conditions import chain_reach
from streamjoin.plan.model import Emit, Input, Join, JoinKind, JoinType, Kind, Query, Script
from streamjoin.plan.windows import RowsWindow
from streamjoin.settings import Settings

NATIVE = "Spark's native stream-stream join"
BATCH = ("streamjoin's batch interval join (each micro-batch's new rows joined by Spark's batch engine with the "
         "other input's rows still in range, read back from the staged steps; NULL-extended rows when rows leave the range)")
# Without its keyed probe the batch join reads the rows still in range back on every micro-batch:
# worth it while the range is short or the run is bounded; a long range on a live stream whose keys
# the probe cannot take stays on Spark's stateful join (docs/runtime.md, "When").
BATCH_SPAN_MS = 10 * 60 * 1000
CUSTOM = "streamjoin's stateful join operator (transformWithStateInPandas, RocksDB state, event-time timers)"


@dataclass(frozen=True)
class LoweringOptions:
    """Choices the lowering makes that the query does not: which operator runs a two-stream RANGE
    join (`auto`: the default choice per join; `native`; `custom`), and the hash groups of the
    custom operator."""

    join_operator: str = "auto"
    operator_groups: int = 32
    bounded: bool = False  # `run --until-idle`: what the inputs hold now is all there is
    columnar: bool = True  # the operator's column-wise engines where they apply (`by_column`)
    batch_probe: str = "auto"  # the batch interval join's probe (`keyed_sides`)
    probe_in: str = "auto"  # where the keyed probe runs (auto: the driver on a local master, `lower.physical`)
    local: bool = True  # Spark's master is local (its executors are this machine: `runtime.pipeline` reads it)

    @classmethod
    def from_settings(cls, settings: Settings) -> LoweringOptions:
        return cls(settings.join_operator, settings.operator_groups, columnar=settings.operator_columnar,
                   batch_probe=settings.batch_probe, probe_in=settings.probe_in,
                   local=not settings.spark_master or settings.spark_master.startswith("local"))


def custom_reason(query: Query, join: Join, options: LoweringOptions = LoweringOptions()) -> str | None:
    """Why `join` needs the custom operator, or None when Spark's join (or a table join) runs it (an
    EMIT FINAL RANGE join, also under `custom`: retired, docs/architecture.md "Implementations")."""
    if join.kind == JoinKind.ASOF:
        return "Spark has no ASOF join"
    if join.kind == JoinKind.WINDOW_TVF:
        return "a window join pairs rows per window and drops the window when it closes"
    if join.kind == JoinKind.REGULAR:
        return "a regular join keeps every row and its results change as rows arrive (a changelog)"
    if join.kind == JoinKind.CHANGELOG:
        return "the table changes by key while the query runs: a later table row meets the stream rows still waiting for one"
    if not join.kind.stream_stream:
        return None
    if join.join_type.filters:
        return "a semi or anti join of two streams writes each left row once (Spark's join: once per match)"
    rows = [a for a in (*join.left_inputs, join.right) if isinstance(query.input(a).window, RowsWindow)]
    if rows:
        return f"ROWS windows ({', '.join(rows)}) count rows, which Spark's join cannot"
    if query.emit != Emit.FINAL:
        return f"EMIT {query.emit}: Spark's join emits NULL-extended rows only once they are final"
    return None


def interval(join: Join) -> tuple[int, int] | None:
    """`(low, high)` with `low <= right rowtime - left rowtime <= high` (ms) from every time
    bound of a two-stream join, or None when a side is unbounded."""
    left, right = join.left_inputs[-1], join.right
    low, high = None, None
    for b in join.condition.time_bounds:
        lo, hi = (b.low_ms, b.high_ms) if (b.left, b.right) == (left, right) else (
            None if b.high_ms is None else -b.high_ms, None if b.low_ms is None else -b.low_ms)
        low = lo if low is None else (low if lo is None else max(low, lo))
        high = hi if high is None else (high if hi is None else min(high, hi))
    return None if low is None or high is None else (low, high)


def batch_reason(script: Script, query: Query, options: LoweringOptions = LoweringOptions()) -> str | None:
    """Why the batch interval join (`lower.batch.batch_join`) does not run `query`, or None when it does:
    two streams read directly, one interval join with both bounds, EMIT FINAL, JSON Lines output;
    by default (`auto`) when the run is bounded, the range spans at most BATCH_SPAN_MS, or the
    keyed probe finds its pairs (`keyed_query`)."""
    options = _operator_or_auto(query, options)
    if options.join_operator not in ("auto", "batch"):
        return f"STREAMJOIN_JOIN_OPERATOR={options.join_operator}"
    unbatched = _unbatched(query)
    if unbatched:
        return unbatched
    if len(query.joins) > 1:
        return chain_reason(script, query, options)
    if len(query.inputs) != 2 or len(query.joins) != 1 or len(query.streams()) != 2:
        return "it joins two streams only"
    join = query.joins[0]
    own = (regular_reason if join.kind == JoinKind.REGULAR else _asof_reason if join.kind == JoinKind.ASOF
           else _rows_reason if rows_join(query, join) else None)  # the joins of the operator a bounded run batches
    if own is not None:
        return own(script, query, options)
    if join.kind not in (JoinKind.INTERVAL, JoinKind.STREAM_STREAM_WINDOW) or _interval_custom_reason(query, join, options):
        return "it runs interval joins only"
    if any(script.relation(i.relation).view for i in query.inputs):
        return "it reads streams, not views"
    if query.aggregation is not None or query.sink or query.emit != Emit.FINAL and not eager_inner(query):
        return "it writes EMIT FINAL rows (or an INNER join's EMIT EAGER rows) as JSON Lines, without aggregation"
    span = interval(join)
    if span is None:
        return "the time range is unbounded"
    if options.join_operator == "auto" and not options.bounded and span[1] - span[0] > BATCH_SPAN_MS:
        if options.batch_probe == "scan" or not keyed_query(script, query, join):
            return ("the range is long, the run live and the keys not the keyed probe's: re-reading the range every "
                    "micro-batch costs more than Spark's state")
    return None


def _unbatched(query: Query) -> str | None:
    """What the micro-batch loop never writes, whatever the joins."""
    if query.order_within:
        return "it writes rows in rowtime order only, not ordered within a rowtime (ORDER BY ROWTIME, ...)"
    if any(j.join_type.filters for j in query.joins) and (len(query.joins) > 1 or query.joins[0].kind != JoinKind.REGULAR):
        return "a semi or anti join bounded in time: each left row once, at its first match, which streamjoin's operator writes"
    return None


def _operator_or_auto(query: Query, options: LoweringOptions) -> LoweringOptions:
    """`custom` keeps the queries whose joins the operator runs on it (a bounded run included);
    the others are planned as by default (`custom_reason`: the operator's RANGE join was retired)."""
    return replace(options, join_operator="auto") if options.join_operator == "custom" and not uses_custom(query, options) \
        else options


def _interval_custom_reason(query: Query, join: Join, options: LoweringOptions) -> str | None:
    """`custom_reason`, where EMIT EAGER of INNER joins is the batch join's too (`eager_inner`)."""
    return custom_reason(replace(query, emit=Emit.FINAL) if eager_inner(query) else query, join, options)


def eager_inner(query: Query) -> bool:
    """EMIT EAGER of INNER joins: the rows of FINAL, each written as soon as the join finds it
    (`lower.batch.batch_sink.BatchJoinSink`: no wait for the clock, not in rowtime order); an outer
    join's EAGER NULL-extended rows run on streamjoin's operator."""
    return query.emit == Emit.EAGER and all(j.join_type == JoinType.INNER for j in query.joins)


def _asof_reason(script: Script, query: Query, options: LoweringOptions) -> str | None:
    """Why the batch ASOF join (`lower.batch.asof_batch`) does not run the query's one join, or None when
    it does: `r.rowtime <= / < l.rowtime`, INNER or LEFT on keys and nothing else, of two streams
    read directly, EMIT FINAL, JSON Lines output; by default (`auto`) when the run is bounded."""
    join = query.joins[0]
    if join.condition.asof is None or join.condition.asof.op not in (">=", ">"):
        return "an ASOF join runs on it when its right rowtime is at or before the left one (a left row waits for none)"
    if join.join_type not in (JoinType.INNER, JoinType.LEFT) or not join.condition.keys or join.condition.residual:
        return "an ASOF join runs on it when it is INNER or LEFT, on keys, with no other condition"
    return _bounded_streams_reason(script, query, options, "an ASOF join runs on it when the run is bounded (--until-idle): "
                                   "it retains every right row")


def _bounded_streams_reason(script: Script, query: Query, options: LoweringOptions, live: str) -> str | None:
    """What the batch ASOF and ROWS joins both need: two streams read directly, EMIT FINAL rows as
    JSON Lines without aggregation, and by default (`auto`) a bounded run (`live`: why not a live one)."""
    if any(script.relation(i.relation).view for i in query.inputs):
        return "it reads streams, not views"
    if query.aggregation is not None or query.emit != Emit.FINAL or query.sink:
        return "it writes EMIT FINAL rows as JSON Lines, without aggregation"
    if options.join_operator == "auto" and not options.bounded:
        return live
    return None


def rows_join(query: Query, join: Join) -> bool:
    """A join of two ROWS windows (the batch ROWS join's kind, `lower.batch.rows_batch`)."""
    return join.kind == JoinKind.STREAM_STREAM_WINDOW and all(
        isinstance(query.input(a).window, RowsWindow) for a in (join.left_inputs[-1], join.right))


def _rows_reason(script: Script, query: Query, options: LoweringOptions) -> str | None:
    """Why the batch ROWS join (`lower.batch.rows_batch`) does not run the query's one join, or None when
    it does: INNER on keys and nothing else, both windows ROWS CURRENT ROW partitioned by exactly
    their join-key columns, two streams read directly, EMIT FINAL, JSON Lines output; by default
    (`auto`) when the run is bounded."""
    join = query.joins[0]
    windows = [query.input(a).window for a in (join.left_inputs[-1], join.right)]
    if join.join_type != JoinType.INNER or not join.condition.keys or join.condition.residual or join.condition.time_bounds:
        return "a ROWS join runs on it when it is INNER, on keys, with no other condition"
    if any(w.count or set(w.partition_by) != {key_column(pair[n]) for pair in join.condition.keys}
           for n, w in enumerate(windows)):
        return "a ROWS join runs on it when both windows are ROWS CURRENT ROW partitioned by exactly the join keys"
    return _bounded_streams_reason(script, query, options, "a ROWS join runs on it when the run is bounded (--until-idle): "
                                   "it retains every row")


def regular_reason(script: Script, query: Query, options: LoweringOptions = LoweringOptions()) -> str | None:
    """Why the batch interval join does not run a regular join (RisingWave's join without a time
    bound), or None when it does: INNER (or a semi or anti join), of two append-only streams (read directly, or stream
    views run as parts of their own: `staged_views`; no changing table), its rows appended (EMIT EAGER), JSON Lines output; by default (`auto`) when the run is
    bounded (`--until-idle`): every row is in range for ever, so a live run would re-read both
    inputs' whole history every micro-batch, where streamjoin's operator keeps it by key."""
    join = query.joins[0]
    # a semi join of append-only inputs only appends; an anti join's rows are written at the end of
    # input, when no partner can come (the operator writes them at once and withdraws them: the same fold)
    if not (join.join_type == JoinType.INNER and query.emit == Emit.EAGER or join.join_type.filters):
        return "a regular join runs on it when it is INNER and appends, or a semi or anti join (an outer one writes a changelog)"
    staged = {sv.alias for sv in staged_views(script, query, options)}  # (a part of its own writes a view's rows as a stream's)
    if any(script.relation(i.relation).changing or (script.relation(i.relation).view and (
            i.alias not in staged or script.view(i.relation).changelog_key() is not None)) for i in query.inputs):
        return "a regular join runs on it when it reads append-only streams or stream views, not changing tables"
    if query.aggregation is not None or query.sink:
        return "it writes rows as JSON Lines, without aggregation"
    if options.join_operator == "auto" and not options.bounded:
        return "a regular join runs on it when the run is bounded (--until-idle)"
    return None


def chain_reason(script: Script, query: Query, options: LoweringOptions = LoweringOptions()) -> str | None:
    """Why the chain's batch interval join (`lower.batch.chain_join`) does not run a chain of joins, or
    None when it does: streams read directly, every join INNER with a time range (windows or
    BETWEEN) that bounds every input against every other (`chain_reach`), EMIT FINAL or EAGER, JSON Lines
    output; by default (`auto`) when the run is bounded (`--until-idle`): a live chain re-reads
    every input's range each micro-batch, not measured yet against Spark's state (a live EMIT
    EAGER chain runs on it: Spark's joins wait for the clock, the operator joins two inputs)."""
    if len(query.streams()) != len(query.inputs):
        return "a chain runs on it when it joins streams only"
    if any(j.join_type != JoinType.INNER or j.kind not in (JoinKind.INTERVAL, JoinKind.STREAM_STREAM_WINDOW)
           or _interval_custom_reason(query, j, options) for j in query.joins):
        return "a chain runs on it when every join is an INNER interval join"
    if any(script.relation(i.relation).view for i in query.inputs):
        return "it reads streams, not views"
    if query.aggregation is not None or query.sink or query.emit not in (Emit.FINAL, Emit.EAGER):
        return "it writes EMIT FINAL or EAGER rows as JSON Lines, without aggregation"
    if chain_reach(query) is None:
        return "a time range between two of the chain's inputs is unbounded"
    if options.join_operator == "auto" and not options.bounded and query.emit == Emit.FINAL:
        return "a chain runs on it when the run is bounded (--until-idle), or EMIT EAGER (which nothing else runs)"
    return None


def chain_problem(q: Query, regular: bool) -> str | None:
    """One join of two streams, or a chain of regular joins (operator.regular_chain)."""
    if len(q.joins) == 1 and len(q.inputs) == 2:
        return None
    if regular:
        return ("a chain of regular joins writes its rows as they change (EMIT CHANGES), not EMIT FINAL"
                if q.emit == Emit.FINAL and q.aggregation is None else None)
    other = next((j for j in q.joins if j.kind != JoinKind.REGULAR), None)
    if any(j.kind == JoinKind.REGULAR for j in q.joins) and other is not None:
        return (f"a regular join chained with a {other.kind} ({other.right}) is not supported by `run` yet: "
                "a chain of joins on streamjoin's operator is regular joins only (streams and changing tables)")
    filtering = next((j for j in q.joins if j.join_type.filters), None)
    if filtering is not None:  # (EXISTS / IN ...: the outer query's own joins come first)
        written = f"{filtering.subquery} (SELECT ...)" if filtering.subquery else f"{filtering.join_type} JOIN"
        return (f"{written} is a {'semi' if filtering.join_type == JoinType.SEMI else 'anti'} join on streamjoin's "
                "operator, which must be the query's only join of streams bounded in time in `run` yet: join the "
                "other streams in a view and write the subquery over it")
    return ("a join that needs streamjoin's own operator (ROWS windows, EMIT EAGER/CHANGES, ASOF, TUMBLE/HOP, a semi or "
            "anti join) must be the query's only join in `run` yet: join further inputs in a view over it")


def uses_custom(query: Query, options: LoweringOptions = LoweringOptions()) -> bool:
    return any(custom_reason(query, j, options) for j in query.joins)


def group_keys(query: Query, join: Join) -> tuple[tuple[exp.Expression, exp.Expression], ...]:
    """The key pairs the operator partitions by (hash groups); () = one group for everything.

    A ROWS window counts rows across the whole input (or its PARTITION BY), so grouping by the
    join keys is only right when every ROWS side's keys are columns it is partitioned by."""
    # equal windows are paired per window by the operator itself: their columns are not input columns
    window = ("window_start", "window_end")
    keys = tuple((a, b) for a, b in join.condition.keys if not (key_column(a) in window and key_column(b) in window))
    if join.join_type == JoinType.CROSS:
        return ()
    if join.kind == JoinKind.CHANGELOG and "_key" in query.input(join.right).columns and "_key" not in {key_column(b) for _, b in keys}:
        return ()  # a table row may change its join key: its old version must be in the same group
    for n, alias in enumerate((join.left_inputs[-1], join.right)):
        rows = query.input(alias).window
        if isinstance(rows, RowsWindow):
            side_keys = {key_column(pair[n]) for pair in keys}
            if not keys or None in side_keys or not side_keys <= set(rows.partition_by):
                return ()
    return keys


def cuts(query: Query) -> list[int]:
    """The joins after which `run` cuts the chain into another Spark query: every outer
    stream-stream join that a later stream-stream join follows. Spark's later join would run its
    watermark ahead of the NULL-extended rows such a join emits late (and miss their matches),
    so its output is released in rowtime order, with rowtime bounds, as the next query's input
    (docs/runtime.md, "Outer joins inside a chain"). A stream-table join keeps no state: late
    rows meet the snapshot like any other."""
    return [
        n for n, j in enumerate(query.joins)
        if j.join_type.outer and j.kind.stream_stream
        and any(later.kind.stream_stream for later in query.joins[n + 1:])
    ]


def by_column(query: Query, join: Join, options: LoweringOptions) -> str | None:
    """The operator's column-wise engine that runs the join where its columns allow it (`lower.custom`
    checks their types): "asof" for ASOF `right.rowtime <= / < left.rowtime`, "rows" for an inner
    join of ROWS windows each partitioned by exactly its join-key columns; None: row by row."""
    keys = group_keys(query, join)
    if not (options.columnar and keys) or join.condition.residual:  # (an ASOF's side filters: row by row)
        return None
    if join.kind == JoinKind.ASOF and join.condition.asof.op in (">=", ">"):
        return "asof"
    windows = [query.input(alias).window for alias in (join.left_inputs[-1], join.right)]
    if join.kind == JoinKind.STREAM_STREAM_WINDOW and join.join_type == JoinType.INNER and not join.condition.residual \
            and all(isinstance(w, RowsWindow) and set(w.partition_by) == {key_column(pair[n]) for pair in keys}
                    for n, w in enumerate(windows)):
        return "rows"
    return None


def key_column(expression: exp.Expression) -> str | None:
    return expression.name if isinstance(expression, exp.Column) else None


@dataclass(frozen=True)
class StagedView:
    alias: str  # the reading query's input
    view: Query
    path: str = ""  # the views between the top query and the reader ("V1.V2."); "" : the top query reads it

    @property
    def key(self) -> str:
        """Where the reader's lowering finds the staged input: its inputs' prefix and alias."""
        return self.path + self.alias


def staged_views(script: Script, query: Query, options: LoweringOptions = LoweringOptions()) -> list[StagedView]:
    """The inputs of `query` that run as parts of their own: aggregating stream views that take
    part in a join with another stream (a view only joined with tables runs inline), every
    stream view a join on streamjoin's operator reads (the operator reads staged steps only), and
    every view that promotes a new rowtime (its rows come in its inputs' order: the part writes
    them as they come, and the reader's staging orders them by the new rowtime, with the t-sort's
    disorder as lateness); views with aggregates OVER windows, and every stream view a query with
    them reads (`alone`, `promoting_views`)."""
    joined = {a for j in query.joins if not (j.kind.with_table or j.kind == JoinKind.BUCKETED)
              for a in (*j.left_inputs, j.right)}
    custom = uses_custom(query, options)
    return [StagedView(i.alias, script.view(i.relation)) for i in query.inputs
            if stream_view(script, i) and (alone(script.view(i.relation)) or in_order(query) or i.alias in joined and (
                custom or script.view(i.relation).aggregation is not None))]


def promotes(view: Query) -> bool:
    return view.disorder_ms is not None


def changing_alone(script: Script, query: Query) -> bool:
    """One table that changes, read alone (a postgres-cdc or Debezium table's, or a running aggregate's view's
    (plan Query.changelog_key) rows, or its counts by a GROUP BY without a time bucket): its changes come off
    the operator (`lower.custom`, a chain of no joins) as a changelog, which the groups follow (`lower.running`)."""
    return (not query.joins and len(query.inputs) == 1 and (query.aggregation is None or running_aggregate(query))
            and script.relation(query.inputs[0].relation).changing)


def running_aggregate(query: Query) -> bool:
    """A GROUP BY without a time bucket over a stream: a running aggregate (lower.running)."""
    return query.aggregation is not None and query.aggregation.bucket is None and bool(query.streams())


def in_order(query: Query) -> bool:
    """A query whose stream views run as parts of their own, so that it reads staged steps: one
    with windowed aggregates (it needs its input's order) or a running aggregate (its stateful
    step follows no other)."""
    return bool(query.analytics) or running_aggregate(query)


def alone(view: Query) -> bool:
    """A stream view that runs as a part of its own wherever it is read: one that promotes a new
    rowtime, computes aggregates OVER windows of rows (lower.analytic: a stateful step that only a
    projection may follow in its query), joins on streamjoin's operator (its rows, held until
    final, are written in rowtime order with the operator's holds as bounds), or orders the rows
    of one rowtime (ORDER BY ROWTIME, c, ...: its part sorts each release so), or is a running
    aggregate (its part writes its changelog, which its reader reads as a table that changes)."""
    return (promotes(view) or bool(view.analytics) or uses_custom(view) or bool(view.order_within)
            or view.changelog_key() is not None)


def promoting_views(script: Script, query: Query) -> list[StagedView]:
    """The inputs of a view that run as parts of their own: views that run `alone`, and every
    stream view a view with aggregates OVER windows reads (it needs its input's order, which only
    a staged input has); the others run inline in the view (`check_runnable` refuses what would
    need more)."""
    return [StagedView(i.alias, script.view(i.relation)) for i in query.inputs
            if stream_view(script, i) and (alone(script.view(i.relation)) or in_order(query))]


def stream_view(script: Script, item: Input) -> bool:
    """Whether the input reads a stream view."""
    relation = script.relation(item.relation)
    return relation.view and item.kind == Kind.STREAM and script.view(relation.name).kind == Kind.STREAM
