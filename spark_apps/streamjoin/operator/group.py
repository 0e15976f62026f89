"""One group of streamjoin's join operator, in plain Python (no Spark): what a join does
(`Spec`, in the plan's vocabulary), its condition compiled to Python, and `GroupJoin`, the base of
every engine: the buffer of events not yet complete and the loop that processes complete ones.

The Spark side (`streamjoin.operator.processor`) keeps one `GroupJoin` per group key in the state
store and calls it from `transformWithStateInPandas`. A group holds every row that can affect
the rows of its group: the join keys (hash-partitioned), or everything when a ROWS window counts
rows across keys ("one ordered sequence").

Events are buffered until their instant is complete (the join clock has passed it, so every row
of that instant has arrived), then processed in SEMANTICS.md §2 order: by rowtime, left before
right, then by position in the input. Every group reports a *hold*: the lowest rowtime it may
still emit for events already processed (a preserved row that may yet be NULL-extended), so the
sink can release FINAL output in order. The engines: `window_join` (RANGE / ROWS windows),
`asof_join`, `tvf_join` (TUMBLE / HOP), `changelog_join`; `engine.new_group` picks one.
"""

from __future__ import annotations

import builtins
import dis
import math
import types
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from streamjoin.plan.model import ROWS, Emit, JoinKind, JoinType, TimeWindowFunction
from streamjoin.plan.windows import RangeWindow, RowsWindow

INF = math.inf
INSERT, DELETE = "+I", "-D"


@dataclass(frozen=True)
class Side:
    alias: str
    window: RangeWindow | RowsWindow | None = None  # the input's window (§3); None: a TUMBLE/HOP or table side


@dataclass(frozen=True)
class Spec:
    """What a group's join does, in the plan's vocabulary; shipped to Spark's workers with the
    processor."""

    kind: JoinKind  # a stream-stream window or interval join, ASOF, a window join (TUMBLE/HOP), a changelog join
    join_type: JoinType
    emit: Emit
    left: Side
    right: Side
    keys: tuple = ()  # ((left code, right code), ...) Python source over `scope`
    residual: str | None = None  # Python source over `scope`, or None
    asof_op: str | None = None  # `right.rowtime OP left.rowtime`
    time_window: TimeWindowFunction | None = None  # a window join's TUMBLE / HOP (both sides have it)
    table_key: tuple = ()  # changelog: the columns that identify a table row
    # ASOF: the ON conditions on one side, (left code | None, right code | None): a row that fails
    # its side's matches nothing (an ASOF LEFT row is NULL-extended, a right row is no candidate)
    side_filters: tuple = (None, None)
    pending_us: float = INF  # changelog: how long a stream row waits for its table row
    # a regular join: each side's primary key when it is a table fed by its changes (its rows carry
    # io.sources.changelog.CHANGE: '+' the row as it is now, '-' deleted); () for an append-only side
    changing: tuple = ((), ())

    def preserves(self, side: int) -> bool:
        """A row of `side` that has no partner is output (NULL-extended; an anti join's row as it is)."""
        return self.join_type == JoinType.FULL or (self.join_type, side) in (
            (JoinType.LEFT, 0), (JoinType.RIGHT, 1), (JoinType.ANTI, 0))


def _null_safe_eq(a, b) -> bool:
    """`a IS NOT DISTINCT FROM b`: NULL equals NULL, never NULL itself."""
    return (a is None and b is None) or (a is not None and b is not None and a == b)


# what sqlglot's Python generator calls that its executor's environment lacks
_EXTRA = {"NULLSAFEEQ": _null_safe_eq, "NULLSAFENEQ": lambda a, b: not _null_safe_eq(a, b)}


def sql_lambda(code: str):
    """`lambda scope: code` over sqlglot's executor environment (SQL NULL semantics). A name the
    environment lacks is a SyntaxError here, before any row is read, not a NameError at the
    first row that reaches it."""
    from sqlglot.executor.env import ENV

    env = {**ENV, **_EXTRA}
    compiled = compile(f"lambda scope: {code}", "<condition>", "eval")
    missing = sorted(n for n in _globals(compiled) if n not in env and not hasattr(builtins, n))
    if missing:
        raise SyntaxError(f"no Python translation of {', '.join(missing)}")
    return eval(compiled, env)


