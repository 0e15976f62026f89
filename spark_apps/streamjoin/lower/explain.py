"""`streamjoin explain`: the plan in words (text), with how each join will run, or the plan as
data (json). Spark-free."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from sqlglot import exp

from streamjoin.lower.physical import Engine, JoinNode, PhysicalPlan, Run, plan_query, staged_inputs
from streamjoin.lower.strategy import BATCH, CUSTOM, NATIVE, LoweringOptions, in_order, uses_custom
from streamjoin.plan.model import ROWS, Emit, Input, Join, JoinKind, Kind, Query, Script, sql
from streamjoin.plan.rewrites.script_time import VERSIONS
from streamjoin.plan.windows import format_ms

_EMIT = {
    Emit.FINAL: "FINAL: rows leave once final, in non-descending rowtime order, when the join clock passes them",
    Emit.EAGER: "EAGER: NULL-extended rows leave at once and are never withdrawn; matches follow (not ordered)",
    Emit.CHANGES: "CHANGES: a changelog with op (+I, -D); folding it gives the FINAL result",
}


def explain_text(script: Script, options: LoweringOptions = LoweringOptions()) -> str:
    blocks = [_dialect(script), _relations(script), _pumps(script)] + [_query(script, q, options) for q in script.queries]
    return "\n\n".join(b for b in blocks if b) + "\n"


def _dialect(script: Script) -> str:
    """The profile the file was read with when it is not the default (and why), and what the
    script's set-up statements did (dropped, replaced, ignored) or warn of."""
    from streamjoin.dialect.profiles import profile

    lines = []
    if script.dialect != "default" or script.dialect_reason:
        chosen = profile(script.dialect)
        lines.append(f"dialect: {chosen.name} ({chosen.title}; {script.dialect_reason or 'chosen'})")
        lines.append(f"  unquoted names fold to {chosen.fold} case; a join of two streams without a time bound is "
                     + ("the CURRENT ROW window join" if chosen.windowless == "current_row" else "a regular join over the whole history (its results change as rows arrive)"))
    if script.notes:
        lines.append("script:")
        lines.extend(f"  {note}" for note in script.notes)
    return "\n".join(lines)


def explain_json(script: Script, options: LoweringOptions = LoweringOptions()) -> str:
    """The plan as data, and under "physical" the physical plan of each query `run` runs
    (lower.physical.PhysicalPlan.to_dict: what a run records in status.json)."""
    physical = {q.name: plan_query(script, q, options).to_dict() for q in script.runs}
    return json.dumps({**script.to_dict(), "physical": physical}, indent=2, sort_keys=False) + "\n"


def _relations(script: Script) -> str:
    lines = []
    for r in script.relations:
        if r.view:
            continue
        extra = f", rowtime {r.rowtime}" if r.rowtime else ""
        if r.arrival_rowtime:
            extra += " (the instant each row is read: it declares no time)"
        if r.lateness_ms:
            extra += f", lateness {r.lateness_ms} ms"
        if r.primary_key:
            extra += f", primary key ({', '.join(r.primary_key)})"
        lines.append(f"  {r.kind} {r.name} ({', '.join(c.name for c in r.columns)}){extra}")
    for s in script.sinks:
        lines.append(f"  sink {s.name} ({', '.join(f'{k}={v}' for k, v in s.options)})")
    return "declared:\n" + "\n".join(lines) if lines else ""


def _pumps(script: Script) -> str:
    """An application's pumps, in the order they run: what each reads and fills."""
    if not script.pumps:
        return ""
    read = {name for p in script.pumps for name in p.reads}
    lines = [f"  {p.name}: {', '.join(p.reads)} -> {p.target}"
             + (" (the output: no pump reads it)" if p.target not in read else "") for p in script.pumps]
    return "pumps:\n" + "\n".join(lines)


