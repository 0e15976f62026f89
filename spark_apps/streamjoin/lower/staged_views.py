"""Aggregating views joined with streams: the everyday "join two per-minute summaries" query.

A view that aggregates a stream per time bucket (`GROUP BY FLOOR(ROWTIME TO MINUTE), k` or a
TUMBLE / HOP window's `window_start`) emits a bucket's row when the clock passes the bucket's
end, with rowtime = the bucket start (SEMANTICS §7). Joined with another stream, those rows come
long after the clock passed their rowtime: inside one Spark query they would be late to the join.
So such a view runs as its own Spark query (a part, like a cut chain's, `runtime.stage_sink`): its
rows are released in rowtime order, with rowtime bounds, as a staged stream that the joining
query reads like any input (lateness 0). A row of bucket b is final when the clock reaches b's
end, so everything at or below `clock - size` (the window size) is final: that is the part's
order delay, and its bounds never run ahead of a row still to come.
"""

from __future__ import annotations

from pathlib import Path

from streamjoin.io.staging import InputSpec
from streamjoin.lower.aggregate import bucket_ms
from streamjoin.lower.changes import changing_keys, running_changes, table_changes
from streamjoin.lower.columns import ET_COLUMN, ROWTIME_COLUMN, folder
from streamjoin.lower.lowered import Lowered
from streamjoin.lower.strategy import (
    LoweringOptions,
    chain_keys,
    changing_alone,
    promotes,
    promoting_views,
    running_aggregate,
    staged_views,
    uses_custom,
)
from streamjoin.plan.model import Kind, Query, Script


def lower_staged_views(spark, script: Script, query: Query, specs: list[InputSpec], checkpoint: Path,
                       late_root: Path, options: LoweringOptions = LoweringOptions()
                       ) -> tuple[list[Lowered], dict[str, InputSpec], list[InputSpec], list[InputSpec]]:
    """(the views' parts, innermost first; every staged input by where its reader finds it (the
    reader's prefix and alias: the query's own alias at the top); the specs the joining query
    still reads itself; the staged inputs it reads, its own and those of views it runs inline)."""
    parts: list[Lowered] = []
    staged: dict[str, InputSpec] = {}
    rest = list(specs)

    def stage(reader: Query, path: str) -> list[InputSpec]:
        """Lower the parts `reader` (read at `path`) needs; the staged inputs its own frame reads."""
        nonlocal rest
        read = []
        level = {sv.alias: sv for sv in (staged_views(script, reader, options) if not path
                                         else promoting_views(script, reader))}
        for item in reader.inputs:
            relation = script.relation(item.relation)
            if not (relation.view and item.kind == Kind.STREAM and script.view(relation.name).kind == Kind.STREAM):
                continue
            view = script.view(relation.name)
            inner_path = f"{path}{view.name}."
            if item.alias not in level:
                read += stage(view, inner_path)  # runs inline: its own promoting views are staged
                continue
            inner = stage(view, inner_path)
            mine = [s for s in rest if s.alias.startswith(inner_path)]
            rest = [s for s in rest if not s.alias.startswith(inner_path)]
            spec = _part(spark, script, view, inner_path, path + item.alias, mine, inner, staged, checkpoint, late_root, parts,
                         options)
            staged[path + item.alias] = spec
            read.append(spec)
        return read

    top = stage(query, "")
    return parts, staged, rest, top


def _part(spark, script: Script, view: Query, prefix: str, key: str, mine: list[InputSpec], inner: list[InputSpec],
          staged: dict[str, InputSpec], checkpoint: Path, late_root: Path, parts: list[Lowered],
          options: LoweringOptions = LoweringOptions()) -> InputSpec:
    """A view as a part of its own (appended to `parts`), and how its reader reads its rows; `key`:
    where the reader finds it (the reader's prefix and its alias), which names its staged input."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    from streamjoin.lower.native import NativeLowering, order_delay

    lowering = NativeLowering(spark, script, {s.alias: s for s in mine}, checkpoint, dict(staged), view)
    custom = uses_custom(view)
    specs = {**{s.alias: s for s in mine}, **staged}
    if running_aggregate(view) and (custom or changing_alone(script, view)):  # the groups of a changelog
        frame = running_changes(spark, script, view, {i.alias: specs[prefix + i.alias] for i in view.inputs}, options)
        custom = False
    elif custom:  # one join on streamjoin's operator (lower.custom): its inputs are declared streams or staged views
        from streamjoin.lower.custom import lower_custom

        frame = lower_custom(spark, view, {i.alias: specs[prefix + i.alias] for i in view.inputs}, options,
                             changing_keys(script, view), chain_keys(script, view) if len(view.joins) > 1 else ())
    else:
        frame, _ = lowering.query_frame(view, prefix)
    columns = [c.name for c in view.output]
    changes = view.changelog_key() is not None
    if changes:  # a running aggregate's or regular joins' changelog, as a table's changes (lower.changes)
        frame, more = table_changes(frame, view)
        columns += more
    rowtime = script.relation(view.name).rowtime
    implicit = rowtime not in columns  # the view's implicit rowtime: the bucket start, or its rows' output rowtime
    columns += [rowtime] if implicit else []

    def rows_of(frame):
        return (frame.withColumn(rowtime, F.col(ROWTIME_COLUMN)) if implicit else frame).drop(ET_COLUMN)

    rows = rows_of(frame)
    bounded = None
    if options.bounded and not inner and not custom and not changes and bounded_aggregation(script, view):
        def bounded():
            """The view's rows over every step its inputs staged (they have ended): one Spark batch job."""
            batch = NativeLowering(spark, script, {s.alias: s for s in mine}, checkpoint, dict(staged), view, batch=True)
            return rows_of(batch.query_frame(view, prefix)[0])
    schema = to_arrow_schema(rows.select(*columns).schema, timezone="UTC")
    name = f"__view_{key}"  # the query's own alias at the top, as before nested views were staged
    n = len(parts)
    spec = InputSpec(
        alias=name,
        path=str(checkpoint / "stages" / str(n) / "rows"),  # beside part n's own checkpoint
        format="parquet",
        schema=schema,
        rowtime=rowtime,
        # written in rowtime order, below the bounds it writes; a promoting view's rows come in
        # its inputs' order: the reader's staging orders them, allowing the t-sort's disorder
        lateness_ms=view.disorder_ms or 0,
        state_dir=str(checkpoint / "sources" / folder(name)),
        late_dir=str(late_root / folder(name)),
    )
    # a row is final once the clock passes its bucket's end, or (no aggregation) the view's
    # own order delay: 0 for a projection, a filter or inner joins
    delay = 0 if custom or changes else bucket_ms(view.aggregation) if view.aggregation is not None else order_delay(view)
    parts.append(Lowered(rows, mine + inner, columns, delay, lowering.snapshots, stage_output=spec.path, stage_spec=spec,
                         prompt=bool(view.analytics) or changes,
                         stage_promotes=promotes(view), stage_changes=changes, custom=custom, emit=view.emit,
                         order=view.order_within, bounded_frame=bounded))
    return spec


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