def _globals(code: types.CodeType) -> set[str]:
    """The global names a compiled expression (and the functions inside it) reads."""
    names = {i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals(const)
    return names


class Condition:
    """The join condition as compiled Python (keys: both non-NULL and equal; residual: TRUE)."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.keys = [(sql_lambda(a), sql_lambda(b)) for a, b in spec.keys]
        self.residual = sql_lambda(spec.residual) if spec.residual else None
        self.side_filters = [sql_lambda(code) if code else None for code in spec.side_filters]

    def __call__(self, left: dict, right: dict) -> bool:
        if self.spec.join_type == JoinType.CROSS:
            return True
        scope = {self.spec.left.alias: left, self.spec.right.alias: right}
        for a, b in self.keys:
            x, y = a(scope), b(scope)
            if x is None or y is None or x != y:
                return False
        return self.residual is None or self.residual(scope) is True

    def key_of(self, side: int, values: dict):
        """The row's join-key values (its index key in a group), or None when one is NULL (such a
        row matches nothing, as does one that fails its side's ON condition, `Spec.side_filters`).
        CROSS and key-less joins: ()."""
        scope = {(self.spec.left, self.spec.right)[side].alias: values}
        admits = self.side_filters[side]
        if admits is not None and admits(scope) is not True:
            return None
        if self.spec.join_type == JoinType.CROSS or not self.keys:
            return ()
        key = tuple(pair[side](scope) for pair in self.keys)
        return None if None in key else tuple(hashable(v) for v in key)

    def residual_ok(self, left: dict, right: dict) -> bool:
        """The condition for two rows whose keys are already equal."""
        if self.residual is None or self.spec.join_type == JoinType.CROSS:
            return True
        return self.residual({self.spec.left.alias: left, self.spec.right.alias: right}) is True


@dataclass
class Output:
    op: str
    rowtime_us: int
    left: dict | None
    right: dict | None
    sides: tuple | None = None  # a chain of joins (operator.regular_chain): each input's columns, None: NULL


@dataclass
class Entry:
    """One row in a group's state."""

    side: int
    t: int  # rowtime, microseconds
    seq: int  # position in its input
    values: dict
    start: float = 0  # the instant its presence starts
    end: float = INF  # RANGE: the last instant it is present
    matched: bool = False
    eager: bool = False  # its NULL-extended row was emitted early (EAGER, CHANGES)
    active: bool = False
    gone: bool = False
    key: tuple | None = ()  # the join-key values (None: a NULL key, matches nothing)


@dataclass
class GroupJoin(ABC):
    """Base: the buffer of incomplete events and the processing loop."""

    spec: Spec
    buffer: list = field(default_factory=list)  # (t, side, seq, values) not yet complete

    def add(self, side: int, t: int, seq: int, values: dict) -> None:
        self.buffer.append((t, side, seq, values))

    def advance(self, limit: float, cond: Condition) -> list[Output]:
        """Process every event at instants <= limit (complete); INF = end of input."""
        ready = sorted((e for e in self.buffer if e[0] <= limit), key=lambda e: e[:3])
        self.buffer = [e for e in self.buffer if e[0] > limit]
        out: list[Output] = []
        self.run(ready, limit, cond, out)
        return out

    def wakeup(self) -> float:
        """The next instant at which this group has work (an event or a timed change)."""
        return min([e[0] for e in self.buffer] + [self.next_change()], default=INF)

    def next_change(self) -> float:
        return INF

    @abstractmethod
    def run(self, ready, limit, cond, out) -> None:
        """Process the complete events `ready` (sorted) up to instant `limit`, appending to `out`."""

    def hold(self) -> float:
        """The lowest rowtime this group may still emit for processed events (INF: none)."""
        return INF

    def size(self) -> int:
        """Rows held (buffered or in windows): the operator's state, for the status."""
        return len(self.buffer)

    def null_row(self, e: Entry, rowtime: int, op: str = INSERT) -> Output:
        return Output(op, rowtime, e.values if e.side == 0 else None, e.values if e.side == 1 else None)

    def semi_rowtime(self, left: Entry, rowtime: int) -> int:
        """A semi join's row's rowtime: the instant its first partner is found (§4's pair rowtime)."""
        return rowtime

    def pair(self, left: Entry, right: Entry, rowtime: int, out: list, op: str = INSERT) -> None:
        if self.spec.join_type.filters:  # a semi or anti join writes no pair: its left rows alone
            if self.spec.join_type == JoinType.SEMI and not left.matched:  # at its first partner
                out.append(Output(op, self.semi_rowtime(left, rowtime), left.values, None))
            elif self.spec.join_type == JoinType.ANTI and left.eager and not left.matched and self.spec.emit == Emit.CHANGES:
                out.append(self.null_row(left, int(left.start), DELETE))  # the eager anti row is withdrawn
            left.matched = right.matched = True
            return
        for e in (left, right):
            if e.eager and not e.matched and self.spec.emit == Emit.CHANGES:
                out.append(self.null_row(e, int(e.start), DELETE))  # the eager NULL row is withdrawn
            e.matched = True
        out.append(Output(op, rowtime, left.values, right.values))


def instants(ready):
    """The complete events `ready` (sorted) as (instant, its events), one instant at a time, in §2's order."""
    i = 0
    while i < len(ready):
        j = i
        while j < len(ready) and ready[j][0] == ready[i][0]:
            j += 1
        yield ready[i][0], ready[i:j]
        i = j


CHANGE = "__change"  # io.sources.changelog.CHANGE (the operator imports nothing from io)
# `Spec.changing[side]` that starts with plan.model.ROWS: the side's rows have no key (a view of
# regular joins, whose changelog adds and withdraws whole rows): a '-' withdraws one row equal to it
# in the columns that follow ROWS, a '+' adds a row beside its equals


def changed_row(pk_columns: tuple, values: dict, by_pk: dict) -> tuple[dict, bool, tuple, object]:
    """A changing input's row: (its values without CHANGE, whether it is a delete, its key, the row
    it replaces or withdraws, taken out of `by_pk`: None if none). By primary key the latest row
    per key is kept (`by_pk[key]` a row); by ROWS every row (`by_pk[key]` a list)."""
    values = dict(values)
    deleted = values.pop(CHANGE, "+") == "-"
    if pk_columns[0] != ROWS:
        pk = tuple(hashable(values.get(c)) for c in pk_columns)
        return values, deleted, pk, by_pk.pop(pk, None)
    pk = tuple(hashable(values.get(c)) for c in pk_columns[1:])
    if not deleted:
        return values, deleted, pk, None
    rows = by_pk.get(pk)
    old = rows.pop() if rows else None
    if rows == []:
        del by_pk[pk]
    return values, deleted, pk, old


def keep_row(pk_columns: tuple, by_pk: dict, pk: tuple, row) -> None:
    if pk_columns[0] == ROWS:
        by_pk.setdefault(pk, []).append(row)
    else:
        by_pk[pk] = row


def kept_rows(by_pk: dict) -> list:
    """Every row `by_pk` holds: one per primary key, or each of a ROWS key's list."""
    return [row for kept in by_pk.values() for row in (kept if isinstance(kept, list) else (kept,))]


def hashable(value):
    return tuple(value) if isinstance(value, list) else value
