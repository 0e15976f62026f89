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
from streamjoin.lower.columns import ET_COLUMN, ROWTIME_COLUMN
from streamjoin.lower.lowered import Lowered
from streamjoin.lower.strategy import LoweringOptions, staged_views
from streamjoin.plan.model import Query, Script


def lower_staged_views(spark, script: Script, query: Query, specs: list[InputSpec], checkpoint: Path,
                       late_root: Path, options: LoweringOptions = LoweringOptions()
                       ) -> tuple[list[Lowered], dict[str, InputSpec], list[InputSpec]]:
    """(the views' parts, in order; the staged input each becomes, by the query's alias; the
    specs the joining query still reads itself)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_schema

    from streamjoin.lower.native import NativeLowering, order_delay

    parts, staged, rest = [], {}, list(specs)
    for n, sv in enumerate(staged_views(script, query, options)):
        prefix = f"{sv.view.name}."
        mine = [s for s in rest if s.alias.startswith(prefix)]
        rest = [s for s in rest if not s.alias.startswith(prefix)]
        lowering = NativeLowering(spark, script, {s.alias: s for s in mine}, checkpoint)
        frame, _ = lowering.query_frame(sv.view, prefix)
        columns = [c.name for c in sv.view.output]
        rowtime = script.relation(sv.view.name).rowtime
        if rowtime not in columns:  # the view's implicit rowtime: the bucket start, or its rows' output rowtime
            frame = frame.withColumn(rowtime, F.col(ROWTIME_COLUMN))
            columns.append(rowtime)
        rows = frame.drop(ET_COLUMN)
        schema = to_arrow_schema(rows.select(*columns).schema, timezone="UTC")
        name = f"__view_{sv.alias}"
        spec = InputSpec(
            alias=name,
            path=str(checkpoint / "stages" / str(n) / "rows"),  # beside part n's own checkpoint
            format="parquet",
            schema=schema,
            rowtime=rowtime,
            lateness_ms=0,  # written in rowtime order, below the bounds it writes
            state_dir=str(checkpoint / "sources" / name),
            late_dir=str(late_root / name),
        )
        # a row is final once the clock passes its bucket's end, or (no aggregation) the view's
        # own order delay: 0 for a projection, a filter or inner joins
        delay = bucket_ms(sv.view.aggregation) if sv.view.aggregation is not None else order_delay(sv.view)
        parts.append(Lowered(rows, mine, columns, delay, lowering.snapshots, stage_output=spec.path, stage_spec=spec))
        staged[sv.alias] = spec
    return parts, staged, rest
