"""What a join keeps in state and when it is dropped, in words (for explain)."""

from __future__ import annotations

from streamjoin.plan.model import ROWS, Condition, JoinKind, JoinType, sql
from streamjoin.plan.windows import BucketWindow, RangeWindow, RowsWindow, format_ms


def describe_state(kind: JoinKind, join_type: JoinType, left_items, right, condition: Condition) -> tuple[str, ...]:
    if kind == JoinKind.TEMPORAL:
        return (f"no state: '{right.alias}' is re-read at every micro-batch (process time)",)
    if kind == JoinKind.TABLE_TABLE:
        return ("both tables as snapshots taken at query start (an ordinary relational join)",)
    if kind in (JoinKind.SNAPSHOT, JoinKind.BUCKETED):
        return _snapshot_state(kind, left_items, right)
    if kind == JoinKind.WINDOW_TVF:
        return (
            "rows of both inputs, per window and key, until the join clock passes window_end; "
            "then the window's pairs are final and its state is dropped",
        )
    if kind == JoinKind.ASOF_TABLE and not any(i.is_stream for i in left_items):
        return (f"both tables as snapshots taken at query start: each row of '{left_items[0].alias}' takes its "
                f"nearest row of '{right.alias}' (an ordinary relational ASOF join)",)
    if kind == JoinKind.ASOF_TABLE:
        return (
            f"the snapshot of '{right.alias}', read once at query start, per key sorted by the ordering value; "
            "no stream state: each stream row takes its nearest table row and is passed on",
        )
    if kind == JoinKind.REGULAR:
        return tuple((f"'{item.alias}': every row its changes leave (a view of regular joins: its rows have no key), for "
                      "as long as the query runs; a row it withdraws withdraws the results of a row equal to it"
                      if item.relation.changing and item.relation.primary_key[:1] == (ROWS,) else
                      f"'{item.alias}': its latest row per primary key ({', '.join(item.relation.primary_key)}), for as "
                      "long as the query runs; an update or delete withdraws the results of the row it replaces"
                      if item.relation.changing else
                      f"'{item.alias}': every row, per join key, for as long as the query runs (grows without bound: "
                      "a regular join over the whole history)") for item in (*left_items, right) if item.is_stream)
    if kind == JoinKind.ASOF:
        return (
            f"rows of '{right.alias}' per key ({', '.join(sql(r) for _, r in condition.keys)}), "
            "the latest per ordering value, until no later left row can choose them",
            "left rows until the join clock passes their rowtime (every candidate has arrived)",
        )
    return tuple(_window_state(item, join_type, left_items, right) for item in (*left_items, right) if item.is_stream)


def _snapshot_state(kind, left_items, right) -> tuple[str, ...]:
    table = right if not right.is_stream else next(i for i in left_items if not i.is_stream)
    lines = [
        f"the snapshot of '{table.alias}', read once at query start, broadcast and held in memory; "
        "refreshed only by restarting the query"
    ]
    if kind == JoinKind.BUCKETED:
        stream = next(i for i in (*left_items, right) if i.is_stream)
        unit = stream.window.unit.lower()
        lines.append(
            f"per {unit} bucket of '{stream.alias}': the table keys matched so far; when the {unit} closes, "
            f"every unmatched table row is emitted NULL-extended (rowtime = the {unit}'s start) and the bucket is dropped"
        )
    else:
        lines.append("no stream state: each stream row is looked up and passed on")
    return tuple(lines)


def _window_state(item, join_type, left_items, right) -> str:
    window = item.window
    preserved = (
        join_type == JoinType.FULL
        or (join_type == JoinType.LEFT and item is not right)
        or (join_type == JoinType.RIGHT and item is right)
    )
    tail = "; a row that matched nothing is then emitted NULL-extended" if preserved else ""
    if isinstance(window, RangeWindow):
        others = [i for i in (*left_items, right) if i.is_stream and i is not item]
        # it can still meet rows whose presence starts up to its own end: t + size - (their lag)
        min_lag = min((o.window.lag_ms for o in others if isinstance(o.window, RangeWindow)), default=0)
        keep = window.size_ms - min_lag
        until = f"ROWTIME + {format_ms(keep)}" if keep > 0 else "ROWTIME"
        return f"'{item.alias}' rows until the join clock passes {until}{tail}"
    if isinstance(window, RowsWindow):
        per = f"per partition ({', '.join(window.partition_by)})" if window.partition_by else "of the whole input (one ordered sequence)"
        n = window.count + 1
        rows = f"{n} row{'s' * (n > 1)}"
        return f"'{item.alias}': the last {rows} {per}; a row is dropped when {n} later row{'s' * (n > 1)} arrived{tail}"
    if isinstance(window, BucketWindow):
        return f"'{item.alias}' rows until their {window.unit.lower()} bucket closes{tail}"
    return f"'{item.alias}' rows (window {window})"