def _query(script: Script, q: Query, options: LoweringOptions) -> str:
    title = "query" if q.name == "query" else f"output {q.name}" if q.name in script.outputs else f"view {q.name}"
    pump = next((p for p in script.pumps if p.target == q.name or (q.name == "query" and p.target not in
                                                                     {n for o in script.pumps for n in o.reads})), None)
    if pump is not None:
        title = f"{title} (pump {pump.name} into {pump.target})"
    target = f" -> INSERT INTO {q.sink}" if q.sink else ""
    lines = [f"{title}: {q.kind}{target}", f"  emit: {_EMIT[q.emit]}", "  inputs:"]
    top = any(q is r for r in script.runs)  # a query `run` runs; else a view, as a part of its own
    plan = plan_query(script, q, options, top=top)
    staged = {alias: script.view(script.relation(q.input(alias).relation).name)
              for alias in staged_inputs(script, q, options, top)}
    for i in q.inputs:
        lines.append(f"    {i.alias}: {i.kind} {i.relation}{_input_detail(i, script.relation(i.relation))}")
        if i.alias in staged:
            lines.append("      " + _staged(staged[i.alias], q))
        for f in i.pushed_filters:
            lines.append(f"      filter before loading: {sql(f)}")
    bounded = plan if options.bounded or not top else plan_query(script, q, replace(options, bounded=True))
    for n, j in enumerate(q.joins, 1):
        lines.extend(_join(n, j))
        lines.extend(f"    {line}" for line in describe(q, j, plan, bounded))
    if q.where is not None:
        lines.append(f"  where (after the join): {sql(q.where)}")
    lines.extend(_shaping(q))
    lines.extend(_analytics(q))
    lines.append("  output: " + ", ".join(_output(c.name, sql(c.expression)) for c in q.output))
    lines.extend(f"  {line}" for line in plan.lines())
    return "\n".join(lines)


def _staged(view: Query, q: Query) -> str:
    """Why an input of `q` (the stream view `view`) runs as a part of its own, and how `q` reads it."""
    if view.disorder_ms is not None:
        return ("a view that promotes a new rowtime: it runs as a query of its own; its rows, in the order they "
                "come, are this input, ordered by the new rowtime"
                + (f" within {view.disorder_ms} ms (its ORDER BY ... WITHIN): rows further out of order are late"
                   if view.disorder_ms else ": rows out of that order are late (sort them with ORDER BY ... WITHIN)"))
    if view.aggregation is not None:
        return ("an aggregating view joined with a stream: it runs as a query of its own; its rows, released in "
                "rowtime order once their bucket closes, are this input")
    if view.analytics:
        return ("a view with windowed aggregates (OVER windows of rows): it runs as a query of its own; its "
                "rows, released in rowtime order with its rowtime bounds, are this input")
    if uses_custom(view):
        return ("a view whose join runs on streamjoin's operator: it runs as a query of its own; its rows, "
                "released in rowtime order once final, with its rowtime bounds, are this input")
    if view.order_within:
        return ("a view that orders the rows of one rowtime (ORDER BY ROWTIME, ...): it runs as a query of its "
                "own; its rows, each release sorted so, with its rowtime bounds, are this input")
    if in_order(q):
        return ("read in its order by the " + ("windowed aggregates" if q.analytics else "running aggregate")
                + " of this query: it runs as a query of its own; its rows, released in rowtime order with its "
                "rowtime bounds, are this input")
    return ("a view read by streamjoin's operator: it runs as a query of its own; its rows, released in "
            "rowtime order with its rowtime bounds, are this input")


