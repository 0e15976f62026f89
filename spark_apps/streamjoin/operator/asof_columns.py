"""`left ASOF [LEFT] JOIN right ON keys AND right.rowtime <= (or <) left.rowtime` between two
streams, one group's rows at a time by column (pandas), not row by row.

The same answer as `asof_join.AsofJoin.preceding` (SEMANTICS.md §8): a left row takes the latest
right row of its key at or before its instant (`<`: before it); ties at that rowtime go to the
latest arrival. Rows wait in the buffer until their instant is complete, as in every engine
(`columns.ColumnGroup`). The state is columns: the buffered rows of each side and, per key, the
latest right row so far; it is stored as arrays (`to_state`), not as pickled row objects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from streamjoin.operator.columns import SEQ, ColumnGroup, T, typed
from streamjoin.plan.model import JoinType

_MATCH = "__match"


class AsofColumns(ColumnGroup):
    """One group of an ASOF join: the pending rows and, per key, the latest right row (`last`)."""

    frames = ("last",)

    def __init__(self, strict: bool, left_outer: bool, keys: list[str], columns: tuple[list[str], list[str]]):
        """strict: `<` (else `<=`); keys: the key columns; columns: each side's value columns."""
        super().__init__(keys, columns)
        self.strict, self.left_outer = strict, left_outer
        self.last = self.empty(1)  # per key, the latest right row so far

    @classmethod
    def for_spec(cls, spec, keys: list[str], columns: tuple[list[str], list[str]]) -> AsofColumns:
        return cls(spec.asof_op == "<", spec.join_type == JoinType.LEFT, keys, columns)

    def advance(self, limit: float) -> pd.DataFrame | None:
        """Join the rows at instants <= limit (complete); the output rows (`T` = their rowtime,
        left and right value columns), in §2 order of the left rows; None when there are none."""
        lefts, rights = self.due(limit, keyless=(True, False))  # ASOF LEFT keeps a left row of a NULL key
        cands = self.last
        if len(rights):  # the latest right rows so far, then this step's, in arrival order per rowtime
            cands = rights if not len(self.last) else pd.concat([self.last, rights], ignore_index=True)
            cands = cands.sort_values([T, SEQ], kind="stable").reset_index(drop=True)
        out = self._join(lefts, cands) if len(lefts) else None
        if len(rights):  # the latest right row per key, ties at a rowtime to the latest arrival
            self.last = cands.drop_duplicates(self.keys, keep="last").reset_index(drop=True)
        return out

    def _join(self, lefts: pd.DataFrame, cands: pd.DataFrame) -> pd.DataFrame | None:
        lefts = lefts.sort_values([T, SEQ], kind="stable").reset_index(drop=True)
        keyed = lefts[self.keys].notna().all(axis=1).to_numpy()
        match = np.full(len(lefts), -1, dtype=np.int64)
        if len(cands) and keyed.any():
            probe = lefts.loc[keyed, [T, *self.keys]].reset_index()
            found = pd.merge_asof(
                typed(probe, self.keys), typed(cands[[T, *self.keys]].assign(**{_MATCH: np.arange(len(cands))}), self.keys),
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
