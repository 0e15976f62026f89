"""The custom join operator's logic, in plain Python (no Spark): one group's state and how it
moves when events arrive and the clock advances.

The Spark side (`streamjoin.operator.processor`) keeps one `GroupJoin` per group key in the state
store and calls it from `transformWithStateInPandas`. A group holds every row that can affect
the rows of its group: the join keys (hash-partitioned), or everything when a ROWS window counts
rows across keys ("one ordered sequence").

Events are buffered until their instant is complete (the join clock has passed it, so every row
of that instant has arrived), then processed in SEMANTICS.md §2 order: by rowtime, left before
right, then by position in the input. Each step of a join follows §3-§6 and §8:

- `WindowJoin`: RANGE and ROWS windows (with PARTITION BY), every join type, FINAL / EAGER /
  CHANGES. A row pairs with the other input's present rows when its own presence starts; the
  pair's rowtime is that instant (§4). A preserved row that matched nothing is NULL-extended
  when it stops being present (FINAL), or at the end of its first instant (EAGER, CHANGES; a
  CHANGES row is withdrawn with -D at its first match).
- `AsofJoin`: `right.rowtime OP left.rowtime` plus equality keys (§8).
- `WindowFunctionJoin`: TUMBLE / HOP window joins, final when the window closes (§8).
- `ChangelogJoin`: a stream joined with a table that changes by key (Lenses' `SELECT TABLE`
  over a topic): a later table row matches the stream rows still waiting for one.

Every group reports a *hold*: the lowest rowtime it may still emit for events already processed
(a preserved row that may yet be NULL-extended), so the sink can release FINAL output in order.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

INF = math.inf
INSERT, DELETE = "+I", "-D"


@dataclass(frozen=True)
class Side:
    alias: str
    window: tuple  # ("range", size_us, lag_us) | ("rows", n, partition columns) | ("none",)


@dataclass(frozen=True)
class Spec:
    """What a group's join does; shipped to Spark's workers with the processor."""

    kind: str  # window | asof | tvf | changelog
    join_type: str  # INNER | LEFT | RIGHT | FULL | CROSS
    emit: str  # FINAL | EAGER | CHANGES
    left: Side
    right: Side
    keys: tuple = ()  # ((left code, right code), ...) Python source over `scope`
    residual: str | None = None  # Python source over `scope`, or None
    asof_op: str | None = None  # `right.rowtime OP left.rowtime`
    tvf: tuple | None = None  # (size_us, slide_us, left window columns, right window columns)
    table_key: tuple = ()  # changelog: the columns that identify a table row
    pending_us: float = INF  # changelog: how long a stream row waits for its table row

    def preserves(self, side: int) -> bool:
        return self.join_type == "FULL" or (self.join_type, side) in (("LEFT", 0), ("RIGHT", 1))


class Condition:
    """The join condition as compiled Python (keys: both non-NULL and equal; residual: TRUE)."""

    def __init__(self, spec: Spec):
        from sqlglot.executor.env import ENV

        self.spec = spec
        env = dict(ENV)
        self.keys = [(eval(f"lambda scope: {a}", env), eval(f"lambda scope: {b}", env)) for a, b in spec.keys]
        self.residual = eval(f"lambda scope: {spec.residual}", env) if spec.residual else None

    def __call__(self, left: dict, right: dict) -> bool:
        if self.spec.join_type == "CROSS":
            return True
        scope = {self.spec.left.alias: left, self.spec.right.alias: right}
        for a, b in self.keys:
            x, y = a(scope), b(scope)
            if x is None or y is None or x != y:
                return False
        return self.residual is None or self.residual(scope) is True


@dataclass
class Output:
    op: str
    rowtime_us: int
    left: dict | None
    right: dict | None


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


@dataclass
class GroupJoin:
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

    def run(self, ready, limit, cond, out) -> None:
        raise NotImplementedError

    def hold(self) -> float:
        """The lowest rowtime this group may still emit for processed events (INF: none)."""
        return INF

    def size(self) -> int:
        """Rows held (buffered or in windows): the operator's state, for the status."""
        return len(self.buffer)

    def null_row(self, e: Entry, rowtime: int, op: str = INSERT) -> Output:
        return Output(op, rowtime, e.values if e.side == 0 else None, e.values if e.side == 1 else None)

    def pair(self, left: Entry, right: Entry, rowtime: int, out: list, op: str = INSERT) -> None:
        for e in (left, right):
            if e.eager and not e.matched and self.spec.emit == "CHANGES":
                out.append(self.null_row(e, int(e.start), DELETE))  # the eager NULL row is withdrawn
            e.matched = True
        out.append(Output(op, rowtime, left.values, right.values))


