"""`left ASOF [LEFT] JOIN right ON keys AND right.rowtime OP left.rowtime` between two streams
(SEMANTICS.md §8), per join key; ties at the nearest rowtime: the latest arrival."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin.operator.group import INF, INSERT, Entry, GroupJoin, Output
from streamjoin.plan.model import Emit, JoinType


@dataclass
class AsofJoin(GroupJoin):
    """`left ASOF [LEFT] JOIN right ON keys AND right.rowtime OP left.rowtime` (§8), per join key.
    Ties at the nearest rowtime: the latest arrival."""

    last: dict = field(default_factory=dict)  # <=, <: key -> the latest right row so far
    waiting_left: dict = field(default_factory=dict)  # >=, >: key -> left rows without a candidate yet

    def run(self, ready, limit, cond, out) -> None:
        for now, lefts, rights in _instants(ready, cond):
            if self.spec.asof_op in ("<=", "<"):
                self.preceding(now, lefts, rights, out)
            else:
                self.following(now, lefts, rights, out)
        if limit == INF:  # end of input: no candidate comes for the left rows still waiting
            for rows in self.waiting_left.values():
                for e in rows:
                    if self.spec.join_type == JoinType.LEFT and not e.eager:
                        out.append(self.null_row(e, e.t))
            self.waiting_left = {}

    def preceding(self, now, lefts, rights, out) -> None:
        """`<=` / `<`: each left row takes the latest right row so far (for `<`, one before its instant)."""
        op = self.spec.asof_op
        before = {}
        for r in rights:
            if r.key is not None:
                before.setdefault(r.key, self.last.get(r.key))
                self.last[r.key] = r
        for e in lefts:
            best = None
            if e.key is not None:
                best = self.last.get(e.key) if op == "<=" or e.key not in before else before[e.key]
            if best is not None:
                out.append(Output(INSERT, now, e.values, best.values))
            elif self.spec.join_type == JoinType.LEFT:
                out.append(self.null_row(e, now))

    def following(self, now, lefts, rights, out) -> None:
        """`>=` / `>`: a left row waits for the first right row at (or after) its instant."""
        spec, op = self.spec, self.spec.asof_op
        for e in lefts:
            if e.key is None:  # a NULL key never finds a candidate: decided at once
                if spec.join_type == JoinType.LEFT:
                    e.eager = True
                    out.append(self.null_row(e, e.t))
                continue
            self.waiting_left.setdefault(e.key, []).append(e)
        latest = {r.key: r for r in rights if r.key is not None}  # ties at this instant: the last arrival
        for key, best in latest.items():
            still = []
            for e in self.waiting_left.get(key, []):
                if e.t <= now if op == ">=" else e.t < now:
                    self.pair(e, best, now, out)
                else:
                    still.append(e)
            if still:
                self.waiting_left[key] = still
            else:
                self.waiting_left.pop(key, None)
        if spec.emit != Emit.FINAL and spec.join_type == JoinType.LEFT:
            for e in lefts:
                if not e.matched and not e.eager:
                    e.eager = True
                    out.append(self.null_row(e, e.t))

    def hold(self) -> float:
        if self.spec.emit != Emit.FINAL or self.spec.join_type != JoinType.LEFT:
            return INF
        return min((e.t for rows in self.waiting_left.values() for e in rows), default=INF)

    def size(self) -> int:
        return len(self.buffer) + sum(len(rows) for rows in self.waiting_left.values()) + len(self.last)


def _instants(ready, cond):
    """(instant, its left rows, its right rows) in order, each row an Entry with its join key."""
    i = 0
    while i < len(ready):
        now, lefts, rights = ready[i][0], [], []
        while i < len(ready) and ready[i][0] == now:
            t, side, seq, values = ready[i]
            i += 1
            e = Entry(side, t, seq, values, start=t, key=cond.key_of(side, values))
            (lefts if side == 0 else rights).append(e)
        yield now, lefts, rights