def _analytics(q: Query) -> list[str]:
    """The aggregates OVER windows of rows (lower.analytic): each one's frame and what it keeps."""
    if not q.analytics:
        return []
    lines = ["  windowed aggregates (one value per row, over the rows of its partition in the frame up to it):"]
    for a in q.analytics:
        partition = f"per partition ({', '.join(sql(p) for p in a.partition_by)})" if a.partition_by else "over the whole stream"
        frame = {"range": f"the rows of the last {format_ms(a.size)}" + (f" to {format_ms(a.lag)} before it" if a.lag else ""),
                 "rows": f"the row and the {a.size} before it",
                 "unbounded": "every earlier row"}[a.frame]
        if a.ordered_by is not None:
            frame = ("every row up to it" if a.frame == "unbounded" else frame) + f" in {sql(a.ordered_by)}'s order, its peers included"
        lines.append(f"    {a.function}: {frame}, {partition}" + (f"; `run` refuses it: {a.problem}" if a.problem else ""))
    if q.changing_analytics():
        lines.append("    ordered by a column that is not the rowtime: a changelog (a row that comes out of that order "
                     "changes the values of rows already written: -D of each, +I of its new values); "
                     "state: every row of each partition, for as long as the query runs (grows without bound)")
    return lines


def _shaping(q: Query) -> list[str]:
    """What a query does to its joined rows: GROUP BY, UNION ALL, DISTINCT."""
    lines = []
    if q.aggregation:
        a = q.aggregation
        bucket = (f"bucket {sql(a.bucket)}" if a.bucket is not None else
                  "over tables only: one batch of their rows as they stand" if all(i.kind != Kind.STREAM for i in q.inputs) else
                  "no time bucket: a running aggregate (a changelog)")
        lines.append(f"  group by: {', '.join(sql(k) for k in a.keys) or '(all rows)'}; {bucket}")
        if a.bucket is not None:
            lines.append("    a group's row is emitted when the clock passes the bucket end; rowtime = bucket start")
        for i in q.inputs:
            if a.bucket is None and i.time_window is not None:
                lines.append(f"    {i.alias}'s {i.time_window.function} windows {i.time_window.column}, not its rowtime "
                             f"({i.rowtime}): they never close on its clock; each window's groups change as rows come")
        if q.having is not None:
            lines.append(f"    having: {sql(q.having)} (a group's row is written only where it holds)")
    if q.order_within:
        lines.append("  order: by rowtime, then rows of one rowtime by " + ", ".join(
            f"{c}{' DESC' if d else ''}" for c, d in q.order_within) + " (each release sorted so)")
    if q.union_of:
        lines.append(f"  union all of: {', '.join(q.union_of)} (every row of each branch, columns by position)")
    if q.distinct is not None:
        lines.append("  distinct: " + (f"on {', '.join(sql(e) for e in q.distinct)}: one row per value" if q.distinct
                                        else "every output column: one row per distinct row"))
    if q.unrun:
        lines.append(f"  not run yet (run refuses the query): {'; '.join(q.unrun)}")
    return lines


def _output(name: str, expression: str) -> str:
    return f"{name}={expression}" if name != expression else name


def _input_detail(i: Input, relation) -> str:
    if i.kind == Kind.TABLE:
        if i.temporal and relation.name.endswith(VERSIONS):
            return " [FOR SYSTEM_TIME AS OF PROCTIME(): its versions by the file's statements, read once]"
        if i.temporal and relation.given:
            return " [FOR SYSTEM_TIME AS OF PROCTIME(): the rows the file gives, read once]"
        return " [FOR SYSTEM_TIME AS OF PROCTIME(): re-read per micro-batch]" if i.temporal else " [snapshot at query start]"
    if i.time_window:
        return f" [{i.time_window.describe()}]"
    if i.window_source == "regular" and relation.changing and relation.primary_key[:1] == (ROWS,):
        return " [a view of regular joins, its rows as they change: every row it holds, a withdrawn one taken out]"
    if i.window_source == "regular" and relation.changing:
        how = (f"{relation.option('connector')}: its database's changes" if relation.option("changelog") == "cdc"
               else "a running aggregate's groups as they change" if relation.option("changelog") == "view"
               else f"FORMAT {relation.option('changelog').upper()}")
        return f" [a table changed by its changelog ({how}): its latest row per primary key]"
    if i.window_source == "regular":
        return " [a regular join's input: every row, for as long as the query runs]"
    if i.window_source == "changelog":
        return f", rowtime {i.rowtime} [a table as its changelog: the latest row per key, updated while the query runs]"
    source = {"OVER": "", "WITHIN": " (from WITHIN)", "interval condition": " (from the interval condition)", "default": " (no OVER)"}
    return f", rowtime {i.rowtime}, window {i.window.describe()}{source.get(i.window_source, '')}"


