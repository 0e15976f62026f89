"""The column conventions of every lowered query (a base module: it imports nothing else from
`lower`). Spark is imported inside the functions that build columns.

- Each input's columns are flattened to `alias__column`, so joined frames re-project freely.
- `__bound_<alias>`: the row is a rowtime bound (SEMANTICS §1), not data; bound rows flow
  through the joins (they move the watermark) and every join's guard rejects them.
- `alias____et`: the input's *engine time* (`io.formats.instants`), its watermark column. Time bounds
  between inputs compare it, so Spark drops state by them; rowtime columns stay plain data.
- `alias____zero`: 0 on every row, read from the rowtime (so not foldable): the equality a
  key-less stream-stream join needs.
- `__rowtime`: the output rowtime (§4) of a lowered frame; `__et` its engine time.
- `__start`: an intermediate stream's engine time (a cut chain's part, `lower.cut_chain`).
"""

from __future__ import annotations

from streamjoin.io.formats.columns import ROWTIME_COLUMN  # (the sinks read it too)
from streamjoin.plan.model import Input, JoinKind, JoinType, Query

ET_COLUMN = "__et"
ZERO = "__zero"
START = "__start"
VIEW_BOUND = "__bound"  # a view's output row is a rowtime bound (NativeLowering.view_frame)


FOLDER_NAME = 120  # the longest name of an input's folder (checkpoint/sources, late/): file systems stop at 255


def folder(key: str) -> str:
    """An input's folder name: its key (views' names and its alias), or when a deep chain of views
    makes that too long for a file name (a StreamLab app's 13 steps), its start and a digest."""
    if len(key) <= FOLDER_NAME:
        return key
    import hashlib

    return f"{key[:FOLDER_NAME - 17]}~{hashlib.sha1(key.encode()).hexdigest()[:16]}"


def flat(alias: str, column: str) -> str:
    return f"{alias}__{column}"


def et(alias: str) -> str:
    """The engine-time column of a stream input."""
    return flat(alias, ET_COLUMN)


def bound_column(alias: str) -> str:
    return f"__bound_{alias}"


def q(name: str) -> str:
    """A column name quoted for Spark SQL (a backtick inside it doubled: a name is never SQL)."""
    return "`" + name.replace("`", "``") + "`"


def engine_time(rowtime):
    """A rowtime column as Spark's event time (instants.SHIFT_US later)."""
    from pyspark.sql import functions as F

    from streamjoin.io.formats.instants import SHIFT_US

    return F.timestamp_micros(F.unix_micros(rowtime) + F.lit(SHIFT_US))


def rowtime_of(query: Query, alias: str) -> str:
    """An input's rowtime column, quoted."""
    return q(flat(alias, query.input(alias).rowtime))


def et_of(alias: str) -> str:
    return q(et(alias))


def lag(item: Input) -> int:
    """How long after its rowtime a row's presence starts (`RANGE BETWEEN a AND b PRECEDING`)."""
    return getattr(item.window, "lag_ms", 0) or 0


def any_bound(aliases) -> str:
    return " OR ".join(f"coalesce({q(bound_column(a))}, false)" for a in aliases)


def not_bound(aliases, rowtimes, keys=()) -> str:
    """No bound row among the aliases, and no NULL join key. Spark splits boolean filters and
    pushes the parts that name one input (and not its rowtime) below the watermark, where they
    would stop bound rows from moving it; a sum over every alias, naming the rowtimes, stays
    where it is. (Spark's own IS NOT NULL filters on join keys are off for the same reason, and
    its streaming join would otherwise match NULL keys.)"""
    flags = [f"cast(coalesce({q(bound_column(a))}, false) AS INT)" for a in aliases]
    flags += [f"cast(({k}) IS NULL AS INT)" for k in keys]
    anchors = [f"coalesce(0 * unix_micros({rt}), 0)" for rt in rowtimes]
    if not flags + anchors:
        return "true"
    return f"({' + '.join(flags + anchors)}) = 0"


def or_bound(predicate: str, aliases) -> str:
    """A filter that lets bound rows through, wherever Spark pushes it; parenthesised, as it is
    AND-ed with the join's other conditions (before 2026-12-07 a residual `x OR y` of a join of
    tables was not: `k = k2 AND x OR y`)."""
    if not aliases:
        return f"({predicate})"
    return f"(({predicate}) OR {any_bound(aliases)})"


def inner_only(query: Query) -> bool:
    """Every join inner (and on Spark's join), so no output row holds a bound row: each join's
    condition has the `not_bound` guard, and only an outer join emits a row it did not match.
    (Spark would move a filter after them into the last join's condition, checked per pair.)"""
    return all(j.join_type in (JoinType.INNER, JoinType.CROSS) and j.kind not in (JoinKind.ASOF_TABLE, JoinKind.BUCKETED)
               for j in query.joins)


def output_rowtime(query: Query, aliases: list[str] | None = None) -> str:
    """§4: the latest presence start (rowtime + lag) among the non-null stream rows (table rows
    are always present), as Spark SQL."""
    streams = [query.input(a) for a in query.streams() if aliases is None or a in aliases]
    starts = [f"{rowtime_of(query, i.alias)} + INTERVAL {lag(i)} MILLISECONDS" for i in streams]
    return starts[0] if len(starts) == 1 else f"greatest({', '.join(starts)})"


def rowtime_column(query: Query, aliases: list[str]):
    """The output rowtime as a column."""
    from pyspark.sql import functions as F

    streams = [query.input(a) for a in query.streams() if a in aliases]
    if len(streams) == 1 and not lag(streams[0]):
        return F.col(q(flat(streams[0].alias, streams[0].rowtime)))
    return F.expr(output_rowtime(query, aliases))


def event_time(query: Query, aliases: list[str]):
    """The output rowtime as engine time: one stream without a lag keeps its event-time column
    (and with it Spark's watermark, which a later aggregation needs)."""
    from pyspark.sql import functions as F

    streams = [query.input(a) for a in query.streams() if a in aliases]
    if len(streams) == 1 and not lag(streams[0]):
        return F.col(q(et(streams[0].alias)))
    return engine_time(F.col(ROWTIME_COLUMN))


def one_event_time(joined, aliases: list[str]):
    """Spark allows one event-time column per stream: a joined frame that feeds another join
    keeps the first input's as its event time; the others become plain timestamps."""
    from pyspark.sql import functions as F

    for alias in aliases[1:]:
        if et(alias) in joined.columns:  # an intermediate input's is START (see lower.cut_chain)
            joined = joined.withColumn(et(alias), F.timestamp_micros(F.unix_micros(F.col(q(et(alias))))))
    return joined