@dataclass
class WindowJoin(GroupJoin):
    """RANGE / ROWS windows on both inputs (§3, §4), any join type, any emission mode (§6)."""

    present: list = field(default_factory=lambda: [{}, {}])  # side -> {id: Entry} (active)
    waiting: list = field(default_factory=list)  # heap (start, id, Entry): lagged rows not started
    ends: list = field(default_factory=list)  # heap (end, id, Entry): RANGE rows' last instants
    rows: list = field(default_factory=lambda: [{}, {}])  # side -> {partition: [Entry, ...]} (ROWS)
    next_id: int = 0

    def run(self, ready, limit, cond, out) -> None:
        spec = self.spec
        i = 0
        while True:
            candidates = [t for t in (
                ready[i][0] if i < len(ready) else INF,
                self.waiting[0][0] if self.waiting else INF,
                self.ends[0][0] if self.ends else INF,
            ) if t <= limit and t != INF]
            if not candidates:
                break
            now = min(candidates)
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
                if e.start == now:
                    self.activate(e, now, cond, out)
                    started.append(e)
            if spec.emit != "FINAL":  # every row of the instant has arrived: eager NULL rows
                for e in started:
                    if spec.preserves(e.side) and not e.matched and not e.gone and not e.eager:
                        e.eager = True
                        out.append(self.null_row(e, now))
            while self.ends and self.ends[0][0] == now:  # RANGE rows whose window ends with this instant
                _, _, e = heapq.heappop(self.ends)
                self.leave(e, out)
        if limit == INF:  # end of input: what is still present leaves
            for side in (0, 1):
                for e in list(self.present[side].values()):
                    self.leave(e, out)
            for _, _, e in self.waiting:
                self.leave(e, out)
            self.waiting, self.ends, self.rows = [], [], [{}, {}]

    def arrive(self, side, t, seq, values, out) -> Entry:
        window = (self.spec.left, self.spec.right)[side].window
        e = Entry(side, t, seq, values)
        self.next_id += 1
        if window[0] == "rows":
            _, n, partition = window
            key = tuple(_hashable(values.get(c)) for c in partition)
            members = self.rows[side].setdefault(key, [])
            if len(members) > n:  # this arrival is the (n+1)-th later row: the oldest leaves now
                self.leave(members.pop(0), out)
            members.append(e)
            e.start = t
        else:
            _, size, lag = window
            e.start, e.end = t + lag, t + size
            if lag:
                heapq.heappush(self.waiting, (e.start, self.next_id, e))
            heapq.heappush(self.ends, (e.end, self.next_id, e))
        return e

    def activate(self, e: Entry, now: int, cond, out) -> None:
        for other in list(self.present[1 - e.side].values()):
            left, right = (e, other) if e.side == 0 else (other, e)
            if cond(left.values, right.values):
                self.pair(left, right, now, out)
        e.active = True
        self.present[e.side][id(e)] = e

    def leave(self, e: Entry, out) -> None:
        if e.gone:
            return
        e.gone = True
        self.present[e.side].pop(id(e), None)
        if self.spec.preserves(e.side) and not e.matched and not e.eager:
            out.append(self.null_row(e, int(e.start)))

    def next_change(self) -> float:
        return min(self.waiting[0][0] if self.waiting else INF, self.ends[0][0] if self.ends else INF)

    def hold(self) -> float:
        if self.spec.emit != "FINAL":
            return INF
        starts = [e.start for side in (0, 1) if self.spec.preserves(side)
                  for e in self.present[side].values() if not e.matched]
        starts += [e.start for _, _, e in self.waiting if self.spec.preserves(e.side) and not e.gone]
        return min(starts, default=INF)

    def size(self) -> int:
        return len(self.buffer) + sum(len(p) for p in self.present) + len(self.waiting)

    def __getstate__(self):
        # RANGE rows sit in `ends` too and ROWS rows in `rows`: pickle keeps shared Entry objects
        # shared, so `id()` keys are rebuilt on load
        state = dict(self.__dict__)
        state["present"] = [list(p.values()) for p in self.present]
        return state

    def __setstate__(self, state):
        state["present"] = [{id(e): e for e in p} for p in state["present"]]
        self.__dict__.update(state)


