"""Aggregating views joined with streams: the everyday "join two per-minute summaries" query.

A view that aggregates a stream per time bucket (`GROUP BY FLOOR(ROWTIME TO MINUTE), k` or a
TUMBLE / HOP window's `window_start`) emits a bucket's row when the clock passes the bucket's
end, with rowtime = the bucket start (SEMANTICS §7). Joined with another stream, those rows come
long after the clock passed their rowtime: inside one Spark query they would be late to the join.
So such a view runs as its own Spark query (a part, like a cut chain's, `io.sinks.stage_sink`): its
rows are released in rowtime order, with rowtime bounds, as a staged stream that the joining
query reads like any input (lateness 0). A row of bucket b is final when the clock reaches b's
end, so everything at or below `clock - size` (the window size) is final: that is the part's
order delay, and its bounds never run ahead of a row still to come.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.aggregate import bucket_ms
from streamjoin.lower.changes import changing_keys, running_changes, table_changes
from streamjoin.lower.columns import ET_COLUMN, ROWTIME_COLUMN, folder
from streamjoin.lower.lowered import Lowered
from streamjoin.lower.native import NativeLowering
from streamjoin.lower.physical import Part, PhysicalPlan, Run
from streamjoin.lower.strategy import LoweringOptions, promotes, stream_view
from streamjoin.plan.model import Query, Script


def lower_staged_views(spark, script: Script, plan: PhysicalPlan, specs: list[InputSpec], checkpoint: Path,
                       late_root: Path, options: LoweringOptions = LoweringOptions()
                       ) -> tuple[list[Lowered], dict[str, InputSpec], list[InputSpec], list[InputSpec]]:
    """(the views' parts (the plan's `Part`s), innermost first; every staged input by where its
    reader finds it (the reader's prefix and alias: the query's own alias at the top); the specs
    the joining query still reads itself; the staged inputs it reads, its own and those of views
    it runs inline)."""
    parts: list[Lowered] = []
    staged: dict[str, InputSpec] = {}
    rest = list(specs)

    def stage(reader: Query, path: str) -> list[InputSpec]:
        """Lower the parts `reader` (read at `path`) needs; the staged inputs its own frame reads."""
        nonlocal rest
        read = []
        for item in reader.inputs:
            if not stream_view(script, item):
                continue
            view = script.view(script.relation(item.relation).name)
            inner_path = f"{path}{view.name}."
            part = plan.part(path + item.alias)
            if part is None:
                read += stage(view, inner_path)  # runs inline: its own promoting views are staged
                continue
            inner = stage(view, inner_path)
            mine = [s for s in rest if s.alias.startswith(inner_path)]
            rest = [s for s in rest if not s.alias.startswith(inner_path)]
            spec = _part(spark, script, part, inner_path, mine, inner, staged, checkpoint, late_root, parts, options)
            staged[path + item.alias] = spec
            read.append(spec)
        return read

    top = stage(plan.source, "")
    return parts, staged, rest, top


@dataclass(frozen=True)
class PartInput:
    """What each way of lowering a view's part gets: its plan, the inputs it reads itself (`mine`)
    and the staged ones (`staged`, under `prefix`), its checkpoint and the options."""

    spark: object
    script: Script
    plan: PhysicalPlan
    prefix: str
    mine: list[InputSpec]
    staged: dict[str, InputSpec]
    checkpoint: Path
    options: LoweringOptions

    def inputs(self) -> dict[str, InputSpec]:
        """The view's inputs by its own aliases."""
        specs = {**{s.alias: s for s in self.mine}, **self.staged}
        return {i.alias: specs[self.prefix + i.alias] for i in self.plan.source.inputs}

    def native(self, batch: bool = False) -> NativeLowering:
        return NativeLowering(self.spark, self.script, {s.alias: s for s in self.mine}, self.checkpoint, dict(self.staged),
                              self.plan.source, batch=batch)


@dataclass(frozen=True)
class PartFrame:
    """What lowering a view's part gives: its frame, the snapshots of the tables it reads, how far
    behind the clock its rows are final, and (a bounded run's aggregating view) a batch frame of its
    rows over every staged step, made once its inputs end."""

    frame: object
    snapshots: list = field(default_factory=list)
    delay_ms: int = 0
    bounded: Callable[[], object] | None = None


def _running_frame(part: PartInput) -> PartFrame:
    """The groups of a changelog (lower.changes): each change final at once."""
    return PartFrame(running_changes(part.spark, part.script, part.plan, part.inputs(), part.options))


def _operator_frame(part: PartInput) -> PartFrame:
    """One join on streamjoin's operator (lower.custom): its inputs are declared streams or staged
    views; its rows come out final."""
    from streamjoin.lower.custom import lower_custom

    changing = changing_keys(part.script, part.plan.source)
    return PartFrame(lower_custom(part.spark, part.plan, part.inputs(), part.options, changing))


def _spark_frame(part: PartInput) -> PartFrame:
    """The view on Spark's own operators (lower.native): a row is final once the clock passes its
    bucket's end, or (no aggregation) the view's own order delay: 0 for a projection, a filter or
    inner joins."""
    from streamjoin.lower.native import order_delay

    view, native = part.plan.source, part.native()
    frame = native.query_frame(view, part.prefix)[0]
    if view.changelog_key() is not None:  # a changelog's change is final when it is made
        return PartFrame(frame, native.snapshots)
    return PartFrame(frame, native.snapshots, bucket_ms(view.aggregation) if view.aggregation is not None else order_delay(view))


def _one_batch_frame(part: PartInput) -> PartFrame:
    """`_spark_frame`, and the view's rows over every step its inputs staged once they have ended:
    one Spark batch job."""
    return replace(_spark_frame(part), bounded=lambda: part.native(batch=True).query_frame(part.plan.source, part.prefix)[0])


# a view's part is lowered by its plan's Run (lower.physical._part_run), from this table
_PART_FRAMES = {Run.OPERATOR_RUNNING: _running_frame, Run.OPERATOR: _operator_frame, Run.SPARK: _spark_frame,
                Run.SPARK_ONE_BATCH: _one_batch_frame}


def _part(spark, script: Script, part: Part, prefix: str, mine: list[InputSpec], inner: list[InputSpec],
          staged: dict[str, InputSpec], checkpoint: Path, late_root: Path, parts: list[Lowered],
          options: LoweringOptions = LoweringOptions()) -> InputSpec:
    """A view as a part of its own (appended to `parts`), and how its reader reads its rows;
    `part.key`: where the reader finds it (the reader's prefix and its alias), which names its
    staged input."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    view, key = part.plan.source, part.key
    lowered = _PART_FRAMES[part.run](PartInput(spark, script, part.plan, prefix, mine, staged, checkpoint, options))
    frame = lowered.frame
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
    bounded = (lambda: rows_of(lowered.bounded())) if lowered.bounded is not None else None
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
    parts.append(Lowered(rows, mine + inner, columns, lowered.delay_ms, lowered.snapshots, stage_output=spec.path, stage_spec=spec,
                         prompt=bool(view.analytics) or changes,
                         stage_promotes=promotes(view), stage_changes=changes, custom=part.run == Run.OPERATOR, emit=view.emit,
                         order=view.order_within, bounded_frame=bounded))
    return spec
