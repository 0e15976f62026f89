"""Which kind of join a join is (SEMANTICS.md §4-§8), the rules each kind must follow (§5, §7,
§8, errors at the construct), the windows an interval condition implies (§8), and the
co-presence bounds RANGE windows imply (§4).

The windows of an interval join are derived here, while the chain is analysed, not in a later
rewrite: a later join's window bounds use them, and a later join that would change a window an
earlier join used is an error at that later join (§3: one window per input)."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.plan.analyzer.names import Item
from streamjoin.plan.conditions import conjuncts, merge_bounds, refs_of
from streamjoin.plan.model import Condition, JoinKind, JoinType, TimeBound
from streamjoin.plan.scope import Located
from streamjoin.plan.windows import CURRENT_ROW, BucketWindow, RangeWindow


def classify(where: Located, join: exp.Join, join_type: JoinType, asof: bool, left_items: list[Item], right: Item,
             condition: Condition) -> JoinKind:
    left_stream = [i for i in left_items if i.is_stream]
    if right.temporal:
        # a table the file seeds and changes looks its rows up as they came (plan.rewrites.script_time)
        seeded = [i for i in left_items if not i.is_stream and i.relation.given]
        return check_temporal(where, join, join_type, left_stream or seeded, right, condition)
    if asof:
        if not condition.keys:
            where.fail("ASOF JOIN needs at least one equality between the two sides", join, "ON a.k = b.k AND b.t <= a.t")
        if join_type not in (JoinType.INNER, JoinType.LEFT):
            where.fail(f"ASOF {join_type} JOIN is not supported", join, "use ASOF JOIN or ASOF LEFT JOIN")
        if not right.is_stream:
            if len(left_items) != 1:  # a stream's rows (or a table's, both as snapshots) look up the table
                where.fail("an ASOF join against a table looks up the rows of one input", join,
                           "join the other inputs in a view first: FROM v ASOF JOIN table t ON ...")
            return JoinKind.ASOF_TABLE
        return JoinKind.ASOF
    windowed = [i for i in (*left_items, right) if i.time_window]
    if windowed and not (len(windowed) == 1 and windowed[0].is_stream and not (left_stream and right.is_stream)):
        return check_window_join(where, join, left_items, right, condition)
    # (a TUMBLE / HOP stream joined with a table: its rows with their windows' columns, joined as the stream's)
    if left_stream and right.is_stream:
        return stream_stream_kind(where, join, left_items, right, condition)
    if left_stream or right.is_stream:
        return check_stream_table(where, join, join_type, left_items, right, condition)
    return JoinKind.TABLE_TABLE


def check_temporal(where: Located, join, join_type, left_stream, right: Item, condition: Condition) -> JoinKind:
    # rows the file gives: looked up by any condition (an index's equality, a nested loop), several may match
    seeded = right.relation.given
    if join_type not in (JoinType.INNER, JoinType.LEFT) and not (seeded and join_type == JoinType.CROSS):
        where.fail(f"a process-time temporal join is INNER or LEFT, not {join_type}", join, "use JOIN or LEFT JOIN ... FOR SYSTEM_TIME AS OF PROCTIME()")
    if not left_stream:
        where.fail("a process-time temporal join needs a stream on the left", join, "the left side is looked up row by row")
    key_columns = {r.name for _, r in condition.keys if isinstance(r, exp.Column)}
    pk = set(right.relation.primary_key)
    if seeded:
        return JoinKind.TEMPORAL
    if pk and not pk <= key_columns:
        where.fail(
            f"the condition must cover the primary key of '{right.relation.name}' ({', '.join(sorted(pk))})",
            join.args.get("on") or join,
            "join on every primary-key column: ON s.k = t.k",
        )
    if not pk and right.relation.option("connector") != "postgres":
        where.fail(
            f"'{right.relation.name}' declares no PRIMARY KEY, which a temporal join needs",
            join.this,
            "declare it: CREATE TABLE t (id INT PRIMARY KEY, ...), or read it from PostgreSQL (connector = 'postgres')",
        )
    if not condition.keys:
        where.fail("a temporal join must be an equi-join on the table's key", join, "ON s.k = t.k")
    return JoinKind.TEMPORAL


def check_window_join(where: Located, join, left_items, right: Item, condition: Condition) -> JoinKind:
    windowed = [i for i in (*left_items, right) if i.time_window]
    if not right.time_window or len(windowed) != 2 or len(left_items) != 1:
        where.fail("a window join joins two TUMBLE (or two HOP) inputs", join, "FROM TUMBLE(a, ts, size) JOIN TUMBLE(b, ts, size) "
                   "ON ...; to join a TUMBLE's rows with a stream as rows, read it in a view: FROM (SELECT * FROM TUMBLE(a, ts, "
                   "size)) AS w JOIN b ON ...")
    a, b = windowed[0].time_window, windowed[1].time_window
    if (a.function, a.size_ms, a.slide_ms, a.offset_ms % a.slide_ms) != (b.function, b.size_ms, b.slide_ms, b.offset_ms % b.slide_ms):
        where.fail("a window join needs the same window function, size and offset on both sides", join,
                   "use equal windows, e.g. TUMBLE(..., INTERVAL '1' MINUTE) twice")
    # equal windows: equal starts and equal ends say the same (Flink and RisingWave write both)
    if not any(is_window_column(lk) and is_window_column(rk) and lk.name == rk.name for lk, rk in condition.keys):
        where.fail("a window join must join on window_start (or window_end)", join.args.get("on") or join,
                   f"add AND {left_items[0].alias}.window_start = {right.alias}.window_start")
    return JoinKind.WINDOW_TVF


def is_window_column(node: exp.Expression) -> bool:
    """`alias.window_start` or `alias.window_end` of a TUMBLE / HOP input."""
    return isinstance(node, exp.Column) and node.name in ("window_start", "window_end")


def stream_stream_kind(where: Located, join, left_items, right: Item, condition: Condition) -> JoinKind:
    explicit = [i for i in (*left_items, right) if i.is_stream and i.window_source in ("OVER", "WITHIN")]
    # a time *range* (bounded on both sides) makes an interval join (§8); a one-sided
    # comparison is an ordinary condition on top of the default CURRENT ROW windows (§3)
    bounds = [b for b in condition.time_bounds if b.origin == "condition" and b.low_ms is not None and b.high_ms is not None]
    if explicit or not bounds:
        return JoinKind.STREAM_STREAM_WINDOW
    derive_interval_windows(where, join, left_items, right, bounds)
    return JoinKind.INTERVAL


def derive_interval_windows(where: Located, join, left_items, right: Item, bounds: list[TimeBound]) -> None:
    """SEMANTICS §8: an interval join matches like the equivalent windows."""
    if len(bounds) != 1:
        where.fail(
            "an interval join bounds the new input's time against one earlier input",
            join.args.get("on") or join,
            "e.g. a.ts BETWEEN b.ts AND b.ts + INTERVAL '1' MINUTE",
        )
    bound = bounds[0]
    left = next(i for i in left_items if i.alias == bound.left)
    # right - left in [low, high]  <=>  left - right in [-high, -low] = [b_r - a_l, a_r - b_l]
    lo, hi = -bound.high_ms, -bound.low_ms
    if lo <= 0 <= hi:
        lw, rw = RangeWindow(-lo), RangeWindow(hi)
    elif lo > 0:
        lw, rw = CURRENT_ROW, RangeWindow(hi, lo)
    else:
        lw, rw = RangeWindow(-lo, -hi), CURRENT_ROW
    for item, window in ((left, lw), (right, rw)):
        used_earlier = item is not right and len(left_items) > 1
        if used_earlier and item.window != window:  # §3: one window per input, for every join
            where.fail(
                f"this interval condition would change the window of '{item.alias}', which an earlier join already used",
                join.args.get("on") or join,
                "an input may take part in one interval condition; use OVER windows for multi-way joins",
            )
        item.window, item.window_source = window, "interval condition"


def check_stream_table(where: Located, join, join_type, left_items, right: Item, condition: Condition) -> JoinKind:
    table_right = not right.is_stream
    on = join.args.get("on") or join
    if join_type.filters:  # a semi / anti join keeps the stream's row or not: any condition (NOT IN's null-aware OR)
        return JoinKind.SNAPSHOT
    if not condition.keys:
        where.fail("stream-table join must be an equi-join", on, "join on an equality between a stream column and a table column, e.g. ON s.k = t.k")
    table_aliases = {right.alias} if table_right else {i.alias for i in left_items}
    for part in conjuncts(condition.expression):
        refs = refs_of(part)
        if refs & table_aliases and refs - table_aliases and not _is_key(part, condition):
            where.fail(
                "a stream-table join condition beyond its equalities may refer to one side only",
                part,
                "move the cross-side comparison to WHERE, or make it an equality",
            )
    table_preserved = join_type == JoinType.FULL or (join_type == JoinType.RIGHT and table_right) or (
        join_type == JoinType.LEFT and not table_right)
    streams = [i for i in (*left_items, right) if i.is_stream]
    if table_preserved:
        if not (len(streams) == 1 and isinstance(streams[0].window, BucketWindow)):
            where.fail(
                "an outer join must be one-sided: it cannot detect table rows that never matched a stream row",
                join,
                "preserve the stream (stream LEFT JOIN table, table RIGHT JOIN stream), or bucket the stream: "
                "OVER (ORDER BY FLOOR(ROWTIME TO HOUR) RANGE CURRENT ROW)",
            )
        return JoinKind.BUCKETED
    return JoinKind.SNAPSHOT


def with_window_bounds(kind: JoinKind, condition: Condition, left_items, right: Item) -> Condition:
    """Add the co-presence bounds the RANGE windows imply (SEMANTICS §4)."""
    if kind != JoinKind.STREAM_STREAM_WINDOW or not isinstance(right.window, RangeWindow):
        return condition
    bounds = list(condition.time_bounds)
    for item in left_items:
        if item.is_stream and isinstance(item.window, RangeWindow):
            lw, rw = item.window, right.window
            origin = "WITHIN" if item.window_source == right.window_source == "WITHIN" else "windows"
            bounds.append(TimeBound(item.alias, right.alias, lw.lag_ms - rw.size_ms, lw.size_ms - rw.lag_ms, origin))
    return replace(condition, time_bounds=tuple(merge_bounds(bounds)))


def _is_key(part: exp.Expression, condition: Condition) -> bool:
    return isinstance(part, exp.EQ) and any({part.this, part.expression} == {a, b} for a, b in condition.keys)
