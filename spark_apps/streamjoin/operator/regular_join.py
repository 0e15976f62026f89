"""RisingWave's regular join of two inputs (docs/semantics-decisions.md): no window, no time bound.
Every row of an append-only input stays, per join key, for as long as the query runs; a table fed
by its changes (`Spec.changing`) keeps its latest row per primary key. A row pairs with every row
of the other input that shares its key, whichever came first. Inner pairs of append-only inputs
are appended as they are found (EMIT EAGER). A preserved row that has no partner yet is emitted
NULL-extended at the end of its instant; under EMIT CHANGES its first partner withdraws it (-D)
before the pair (+I). A table row that is updated or deleted withdraws every result it gave (-D),
and a partner left without any is NULL-extended again; so the changelog's net content is always
the SQL join of the inputs as they stand. A LEFT SEMI join writes a left row (alone) at its
first partner and withdraws it at its last partner's delete; a LEFT ANTI join writes a left row
without partners as an outer join writes its NULL-extended row (issue 67)."""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin.operator.group import DELETE, Entry, GroupJoin, Output, changed_row, instants, keep_row, kept_rows
from streamjoin.plan.model import JoinType


@dataclass
class RegularJoin(GroupJoin):
    """Both inputs' rows, per join key, forever; a changing table's latest row per primary key."""

    present: list = field(default_factory=lambda: [{}, {}])  # side -> {join key: [Entry, ...]}
    by_pk: list = field(default_factory=lambda: [{}, {}])  # side -> {primary key: Entry} (changing sides)

    def run(self, ready, limit, cond, out) -> None:
        for now, events in instants(ready):
            started = []
            for t, side, seq, values in events:
                e = self.change(side, t, seq, values, now, cond, out)
                if e is not None:
                    started.append(e)
            for e in started:  # every row of the instant has arrived: rows still alone are NULL-extended
                if self.spec.preserves(e.side) and not e.matched and not e.gone and not e.eager:
                    e.eager = True
                    out.append(self.null_row(e, int(e.start)))

    def change(self, side, t, seq, values, now, cond, out) -> Entry | None:
        """One row of `side`: an append, or a changing table's upsert or delete. The new Entry, if any."""
        pk_columns = self.spec.changing[side]
        if pk_columns:
            values, deleted, pk, old = changed_row(pk_columns, values, self.by_pk[side])
            if old is not None:
                self.withdraw(old, now, out)
            if deleted:
                return None
        e = Entry(side, t, seq, values, start=t, key=cond.key_of(side, values))
        e.partners = 0
        if pk_columns:
            keep_row(pk_columns, self.by_pk[side], pk, e)
        if e.key is None:  # a NULL key (or a failed ON condition of its own side) matches nothing
            return e
        for other in self.present[1 - side].get(e.key, ()):
            left, right = (e, other) if side == 0 else (other, e)
            if cond.residual_ok(left.values, right.values):
                self.pair(left, right, now, out)
                e.partners += 1
                other.partners += 1
        self.present[side].setdefault(e.key, []).append(e)
        return e

    def semi_rowtime(self, left: Entry, rowtime: int) -> int:
        """The left row's own start: its withdrawal (`withdraw`) writes the same row back."""
        return int(left.start)

    def withdraw(self, e: Entry, now, out) -> None:
        """A table row that is replaced or deleted: every result it gave is withdrawn; a partner
        left alone, if preserved, is NULL-extended again."""
        e.gone = True
        rows = self.present[e.side].get(e.key)
        if rows is not None:
            rows.remove(e)
            if not rows:
                del self.present[e.side][e.key]
        if self.spec.preserves(e.side) and e.eager and not e.matched:
            out.append(self.null_row(e, int(e.start), DELETE))  # its NULL-extended row
        if not e.matched:
            return
        semi = self.spec.join_type == JoinType.SEMI
        if semi and e.side == 0 and e.partners:
            out.append(self.null_row(e, int(e.start), DELETE))  # the semi join's row
        cond_pairs = self.present[1 - e.side].get(e.key, ()) if e.key is not None else ()
        for other in cond_pairs:
            if not self._paired(e, other):
                continue
            left, right = (e, other) if e.side == 0 else (other, e)
            if not self.spec.join_type.filters:
                out.append(Output(DELETE, int(max(e.start, other.start)), left.values, right.values))  # as it was written
            other.partners -= 1
            if other.partners == 0 and semi and other.side == 0:  # its last partner gone
                other.matched = False
                out.append(self.null_row(other, int(other.start), DELETE))
            if other.partners == 0 and self.spec.preserves(other.side):
                other.matched, other.eager = False, True  # alone again: NULL-extended
                out.append(self.null_row(other, int(other.start)))

    def _paired(self, a: Entry, b: Entry) -> bool:
        """Whether `a` and `b` (of the same join key) gave a pair: the residual held."""
        left, right = (a, b) if a.side == 0 else (b, a)
        return self._cond.residual_ok(left.values, right.values)

    def advance(self, limit, cond):
        self._cond = cond  # withdraw() re-checks the residual of pairs it takes back
        return super().advance(limit, cond)

    def size(self) -> int:
        """Rows held: buffered, present per join key, and a changing table's rows whose join key is
        NULL (held by primary key only, to withdraw what they gave: the processor drops a group
        that holds nothing, and before 2026-11-28 took such a row's withdrawal with it)."""
        keyless = sum(1 for side in self.by_pk for e in kept_rows(side) if e.key is None)
        return len(self.buffer) + sum(len(rows) for side in self.present for rows in side.values()) + keyless

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_cond", None)
        return state
