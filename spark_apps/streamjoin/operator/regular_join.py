"""RisingWave's regular join of two streams (docs/semantics-decisions.md): no window, no time
bound. Every row of both inputs stays, per join key, for as long as the query runs, and pairs with
every row of the other input that shares its key, whichever came first. Inner pairs are appended
as they are found (EMIT EAGER). A preserved row that has no partner yet is emitted NULL-extended
at the end of its instant; under EMIT CHANGES, its first partner withdraws it (-D) before the pair
(+I), so the changelog's net content is always the SQL join of every row read so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin.operator.group import Entry, GroupJoin


@dataclass
class RegularJoin(GroupJoin):
    """Both inputs' rows, per join key, forever (§ regular joins, docs/semantics-decisions.md)."""

    present: list = field(default_factory=lambda: [{}, {}])  # side -> {join key: [Entry, ...]}

    def run(self, ready, limit, cond, out) -> None:
        i = 0
        while i < len(ready):
            now, started = ready[i][0], []
            while i < len(ready) and ready[i][0] == now:  # one instant, in §2's order
                t, side, seq, values = ready[i]
                i += 1
                e = Entry(side, t, seq, values, start=t, key=cond.key_of(side, values))
                started.append(e)
                if e.key is None:  # a NULL key (or a failed ON condition of its own side) matches nothing
                    continue
                for other in self.present[1 - side].get(e.key, ()):
                    left, right = (e, other) if side == 0 else (other, e)
                    if cond.residual_ok(left.values, right.values):
                        self.pair(left, right, now, out)
                self.present[side].setdefault(e.key, []).append(e)
            for e in started:  # every row of the instant has arrived: rows still alone are NULL-extended
                if self.spec.preserves(e.side) and not e.matched:
                    e.eager = True
                    out.append(self.null_row(e, now))

    def size(self) -> int:
        return len(self.buffer) + sum(len(rows) for side in self.present for rows in side.values())
