"""A GROUP BY without a time bucket over a stream (RisingWave's `CREATE MATERIALIZED VIEW v AS
SELECT k, COUNT(*) FROM s GROUP BY k`, Lenses' `SELECT TABLE COUNT(*) ... GROUP BY channel`): a
running aggregate, a table that changes as the stream comes, written as a changelog.

No group ever closes, so it cannot be a final row (SEMANTICS §7's buckets are). Each micro-batch,
every group the batch's rows touched writes `-D` of its row as it stood (if it had one) and `+I`
of its new row; folding the changelog (the upsert sink does, by the group's keys) gives the
aggregate over every row read so far. The new rows carry the latest rowtime among the batch's
rows of the group. A group whose row did not change (a MAX that stayed) writes nothing. HAVING
filters the changelog's rows: a group's -D where its old row passed, its +I where its new one
does, so that the folded changelog holds the groups that pass it as they stand.

Runs on `applyInPandasWithState`, grouped by the GROUP BY's keys: the state is each aggregate's
accumulator (a count, a sum, the extreme, a sum and count for AVG, the values seen for COUNT
DISTINCT). Append-only input only: a changing table's retractions are refused (lower.support).
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from streamjoin.io.formats.columns import OP
from streamjoin.lower.aggregate import grouped_columns
from streamjoin.lower.analytic import plain, total  # (and its filter of pandas' warning in Spark's worker)
from streamjoin.lower.columns import ET_COLUMN, ROWTIME_COLUMN, engine_time, flat
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.model import ROWS, Emit, Query, Script

TIME, CHANGE, SIGN = "__rn_t", "__rn_op", "__rn_sign"
FUNCTIONS = {exp.Count: "COUNT", exp.Sum: "SUM", exp.Min: "MIN", exp.Max: "MAX", exp.Avg: "AVG"}


@dataclass(frozen=True)
class _Measure:
    function: str  # COUNT COUNT_STAR COUNT_DISTINCT SUM MIN MAX AVG
    integral: bool  # its argument is an integer: sums stay whole


def measure_problem(node: exp.Expression) -> str | None:
    """Why `run` cannot keep `node` (an aggregate of the query) running; None: it can."""
    if isinstance(node, exp.Filter):
        return f"{node.sql()}: FILTER (WHERE ...) in a running aggregate is not supported by `run` yet"
    if isinstance(node, exp.WithinGroup):
        return f"{node.sql()}: a percentile in a running aggregate (GROUP BY without a time bucket) is not supported by `run` yet"
    if isinstance(node.this, exp.Distinct) and not (isinstance(node, exp.Count) and len(node.this.expressions) == 1):
        return f"{node.sql()}: of the DISTINCT aggregates, a running aggregate keeps COUNT(DISTINCT x)"
    return None


def running_problem(script: Script, query: Query, top: bool) -> str | None:
    """Why `run` cannot keep `query`'s groups running; None: it can (a changelog of the groups of
    one stream, joined with tables at most; in a view another query reads, a table that changes)."""
    where = "GROUP BY without a time bucket (a running aggregate, written as a changelog)"
    if len(query.streams()) != 1 or any(not j.kind.with_table for j in query.joins):
        return f"{where} over joined streams is not supported by `run` yet: join them in a view, and group in a query that reads it"
    if query.joins and any(script.relation(i.relation).changing for i in query.inputs):
        return f"{where} over a table that changes (its updates and deletes) is not supported by `run` yet"
    if query.distinct is not None or query.analytics:
        return f"{where} with {'DISTINCT' if query.distinct is not None else 'OVER windows'} is not supported by `run` yet"
    if top and query.emit != Emit.FINAL and (query.joins or not any(script.relation(i.relation).changing for i in query.inputs)):
        return f"{where} writes its changes as they come: leave out EMIT {query.emit}"
    return next((p for node, _ in grouped_columns(query)[1].values() if (p := measure_problem(node))), None)


def changes_problem(query: Query) -> str | None:
    """Why `run` cannot keep the groups of a regular join's changelog; None: it can."""
    where = "GROUP BY without a time bucket over a regular join (a running aggregate of its changelog)"
    if query.distinct is not None or query.analytics:
        return f"{where} with {'DISTINCT' if query.distinct is not None else 'OVER windows'} is not supported by `run` yet"
    return next((p for node, _ in grouped_columns(query)[1].values() if (p := measure_problem(node))), None)


