"""The changelog join (Lenses, seed 004 "Non windowed joins"): a stream joined with a `SELECT
TABLE` view over a stream (a compacted topic) is a join of the two underlying streams where the
table side is the latest row per key, updated as its rows arrive (`JoinKind.CHANGELOG`, run by
streamjoin's own operator). docs/semantics-decisions.md says what it emits."""

from __future__ import annotations

from dataclasses import replace

from streamjoin.plan.model import Input, JoinKind, JoinType, Kind, Query, Relation, Script, sql
from streamjoin.plan.windows import CURRENT_ROW


def changelog_join(script: Script) -> Script:
    """The script with each query `run` runs (the final one, an application's outputs) as a
    changelog join, where it is one."""
    rewritten = {id(q): changelog_query(script, q) for q in script.runs}
    if all(rewritten[id(q)] is q for q in script.runs):
        return script
    return replace(script, queries=tuple(rewritten.get(id(q), q) for q in script.queries))


def changelog_query(script: Script, query: Query) -> Query:
    """The query as a changelog join of the two underlying streams, or the query itself when it
    is not one. The stream side may be a pass-through view (`SELECT STREAM *`)."""
    if len(query.joins) != 1 or len(query.inputs) != 2 or query.aggregation is not None:
        return query
    join = query.joins[0]
    if join.kind != JoinKind.SNAPSHOT or join.join_type not in (JoinType.INNER, JoinType.LEFT, JoinType.RIGHT):
        return query
    flipped = join.join_type == JoinType.RIGHT  # the stream is the operator's left input, whatever side it was written on
    table_alias, stream_alias = (join.left_inputs[0], join.right) if flipped else (join.right, join.left_inputs[0])
    table, stream = query.input(table_alias), query.input(stream_alias)
    table_stream, stream_stream = _stream_under(script, table, Kind.TABLE), _stream_under(script, stream, Kind.STREAM)
    if table.kind != Kind.TABLE or table_stream is None or stream_stream is None:
        return query
    new_stream = replace(stream, relation=stream_stream.name, kind=Kind.STREAM, rowtime=stream_stream.rowtime,
                         window=CURRENT_ROW, columns=stream_stream.column_names())
    new_table = replace(table, relation=table_stream.name, kind=Kind.STREAM, rowtime=table_stream.rowtime,
                        window=CURRENT_ROW, window_source="changelog", columns=table_stream.column_names(),
                        pushed_filters=())
    keys = tuple((b, a) for a, b in join.condition.keys) if flipped else join.condition.keys
    key = "_key" if "_key" in table_stream.column_names() else "the join keys"
    state = (
        f"'{table_alias}': the latest row per key ({key}) of its changelog stream, for the whole run (a compacted topic)",
        f"'{stream_alias}' rows that found no table row: they wait for one until end of input "
        "(FINAL: NULL-extended then; EAGER and CHANGES: NULL-extended at once)",
    )
    # the table's own filters (pushed below its snapshot before) are part of the condition now
    condition = replace(join.condition, keys=keys, residual=join.condition.residual + table.pushed_filters)
    new_join = replace(join, kind=JoinKind.CHANGELOG, join_type=JoinType.LEFT if flipped else join.join_type,
                       right=table_alias, left_inputs=(stream_alias,), state=state, condition=condition)
    return replace(query, inputs=(new_stream, new_table), joins=(new_join,))


def _stream_under(script: Script, item: Input, kind: Kind) -> Relation | None:
    """The declared stream under an input read as `kind`: the input's own stream (for the stream
    side), or the stream a pass-through view of that kind selects from."""
    relation = script.relation(item.relation)
    if not relation.view:
        return relation if kind == Kind.STREAM and relation.kind == Kind.STREAM else None
    view = script.view(relation.name)
    passthrough = (not view.joins and view.aggregation is None and view.where is None and len(view.inputs) == 1
                   and all(sql(o.expression) == f"{view.inputs[0].alias}.{o.name}" for o in view.output))
    under = next((r for r in script.relations if r.name == view.inputs[0].relation), None)
    if view.kind != kind or not passthrough or under is None or under.view or under.kind != Kind.STREAM:
        return None
    return under
