"""UNION ALL of stream views (`q1 UNION ALL q2 ...`, plan.analyzer.compound): each branch is a view
and an input of the union's query; their frames are merged into the first branch's columns, by
position (SQL's rule: the first branch names them), each column of the branches' common type.
The merged rows are one stream: the query's rowtime is each row's own, and its clock the least of
the branches' clocks (each branch's bound rows come along, and Spark's watermark of a union is
the least of its inputs'), so a FINAL output still leaves in rowtime order."""

from __future__ import annotations

from streamjoin.lower.columns import bound_column, et, flat, q
from streamjoin.plan.model import Query, Script


def union_problem(script: Script, query: Query) -> str | None:
    """Why `run` cannot merge the union's branches; None: it can (streams whose rows are final)."""
    names = ", ".join(query.union_of)
    for name in query.union_of:
        relation = script.relation(name)
        view = script.view(name)
        if relation.kind.name != "STREAM":
            return f"the UNION ALL of {names}: branch '{name}' is a table; `run` merges streams (SELECT STREAM) only yet"
        if view.changelog_key() is not None or view.emit.name != "FINAL":
            return (f"the UNION ALL of {names}: branch '{name}' writes a changelog or rows before they are final "
                    f"(EMIT {view.emit.name}); `run` merges branches of final rows only yet")
    return None


def union_all(script: Script, query: Query, frames: dict):
    """The branches' frames (by input alias) as one frame in the first branch's columns."""
    from pyspark.sql import functions as F

    head = query.inputs[0].alias
    base = frames[head]
    types = {f.name: f.dataType for f in base.schema.fields}
    first = script.relation(query.inputs[0].relation)
    merged = base
    for item in query.inputs[1:]:
        frame = frames[item.alias]
        branch = script.relation(item.relation)
        # by position over the columns each branch selects (an implicit rowtime is not one of them:
        # plan.analyzer.compound counts them so), and each branch's rowtime to the union's
        pairs = [(flat(head, theirs), flat(item.alias, mine))
                 for mine, theirs in zip(_selected(branch), _selected(first), strict=True)]
        pairs += [(flat(head, first.rowtime), flat(item.alias, branch.rowtime)),
                  (et(head), et(item.alias)), (bound_column(head), bound_column(item.alias))]
        sources = dict(reversed(pairs))  # target -> source; a selected column wins over the rowtime's own
        prefix = flat(item.alias, "")
        for c in frame.columns:  # the inputs' own columns a staged or inline branch brings, by name
            target = flat(head, c[len(prefix):]) if c.startswith(prefix) else c
            sources.setdefault(target, c)
        # Spark widens each column to the branches' common type (an INT and a DOUBLE: DOUBLE), as SQL does
        merged = merged.union(frame.select(*[
            (F.col(q(sources[c])) if sources.get(c) in frame.columns else F.lit(None).cast(types[c])).alias(c)
            for c in base.columns]))
    return merged


def _selected(relation) -> list[str]:
    """A branch view's columns as its SELECT lists them (not its implicit rowtime)."""
    return [c.name for c in relation.columns if not (relation.implicit_rowtime and c.name == relation.rowtime)]
