"""What the operator's column-wise engines share (`asof_columns`, `rows_columns`): the packing of
their input (`pack`, `unpack`) and the buffer of rows whose instant is not complete
(`ColumnGroup`), stored as arrays.

Keys are the operator's group-key columns (`sj_k0`, ...: the join keys, cast by Spark to one type
that both sides share, `lower.custom`); a NULL key matches nothing. Values travel as Spark handed
them to pandas: timestamps as microseconds (`processor.NULL_US`: NULL), integers with NULLs as
floats. No Spark here (`operator.processor` calls it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from streamjoin.operator.group import INF

T, SEQ = "sj_t", "sj_seq"
GROUP, BLOB = "sj_g", "sj_blob"  # a packed chunk: its group, and its rows as an Arrow IPC stream


def pack(batches):
    """`mapInArrow` before the operator: one partition's rows of the union become one row per
    group, its rows as an Arrow IPC stream (`unpack`). Spark hands `transformWithStateInPandas`
    its input row by row (a Python tuple per row, then a pandas frame built from them); packed, it
    hands over a few rows per group and the rows stay columns all the way."""
    import pyarrow.compute as pc

    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    table = table.take(pc.sort_indices(table[GROUP]))
    groups = table[GROUP].to_numpy()
    starts = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    ends = np.r_[starts[1:], len(groups)]
    blobs = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        sink = pa.BufferOutputStream()
        part = table.slice(start, end - start)
        with pa.ipc.new_stream(sink, part.schema) as writer:
            writer.write_table(part)
        blobs.append(sink.getvalue().to_pybytes())
    yield pa.RecordBatch.from_arrays([pa.array(groups[starts], pa.int32()), pa.array(blobs, pa.binary())], [GROUP, BLOB])


def unpack(blobs) -> pd.DataFrame:
    """The rows of packed chunks (`pack`), as pandas frames them (integers with NULLs as floats)."""
    tables = [pa.ipc.open_stream(pa.py_buffer(blob)).read_all() for blob in blobs]
    return pa.concat_tables(tables).to_pandas()


class ColumnGroup:
    """One group: `add` the rows of a batch, `advance` to a complete instant (the subclass's join),
    `to_state` to store. `frames` names the frames the state holds besides the pending rows."""

    frames: tuple[str, ...] = ()

    def __init__(self, keys: list[str], columns: tuple[list[str], list[str]]):
        """keys: the key columns; columns: each side's value columns."""
        self.keys, self.columns = keys, columns
        self.pending = [self.empty(0), self.empty(1)]  # rows whose instant is not complete, per side
        self.timer_ms: int | None = None
        self.reported: tuple | None = None

    def empty(self, side: int) -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in [T, SEQ, *self.keys, *self.columns[side]]})

    # the group's interface to the processor (as group.GroupJoin's)
    def add(self, pdf: pd.DataFrame) -> None:
        """A batch of the union's rows (bound rows already removed)."""
        side = pdf["sj_side"].to_numpy()
        for n in (0, 1):
            rows = pdf.loc[side == n, [T, SEQ, *self.keys, *self.columns[n]]]
            if len(rows):
                self.pending[n] = rows if not len(self.pending[n]) else pd.concat([self.pending[n], rows], ignore_index=True)

    @property
    def buffer(self) -> int:
        return len(self.pending[0]) + len(self.pending[1])

    def size(self) -> int:
        return self.buffer + sum(len(getattr(self, name)) for name in self.frames)

    def hold(self) -> float:
        return INF  # inner joins and ASOF: a row is decided once its instant is complete

    def wakeup(self) -> float:
        times = [float(p[T].min()) for p in self.pending if len(p)]
        return min(times, default=INF)

    def due(self, limit: float, keyless: tuple[bool, bool] = (False, False)) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Each side's pending rows at instants <= limit (complete), taken out of the buffer; the
        rows of a NULL key (they match nothing) left out unless `keyless` keeps that side's."""
        ready = []
        for n in (0, 1):
            p = self.pending[n]
            due = (p[T] <= limit).to_numpy() if len(p) else np.zeros(0, bool)
            rows = p[due]
            self.pending[n] = p[~due].reset_index(drop=True)
            ready.append(rows if keyless[n] or not len(rows) else rows[rows[self.keys].notna().all(axis=1).to_numpy()])
        return ready[0], ready[1]

    # storage: arrays, not pickled row objects
    def to_state(self) -> dict:
        frames = {"l": self.pending[0], "r": self.pending[1], **{name: getattr(self, name) for name in self.frames}}
        return {"frames": {name: {c: f[c].to_numpy() for c in f.columns} for name, f in frames.items()},
                "timer_ms": self.timer_ms, "reported": self.reported}

    def load_state(self, state: dict) -> None:
        frames = state["frames"]
        self.pending = [pd.DataFrame(frames["l"]), pd.DataFrame(frames["r"])]
        for name in self.frames:
            setattr(self, name, pd.DataFrame(frames[name]))
        self.timer_ms, self.reported = state["timer_ms"], state["reported"]


def typed(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One dtype per key column across frames (merge_asof and groupby need it) and an int64 `T`: an
    integer key column is float when its batch had NULLs, so numbers are compared as floats (as the
    row engine compares them: pandas hands both the same floats); other keys as objects."""
    frame = frame.copy()
    frame[T] = frame[T].astype(np.int64)
    for k in keys:
        column = frame[k]
        frame[k] = column.astype(np.float64) if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype) \
            else column.astype(object)
    return frame
