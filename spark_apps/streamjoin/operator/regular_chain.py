"""A chain of RisingWave regular joins (`a JOIN b ON ... LEFT JOIN c ON ...`: left-deep, no join
bounded in time) in one group, as RisingWave runs it: one join after another, each join's left
input the changelog of the join before (docs/semantics-decisions.md, "Chains of regular joins").

Stage k joins the combinations of inputs 0..k (its left input) with input k + 1. Every input row
and every combination carries an identity (`Row.ident`: the input rows it holds, None where
NULL-extended), so a withdrawn combination (-D) finds the row it withdraws in the next stage. A
row pairs with every present row of the other side that shares its key; a preserved row that has
no partner at the end of its instant is NULL-extended, and withdrawn (-D) when a partner comes; a
deleted row (a changing table's update or delete, or a withdrawn combination) withdraws every
result it gave, and a preserved partner left without any is NULL-extended again at the end of the
instant. Folded, the last stage's changelog is always the SQL join of the inputs as they stand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from streamjoin.operator.group import (
    DELETE,
    INF,
    INSERT,
    Condition,
    GroupJoin,
    Output,
    Spec,
    changed_row,
    hashable,
    instants,
    keep_row,
    kept_rows,
)
from streamjoin.plan.model import Emit, JoinKind, JoinType


@dataclass(frozen=True)
class ChainSpec:
    """`stages[k]`: the join of inputs 0..k with input k + 1 (its keys and residual over
    `scope[alias][column]`); `changing[i]`: input i's primary key when it is a table fed by its
    changes (its rows carry io.sources.changelog.CHANGE), else ()."""

    aliases: tuple[str, ...]
    stages: tuple[Spec, ...]
    emit: Emit
    changing: tuple = ()
    kind: JoinKind = JoinKind.REGULAR


class ChainCondition:
    """Each stage's compiled condition."""

    def __init__(self, spec: ChainSpec):
        self.stages = [Condition(stage) for stage in spec.stages]


class _Nulls(dict):
    """The columns of a NULL-extended input: every one NULL."""

    def __missing__(self, key):
        return None


NULLS = _Nulls()


@dataclass(eq=False)
class Row:
    """A row of one stage's input: a combination of input rows."""

    ident: tuple  # an id per input row held (None: that input NULL-extended)
    values: tuple  # each input's columns (None: NULL-extended)
    t: int  # rowtime, microseconds: the latest of its rows'
    side: int = 0
    key: tuple | None = ()
    partners: int = 0
    nulled: bool = False  # its NULL-extended row is in the stage's output
    gone: bool = False


