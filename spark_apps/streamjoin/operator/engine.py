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
    tvf: tuple | None = None  # (size_us, slide_us, left window columns, right window columns, offset_us)
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

    def key_of(self, side: int, values: dict):
        """The row's join-key values (its index key in a group), or None when one is NULL (such a
        row matches nothing). CROSS and key-less joins: ()."""
        if self.spec.join_type == "CROSS" or not self.keys:
            return ()
        scope = {(self.spec.left, self.spec.right)[side].alias: values}
        key = tuple(pair[side](scope) for pair in self.keys)
        return None if None in key else tuple(_hashable(v) for v in key)

    def residual_ok(self, left: dict, right: dict) -> bool:
        """The condition for two rows whose keys are already equal."""
        if self.residual is None or self.spec.join_type == "CROSS":
            return True
        return self.residual({self.spec.left.alias: left, self.spec.right.alias: right}) is True


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
    key: tuple | None = ()  # the join-key values (None: a NULL key, matches nothing)


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

    present: list = field(default_factory=lambda: [{}, {}])  # side -> {join key: {id: Entry}} (active)
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
                e.key = cond.key_of(side, values)
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
                for e in [e for by_id in self.present[side].values() for e in by_id.values()]:
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
        if self.spec.emit != "FINAL":
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


@dataclass
class AsofJoin(GroupJoin):
    """`left ASOF [LEFT] JOIN right ON keys AND right.rowtime OP left.rowtime` (§8), per join key.
    Ties at the nearest rowtime: the latest arrival."""

    last: dict = field(default_factory=dict)  # <=, <: key -> the latest right row so far
    waiting_left: dict = field(default_factory=dict)  # >=, >: key -> left rows without a candidate yet

    def run(self, ready, limit, cond, out) -> None:
        spec, op = self.spec, self.spec.asof_op
        instants = sorted({r[0] for r in ready})
        i = 0
        for now in instants:
            rights, lefts = [], []
            while i < len(ready) and ready[i][0] == now:
                t, side, seq, values = ready[i]
                i += 1
                e = Entry(side, t, seq, values, start=t, key=cond.key_of(side, values))
                (lefts if side == 0 else rights).append(e)
            if op in ("<=", "<"):
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
                    elif spec.join_type == "LEFT":
                        out.append(self.null_row(e, now))
                continue
            for e in lefts:
                if e.key is None:  # a NULL key never finds a candidate: decided at once
                    if spec.join_type == "LEFT":
                        e.eager = True
                        out.append(self.null_row(e, e.t))
                    continue
                self.waiting_left.setdefault(e.key, []).append(e)
            latest = {}
            for r in rights:
                if r.key is not None:
                    latest[r.key] = r  # ties at this instant: the last arrival
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
            if spec.emit != "FINAL" and spec.join_type == "LEFT":
                for e in lefts:
                    if not e.matched and not e.eager:
                        e.eager = True
                        out.append(self.null_row(e, e.t))
        if limit == INF:
            for rows in self.waiting_left.values():
                for e in rows:
                    if spec.join_type == "LEFT" and not e.eager:
                        out.append(self.null_row(e, e.t))
            self.waiting_left = {}

    def hold(self) -> float:
        if self.spec.emit != "FINAL" or self.spec.join_type != "LEFT":
            return INF
        return min((e.t for rows in self.waiting_left.values() for e in rows), default=INF)

    def size(self) -> int:
        return len(self.buffer) + sum(len(rows) for rows in self.waiting_left.values()) + len(self.last)


@dataclass
class WindowFunctionJoin(GroupJoin):
    """TUMBLE / HOP on both inputs, joined per window (§8); a window is final when the clock has
    passed its end, then its pairs (and NULL-extended rows) are emitted and it is dropped."""

    windows: dict = field(default_factory=dict)  # window start -> ([left Entry], [right Entry])

    def run(self, ready, limit, cond, out) -> None:
        size, slide, left_cols, right_cols, offset = self.spec.tvf
        for t, side, seq, values in ready:
            # windows start at offset + n * slide; the earliest whose window holds t
            first = (t - offset - size) // slide * slide + slide + offset
            for start in range(first, t + 1, slide):
                cols = (left_cols, right_cols)[side]
                row = dict(values)
                row[cols[0]], row[cols[1]] = _timestamp(start), _timestamp(start + size)
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

    table: dict = field(default_factory=dict)  # join key -> {table key: Entry} (the latest row per table key)
    where: dict = field(default_factory=dict)  # table key -> its row's join key
    pending: dict = field(default_factory=dict)  # join key -> stream rows that found no table row yet

    def run(self, ready, limit, cond, out) -> None:
        spec = self.spec
        instants = sorted({r[0] for r in ready})
        i = 0
        for now in instants:
            self.expire(now - spec.pending_us, out)
            arrived = []
            j = i
            while j < len(ready) and ready[j][0] == now:
                j += 1
            # the instant's table rows first: a stream row meets the table as of its instant
            instant = sorted(ready[i:j], key=lambda r: -r[1])
            i = j
            for t, side, seq, values in instant:
                e = Entry(side, t, seq, values, start=t, key=cond.key_of(side, values))
                if side == 1:
                    tkey = tuple(_hashable(values.get(c)) for c in spec.table_key) if spec.table_key else e.key
                    old = self.where.pop(tkey, ())
                    if old != () and old in self.table:  # the row moves off its old join key
                        self.table[old].pop(tkey, None)
                        if not self.table[old]:
                            del self.table[old]
                    if e.key is None:
                        continue
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
                    continue
                matches = [r for r in self.table.get(e.key, {}).values() if cond.residual_ok(e.values, r.values)] if e.key is not None else []
                for r in matches:
                    self.pair(e, r, now, out)
                if not matches:
                    self.pending.setdefault(e.key, []).append(e)
                    arrived.append(e)
            if spec.emit != "FINAL" and spec.join_type == "LEFT":
                for e in arrived:
                    if not e.matched:
                        e.eager = True
                        out.append(self.null_row(e, e.t))
        self.expire(limit - spec.pending_us if limit != INF else INF, out)

    def expire(self, before: float, out) -> None:
        """Stream rows that waited long enough (arrived before `before`) stop waiting."""
        for key in list(self.pending):
            still = []
            for e in self.pending[key]:
                if e.t < before or before == INF or key is None:
                    if self.spec.join_type == "LEFT" and not e.eager:
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
        if self.spec.emit != "FINAL" or self.spec.join_type != "LEFT":
            return INF
        return min((e.t for rows in self.pending.values() for e in rows), default=INF)

    def size(self) -> int:
        return len(self.buffer) + len(self.where) + sum(len(rows) for rows in self.pending.values())


ENGINES = {"window": WindowJoin, "asof": AsofJoin, "tvf": WindowFunctionJoin, "changelog": ChangelogJoin}


def new_group(spec: Spec) -> GroupJoin:
    return ENGINES[spec.kind](spec)


def _timestamp(us: int):
    import datetime as dt

    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value
