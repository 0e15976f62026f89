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
0. A left side with no such input (a stream of files, Kafka, a view) comes after the whole file and
reads the table as it stands at the end, as before this rewrite."""

from __future__ import annotations

import json
from dataclasses import replace

from sqlglot import exp

from streamjoin.plan.analyzer.dml import epochs_of
from streamjoin.plan.model import Column, JoinKind, Kind, Query, Relation, Script

EPOCH, FROM, TO = "__sj_epoch", "__sj_from", "__sj_to"
VERSIONS = "__sj_versions"


def script_time(script: Script) -> Script:
    relations = {r.name: r for r in script.relations}
    queries = []
    for query in script.queries:
        queries.append(_rewrite(query, relations))
    return replace(script, relations=tuple(relations.values()), queries=tuple(queries))


def versioned(query: Query, join) -> bool:
    """A temporal join this rewrite turned into a join with the table's versions (of tables only, a
    join of tables)."""
    return join.kind == JoinKind.TEMPORAL and query.input(join.right).relation.endswith(VERSIONS)


def _rewrite(query: Query, relations: dict[str, Relation]) -> Query:
    joins = [j for j in query.joins if j.kind == JoinKind.TEMPORAL and relations[query.input(j.right).relation].given]
    if not joins:
        return query
    inputs = {i.alias: i for i in query.inputs}
    rewritten = list(query.joins)
    for join in joins:
        left = [a for a in join.left_inputs if relations[inputs[a].relation].given]
        if not left:
            continue
        for alias in left:
            item = inputs[alias]
            relations[item.relation] = _with_epochs(relations[item.relation])
            if EPOCH not in item.columns:
                inputs[alias] = replace(item, columns=(*item.columns, EPOCH))
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