@dataclass
class AsofJoin(GroupJoin):
    """`left ASOF [LEFT] JOIN right ON keys AND right.rowtime OP left.rowtime` (§8); the group
    key holds the equality keys. Ties at the nearest rowtime: the latest arrival."""

    last: Entry | None = None  # <=, <: the latest right row so far
    waiting_left: list = field(default_factory=list)  # >=, >: left rows without a candidate yet

    def run(self, ready, limit, cond, out) -> None:
        spec, op = self.spec, self.spec.asof_op
        instants = sorted({r[0] for r in ready})
        i = 0
        for now in instants:
            before = self.last
            rights, lefts = [], []
            while i < len(ready) and ready[i][0] == now:
                t, side, seq, values = ready[i]
                i += 1
                (lefts if side == 0 else rights).append(Entry(side, t, seq, values))
            if op in ("<=", "<"):
                if rights:
                    self.last = rights[-1]
                best = self.last if op == "<=" else before
                for e in lefts:
                    if best is not None and cond(e.values, best.values):
                        out.append(Output(INSERT, now, e.values, best.values))
                    elif spec.join_type == "LEFT":
                        out.append(self.null_row(e, now))
                continue
            self.waiting_left.extend(lefts)
            if rights:
                best = rights[-1]
                still = []
                for e in self.waiting_left:
                    if (e.t <= now if op == ">=" else e.t < now) and cond(e.values, best.values):
                        self.pair(e, best, now, out)
                    else:
                        still.append(e)
                self.waiting_left = still
            if spec.emit != "FINAL" and spec.join_type == "LEFT":
                for e in self.waiting_left:
                    if not e.eager:
                        e.eager, e.start = True, e.t
                        out.append(self.null_row(e, e.t))
        if limit == INF:
            for e in self.waiting_left:
                if spec.join_type == "LEFT" and not e.eager:
                    out.append(self.null_row(e, e.t))
            self.waiting_left = []

    def hold(self) -> float:
        if self.spec.emit != "FINAL" or self.spec.join_type != "LEFT":
            return INF
        return min((e.t for e in self.waiting_left), default=INF)

    def size(self) -> int:
        return len(self.buffer) + len(self.waiting_left) + (self.last is not None)


