"""A stream (left) joined with a table that changes by key (right, as a changelog stream): Lenses'
`SELECT TABLE` over a topic (docs/semantics-decisions.md). A stream row meets the table rows
present when it arrives; one that found none waits (for `pending_us`, or to the end of input) and
is matched by the first table row that arrives for it, so under EAGER it appears twice:
NULL-extended, then matched."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin.operator.group import INF, Entry, GroupJoin, hashable
from streamjoin.plan.model import Emit, JoinType


@dataclass
class ChangelogJoin(GroupJoin):
    """A stream (left) joined with a table that changes by key (right, as a changelog stream).
    A stream row meets the table rows present when it arrives; one that found none waits (for
    `pending_us`, or to the end of input) and is matched by the first table row that arrives for
    it, so under EAGER it appears twice: NULL-extended, then matched (Lenses)."""

    table: dict = field(default_factory=dict)  # join key -> {table key: Entry} (the latest row per table key)
    where: dict = field(default_factory=dict)  # table key -> its row's join key
    pending: dict = field(default_factory=dict)  # join key -> stream rows that found no table row yet

    def run(self, ready, limit, cond, out) -> None:
        spec = self.spec
        i = 0
        while i < len(ready):
            now, j = ready[i][0], i
            while j < len(ready) and ready[j][0] == now:
                j += 1
            self.expire(now - spec.pending_us, out)
            # the instant's table rows first: a stream row meets the table as of its instant
            arrived = []
            for t, side, seq, values in sorted(ready[i:j], key=lambda r: -r[1]):
                e = Entry(side, t, seq, values, start=t, key=cond.key_of(side, values))
                if side == 1:
                    self.table_row(e, now, cond, out)
                elif not self.stream_row(e, now, cond, out):
                    arrived.append(e)
            i = j
            if spec.emit != Emit.FINAL and spec.join_type == JoinType.LEFT:
                for e in arrived:
                    if not e.matched:
                        e.eager = True
                        out.append(self.null_row(e, e.t))
        self.expire(limit - spec.pending_us if limit != INF else INF, out)

    def table_row(self, e: Entry, now, cond, out) -> None:
        """The table's new row for its key: it replaces the old one (which may have had another
        join key) and matches the stream rows waiting for its join key."""
        tkey = tuple(hashable(e.values.get(c)) for c in self.spec.table_key) if self.spec.table_key else e.key
        old = self.where.pop(tkey, ())
        if old != () and old in self.table:  # the row moves off its old join key
            self.table[old].pop(tkey, None)
            if not self.table[old]:
                del self.table[old]
        if e.key is None:
            return
        self.table.setdefault(e.key, {})[tkey] = e
        self.where[tkey] = e.key
        still = []
        for w in self.pending.get(e.key, []):
            if cond.residual_ok(w.values, e.values):
                self.pair(w, e, now, out)
            else:
                still.append(w)
        if still:
            self.pending[e.key] = still
        else:
            self.pending.pop(e.key, None)

    def stream_row(self, e: Entry, now, cond, out) -> bool:
        """A stream row meets the table rows present now; one that found none waits (False)."""
        matches = [r for r in self.table.get(e.key, {}).values() if cond.residual_ok(e.values, r.values)] if e.key is not None else []
        for r in matches:
            self.pair(e, r, now, out)
        if not matches:
            self.pending.setdefault(e.key, []).append(e)
        return bool(matches)

    def expire(self, before: float, out) -> None:
        """Stream rows that waited long enough (arrived before `before`) stop waiting."""
        for key in list(self.pending):
            still = []
            for e in self.pending[key]:
                if e.t < before or before == INF or key is None:
                    if self.spec.join_type == JoinType.LEFT and not e.eager:
                        out.append(self.null_row(e, e.t))
                else:
                    still.append(e)
            if still:
                self.pending[key] = still
            else:
                del self.pending[key]

    def next_change(self) -> float:
        return min((e.t + self.spec.pending_us + 1 for rows in self.pending.values() for e in rows), default=INF)

    def hold(self) -> float:
        if self.spec.emit != Emit.FINAL or self.spec.join_type != JoinType.LEFT:
            return INF
        return min((e.t for rows in self.pending.values() for e in rows), default=INF)

    def size(self) -> int:
        return len(self.buffer) + len(self.where) + sum(len(rows) for rows in self.pending.values())
