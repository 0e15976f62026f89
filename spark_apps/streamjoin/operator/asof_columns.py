"""`left ASOF [LEFT] JOIN right ON keys AND right.rowtime <= (or <) left.rowtime` between two
streams, one group's rows at a time by column (pandas), not row by row.

The same answer as `asof_join.AsofJoin.preceding` (SEMANTICS.md §8): a left row takes the latest
right row of its key at or before its instant (`<`: before it); ties at that rowtime go to the
latest arrival. Rows wait in the buffer until their instant is complete, as in every engine
(`group.GroupJoin`). The state is columns: the buffered rows of each side and, per key, the
latest right row so far; it is stored as arrays (`to_state`), not as pickled row objects.

Keys are the operator's group-key columns (`sj_k0`, ...: the join keys, cast by Spark to one type
that both sides share, `lower.custom`); a NULL key matches nothing. Values travel as Spark handed
them to pandas: timestamps as microseconds (`NULL_US`: NULL), integers with NULLs as floats. This
module has no Spark in it (`operator.processor` calls it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from streamjoin.operator.group import INF
from streamjoin.plan.model import JoinType

T, SEQ = "sj_t", "sj_seq"
_MATCH = "__match"
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


class AsofColumns:
    """One group: `add` the rows of a batch, `advance` to a complete instant, `to_state` to store."""

    def __init__(self, strict: bool, left_outer: bool, keys: list[str], columns: tuple[list[str], list[str]]):
        """strict: `<` (else `<=`); keys: the key columns; columns: each side's value columns."""
        self.strict, self.left_outer, self.keys, self.columns = strict, left_outer, keys, columns
        self.pending = [self._empty(0), self._empty(1)]  # rows whose instant is not complete, per side
        self.last = self._empty(1)  # per key, the latest right row so far
        self.timer_ms: int | None = None
        self.reported: tuple | None = None

    @classmethod
    def for_spec(cls, spec, keys: list[str], columns: tuple[list[str], list[str]]) -> AsofColumns:
        return cls(spec.asof_op == "<", spec.join_type == JoinType.LEFT, keys, columns)

    def _empty(self, side: int) -> pd.DataFrame:
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
        return self.buffer + len(self.last)

    def hold(self) -> float:
        return INF  # a left row is decided once its instant is complete

    def wakeup(self) -> float:
        times = [float(p[T].min()) for p in self.pending if len(p)]
        return min(times, default=INF)

    def advance(self, limit: float) -> pd.DataFrame | None:
        """Join the rows at instants <= limit (complete); the output rows (`T` = their rowtime,
        left and right value columns), in §2 order of the left rows; None when there are none."""
        ready = []
        for n in (0, 1):
            p = self.pending[n]
            due = (p[T] <= limit).to_numpy() if len(p) else np.zeros(0, bool)
            ready.append(p[due])
            self.pending[n] = p[~due].reset_index(drop=True)
        lefts, rights = ready
        rights = rights[rights[self.keys].notna().all(axis=1).to_numpy()] if len(rights) else rights
        out = self._join(lefts, rights) if len(lefts) else None
        if len(rights):  # the latest right row per key, ties at a rowtime to the latest arrival
            both = rights if not len(self.last) else pd.concat([self.last, rights], ignore_index=True)
            both = both.sort_values([T, SEQ], kind="stable")
            self.last = both.drop_duplicates(self.keys, keep="last").reset_index(drop=True)
        return out

    def _join(self, lefts: pd.DataFrame, rights: pd.DataFrame) -> pd.DataFrame | None:
        # candidates: the latest right rows so far, then this step's, in arrival order per rowtime
        cands = rights if not len(self.last) else pd.concat([self.last, rights], ignore_index=True) if len(rights) else self.last
        lefts = lefts.sort_values([T, SEQ], kind="stable").reset_index(drop=True)
        keyed = lefts[self.keys].notna().all(axis=1).to_numpy()
        match = np.full(len(lefts), -1, dtype=np.int64)
        if len(cands) and keyed.any():
            cands = cands.sort_values([T, SEQ], kind="stable").reset_index(drop=True)
            probe = lefts.loc[keyed, [T, *self.keys]].reset_index()
            found = pd.merge_asof(
                _typed(probe, self.keys), _typed(cands[[T, *self.keys]].assign(**{_MATCH: np.arange(len(cands))}), self.keys),
                on=T, by=self.keys, direction="backward", allow_exact_matches=not self.strict)
            match[found["index"].to_numpy()] = found[_MATCH].fillna(-1).to_numpy(dtype=np.int64)
        keep = match >= 0 if not self.left_outer else np.ones(len(lefts), bool)
        if not keep.any():
            return None
        lefts, match = lefts[keep].reset_index(drop=True), match[keep]
        out = {T: lefts[T].to_numpy()}
        for c in self.columns[0]:
            out[c] = lefts[c].to_numpy()
        hit = match >= 0
        for c in self.columns[1]:
            values = np.full(len(lefts), None, dtype=object)
            if hit.any():
                values[hit] = cands[c].to_numpy(dtype=object)[match[hit]]
            out[c] = values
        return pd.DataFrame(out)

    # storage: arrays, not pickled row objects
    def to_state(self) -> dict:
        frames = {"l": self.pending[0], "r": self.pending[1], "last": self.last}
        return {"frames": {name: {c: f[c].to_numpy() for c in f.columns} for name, f in frames.items()},
                "timer_ms": self.timer_ms, "reported": self.reported}

    def load_state(self, state: dict) -> None:
        frames = state["frames"]
        self.pending = [pd.DataFrame(frames["l"]), pd.DataFrame(frames["r"])]
        self.last = pd.DataFrame(frames["last"])
        self.timer_ms, self.reported = state["timer_ms"], state["reported"]


def _typed(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """merge_asof needs the same dtype on both sides of each `by` key and an int64 `on` column: an
    integer key column is float when its batch had NULLs, so numbers are compared as floats (as the
    row engine compares them: pandas hands both the same floats); other keys as objects."""
    frame = frame.copy()
    frame[T] = frame[T].astype(np.int64)
    for k in keys:
        column = frame[k]
        frame[k] = column.astype(np.float64) if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype) \
            else column.astype(object)
    return frame