# a query inside an expression, as the join it is (plan.analyzer.subqueries)
_WRITTEN = {
    "EXISTS": "EXISTS (SELECT ...): a semi join: each row once, if a row of the subquery matches it",
    "IN": "IN (SELECT ...): a semi join: each row once, if the subquery holds its value",
    "NOT EXISTS": "NOT EXISTS (SELECT ...): an anti join: each row once, if no row of the subquery matches it",
    "NOT IN": "NOT IN (SELECT ...): a null-aware anti join: each row once, if the subquery is empty, or if its value "
              "is not NULL and the subquery holds neither it nor a NULL",
    "scalar": "a scalar subquery: a single-row join: its one value per correlation key (NULL when it has no row; "
              "COUNT 0), more than one row an error that stops the run",
}


def _join(n: int, j: Join) -> list[str]:
    how = "NATURAL " if j.natural else ""
    lines = [f"  join {n}: {', '.join(j.left_inputs)} {how}{j.join_type} JOIN {j.right}  [{j.kind}]"]
    c = j.condition
    if j.subquery:
        lines.append(f"    written: {_WRITTEN[j.subquery]}")
        domain = sorted({sql(col) for a, b in c.keys if any(re.fullmatch(r"dom\d+", x.name) for x in b.find_all(exp.Column))
                         for col in a.find_all(exp.Column)})
        if domain:  # (plan.analyzer.domains)
            lines.append(f"    domain: {', '.join(domain)}: the subquery once per distinct value, NULL matching NULL")
    if j.using:
        lines.append(f"    using: {', '.join(j.using)} (one coalesced column each)")
    if c.from_where:
        lines.append("    condition: taken from WHERE (equivalent for inner pairs)")
    lines.append("    keys: " + (", ".join(f"{sql(a)} = {sql(b)}" for a, b in c.keys) if c.keys else "none"))
    if c.asof:
        lines.append(f"    asof: {sql(c.asof.left)} {c.asof.op} {sql(c.asof.right)} (the nearest match; ties: latest arrival)")
    lines.append("    time bounds: " + ("; ".join(b.describe() for b in c.time_bounds) if c.time_bounds else "none"))
    lines.append("    residual: " + (" AND ".join(f"({sql(r)})" if isinstance(r, exp.Or) else sql(r) for r in c.residual)
                                        if c.residual else "none"))
    lines.append("    state:")
    lines.extend(f"      - {s}" for s in j.state)
    return lines


# how each join runs (its node of the physical plan, lower.physical), in explain's words

def describe(query: Query, join: Join, plan: PhysicalPlan, bounded: PhysicalPlan) -> list[str]:
    """explain's lines about the operator of one join: its node in `plan`; `bounded`: the plan of
    a bounded run (`--until-idle`), named when it runs the join on another engine."""
    node = plan.joins[query.joins.index(join)]
    if plan.run == Run.TABLES:  # (a SELECT TABLE over streams: `lower.clauses.check_table_query` refuses it)
        return ["operator: none: `run` does not run a SELECT TABLE over streams yet (a table that changes as the "
                "streams do)"] if any(i.kind == Kind.STREAM for i in query.inputs) else []
    if join.kind == JoinKind.ASOF_TABLE:
        return ["operator: a stateless lookup of each stream row's nearest row in the broadcast snapshot"]
    if not (join.kind.stream_stream or join.kind in (JoinKind.ASOF, JoinKind.WINDOW_TVF, JoinKind.CHANGELOG, JoinKind.REGULAR)):
        return []
    if node.engine == Engine.BATCH:
        return _batch_lines(query, join, node)
    other = bounded.joins[node.number - 1]
    which = {"ASOF join": "ASOF", "ROWS join": "ROWS"}.get(other.implementation, "interval")
    instead = (f"    with --until-idle: streamjoin's batch {which} join instead (the run is bounded)"
               if other.engine == Engine.BATCH else None)
    if node.engine == Engine.SPARK:
        lines = [f"operator: {NATIVE} (time-range condition from the windows; state dropped by the watermark)"]
        lines += [instead] if instead else []
        if node.cut_after:
            lines.append("    then: the chain is cut here; this join's rows, released in rowtime order, are the "
                         "input of the next Spark query (an outer join followed by another join)")
        return lines
    lines = [f"operator: {CUSTOM}", f"    why: {node.why}", f"    {_groups(query, join, node, plan)}"]
    lines += [instead] if instead else []
    how = {"asof": "pandas merge_asof over each group's complete rows",
           "rows": "each row pairs with the latest rows of its key on the other side, counted per key with numpy"}.get(node.by_column)
    if how:
        lines.append(f"    rows: by column ({how}), where both sides' keys have one type and every column is a number, string, "
                     "boolean or timestamp; else row by row")
    return lines


