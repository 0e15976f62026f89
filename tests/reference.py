"""Plain-Python references of SEMANTICS.md, independent of the engine (for differential tests).

1. `join_chain` / `results`: §3-§5 for RANGE windows (EMIT FINAL results), any number of inputs.
   Each stream row is present over the instants [t + lag, t + size] (§3, §4 "Precisely" at the
   granularity of instants). A left-deep join chain keeps, for every composite row, the
   intersection of its non-null rows' presence intervals; a pair matches when the condition
   holds and the intervals meet. Outer joins add the unmatched rows NULL-extended (§5). The
   output rowtime is the start of the composite's interval: the latest presence start (§4).

2. `two_way`: a two-input stream-stream join replayed event by event (§2), with RANGE (lag
   included) or ROWS [PARTITION BY] windows (§3, §4 "Precisely"), all join types (§5; LEFT SEMI
   and LEFT ANTI too, docs/semantics-decisions.md "Subqueries are joins") and the three emission
   modes (§6). `fold` folds an EMIT CHANGES changelog.

3. `asof` and `window_join`: the RisingWave-style ASOF join and TUMBLE/HOP window join (§8).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Stream:
    alias: str
    rows: list[dict]  # each with "rowtime" (an int, ms) and the columns
    size_ms: int
    lag_ms: int = 0


@dataclass(frozen=True)
class JoinStep:
    right: Stream
    join_type: str  # INNER | LEFT | RIGHT | FULL | CROSS
    condition: Callable[[dict], bool]  # over {alias: row or None}


Composite = tuple[dict, tuple[int, int]]  # ({alias: row or None}, presence interval)


def presence(stream: Stream, row: dict) -> tuple[int, int]:
    return row["rowtime"] + stream.lag_ms, row["rowtime"] + stream.size_ms


def join_chain(first: Stream, steps: list[JoinStep]) -> list[Composite]:
    aliases = [first.alias]
    current: list[Composite] = [({first.alias: r}, presence(first, r)) for r in first.rows]
    for step in steps:
        right = step.right
        out: list[Composite] = []
        right_matched = [False] * len(right.rows)
        for combo, (ls, le) in current:
            matched = False
            for k, r in enumerate(right.rows):
                rs, re_ = presence(right, r)
                start, end = max(ls, rs), min(le, re_)
                if start > end:
                    continue
                candidate = {**combo, right.alias: r}
                if step.join_type != "CROSS" and not step.condition(candidate):
                    continue
                out.append((candidate, (start, end)))
                matched = right_matched[k] = True
            if not matched and step.join_type in ("LEFT", "FULL"):
                out.append(({**combo, right.alias: None}, (ls, le)))
        if step.join_type in ("RIGHT", "FULL"):
            for k, r in enumerate(right.rows):
                if not right_matched[k]:
                    out.append(({**{a: None for a in aliases}, right.alias: r}, presence(right, r)))
        aliases.append(right.alias)
        current = out
    return current


def results(first: Stream, steps: list[JoinStep], project: Callable[[dict], tuple]) -> Counter:
    """The multiset of (rowtime, projected values) the query produces."""
    return Counter((interval[0], *project(combo)) for combo, interval in join_chain(first, steps))


# ---------------------------------------------------------------------------------------------
# Two-input stream-stream joins, event by event (§2-§6)
# ---------------------------------------------------------------------------------------------

JOIN_TYPES = ("INNER", "LEFT", "RIGHT", "FULL", "CROSS")
# LEFT SEMI / LEFT ANTI (issue 67: EXISTS, IN, NOT EXISTS, NOT IN): each left row once, its right
# input NULL: at its first match (SEMI), or as a LEFT join writes its unmatched row (ANTI); `two_way`
FILTER_TYPES = ("SEMI", "ANTI")
EMIT_MODES = ("FINAL", "EAGER", "CHANGES")
PRESERVED = {"INNER": (), "CROSS": (), "LEFT": (0,), "RIGHT": (1,), "FULL": (0, 1), "SEMI": (), "ANTI": (0,)}
LEFT, RIGHT = 0, 1


@dataclass(frozen=True)
class Side:
    """One input of a two-way join. `rows` in the order within the input (§2); `window` is
    ("range", size_ms, lag_ms) or ("rows", n, partition_cols) with n = 0 for ROWS CURRENT ROW."""

    alias: str
    rows: list[dict]
    window: tuple


def check_window(side: Side) -> None:
    kind = side.window[0]
    if kind == "range":
        _, size, lag = side.window
        assert 0 <= lag <= size, f"{side.alias}: RANGE needs 0 <= lag <= size, got {side.window}"
    elif kind == "rows":
        _, n, cols = side.window
        assert n >= 0 and isinstance(cols, tuple), f"{side.alias}: bad ROWS window {side.window}"
    else:
        raise ValueError(f"{side.alias}: unknown window {side.window!r}")


def event_order(left: Side, right: Side) -> list[tuple[int, int, int]]:
    """§2: every row of both inputs as (rowtime, input position, position in the input), sorted."""
    events = [(r["rowtime"], LEFT, i) for i, r in enumerate(left.rows)]
    events += [(r["rowtime"], RIGHT, i) for i, r in enumerate(right.rows)]
    return sorted(events)


def pair(side: int, idx: int, other_idx: int) -> tuple[int, int]:
    """(left index, right index) of a pair of which `idx` is on `side`."""
    return (idx, other_idx) if side == LEFT else (other_idx, idx)


def null_row(side: int, idx: int) -> tuple[int | None, int | None]:
    return (idx, None) if side == LEFT else (None, idx)


def two_way(left: Side, right: Side, join_type: str, condition, emit: str = "FINAL") -> list[tuple]:
    """A two-input join replayed moment by moment. Returns (op, rowtime, left index or None,
    right index or None); FINAL in non-descending rowtime order, EAGER and CHANGES in the order the
    rows are produced.

    The replay walks the instants in order. At each instant T: RANGE rows whose last instant is
    before T leave; lagged rows whose presence starts at T enter at the moment (T, 0); then each
    arrival at T in event order is one moment: a ROWS arrival evicts the oldest row of its
    partition that now has n + 1 later rows, and the new row enters unless its window has a lag.
    A row entering pairs with every present row of the other input for which the condition holds
    (CROSS: every one): that is exactly once per co-present pair, at the later presence start,
    which is the pair's rowtime (§4). At the end of instant T, a preserved row whose presence
    started at T and that has no match yet gets its eager NULL row (EAGER, CHANGES; §6)."""
    assert join_type in JOIN_TYPES + FILTER_TYPES, join_type
    assert emit in EMIT_MODES, emit
    sides = (left, right)
    for side in sides:
        check_window(side)
    preserved = PRESERVED[join_type]
    events = event_order(left, right)

    def lag(side: int) -> int:
        window = sides[side].window
        return window[2] if window[0] == "range" else 0

    def matches(l_idx: int, r_idx: int) -> bool:
        return join_type == "CROSS" or bool(condition(left.rows[l_idx], right.rows[r_idx]))

    present: list[dict[int, int]] = [{}, {}]  # per input: row index -> its presence start instant
    start_instant: list[dict[int, int]] = [{}, {}]  # every row that has entered, ever
    partitions: list[dict[tuple, list[int]]] = [{}, {}]  # ROWS: the rows still in each partition
    matched: list[set[int]] = [set(), set()]
    eager_null: list[set[int]] = [set(), set()]  # rows whose eager NULL row is out (not withdrawn)
    out: list[tuple] = []

    def enter(side: int, idx: int, instant: int) -> None:
        other = 1 - side
        present[side][idx] = instant
        start_instant[side][idx] = instant
        for o in list(present[other]):
            l_idx, r_idx = pair(side, idx, o)
            if not matches(l_idx, r_idx):
                continue
            if join_type in FILTER_TYPES:  # no pair: the left row alone, at its first match (SEMI)
                if emit == "CHANGES" and l_idx in eager_null[LEFT]:
                    out.append(("-D", start_instant[LEFT][l_idx], l_idx, None))
                    eager_null[LEFT].discard(l_idx)
                if join_type == "SEMI" and l_idx not in matched[LEFT]:
                    out.append(("+I", instant, l_idx, None))
                matched[LEFT].add(l_idx)
                continue
            for s, i in ((side, idx), (other, o)):
                if emit == "CHANGES" and i in eager_null[s]:  # its first match: withdraw the NULL row
                    out.append(("-D", start_instant[s][i], *null_row(s, i)))
                    eager_null[s].discard(i)
                matched[s].add(i)
            out.append(("+I", instant, l_idx, r_idx))

    lag_starts = {t + lag(s) for t, s, _ in events if lag(s) > 0}
    instants = sorted({t for t, _, _ in events} | lag_starts)
    for instant in instants:
        # RANGE rows whose last instant t + size has passed are no longer present.
        for side in (LEFT, RIGHT):
            window = sides[side].window
            if window[0] == "range":
                for idx in [i for i in present[side] if sides[side].rows[i]["rowtime"] + window[1] < instant]:
                    del present[side][idx]
        # Moment (instant, 0): lagged rows start, in event order.
        for t, side, idx in events:
            if lag(side) > 0 and t + lag(side) == instant:
                enter(side, idx, instant)
        # Moments (instant, 1), (instant, 2), ...: the arrivals at this instant.
        for t, side, idx in events:
            if t != instant:
                continue
            window = sides[side].window
            if window[0] == "rows":
                _, n, cols = window
                members = partitions[side].setdefault(tuple(sides[side].rows[idx][c] for c in cols), [])
                members.append(idx)
                if len(members) > n + 1:  # the oldest now has n + 1 later rows: evicted at this moment
                    present[side].pop(members.pop(0), None)
                enter(side, idx, instant)
            elif lag(side) == 0:
                enter(side, idx, instant)
        # End of the instant: every row of it has arrived (§6 EAGER).
        if emit != "FINAL":
            for side in preserved:
                for idx, started in start_instant[side].items():
                    if started == instant and idx not in matched[side]:
                        eager_null[side].add(idx)
                        out.append(("+I", instant, *null_row(side, idx)))

    if emit != "FINAL":
        return out
    for side in preserved:
        for idx in range(len(sides[side].rows)):
            if idx not in matched[side]:
                out.append(("+I", start_instant[side][idx], *null_row(side, idx)))
    return sorted(out, key=lambda row: row[1])


def fold(changes: list[tuple]) -> Counter:
    """Apply a changelog: the multiset of the rows' identities (everything after `op`) after every
    +I adds and every -D removes one. A -D of a row that is not there is an error."""
    state: Counter = Counter()
    for op, *identity in changes:
        key = tuple(identity)
        if op == "+I":
            state[key] += 1
        elif op == "-D":
            assert state[key] > 0, f"-D of a row that is not there: {key}"
            state[key] -= 1
            if not state[key]:
                del state[key]
        else:
            raise ValueError(f"unknown op {op!r}")
    return state


# ---------------------------------------------------------------------------------------------
# ASOF join (§8)
# ---------------------------------------------------------------------------------------------

ASOF_OPS = {
    "<=": lambda r_t, l_t: r_t <= l_t,
    "<": lambda r_t, l_t: r_t < l_t,
    ">=": lambda r_t, l_t: r_t >= l_t,
    ">": lambda r_t, l_t: r_t > l_t,
}


def asof_best(left: Side, right: Side, keys, op: str, l_idx: int, arrived_right: list[int]) -> int | None:
    """The right row (index) nearest to the left row on the allowed side among `arrived_right`;
    equal rowtimes: the latest arrival (the highest index: same input, same rowtime, §2)."""
    l_row = left.rows[l_idx]
    best = None
    best_rank = None
    for r_idx in arrived_right:
        r_row = right.rows[r_idx]
        if not (ASOF_OPS[op](r_row["rowtime"], l_row["rowtime"]) and keys(l_row, r_row)):
            continue
        nearness = r_row["rowtime"] if op in ("<=", "<") else -r_row["rowtime"]
        rank = (nearness, r_idx)
        if best_rank is None or rank > best_rank:
            best, best_rank = r_idx, rank
    return best


def asof(left: Side, right: Side, keys, op: str, outer: bool, emit: str = "FINAL") -> list[tuple]:
    """ASOF [LEFT] JOIN ON keys AND right.rowtime OP left.rowtime. FINAL: one +I per left row with
    its best match (or NULL-extended when `outer`), in non-descending rowtime order. CHANGES: after
    each event (§2), every arrived left row's current best is compared with what it last emitted;
    a change is '-D' of the old row and '+I' of the new. Rowtime = the later of the rows' rowtimes.
    The windows of the sides are not used (ASOF looks at every arrived right row)."""
    assert op in ASOF_OPS, op
    if emit not in ("FINAL", "CHANGES"):
        raise ValueError(f"ASOF reference supports EMIT FINAL and CHANGES, not {emit}")

    def row(l_idx: int, r_idx: int | None) -> tuple:
        l_t = left.rows[l_idx]["rowtime"]
        rowtime = l_t if r_idx is None else max(l_t, right.rows[r_idx]["rowtime"])
        return (rowtime, l_idx, r_idx)

    if emit == "FINAL":
        out = []
        everything = list(range(len(right.rows)))
        for l_idx in range(len(left.rows)):
            best = asof_best(left, right, keys, op, l_idx, everything)
            if best is not None or outer:
                out.append(("+I", *row(l_idx, best)))
        return sorted(out, key=lambda r: r[1])

    missing = object()  # nothing emitted for the left row (an inner join before its first candidate)
    emitted: dict[int, object] = {}
    arrived_left: list[int] = []
    arrived_right: list[int] = []
    out = []
    for _, side, idx in event_order(left, right):
        (arrived_left if side == LEFT else arrived_right).append(idx)
        for l_idx in arrived_left:
            best = asof_best(left, right, keys, op, l_idx, arrived_right)
            now = best if best is not None or outer else missing
            before = emitted.get(l_idx, missing)
            if now == before:
                continue
            if before is not missing:
                out.append(("-D", *row(l_idx, before)))
            if now is not missing:
                out.append(("+I", *row(l_idx, now)))
            emitted[l_idx] = now
    return out


# ---------------------------------------------------------------------------------------------
# TUMBLE / HOP window join (§8)
# ---------------------------------------------------------------------------------------------


def window_starts(t: int, size_ms: int, slide_ms: int, offset_ms: int = 0) -> list[int]:
    """The starts ws (offset + multiples of the slide) of the windows [ws, ws + size) that contain t."""
    return [ws for ws in range(t - size_ms - slide_ms, t + slide_ms + 1) if (ws - offset_ms) % slide_ms == 0 and ws <= t < ws + size_ms]


def window_join(left: Side, right: Side, function: str, size_ms: int, slide_ms: int, join_type: str, condition,
                offset_ms: int = 0) -> list[tuple]:
    """TUMBLE (slide = size) or HOP window join: every pair in the same window (equal window_start)
    for which the condition holds (CROSS: every pair); outer types add, per window, each preserved
    row of the window that matched nothing in it, NULL-extended; SEMI each left row of a window
    with a match once (at its first match's instant), ANTI each without one (Flink's window
    semi / anti join, issue 67). Returns (op = '+I', rowtime, left
    index or None, right index or None, window_start), ordered by window_start."""
    assert function in ("TUMBLE", "HOP"), function
    assert size_ms > 0 and slide_ms > 0, (size_ms, slide_ms)
    assert function == "HOP" or slide_ms == size_ms, "TUMBLE has slide = size"
    assert join_type in JOIN_TYPES + FILTER_TYPES, join_type
    sides = (left, right)
    members: dict[int, tuple[list[int], list[int]]] = {}
    for side in (LEFT, RIGHT):
        for idx, r in enumerate(sides[side].rows):
            for ws in window_starts(r["rowtime"], size_ms, slide_ms, offset_ms):
                members.setdefault(ws, ([], []))[side].append(idx)
    out = []
    for ws in sorted(members):
        in_window = members[ws]
        matched: tuple[set[int], set[int]] = (set(), set())
        for l_idx in in_window[LEFT]:
            first = None  # SEMI: the instant of the row's first match in the window
            for r_idx in in_window[RIGHT]:
                if join_type == "CROSS" or condition(left.rows[l_idx], right.rows[r_idx]):
                    matched[LEFT].add(l_idx)
                    matched[RIGHT].add(r_idx)
                    rowtime = max(left.rows[l_idx]["rowtime"], right.rows[r_idx]["rowtime"])
                    if join_type in FILTER_TYPES:
                        first = rowtime if first is None else min(first, rowtime)
                    else:
                        out.append(("+I", rowtime, l_idx, r_idx, ws))
            if join_type == "SEMI" and first is not None:  # once per window, with its left row alone
                out.append(("+I", first, l_idx, None, ws))
        for side in PRESERVED[join_type]:
            for idx in in_window[side]:
                if idx not in matched[side]:
                    out.append(("+I", sides[side].rows[idx]["rowtime"], *null_row(side, idx), ws))
    return out
