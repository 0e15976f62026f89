"""The sink of a part of a cut chain (`lower.cut_chain`) but the last."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from streamjoin.io.formats.columns import ROWTIME_COLUMN
from streamjoin.io.formats.instants import END_US
from streamjoin.io.sinks.ordered_sink import OrderedSink, SinkState


class StageSink(OrderedSink):
    """The sink of a part that feeds another: an earlier part of a cut chain (lower.cut_chain), or
    an aggregating view joined with streams (lower.staged_views). Its rows, in rowtime order, are
    the next part's input (`spec`, whose rowtime column they carry). Each release is one parquet file in the folder the
    next part reads (the same staging as any input), ending with a rowtime bound at the release
    threshold: no later row of this part can be older, so the next part's clock advances with
    this part's, rows or not."""

    def __init__(self, checkpoint: Path, spec, columns: list[str], order_delay_ms: int, bounds: bool = True,
                 custom: bool = False, order: tuple = (), changes: bool = False):
        # custom: a view joined on streamjoin's operator (EMIT FINAL): released below its groups' holds
        super().__init__(checkpoint, None, columns, order_delay_ms, custom=custom, order=order)
        self.spec = spec
        # False: a view that promotes a new rowtime; its release threshold is its inputs' clock, not
        # a bound on the new rowtime, so it writes no bounds (the end of input still ends its reader)
        self.bounds = bounds
        # a running aggregate's changes (lower.changes): a change whose rowtime is below the last
        # bound written (a withdrawn row keeps the rowtime it was written at) is moved up to that
        # bound, so its reader never takes it for late; rows keep their order (the sort is stable)
        self.changes = changes
        self.folder = Path(spec.path)
        self.folder.mkdir(parents=True, exist_ok=True)

    def _release(self, threshold_us: int | None) -> None:
        pending = self.state().pending_stage_us
        if pending is not None:
            # a release that crashed between writing its file and recording it: the next part may
            # have read that file already, so it is redone with exactly its threshold (same rows,
            # same name); a later threshold waits for the next release
            threshold_us = None if pending >= END_US else pending
        super()._release(threshold_us)

    def _write(self, state: SinkState, done, threshold_us: int | None) -> bool:
        import pyarrow.parquet as pq

        from streamjoin.io.sources.staging import BOUND, bound_row, staged_schema

        if self.changes and done is not None and state.bound_us is not None:
            done = _at_least(done, (ROWTIME_COLUMN, self.spec.rowtime), state.bound_us)
        rows = done.sort_by(self.sort_keys).select(self.columns) if done is not None else None
        rows = rows if rows is not None and rows.num_rows else None
        bound = threshold_us if self.bounds and threshold_us is not None and (
            state.bound_us is None or threshold_us > state.bound_us) else None
        if rows is None and bound is None:
            return False
        schema = staged_schema(self.spec.schema)
        parts = []
        if rows is not None:
            parts.append(rows.append_column(BOUND, pa.array([False] * rows.num_rows)).cast(schema))
        if bound is not None:
            parts.append(bound_row(schema, self.spec.rowtime, bound))
        name = f"part-{state.releases:08d}.parquet"  # a replayed release rewrites the same file
        state.pending_stage_us = END_US if threshold_us is None else threshold_us
        self._save_state(state)  # the plan first: a crash from here on replays this very release
        tmp = self.folder / f".{name}.tmp"  # the stager skips dot files
        pq.write_table(pa.concat_tables(parts), tmp)
        os.replace(tmp, self.folder / name)
        state.releases += 1
        state.rows_emitted += rows.num_rows if rows is not None else 0
        state.bound_us = bound if bound is not None else state.bound_us
        state.pending_stage_us = None
        return True


def _at_least(table: pa.Table, columns, bound_us: int) -> pa.Table:
    """`table` with its timestamp `columns` raised to `bound_us` where they are below it."""
    import pyarrow.compute as pc

    for name in dict.fromkeys(columns):
        if name in table.column_names:
            column = table.column(name)
            raised = pc.max_element_wise(pc.cast(column, pa.int64()), pa.scalar(bound_us, pa.int64()))
            table = table.set_column(table.column_names.index(name), name, pc.cast(raised, column.type))
    return table