@dataclass
class Stage:
    """One regular join of the chain: its two sides' present rows."""

    k: int  # joins inputs 0..k with input k + 1
    join_type: JoinType
    rows: list = field(default_factory=lambda: [{}, {}])  # side -> {ident: Row}
    present: list = field(default_factory=lambda: [{}, {}])  # side -> {join key: {ident: Row}}

    def preserves(self, side: int) -> bool:
        """A row of `side` that has no partner is output (NULL-extended; an anti join's row as it is)."""
        return self.join_type == JoinType.FULL or (self.join_type, side) in (
            (JoinType.LEFT, 0), (JoinType.RIGHT, 1), (JoinType.ANTI, 0))

    def instant(self, events: list, cond: Condition, aliases: tuple, out: list) -> None:
        """The events (op, side, Row) of one instant, in §2's order; appends (op, Row) to `out`.
        Rows still alone when every row of the instant has arrived are NULL-extended."""
        alone = []
        for op, side, row in events:
            if op == INSERT:
                alone += self.insert(side, row, cond, aliases, out)
            else:
                alone += self.delete(side, row.ident, cond, aliases, out)
        for row in alone:
            if not row.gone and row.partners == 0 and not row.nulled and self.preserves(row.side):
                row.nulled = True
                out.append((INSERT, self.null_row(row)))

    def insert(self, side: int, row: Row, cond: Condition, aliases: tuple, out: list) -> list:
        row.side, row.partners, row.nulled, row.gone = side, 0, False, False
        row.key = self.key_of(side, row, cond, aliases)
        self.rows[side][row.ident] = row
        if row.key is None:  # a NULL key matches nothing
            return [row]
        semi = self.join_type == JoinType.SEMI
        for other in self.present[1 - side].get(row.key, {}).values():
            left, right = (row, other) if side == 0 else (other, row)
            if self.residual_ok(left, right, cond, aliases):
                if other.nulled:  # its NULL-extended row is withdrawn at its first partner
                    other.nulled = False
                    out.append((DELETE, self.null_row(other)))
                if semi and side == 1 and not other.partners:  # a left row's first match: its row
                    out.append((INSERT, self.null_row(other)))
                other.partners += 1
                row.partners += 1
                if not self.join_type.filters:  # a semi or anti join outputs its left rows alone
                    out.append((INSERT, self.combine(left, right)))
        if semi and side == 0 and row.partners:
            out.append((INSERT, self.null_row(row)))
        self.present[side].setdefault(row.key, {})[row.ident] = row
        return [row]

    def delete(self, side: int, ident: tuple, cond: Condition, aliases: tuple, out: list) -> list:
        """Withdraws the row and every result it gave; returns the partners left alone."""
        row = self.rows[side].pop(ident, None)
        if row is None:
            return []
        row.gone = True
        if row.nulled:
            row.nulled = False
            out.append((DELETE, self.null_row(row)))
        semi = self.join_type == JoinType.SEMI
        if semi and side == 0 and row.partners:  # a semi join's row, withdrawn with it
            out.append((DELETE, self.null_row(row)))
        if row.key is None:
            return []
        bucket = self.present[side][row.key]
        del bucket[ident]
        if not bucket:
            del self.present[side][row.key]
        alone = []
        if row.partners:
            for other in self.present[1 - side].get(row.key, {}).values():
                left, right = (row, other) if side == 0 else (other, row)
                if self.residual_ok(left, right, cond, aliases):
                    if not self.join_type.filters:
                        out.append((DELETE, self.combine(left, right)))
                    other.partners -= 1
                    if other.partners == 0 and semi and side == 1:  # a left row's last match gone
                        out.append((DELETE, self.null_row(other)))
                    if other.partners == 0:
                        alone.append(other)
        return alone

    def scope(self, side: int, row: Row, aliases: tuple) -> dict:
        if side == 1:
            return {aliases[self.k + 1]: row.values[0]}
        return {aliases[i]: NULLS if v is None else v for i, v in enumerate(row.values)}

    def key_of(self, side: int, row: Row, cond: Condition, aliases: tuple):
        if self.join_type == JoinType.CROSS or not cond.keys:
            return ()
        scope = self.scope(side, row, aliases)
        key = tuple(pair[side](scope) for pair in cond.keys)
        return None if None in key else tuple(hashable(v) for v in key)

    def residual_ok(self, left: Row, right: Row, cond: Condition, aliases: tuple) -> bool:
        if cond.residual is None or self.join_type == JoinType.CROSS:
            return True
        return cond.residual({**self.scope(0, left, aliases), **self.scope(1, right, aliases)}) is True

    def combine(self, left: Row, right: Row) -> Row:
        return Row(left.ident + right.ident, left.values + right.values, max(left.t, right.t))

    def null_row(self, row: Row) -> Row:
        """A row NULL-extended (a semi or anti join's left row: its right input NULL, read by no one)."""
        if row.side == 0:
            return Row(row.ident + (None,), row.values + (None,), row.t)
        nulls = (None,) * (self.k + 1)
        return Row(nulls + row.ident, nulls + row.values, row.t)


@dataclass
class RegularChain(GroupJoin):
    """Every stage's present rows; each changing input's latest row per primary key."""

    stages: list = field(default_factory=list)
    by_pk: dict = field(default_factory=dict)  # input -> {primary key: Row}
    next_id: int = 0

    def __post_init__(self):
        if not self.stages:
            self.stages = [Stage(k, s.join_type) for k, s in enumerate(self.spec.stages)]

    def run(self, ready, limit, cond: ChainCondition, out) -> None:
        for _, instant in instants(ready):
            events = [e for t, side, _, values in instant for e in self.events(side, t, values)]
            changes = [(op, 0, row) for op, n, row in events if n == 0]
            for k, stage in enumerate(self.stages):  # each join's changes are the next one's left input
                done: list = []
                stage.instant(changes + [(op, 1, row) for op, n, row in events if n == k + 1],
                              cond.stages[k], self.spec.aliases, done)
                changes = [(op, 0, row) for op, row in done]
            out += [Output(op, row.t, None, None, row.values) for op, _, row in changes]

    def events(self, side: int, t: int, values: dict) -> list:
        """One input row as (op, input, Row): an append, or a changing table's upsert or delete
        (the row it replaces withdrawn first)."""
        pk_columns = self.spec.changing[side] if side < len(self.spec.changing) else ()
        events = []
        if pk_columns:
            values, deleted, pk, old = changed_row(pk_columns, values, self.by_pk.setdefault(side, {}))
            if old is not None:
                events.append((DELETE, side, old))
            if deleted:
                return events
        self.next_id += 1
        row = Row((self.next_id,), (values,), t)
        if pk_columns:
            keep_row(pk_columns, self.by_pk[side], pk, row)
        events.append((INSERT, side, row))
        return events

    def hold(self) -> float:
        return INF

    def size(self) -> int:
        """Rows held: every stage's; with no join (a changing table read alone) its latest rows, which
        keep the state alive between micro-batches (the processor drops a group that holds none)."""
        held = sum(len(rows) for stage in self.stages for rows in stage.rows)
        return len(self.buffer) + (held if self.stages else sum(len(kept_rows(rows)) for rows in self.by_pk.values()))
