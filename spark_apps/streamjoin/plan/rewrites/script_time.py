"""A process-time temporal join over rows the file itself inserts, updates and deletes (RisingWave's
e2e tests and demos): each statement is an instant of the script's clock, its epoch (they flush after
each one, `SET RW_IMPLICIT_FLUSH TO true`), and a row looks the table up as it stood when the row
came, as RisingWave's temporal join does, never changing afterwards:

    insert into stream values (1);   insert into version values (1, 'a');
    insert into stream values (1);   delete from version;
    -- v = stream LEFT JOIN version FOR SYSTEM_TIME AS OF PROCTIME(): (1, NULL), (1, 'a')

A row came at its statement's epoch, or at the view's creation if it was there before (a view
created over rows reads them then); a joined row of several inputs when its last input's row came.
The table is read as its versions, each valid from the epoch that gave it its values to the one that
updated or deleted it (`plan.analyzer.dml` keeps them), under a name of its own; the join's
condition holds the row's epoch within its version's.

A table's rows given before any statement (a `values` table of the file's own) are valid from epoch
0. A view of such rows (a projection, a filter, a join of them) passes each row's epoch on: a copy
of the view under a name of its own (`<view>__sj_epochs`) writes it beside its columns, the
latest of its inputs' and its own creation's. A left side with no such input (a stream of files,
Kafka) comes after the whole file and reads the table as it stands at the end; so does a view whose
rows have no one instant (a GROUP BY, OVER windows, DISTINCT): the plan's notes say so."""

from __future__ import annotations

import json
from dataclasses import replace

from sqlglot import exp

from streamjoin.plan.analyzer.dml import epochs_of
from streamjoin.plan.model import Column, JoinKind, Kind, OutputColumn, Query, Relation, Script

EPOCH, FROM, TO = "__sj_epoch", "__sj_from", "__sj_to"
VERSIONS, EPOCHS = "__sj_versions", "__sj_epochs"


def script_time(script: Script) -> Script:
    relations = {r.name: r for r in script.relations}
    queries: list[Query] = []
    notes: list[str] = []
    for query in script.queries:
        queries.append(_rewrite(query, relations, queries, notes))
    return replace(script, relations=tuple(relations.values()), queries=tuple(queries), notes=(*script.notes, *dict.fromkeys(notes)))


def versioned(query: Query, join) -> bool:
    """A temporal join this rewrite turned into a join with the table's versions (of tables only, a
    join of tables)."""
    return join.kind == JoinKind.TEMPORAL and query.input(join.right).relation.endswith(VERSIONS)


def _rewrite(query: Query, relations: dict[str, Relation], queries: list[Query], notes: list[str]) -> Query:
    joins = [j for j in query.joins if j.kind == JoinKind.TEMPORAL and relations[query.input(j.right).relation].given]
    if not joins:
        return query
    inputs = {i.alias: i for i in query.inputs}
    rewritten = list(query.joins)
    for join in joins:
        timed = {a: _timed(inputs[a], relations, queries, notes, join.right) for a in join.left_inputs}
        left = [a for a, source in timed.items() if source]
        if not left:
            continue
        for alias in left:
            if EPOCH not in inputs[alias].columns:
                inputs[alias] = replace(inputs[alias], relation=timed[alias], columns=(*inputs[alias].columns, EPOCH))
        table = inputs[join.right]
        versions = _versions(relations[table.relation])
        relations[versions.name] = versions
        inputs[join.right] = replace(table, relation=versions.name, columns=(*table.columns, FROM, TO))
        came = exp.func("GREATEST", *[exp.column(EPOCH, table=a) for a in left], exp.Literal.number(query.epoch))
        valid = exp.and_(
            exp.GTE(this=came, expression=exp.column(FROM, table=join.right)),
            exp.or_(exp.column(TO, table=join.right).is_(exp.null()),
                    exp.LT(this=came.copy(), expression=exp.column(TO, table=join.right))),
        )
        condition = replace(join.condition, residual=(*join.condition.residual, valid),
                            expression=exp.and_(join.condition.expression, valid.copy()) if join.condition.expression else valid.copy())
        state = (f"no state: '{join.right}' is read once, every version the file's statements gave it; a row of "
                 f"{', '.join(repr(a) for a in left)} takes the versions current at its statement (the file's clock)",)
        rewritten[query.joins.index(join)] = replace(join, condition=condition, state=state)
    return replace(query, inputs=tuple(inputs[i.alias] for i in query.inputs), joins=tuple(rewritten))