@dataclass
class WindowFunctionJoin(GroupJoin):
    """TUMBLE / HOP on both inputs, joined per window (§8); a window is final when the clock has
    passed its end, then its pairs (and NULL-extended rows) are emitted and it is dropped."""

    windows: dict = field(default_factory=dict)  # window start -> ([left Entry], [right Entry])

    def run(self, ready, limit, cond, out) -> None:
        size, slide, left_cols, right_cols = self.spec.tvf
        for t, side, seq, values in ready:
            first = (t - size) // slide * slide + slide  # the earliest start whose window holds t
            for start in range(first, t + 1, slide):
                cols = (left_cols, right_cols)[side]
                row = dict(values)
                row[cols[0]], row[cols[1]] = _timestamp(start), _timestamp(start + size)
                self.windows.setdefault(start, ([], []))[side].append(Entry(side, t, seq, row))
        for start in sorted(s for s in self.windows if s + size - 1 <= limit):
            lefts, rights = self.windows.pop(start)
            for e in lefts:
                for r in rights:
                    if cond(e.values, r.values):
                        self.pair(e, r, max(e.t, r.t), out)
            for e in (*lefts, *rights):
                if self.spec.preserves(e.side) and not e.matched:
                    out.append(self.null_row(e, e.t))

    def next_change(self) -> float:
        size = self.spec.tvf[0]
        return min((s + size - 1 for s in self.windows), default=INF)

    def hold(self) -> float:
        return min((e.t for sides in self.windows.values() for rows in sides for e in rows), default=INF)

    def size(self) -> int:
        return len(self.buffer) + sum(len(rows) for sides in self.windows.values() for rows in sides)


@dataclass
class ChangelogJoin(GroupJoin):
    """A stream (left) joined with a table that changes by key (right, as a changelog stream).
    A stream row meets the table rows present when it arrives; one that found none waits (for
    `pending_us`, or to the end of input) and is matched by the first table row that arrives for
    it, so under EAGER it appears twice: NULL-extended, then matched (Lenses)."""

    table: dict = field(default_factory=dict)  # table key -> Entry (the latest row per key)
    pending: list = field(default_factory=list)  # stream rows that found no table row yet

    def run(self, ready, limit, cond, out) -> None:
        spec = self.spec
        instants = sorted({r[0] for r in ready})
        i = 0
        for now in instants:
            self.expire(now - spec.pending_us, out)
            arrived = []
            while i < len(ready) and ready[i][0] == now:
                t, side, seq, values = ready[i]
                i += 1
                e = Entry(side, t, seq, values, start=t)
                if side == 1:
                    self.table[tuple(_hashable(values.get(c)) for c in spec.table_key)] = e
                    still = []
                    for s in self.pending:
                        if cond(s.values, e.values):
                            self.pair(s, e, now, out)
                        else:
                            still.append(s)
                    self.pending = still
                    continue
                matches = [r for r in self.table.values() if cond(e.values, r.values)]
                for r in matches:
                    self.pair(e, r, now, out)
                if not matches:
                    self.pending.append(e)
                    arrived.append(e)
            if spec.emit != "FINAL" and spec.join_type == "LEFT":
                for e in arrived:
                    if not e.matched:
                        e.eager = True
                        out.append(self.null_row(e, e.t))
        self.expire(limit - spec.pending_us if limit != INF else INF, out)

    def expire(self, before: float, out) -> None:
        """Stream rows that waited long enough (arrived before `before`) stop waiting."""
        still = []
        for e in self.pending:
            if e.t < before or before == INF:
                if self.spec.join_type == "LEFT" and not e.eager:
                    out.append(self.null_row(e, e.t))
            else:
                still.append(e)
        self.pending = still

    def next_change(self) -> float:
        return min((e.t + self.spec.pending_us + 1 for e in self.pending), default=INF)

    def hold(self) -> float:
        if self.spec.emit != "FINAL" or self.spec.join_type != "LEFT":
            return INF
        return min((e.t for e in self.pending), default=INF)

    def size(self) -> int:
        return len(self.buffer) + len(self.table) + len(self.pending)


ENGINES = {"window": WindowJoin, "asof": AsofJoin, "tvf": WindowFunctionJoin, "changelog": ChangelogJoin}


def new_group(spec: Spec) -> GroupJoin:
    return ENGINES[spec.kind](spec)


def _timestamp(us: int):
    import datetime as dt

    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value
