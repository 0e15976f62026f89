"""`l OVER (PARTITION BY keys ROWS n PRECEDING) [INNER] JOIN r OVER (PARTITION BY keys ROWS m
PRECEDING) ON l.keys = r.keys`, each side partitioned by exactly its join-key columns, one group's
rows at a time by column (numpy, pandas), not row by row.

The same answer as `window_join.WindowJoin` for such a join (SEMANTICS.md §3, §4): a row arrives
(in §2 order: rowtime, left before right, position) and pairs, at its rowtime, with the other
side's present rows of its key: the latest count + 1 rows of that key (its partition) that
arrived before it, in arrival order. As partitions are keys, the i-th row of a key on one side is
present for a later row of the other side when at most `count` rows of that key arrived after it
on its side: counting rows per key is the whole join, so it needs no Python per row. The state
is, per side, the latest count + 1 rows of each key (`kept`), stored as arrays.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from streamjoin.operator.columns import SEQ, ColumnGroup, T, typed
from streamjoin.operator.group import INF


class RowsColumns(ColumnGroup):
    """One group of an inner join of two ROWS windows partitioned by their keys."""

    frames = ("kept_l", "kept_r")

    def __init__(self, counts: tuple[int, int], keys: list[str], columns: tuple[list[str], list[str]]):
        """counts: each side's ROWS count (0: CURRENT ROW)."""
        super().__init__(keys, columns)
        self.counts = counts
        self.kept_l, self.kept_r = self.empty(0), self.empty(1)  # per side, its present rows, in arrival order

    @classmethod
    def for_spec(cls, spec, keys: list[str], columns: tuple[list[str], list[str]]) -> RowsColumns:
        return cls((spec.left.window.count, spec.right.window.count), keys, columns)

    def advance(self, limit: float) -> pd.DataFrame | None:
        """Join the rows at instants <= limit (complete): the output rows (`T` = their rowtime, left
        and right value columns) in the row engine's order; None when there are none."""
        ready = [rows.sort_values([T, SEQ], kind="stable") for rows in self.due(limit)]
        out = self._join(ready) if len(ready[0]) or len(ready[1]) else None
        if limit == INF:  # end of input: every row leaves (an inner join emits nothing for it)
            self.kept_l, self.kept_r = self.empty(0), self.empty(1)
        return out

    def _join(self, ready: list[pd.DataFrame]) -> pd.DataFrame | None:
        kept = [self.kept_l, self.kept_r]
        # each side's rows in arrival order: the present ones, then this step's
        rows = [ready[n] if not len(kept[n]) else kept[n] if not len(ready[n]) else pd.concat([kept[n], ready[n]], ignore_index=True)
                for n in (0, 1)]
        rows = [r.reset_index(drop=True) for r in rows]
        codes = _codes([typed(r[[T, *self.keys]], self.keys) for r in rows], self.keys)
        # every row as an event: the present rows first (they arrived earlier), then this step's in §2 order
        fresh = [np.arange(len(rows[n])) >= len(kept[n]) for n in (0, 1)]
        side = np.r_[np.zeros(len(rows[0]), np.int8), np.ones(len(rows[1]), np.int8)]
        pos = np.r_[np.arange(len(rows[0])), np.arange(len(rows[1]))]
        new = np.r_[fresh[0], fresh[1]]
        t = np.r_[rows[0][T].to_numpy(np.int64), rows[1][T].to_numpy(np.int64)]
        seq = np.r_[rows[0][SEQ].to_numpy(np.int64), rows[1][SEQ].to_numpy(np.int64)]
        code = np.r_[codes[0], codes[1]]
        # old rows keep their stored order (arrival order per side), new ones go by rowtime, side, position
        rank = np.where(new, seq, np.arange(len(new)))
        order = np.lexsort((rank, np.where(new, side, 0), np.where(new, t, 0), new))
        side, pos, new, t, code = side[order], pos[order], new[order], t[order], code[order]
        # per event, how many rows of its key each side had before it (exclusive counts)
        is_right = side.astype(np.int64)
        frame = pd.DataFrame({"code": code, "r": is_right, "l": 1 - is_right})
        before = [frame.groupby("code", sort=False)[name].cumsum().to_numpy() - frame[name].to_numpy() for name in ("l", "r")]
        # each side's rows sorted by (key, index within the key): where a key's rows start
        by_key = []
        for n in (0, 1):
            mine = side == n
            idx = np.lexsort((before[n][mine], code[mine]))
            by_key.append((code[mine][idx], pos[mine][idx]))
        ev = np.flatnonzero(new)
        ev_side, ev_code = side[ev], code[ev]
        other = 1 - ev_side
        j = np.where(ev_side == 0, before[1][ev], before[0][ev])  # the other side's rows of the key so far
        width = np.where(other == 0, self.counts[0], self.counts[1]) + 1
        lo = np.maximum(j - width, 0)
        count = j - lo
        if not count.sum():
            self._keep(rows, codes)
            return None
        rep = np.repeat(np.arange(len(ev)), count)
        within = np.arange(len(rep)) - np.repeat(np.cumsum(count) - count, count)
        mate = np.empty(len(rep), np.int64)
        for n in (0, 1):  # the position of each pair's row on the other side
            mask = other[rep] == n
            if mask.any():
                keys, positions = by_key[n]
                start = np.searchsorted(keys, ev_code[rep[mask]], side="left")
                mate[mask] = positions[start + lo[rep[mask]] + within[mask]]
        mine = pos[ev][rep]
        is_left = ev_side[rep] == 0
        left = np.where(is_left, mine, mate)
        right = np.where(is_left, mate, mine)
        out = {T: t[ev][rep]}
        for n, at in ((0, left), (1, right)):
            for c in self.columns[n]:
                out[c] = rows[n][c].to_numpy()[at]
        self._keep(rows, codes)
        return pd.DataFrame(out)

    def _keep(self, rows: list[pd.DataFrame], codes: list[np.ndarray]) -> None:
        """Each side's present rows: the latest count + 1 of each key."""
        kept = []
        for n in (0, 1):
            if not len(rows[n]):
                kept.append(self.empty(n))
                continue
            later = pd.Series(codes[n]).groupby(codes[n], sort=False).cumcount(ascending=False).to_numpy()
            kept.append(rows[n][later <= self.counts[n]].reset_index(drop=True))
        self.kept_l, self.kept_r = kept


def _codes(frames: list[pd.DataFrame], keys: list[str]) -> list[np.ndarray]:
    """One integer per distinct key across both sides' rows."""
    parts = [f[keys] for f in frames if len(f)]  # (an empty frame's object columns would widen the others)
    if not parts:
        return [np.zeros(0, np.int64) for _ in frames]
    both = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
    if len(keys) == 1:
        codes = pd.factorize(both[keys[0]])[0]
    else:
        codes = both.groupby(keys, sort=False).ngroup().to_numpy()
    return [codes[: len(frames[0])], codes[len(frames[0]):]]