def _timed(item, relations: dict[str, Relation], queries: list[Query], notes: list[str], table: str) -> str | None:
    """The relation `item` reads, made to carry each row's epoch (EPOCH), under the name it then has:
    a table the file gives rows, a copy of a view of such rows (added to `queries` and `relations`);
    None where its rows have no epoch (a stream of files) or no one instant (a note says so)."""
    relation = relations[item.relation]
    if relation.given:
        relations[relation.name] = _with_epochs(relation)
        return relation.name
    if not relation.view:
        return None
    view = next(q for q in queries if q.name == relation.name)
    reason = _instantless(view)
    if reason is None:
        return _epoch_view(view, relation, relations, queries, notes, table)
    if _reads_given(view, relations, queries):
        notes.append(f"the temporal join of view '{relation.name}' with '{table}' reads '{table}' as the file leaves it, "
                     f"not as it stood when each row came: the view's rows have no one instant ({reason})")
    return None


def _instantless(view: Query) -> str | None:
    """Why a view's rows have no one instant of the script's clock (their values change as rows
    come, or as a table changes), or None: each row came when its last input row did."""
    looked_up = {j.right for j in view.joins if j.kind == JoinKind.TEMPORAL}
    changing = [i.alias for i in view.inputs if i.kind == Kind.TABLE and i.alias not in looked_up]
    reasons = [(view.aggregation is not None, "GROUP BY"), (bool(view.analytics), "OVER windows"),
               (view.distinct is not None, "DISTINCT"), (bool(view.union_of), "UNION ALL"),
               (view.changelog_key() is not None, "a changelog"), (bool(changing), f"a join with table {', '.join(changing)}")]
    return next((why for holds, why in reasons if holds), None)


def _reads_given(view: Query, relations: dict[str, Relation], queries: list[Query]) -> bool:
    for item in view.inputs:
        relation = relations[item.relation]
        if relation.given or (relation.view and _reads_given(next(q for q in queries if q.name == relation.name), relations, queries)):
            return True
    return False


def _epoch_view(view: Query, relation: Relation, relations: dict[str, Relation], queries: list[Query],
                notes: list[str], table: str) -> str | None:
    """A copy of `view` whose rows carry their epoch: the latest of its inputs' and its creation's."""
    name = relation.name + EPOCHS
    if name in relations:
        return name
    inputs, timed = [], []
    looked_up = {j.right for j in view.joins if j.kind == JoinKind.TEMPORAL}
    for item in view.inputs:
        source = None if item.alias in looked_up else _timed(item, relations, queries, notes, table)
        if source is None:
            inputs.append(item)
            continue
        inputs.append(replace(item, relation=source, columns=(*item.columns, EPOCH)))
        timed.append(item.alias)
    if not timed:
        return None
    came = exp.func("GREATEST", *[exp.column(EPOCH, table=a) for a in timed], exp.Literal.number(view.epoch))
    copy = replace(view, name=name, inputs=tuple(inputs), output=(*view.output, OutputColumn(EPOCH, came)))
    relations[name] = replace(relation, name=name, columns=(*relation.columns, Column(EPOCH, "BIGINT")))
    queries.append(copy)  # before the query that reads it: views come first
    return name


def _with_epochs(relation: Relation) -> Relation:
    """The relation with each row's epoch as a column (its live rows: a table's as they stand)."""
    if EPOCH in relation.column_names():
        return relation
    rows = json.loads(relation.option("rows") or "[]")
    epochs = epochs_of(relation, len(rows))
    rows = [{**row, EPOCH: epoch} for row, epoch in zip(rows, epochs, strict=True)]
    options = {**dict(relation.options), "rows": json.dumps(rows, default=str)}
    columns = list(relation.columns)
    at = columns.index(next(c for c in columns if c.name == relation.rowtime)) if relation.implicit_rowtime else len(columns)
    columns.insert(at, Column(EPOCH, "BIGINT"))
    return replace(relation, columns=tuple(columns), options=tuple(sorted(options.items())))


def _versions(relation: Relation) -> Relation:
    """The table's every version, valid from FROM to TO (NULL: still), under a name of its own."""
    rows = json.loads(relation.option("rows") or "[]")
    live = [{**row, FROM: epoch, TO: None} for row, epoch in zip(rows, epochs_of(relation, len(rows)), strict=True)]
    ended = [{**row, FROM: start, TO: end} for start, end, row in json.loads(relation.option("retired") or "[]")]
    options = {k: v for k, v in relation.options if k not in ("epochs", "retired")}
    options["rows"] = json.dumps(live + ended, default=str)
    return replace(relation, name=relation.name + VERSIONS, kind=Kind.TABLE,
                   columns=(*relation.columns, Column(FROM, "BIGINT"), Column(TO, "BIGINT")),
                   primary_key=(*relation.primary_key, FROM) if relation.primary_key else (),
                   options=tuple(sorted(options.items())))