def running_frame(joined, query: Query, time_column: str, sign: str | None = None, windows: bool = True):
    """`joined` (one stream's rows after WHERE, bound rows gone, `time_column` their rowtime) as
    the changelog of the query's groups: OP, the output columns, ROWTIME_COLUMN and ET_COLUMN.
    `windows`: compute the TUMBLE / HOP inputs' windows (False: the operator's rows have them).
    `sign`: a column of `joined` that is -1 for a row withdrawn (a regular join's changelog,
    `lower.custom.custom_joined`), 1 for a row added; the groups then follow both. The group
    keys the output does not hold come after it (`hidden_keys`: they identify a view's rows)."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, DecimalType, DoubleType, IntegralType, LongType, StringType, StructField, StructType

    keys, aggregates, outputs, having = grouped_columns(query)
    joined = window_columns(joined, query) if windows else joined
    frame = joined.select(
        *[F.expr(spark_sql(k)).alias(name) for k, name in keys.values()],
        *[F.expr(spark_sql(_argument(node))).alias(f"{name}_in") for node, name in aggregates.values()],
        F.unix_micros(F.col(time_column)).alias(TIME),
        *([F.col(sign).alias(SIGN)] if sign else []),
    )
    types = {f.name: f.dataType for f in frame.schema.fields}
    measures, fields = [], []
    for node, name in aggregates.values():
        argument = types[f"{name}_in"]
        function = _function(node)
        measures.append(_Measure(function, isinstance(argument, IntegralType)))
        if function.startswith("COUNT"):
            kind = LongType()
        elif function == "AVG":
            kind = DoubleType()
        elif function == "SUM":
            kind = LongType() if isinstance(argument, IntegralType) else \
                DecimalType(38, argument.scale) if isinstance(argument, DecimalType) else DoubleType()
        else:
            kind = argument
        fields.append(StructField(name, kind))
    key_fields = [StructField(name, types[name]) for _, name in keys.values()]
    out = StructType([StructField(CHANGE, StringType()), *key_fields, *fields, StructField(TIME, LongType())])
    state = StructType([StructField("acc", BinaryType())])
    group = [name for _, name in keys.values()]
    if not group:  # one group of every row: a column of its own (a literal grouping loses its attribute in a stream)
        frame, group = frame.withColumn("__rn_all", F.lit(0)), ["__rn_all"]
    changes = frame.groupBy(*group).applyInPandasWithState(
        Running(tuple(measures), tuple(name for _, name in keys.values()), tuple(name for _, name in aggregates.values()),
                signed=sign is not None),
        out, state, "append", GroupStateTimeout.NoTimeout)
    if having is not None:  # a group's row while it passes HAVING: its -D where the old row passed, its +I where the new one does
        changes = changes.where(F.coalesce(F.expr(spark_sql(having)), F.lit(False)))
    rowtime = F.timestamp_micros(F.col(TIME))
    return changes.select(
        F.col(CHANGE).alias(OP),
        *[F.expr(spark_sql(tree)).alias(name) for name, tree in outputs],
        *[F.lit(0).alias(k) if k == "__k_all" else F.col(k) for k in hidden_keys(query)],
        rowtime.alias(ROWTIME_COLUMN),
        engine_time(rowtime).alias(ET_COLUMN),
    )


def hidden_keys(query: Query) -> list[str]:
    """The keys of a running aggregate's rows (plan `Query.changelog_key`) that its output does not
    hold: `__k{i}`, its i-th GROUP BY key; `__k_all` (0), the one group of no keys."""
    return [k for k in query.changelog_key() or () if k not in [c.name for c in query.output] and k != ROWS]


def window_columns(joined, query: Query):
    """Each TUMBLE / HOP input's window_start and window_end, computed from its window's column
    (not the rowtime: plan.analyzer.buckets.clock_window), a HOP row once per window it is in;
    a row whose column is NULL is in no window (RisingWave's HOP drops it; TUMBLE does the same here)."""
    for item in query.inputs:
        if item.time_window is not None:
            joined = input_windows(joined, item)
    return joined


def input_windows(joined, item, flat_names: bool = True, keep=None):
    """`window_columns` of one TUMBLE / HOP input (its columns in `joined` by flat name; else by
    their own, as the operator's side frames have them: lower.custom). `keep`: a column true for
    rows that pass with no window (rowtime bounds)."""
    from pyspark.sql import functions as F

    w = item.time_window
    name = (lambda c: flat(item.alias, c)) if flat_names else (lambda c: c)
    t = F.unix_micros(F.col(name(w.column)))
    size, slide, offset = w.size_ms * 1000, w.slide_ms * 1000, w.offset_ms * 1000
    last = t - F.pmod(t - F.lit(offset), F.lit(slide))  # the latest window start at or before t
    start = name("window_start")
    passes = F.lit(False) if keep is None else F.col(keep)
    if size == slide:
        joined = joined.withColumn(start, last).where(passes | F.col(start).isNotNull())
    else:
        starts = F.sequence(last - F.lit((-(-size // slide) - 1) * slide), last, F.lit(slide))  # the windows reaching back
        joined = joined.withColumn(start, F.explode_outer(F.when(~passes, starts))).where(passes | (F.col(start) + F.lit(size) > t))
    joined = (joined.withColumn(name("window_end"), F.timestamp_micros(F.col(start) + F.lit(size)))
              .withColumn(start, F.timestamp_micros(F.col(start))))
    return joined


def _function(node: exp.Expression) -> str:
    function = FUNCTIONS[type(node)]
    if function == "COUNT" and isinstance(node.this, exp.Star):
        return "COUNT_STAR"
    if function == "COUNT" and isinstance(node.this, exp.Distinct):
        return "COUNT_DISTINCT"
    return function


def _argument(node: exp.Expression) -> exp.Expression:
    inner = node.this
    if isinstance(inner, exp.Distinct):
        return inner.expressions[0]
    return exp.Literal.number(1) if isinstance(inner, exp.Star) or inner is None else inner


class Running:
    """The function `applyInPandasWithState` calls with a group's new rows."""

    def __init__(self, measures: tuple[_Measure, ...], keys: tuple[str, ...], names: tuple[str, ...], signed: bool = False):
        self.measures, self.keys, self.names, self.signed = measures, keys, names, signed

    def __call__(self, key, frames, state):
        import pandas as pd

        new = pd.concat(list(frames), ignore_index=True)
        if new.empty:
            return
        if self.signed:
            yield from self._changes(key, new, state)
            return
        accumulators, last = _loaded(pickle.loads(state.get[0])) if state.exists else (None, None)
        before = None if accumulators is None else [_value(m, a) for m, a in zip(self.measures, accumulators, strict=True)]
        if accumulators is None:
            accumulators = [_start(m) for m in self.measures]
        accumulators = [_add(m, a, new[f"{name}_in"]) for m, a, name in zip(self.measures, accumulators, self.names, strict=True)]
        after = [_value(m, a) for m, a in zip(self.measures, accumulators, strict=True)]
        t = _at(new, last)
        state.update((pickle.dumps((accumulators, t), protocol=pickle.HIGHEST_PROTOCOL),))
        if before == after:
            return
        keys = list(key) if self.keys else []
        rows = ([("-D", *keys, *before, t)] if before is not None else []) + [("+I", *keys, *after, t)]
        yield pd.DataFrame(rows, columns=[CHANGE, *self.keys, *self.names, TIME])


    def _changes(self, key, new, state):
        """A changelog's rows (SIGN -1: withdrawn): each accumulator keeps what a withdrawal
        needs (counts of values for MIN, MAX and COUNT DISTINCT; a sum with its count), and the
        group's row count: a group left without rows is deleted (-D; its state keeps its rowtime)."""
        import pandas as pd

        existed = state.exists
        rows, accumulators, *last = pickle.loads(state.get[0]) if existed else (0, [_signed_start(m) for m in self.measures])
        before = [_signed_value(m, a) for m, a in zip(self.measures, accumulators, strict=True)] if existed and (rows or not self.keys) else None
        signs = [int(s) for s in new[SIGN].tolist()]
        rows += sum(signs)
        accumulators = [_signed_add(m, a, new[f"{name}_in"].tolist(), signs)
                        for m, a, name in zip(self.measures, accumulators, self.names, strict=True)]
        after = [_signed_value(m, a) for m, a in zip(self.measures, accumulators, strict=True)] if rows or not self.keys else None
        t = _at(new, last[0] if last else None)
        # a group left without rows keeps its last rowtime: should it come back, its new row must not
        # come before its deletion (the rowtime order of what reads the changes)
        state.update((pickle.dumps((rows, accumulators, t), protocol=pickle.HIGHEST_PROTOCOL),))
        if before == after:
            return
        keys = list(key) if self.keys else []
        out = ([("-D", *keys, *before, t)] if before is not None else []) + ([("+I", *keys, *after, t)] if after is not None else [])
        yield pd.DataFrame(out, columns=[CHANGE, *self.keys, *self.names, TIME])


def _at(new, last: int | None) -> int:
    """A group's change is stamped with the latest rowtime of its rows so far: its changes never go
    back in time (a row that came late, within the input's lateness, would otherwise put the new
    value before the old one, which the sinks' and readers' rowtime order would then put last)."""
    t = int(new[TIME].max())
    return t if last is None else max(t, last)


def _loaded(saved) -> tuple[list, int | None]:
    """(accumulators, the group's last change's rowtime) as saved (a list: before 2026-11-28)."""
    return (saved, None) if isinstance(saved, list) else saved


def _signed_start(m: _Measure):
    from collections import Counter

    return Counter() if m.function in ("MIN", "MAX", "COUNT_DISTINCT") else (None, 0) if m.function in ("SUM", "AVG") else 0


def _signed_add(m: _Measure, accumulator, values: list, signs: list[int]):
    f = m.function
    if f == "COUNT_STAR":
        return accumulator + sum(signs)
    pairs = [(int(v) if m.integral else v, s) for v, s in zip(map(plain, values), signs, strict=True) if v is not None]
    if f == "COUNT":
        return accumulator + sum(s for _, s in pairs)
    if f in ("MIN", "MAX", "COUNT_DISTINCT"):  # the batch's signs per value first: its rows come in any order
        counts = accumulator.copy()
        for v, s in pairs:
            counts[v] += s
        return +counts
    so_far, count = accumulator
    # DOUBLEs summed as exact fractions: a row taken back leaves no rounding residue (0.1 + 0.2 - 0.1 is 0.2)
    pairs = [(Fraction(v) if isinstance(v, float) and math.isfinite(v) else v, s) for v, s in pairs]
    added = total([v for v, s in pairs if s > 0])
    taken = total([v for v, s in pairs if s < 0])
    if added is not None:
        so_far = added if so_far is None else so_far + added
    if taken is not None:
        so_far = -taken if so_far is None else so_far - taken
    count += sum(s for _, s in pairs)
    return (so_far, count) if count else (None, 0)


def _signed_value(m: _Measure, accumulator):
    f = m.function
    if f in ("COUNT_STAR", "COUNT"):
        return accumulator
    if f == "COUNT_DISTINCT":
        return len(accumulator)
    if f in ("MIN", "MAX"):
        return (min if f == "MIN" else max)(accumulator) if accumulator else None
    so_far, count = accumulator
    if not count:
        return None
    if f == "AVG":
        return float(so_far / count) if isinstance(so_far, Fraction) else float(so_far) / count
    return float(so_far) if isinstance(so_far, Fraction) else so_far


def _start(m: _Measure):
    return {"COUNT_STAR": 0, "COUNT": 0, "COUNT_DISTINCT": set(), "AVG": (None, 0)}.get(m.function)


def _add(m: _Measure, accumulator, column):
    values = [int(v) if m.integral else v for v in map(plain, column.tolist()) if v is not None]
    f = m.function
    if f == "COUNT_STAR":
        return accumulator + len(column)
    if f == "COUNT":
        return accumulator + len(values)
    if f == "COUNT_DISTINCT":
        return accumulator | set(values)
    if not values:
        return accumulator
    if f == "SUM":
        return total(values, accumulator)
    if f == "AVG":
        so_far, count = accumulator
        return total(values, so_far), count + len(values)
    extreme = (min if f == "MIN" else max)(values)
    if accumulator is None:
        return extreme
    return (min if f == "MIN" else max)(accumulator, extreme)


def _value(m: _Measure, accumulator):
    if m.function == "COUNT_DISTINCT":
        return len(accumulator)
    if m.function == "AVG":
        so_far, count = accumulator
        return None if not count else float(so_far) / count
    return accumulator
