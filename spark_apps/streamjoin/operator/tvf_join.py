"""TUMBLE / HOP on both inputs, joined per window (SEMANTICS.md §8): a window is final when the
clock has passed its end; then its pairs (and NULL-extended rows) are emitted and it is dropped.
Each row carries its window's `window_start` and `window_end`."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from streamjoin.operator.group import INF, Entry, GroupJoin


@dataclass
class WindowFunctionJoin(GroupJoin):
    """TUMBLE / HOP on both inputs, joined per window (§8); a window is final when the clock has
    passed its end, then its pairs (and NULL-extended rows) are emitted and it is dropped."""

    windows: dict = field(default_factory=dict)  # window start -> ([left Entry], [right Entry])

    def run(self, ready, limit, cond, out) -> None:
        window = self.spec.time_window
        size, slide, offset = window.size_ms * 1000, window.slide_ms * 1000, window.offset_ms * 1000
        for t, side, seq, values in ready:
            # windows start at offset + n * slide; the earliest whose window holds t
            first = (t - offset - size) // slide * slide + slide + offset
            for start in range(first, t + 1, slide):
                row = dict(values)
                row["window_start"], row["window_end"] = _timestamp(start), _timestamp(start + size)
                e = Entry(side, t, seq, row, key=cond.key_of(side, row))
                self.windows.setdefault(start, ([], []))[side].append(e)
        for start in sorted(s for s in self.windows if s + size - 1 <= limit):
            lefts, rights = self.windows.pop(start)
            by_key: dict = {}
            for r in rights:
                if r.key is not None:
                    by_key.setdefault(r.key, []).append(r)
            for e in lefts:
                for r in by_key.get(e.key, ()) if e.key is not None else ():
                    if cond.residual_ok(e.values, r.values):
                        self.pair(e, r, max(e.t, r.t), out)
            for e in (*lefts, *rights):
                if self.spec.preserves(e.side) and not e.matched:
                    out.append(self.null_row(e, e.t))

    def next_change(self) -> float:
        size = self.spec.time_window.size_ms * 1000
        return min((s + size - 1 for s in self.windows), default=INF)

    def hold(self) -> float:
        return min((e.t for sides in self.windows.values() for rows in sides for e in rows), default=INF)

    def size(self) -> int:
        return len(self.buffer) + sum(len(rows) for sides in self.windows.values() for rows in sides)


def _timestamp(us: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)
