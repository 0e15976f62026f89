"""A chain cut after its outer joins (`strategy.cuts`): one Spark query per part. Each part but the
last writes its rows (all input columns, flat, and the rowtime of §4) in rowtime order to a folder
that the next part reads as a stream, through the same staging as any input (its bounds are the
clock of the part that writes it). docs/runtime.md, "Outer joins inside a chain"."""

from __future__ import annotations

from pathlib import Path

from streamjoin.io.formats.files import BOUND
from streamjoin.io.sources.staging import InputSpec
from streamjoin.lower.columns import (
    ET_COLUMN,
    ROWTIME_COLUMN,
    START,
    ZERO,
    bound_column,
    engine_time,
    et,
    flat,
    not_bound,
    output_rowtime,
    q,
    rowtime_of,
)
from streamjoin.lower.lowered import Lowered
from streamjoin.lower.native import NativeLowering, order_delay
from streamjoin.lower.strategy import cuts
from streamjoin.plan.model import Query


def lower_cut_chain(lowering: NativeLowering, query: Query, specs: list[InputSpec]) -> Lowered:
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    frames = {i.alias: lowering.input_frame(query, i, "") for i in query.inputs}
    streams = query.streams()
    late_root = Path(specs[0].late_dir).parent
    upstream, start, before, joined = [], 0, (), frames[query.inputs[0].alias]
    delay = order_delay(query)  # every part: how far behind its watermark its rows are final
    for cut in cuts(query):
        joins = query.joins[start:cut + 1]
        joined, _ = lowering.join_chain(query, frames, joined, joins, before)
        aliases = [a for a in streams if a in (*joins[-1].left_inputs, joins[-1].right)]
        rows = joined.where(F.expr(not_bound(aliases, [rowtime_of(query, a) for a in aliases])))
        rows = rows.withColumn(ROWTIME_COLUMN, F.expr(output_rowtime(query, aliases)))
        internal = {bound_column(a) for a in aliases} | {flat(a, ZERO) for a in aliases} | {et(a) for a in aliases} | {START}
        rows = rows.select(*[c for c in rows.columns if c not in internal])
        part = len(upstream)
        folder = lowering.checkpoint / "stages" / str(part)
        mine = [s for s in specs if _belongs(s.alias, query, joins, start == 0)] + [u.stage_spec for u in upstream[-1:]]
        spec = InputSpec(
            alias=f"__part{part}",
            path=str(folder / "rows"),
            format="parquet",
            schema=to_arrow_schema(rows.schema, timezone="UTC"),
            rowtime=ROWTIME_COLUMN,
            lateness_ms=0,  # written in rowtime order, below the bounds it writes
            state_dir=str(lowering.checkpoint / "sources" / f"__part{part}"),
            late_dir=str(late_root / f"__part{part}"),
        )
        upstream.append(Lowered(rows, mine, list(rows.columns), delay, stage_output=spec.path, stage_spec=spec))
        before, start = tuple(aliases), cut + 1
        joined = intermediate_frame(lowering.spark, spec, before)
    joins = query.joins[start:]
    joined, _ = lowering.join_chain(query, frames, joined, joins, before)
    frame, _ = lowering.finish(query, frames, joined, None)
    mine = [s for s in specs if _belongs(s.alias, query, joins, False)] + [upstream[-1].stage_spec]
    return Lowered(frame.drop(ET_COLUMN), mine, [c.name for c in query.output], delay, lowering.snapshots, upstream=upstream)


def _belongs(key: str, query: Query, joins, first: bool) -> bool:
    """Whether the staged input `key` (an alias, or `view.alias` for a view's input) is read by
    the part of a cut chain made of `joins` (and, for the first part, the first input)."""
    aliases = [j.right for j in joins] + ([query.inputs[0].alias] if first else [])
    for alias in aliases:
        relation = query.input(alias).relation
        if key == alias or key.startswith(f"{relation}."):
            return True
    return False


def intermediate_frame(spark, spec: InputSpec, aliases: tuple[str, ...]):
    """The rows an earlier part of a cut chain wrote, as the joined frame they were: flat
    columns, plus each input's bound flag and zero column (the part's own rowtime, as engine
    time, is START, the event time: the inputs' rowtimes are plain timestamps here)."""
    from pyspark.sql import functions as F

    from streamjoin.io.sources.source import staged_stream

    df = staged_stream(spark, spec)
    df = df.withColumn(START, engine_time(F.col(ROWTIME_COLUMN))).withWatermark(START, f"{spec.lateness_ms} milliseconds")
    carried = [F.col(q(c)) for c in df.columns if c not in (BOUND, ROWTIME_COLUMN, START)]
    return df.select(
        *carried,
        F.col(START),
        *[F.col(BOUND).alias(bound_column(a)) for a in aliases],
        *[(F.unix_micros(F.col(ROWTIME_COLUMN)) * 0).alias(flat(a, ZERO)) for a in aliases],
    )