def _groups(query: Query, join: Join, node: JoinNode, plan: PhysicalPlan) -> str:
    """How the operator groups the rows (`PhysicalPlan.group_key`)."""
    if node.groups == "by the chain's key":
        return (f"groups: by the key every join of the chain shares, {' = '.join(sql(e) for e in plan.group_key[0])} (parallel); "
                "each join's changes the next one's left input")
    if node.groups == "by the join keys":
        return "groups: by the join keys " + ", ".join(f"{sql(a)} = {sql(b)}" for a, b in plan.group_key) + " (parallel)"
    if len(query.joins) > 1:
        return ("groups: ONE group: a chain of regular joins runs its joins one after another on one task, each "
                "join's changes the next one's left input (no key joins every input)")
    if join.kind == JoinKind.CHANGELOG:
        return "groups: ONE group: a table row keyed by _key may change its join key, so it runs on one task"
    if join.kind == JoinKind.REGULAR and join.condition.keys:
        return ("groups: ONE group: a changing table's row may change its join key (its primary key is not the join "
                "key), so its old version must meet the same task")
    return "groups: ONE group: the join is one ordered sequence (no key partitions every window), so it runs on one task"


def _batch_lines(query: Query, join: Join, node: JoinNode) -> list[str]:
    """explain's lines about a join the micro-batch loop runs (`lower.batch.batch_join`, `lower.batch.chain_join`,
    `lower.batch.asof_batch`, `lower.batch.rows_batch`)."""
    lines = [f"operator: {BATCH}", "    state: the staged steps holding rows still in range (no state store)"]
    if query.emit == Emit.EAGER:
        lines.append("    release: a micro-batch's rows are written as soon as its join has found them (EMIT EAGER of "
                     "INNER joins: no wait for the clock; each release in rowtime order, the releases not)")
    if node.implementation == "ASOF join":
        return [*lines, "    asof: each left row, once the right clock passes it, takes the last right row of its key before "
                "it, by one window function over the right rows so far (lower.batch.asof_batch)"]
    if node.implementation == "ROWS join":
        return [*lines, "    rows: each row, once the other input's clock passes it, pairs with the latest row of its key on the "
                "other side before it, by one window function over both inputs' rows so far (lower.batch.rows_batch)"]
    if node.implementation == "regular join":
        return [*lines, "    range: every row of both inputs, for ever (a regular join); no time buckets"]
    if node.implementation == "chain of interval joins":
        return [*lines, "    chain: every join of the chain in one Spark batch job per micro-batch, each result holding a "
                "new row once; rows retained while the chain's time bounds let a "
                "future row of any input meet them"]
    if node.probe == "keyed":
        keeper = "the driver keeps" if node.probe_in == "driver" else "each task's Python worker keeps"
        lines.append(f"    pairs: by key in an index of the retained rows that {keeper} between micro-batches")
    else:
        lines.append("    pairs: by scanning the retained steps")
    return lines
