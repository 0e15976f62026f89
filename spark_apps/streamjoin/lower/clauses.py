"""What `run` refuses that `check` reads (lower.support's first rules): clauses it does not carry
out yet (DISTINCT ON over a stream, a UNION ALL it cannot merge, ORDER BY, LIMIT, QUALIFY), changing tables read
other than by a regular join, and what a query over tables only (one batch) cannot hold.
`ctx`: lower.support.Context."""

from __future__ import annotations

from streamjoin.errors import Unsupported
from streamjoin.lower.strategy import changing_alone
from streamjoin.plan.model import JoinKind, Kind, Query, Script
from streamjoin.plan.rewrites.script_time import versioned


def clauses_not_run(ctx) -> str | None:
    """SELECT DISTINCT ON over a stream (a plain DISTINCT is a GROUP BY: plan.analyzer.compound), UNION ALL
    views whose branches `run` cannot merge (lower.union) and HAVING / ORDER BY / LIMIT / QUALIFY are planned
    (`check`, `explain`), not run yet."""
    q = ctx.query
    if q.distinct is not None:
        what = "SELECT DISTINCT ON (...)" if q.distinct else "SELECT DISTINCT"
        return (f"{what} over a stream is not run yet (its first row per value, kept for as long as the query runs): "
                "`run` refuses it rather than write the duplicates; group by the columns instead, per time bucket")
    if q.unrun:
        return (f"{q.unrun[0]}: `run` does not carry it out yet, and refuses the query rather than write the rows it would "
                "remove or reorder; filter or order in a view or downstream instead")
    if q.union_of:
        from streamjoin.lower.union import union_problem

        problem = union_problem(ctx.script, q)
        if problem:
            return problem
    if q.order_within and ctx.top:
        return _ordered_output(ctx)
    return None


def _ordered_output(ctx) -> str | None:
    """ORDER BY ROWTIME, c, ... in the final query: its rows of one rowtime are sorted when they are
    released, in JSON Lines (files, stdout, a topic) of EMIT FINAL rows; a view with it runs alone."""
    from streamjoin.lower.strategy import running_aggregate

    q = ctx.query
    what = f"ORDER BY ROWTIME, {', '.join(c for c, _ in q.order_within)}"
    sink = next((r for r in ctx.script.sinks if r.name == q.sink), None) if q.sink else None
    if sink is not None and (sink.option("connector") or "").lower() != "kafka":  # an S3 / Delta sink (lower.support.sink_spec)
        return f"{what}: the rows of an S3 sink are not ordered within a rowtime by `run` yet; order them in a view it reads"
    if q.emit != "FINAL" or running_aggregate(q) or any(j.kind == JoinKind.BUCKETED for j in q.joins):
        return f"{what}: rows that leave as they are decided (EMIT {q.emit}, a changelog, a bucketed join) are not ordered by `run` yet"
    return None


def changing_outside_regular(ctx) -> str | None:
    """A table that changes (FORMAT DEBEZIUM / UPSERT, postgres-cdc) is followed through regular joins."""
    q = ctx.query
    if changing_alone(ctx.script, q):  # its groups follow its changes (lower._running_over_custom)
        return None
    in_regular = {a for j in q.joins if j.kind == JoinKind.REGULAR for a in (*j.left_inputs, j.right)}
    for i in q.inputs:
        relation = ctx.script.relation(i.relation)
        if relation.changing and i.alias not in in_regular:
            how = ("grouped by a time bucket" if q.aggregation is not None and not q.joins else
                   "read alone without GROUP BY" if not q.joins else "joined with a window or time bound")
            return (f"input '{i.alias}': '{relation.name}' changes by its changelog (rows updated and deleted), and `run` follows "
                    f"a changing table through regular joins and GROUP BY without a time bucket only yet, not {how}: "
                    "join it without a window or time bound, or group it")
    return None


def check_table_query(script: Script, query: Query) -> None:
    """A query over tables only runs once, as a batch over their snapshots (`NativeLowering.table_frame`):
    joins of tables (ASOF joins too: lower.asof_table), filters, window functions, GROUP BY (not
    of time windows) and views of tables; not sinks yet."""
    if any(i.kind == Kind.STREAM for i in query.inputs):  # Lenses' SELECT TABLE over streams
        raise Unsupported("`run` runs streaming queries (SELECT STREAM over streams); a SELECT TABLE over streams (a "
                          "table that changes as the streams do) is not run yet")
    reason = _table_query_reason(script, query)
    if reason:
        raise Unsupported(f"`run` runs a query over tables only as one batch of joins and filters, not {reason} "
                          "yet: read a stream (SELECT STREAM)")


def _table_query_reason(script: Script, query: Query) -> str | None:
    reasons = []
    unrun = query.table_unrun if query.table_order or query.table_limit is not None else query.unrun
    if unrun:  # (ORDER BY output columns and LIMIT n: the batch carries them out)
        reasons.append(unrun[0])
    if query.aggregation is not None and query.aggregation.bucket is not None:
        reasons.append("a GROUP BY of time buckets over tables")
    if query.sink and not into_program_table(script, query):
        reasons.append("INSERT INTO a sink")
    for i in query.inputs:
        relation = script.relation(i.relation)
        if relation.view and script.view(i.relation).kind == Kind.STREAM:
            reasons.append(f"the stream view '{i.relation}'")
        elif relation.view and (inner := _table_query_reason(script, script.view(i.relation))):
            reasons.append(f"{inner} (in the view '{i.relation}')")
    for branch in query.union_of:  # a UNION ALL of views of tables: each branch a batch of its own
        if inner := _table_query_reason(script, script.view(branch)):
            reasons.append(f"{inner} (in the branch '{branch}')")
    streamed = next((j.kind for j in query.joins if j.kind not in (JoinKind.TABLE_TABLE, JoinKind.ASOF_TABLE, JoinKind.WINDOW_TVF)
                     and not versioned(query, j)), None)
    if streamed is not None:
        reasons.append(f"a {streamed} of tables")
    return reasons[0] if reasons else None


def into_program_table(script: Script, query: Query) -> bool:
    """The query is RisingWave's `CREATE SINK s INTO t AS ...` into a table t the program itself
    holds (declared without a connector, no view reads it): run merges the sinks' rows into t
    (runtime.table_sinks)."""
    if query.kind != Kind.TABLE or query.streams():  # over streams: a sink of its own, as any other
        return False
    relation = next((r for r in script.relations if r.name == query.sink), None)
    if relation is None or relation.view or relation.kind != Kind.TABLE or relation.option("connector") not in (None, "values") \
            or relation.option("engine"):  # (ENGINE = iceberg: a table streamjoin does not hold)
        return False
    return not any(i.relation == relation.name for q in script.queries for i in q.inputs)
