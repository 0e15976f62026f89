"""RANGE and ROWS windows on both inputs of a two-stream join (SEMANTICS.md §3, §4), every join
type, every emission mode (§6). A row pairs with the other input's present rows when its own
presence starts; the pair's rowtime is that instant (§4). A preserved row that matched nothing is
NULL-extended when it stops being present (FINAL), or at the end of its first instant (EAGER,
CHANGES; a CHANGES row is withdrawn with -D at its first match)."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from streamjoin.operator.group import INF, Entry, GroupJoin, hashable
from streamjoin.plan.model import Emit
from streamjoin.plan.windows import RowsWindow


@dataclass
class WindowJoin(GroupJoin):
    """RANGE / ROWS windows on both inputs (§3, §4), any join type, any emission mode (§6)."""

    present: list = field(default_factory=lambda: [{}, {}])  # side -> {join key: {id: Entry}} (active)
    waiting: list = field(default_factory=list)  # heap (start, id, Entry): lagged rows not started
    ends: list = field(default_factory=list)  # heap (end, id, Entry): RANGE rows' last instants
    rows: list = field(default_factory=lambda: [{}, {}])  # side -> {partition: [Entry, ...]} (ROWS)
    next_id: int = 0

    def run(self, ready, limit, cond, out) -> None:
        i = 0
        while True:
            candidates = [t for t in (
                ready[i][0] if i < len(ready) else INF,
                self.waiting[0][0] if self.waiting else INF,
                self.ends[0][0] if self.ends else INF,
            ) if t <= limit and t != INF]
            if not candidates:
                break
            i = self.instant(min(candidates), ready, i, cond, out)
        if limit == INF:  # end of input: what is still present leaves
            for side in (0, 1):
                for e in [e for by_id in self.present[side].values() for e in by_id.values()]:
                    self.leave(e, out)
            for _, _, e in self.waiting:
                self.leave(e, out)
            self.waiting, self.ends, self.rows = [], [], [{}, {}]

    def instant(self, now, ready, i, cond, out) -> int:
        """Everything at instant `now`, in §4's order: lagged rows start, the instant's rows
        arrive, eager NULL rows, rows whose window ends. Returns the next unread event."""
        spec = self.spec
        started = []
        while self.waiting and self.waiting[0][0] == now:  # lagged rows start at (now, 0)
            _, _, e = heapq.heappop(self.waiting)
            if not e.gone:
                self.activate(e, now, cond, out)
                started.append(e)
        while i < len(ready) and ready[i][0] == now:
            t, side, seq, values = ready[i]
            i += 1
            e = self.arrive(side, t, seq, values, out)
            e.key = cond.key_of(side, values)
            if e.start == now:
                self.activate(e, now, cond, out)
                started.append(e)
        if spec.emit != Emit.FINAL:  # every row of the instant has arrived: eager NULL rows
            for e in started:
                if spec.preserves(e.side) and not e.matched and not e.gone and not e.eager:
                    e.eager = True
                    out.append(self.null_row(e, now))
        while self.ends and self.ends[0][0] == now:  # RANGE rows whose window ends with this instant
            _, _, e = heapq.heappop(self.ends)
            self.leave(e, out)
        return i

    def arrive(self, side, t, seq, values, out) -> Entry:
        window = (self.spec.left, self.spec.right)[side].window
        e = Entry(side, t, seq, values)
        self.next_id += 1
        if isinstance(window, RowsWindow):
            n, partition = window.count, window.partition_by
            key = tuple(hashable(values.get(c)) for c in partition)
            members = self.rows[side].setdefault(key, [])
            if len(members) > n:  # this arrival is the (n+1)-th later row: the oldest leaves now
                self.leave(members.pop(0), out)
            members.append(e)
            e.start = t
        else:  # RANGE (CURRENT ROW is RANGE 0)
            size, lag = window.size_ms * 1000, window.lag_ms * 1000
            e.start, e.end = t + lag, t + size
            if lag:
                heapq.heappush(self.waiting, (e.start, self.next_id, e))
            heapq.heappush(self.ends, (e.end, self.next_id, e))
        return e

    def activate(self, e: Entry, now: int, cond, out) -> None:
        if e.key is not None:
            for other in list(self.present[1 - e.side].get(e.key, {}).values()):
                left, right = (e, other) if e.side == 0 else (other, e)
                if cond.residual_ok(left.values, right.values):
                    self.pair(left, right, now, out)
        e.active = True
        self.present[e.side].setdefault(e.key, {})[id(e)] = e

    def leave(self, e: Entry, out) -> None:
        if e.gone:
            return
        e.gone = True
        by_id = self.present[e.side].get(e.key)
        if by_id is not None:
            by_id.pop(id(e), None)
            if not by_id:
                del self.present[e.side][e.key]
        if self.spec.preserves(e.side) and not e.matched and not e.eager:
            out.append(self.null_row(e, int(e.start)))

    def next_change(self) -> float:
        return min(self.waiting[0][0] if self.waiting else INF, self.ends[0][0] if self.ends else INF)

    def hold(self) -> float:
        if self.spec.emit != Emit.FINAL:
            return INF
        starts = [e.start for side in (0, 1) if self.spec.preserves(side)
                  for by_id in self.present[side].values() for e in by_id.values() if not e.matched]
        starts += [e.start for _, _, e in self.waiting if self.spec.preserves(e.side) and not e.gone]
        return min(starts, default=INF)

    def size(self) -> int:
        return len(self.buffer) + sum(len(by_id) for p in self.present for by_id in p.values()) + len(self.waiting)

    def __getstate__(self):
        # RANGE rows sit in `ends` too and ROWS rows in `rows`: pickle keeps shared Entry objects
        # shared, so `id()` keys are rebuilt on load
        state = dict(self.__dict__)
        state["present"] = [[e for by_id in p.values() for e in by_id.values()] for p in self.present]
        return state

    def __setstate__(self, state):
        present = [{}, {}]
        for side, entries in enumerate(state["present"]):
            for e in entries:
                present[side].setdefault(e.key, {})[id(e)] = e
        state["present"] = present
        self.__dict__.update(state)
