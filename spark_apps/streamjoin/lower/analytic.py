"""Aggregates OVER windows of rows (`plan.model.Analytic`, analytic window functions) on a
streaming frame: s-Server's and KDA's windowed aggregates (`AVG(price) OVER (PARTITION BY
ticker RANGE INTERVAL '1' MINUTE PRECEDING)`, `LAG(x) OVER w`), one value for each row.

The frame (one stream, perhaps joined with tables, after WHERE) is grouped by the windows'
PARTITION BY and handed to `applyInPandasWithState`: each micro-batch, a partition's new rows in
their input's order (rowtime, then the staged sequence, SEMANTICS §2) are appended to the rows it
retained, and each new row's values are computed over the frame that ends at it, so a row never
sees a later one, even one with its own rowtime (docs/semantics-decisions.md). A partition
retains what a later row's frame can still reach: the rows of the last `size` of time for RANGE
frames (and its state goes when the watermark passes them: an event-time timeout), the last n
rows for ROWS n, every row for an unbounded frame (but LAG, LAST_VALUE and NTH_VALUE FROM LAST,
which need the last few). The values are ready in the micro-batch the row comes in: the frame
adds no order delay.
"""

from __future__ import annotations

import math
import pickle
import warnings
from dataclasses import dataclass

from sqlglot import exp

from streamjoin.io.sources.source import SEQUENCE
from streamjoin.lower.columns import ROWTIME_COLUMN, et, flat
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.analyzer.analytics import key
from streamjoin.plan.model import Analytic, Query

# pandas warns, in Spark's Python worker, when it joins the batches of a column of NULLs
warnings.filterwarnings("ignore", "The behavior of DataFrame concatenation", FutureWarning)

TIME, SEQ = "__an_t", "__an_seq"  # the rowtime in microseconds; the input's order


def column_of(n: int) -> str:
    return f"__analytic_{n}"


def argument_of(n: int) -> str:
    return f"__an_arg_{n}"


def default_of(n: int) -> str:
    return f"__an_default_{n}"


def with_values(expression: exp.Expression, query: Query) -> exp.Expression:
    """`expression` with each OVER (...) of `query.analytics` replaced by the column holding its value."""
    columns = {key(a.expression): column_of(n) for n, a in enumerate(query.analytics)}

    def swap(node):
        if isinstance(node, exp.Window) and key(node) in columns:
            return exp.column(columns[key(node)])
        return node

    return expression.transform(swap)


@dataclass(frozen=True)
class Spec:
    """What the pandas side needs of one Analytic (picklable, no sqlglot)."""

    function: str
    star: bool
    frame: str
    size: int  # us for RANGE, rows for ROWS
    lag: int  # us
    offset: int
    from_last: bool
    ignore_nulls: bool
    default: bool
    numeric: bool = False  # the argument is a Spark integer or floating column (the vectorized path)
    integral: bool = False  # ... an integer one: SUM, MIN and MAX stay whole


def analytic_problem(query: Query) -> str | None:
    """Why `run` cannot compute `query`'s aggregates OVER windows of rows; None: it can (over one
    stream, joined with tables at most, one PARTITION BY, no GROUP BY or DISTINCT beside them)."""
    if not query.analytics:
        return None
    problems = {key(a.expression): a.problem for a in query.analytics if a.problem}
    for o in query.output:
        for node in o.expression.find_all(exp.Window):
            if key(node) in problems:
                return f"output column '{o.name}': {problems[key(node)]}"
    if len(query.streams()) != 1 or any(not j.kind.with_table for j in query.joins):
        return ("aggregates OVER windows of rows are computed over one stream (joined with tables at most): "
                "join the streams in a view, and compute the windows in a query that reads it")
    if query.aggregation is not None or query.distinct is not None:
        what = "GROUP BY" if query.aggregation is not None else "DISTINCT"
        return f"aggregates OVER windows of rows and {what} in one query are not supported by `run` yet: put one in a view"
    if len({key(a.ordered_by) if a.ordered_by is not None else None for a in query.analytics}) > 1:
        return ("OVER windows in different orders in one query are not supported by `run` yet: "
                "one ORDER BY per query (a view each)")
    if any(a.partition_by != query.analytics[0].partition_by for a in query.analytics):
        return ("OVER windows with different PARTITION BY in one query are not supported by `run` yet: "
                "one partitioning per query (a view each)")
    return None


def _spec(a: Analytic, argument) -> Spec:
    from pyspark.sql.types import FloatType, IntegralType

    scale = 1000 if a.frame == "range" else 1
    return Spec(a.function, a.argument is None, a.frame, a.size * scale, a.lag * scale, a.offset, a.from_last,
                 a.ignore_nulls, a.default is not None, isinstance(argument, IntegralType | FloatType),
                 isinstance(argument, IntegralType))


def add_analytics(frame, query: Query, alias: str):
    """`frame` (rows of the one stream input `alias`, with ROWTIME_COLUMN) with a
    column `column_of(n)` per analytic of `query`."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import BinaryType, StructField, StructType

    frame, keys, kept, specs, fields = prepared(frame, query, alias)
    out = StructType([*frame.schema.fields, *fields])
    compute = Compute(specs, tuple(kept), tuple(out.names))
    state = StructType([StructField("rows", BinaryType())])
    computed = frame.groupBy(*keys).applyInPandasWithState(compute, out, state, "append", GroupStateTimeout.NoTimeout)
    # engine time is thousands of years on (io.formats.instants): past what pandas holds, so it goes as micros
    engine = et(alias)
    return computed.drop(*kept, *keys).withColumn(engine, F.timestamp_micros(F.col(engine)))


def prepared(frame, query: Query, alias: str):
    """(`frame` with what the pandas side reads: TIME, SEQ, each analytic's argument and default,
    the partition's columns, engine time in micros; the partition's columns; the columns only the
    pandas side reads; each analytic's `Spec`; each analytic's value field)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField

    analytics = query.analytics
    frame = frame.withColumn(TIME, F.unix_micros(F.col(ROWTIME_COLUMN))).withColumn(SEQ, F.col(flat(alias, SEQUENCE)))
    for n, a in enumerate(analytics):
        frame = frame.withColumn(argument_of(n), F.expr(spark_sql(a.argument)) if a.argument is not None else F.lit(None))
        if a.default is not None:
            frame = frame.withColumn(default_of(n), F.expr(spark_sql(a.default)))
    engine = et(alias)
    frame = frame.withColumn(engine, F.unix_micros(F.col(engine)))
    partition = analytics[0].partition_by
    keys = [f"__an_part_{k}" for k in range(max(1, len(partition)))]
    for k, name in enumerate(keys):
        frame = frame.withColumn(name, F.expr(spark_sql(partition[k])) if partition else F.lit(0))
    types = {f.name: f.dataType for f in frame.schema.fields}
    fields = [StructField(column_of(n), _type(a, types[argument_of(n)])) for n, a in enumerate(analytics)]
    kept = [
        TIME,
        SEQ,
        *[argument_of(n) for n in range(len(analytics))],
        *[default_of(n) for n, a in enumerate(analytics) if a.default is not None],
    ]
    specs = tuple(_spec(a, types[argument_of(n)]) for n, a in enumerate(analytics))
    return frame, keys, kept, specs, fields


def _type(a: Analytic, argument):
    from pyspark.sql.types import DecimalType, DoubleType, FloatType, IntegralType, LongType

    if a.function == "COUNT":
        return LongType()
    if a.function in ("AVG", "STDDEV_SAMP", "STDDEV_POP", "VAR_SAMP", "VAR_POP"):
        return DoubleType()
    if a.function == "SUM":
        if isinstance(argument, IntegralType):
            return LongType()
        if isinstance(argument, DecimalType):
            return DecimalType(min(38, argument.precision + 10), argument.scale)
        return DoubleType() if isinstance(argument, FloatType) else argument
    return argument  # MIN MAX FIRST_VALUE LAST_VALUE NTH_VALUE LAG: the argument's own


class Compute:
    """The function `applyInPandasWithState` calls for each partition with rows or a timeout."""

    def __init__(self, specs: tuple[Spec, ...], kept: tuple[str, ...], names: tuple[str, ...]):
        self.specs, self.kept, self.names = specs, kept, names

    def __call__(self, _key, frames, state):
        import pandas as pd

        new = pd.concat(list(frames), ignore_index=True).sort_values([TIME, SEQ], kind="stable", ignore_index=True)
        if new.empty:
            return
        rows = new[list(self.kept)]
        first = 0
        if state.exists:
            old = pickle.loads(state.get[0])
            rows, first = pd.concat([old, rows], ignore_index=True), len(old)
        times = rows[TIME].to_numpy(dtype="int64")
        for n, spec in enumerate(self.specs):
            new[column_of(n)] = values(spec, times, rows[argument_of(n)], rows.get(default_of(n)), first)
        keep = min((retained_from(spec, times) for spec in self.specs), default=len(rows))
        state.update((pickle.dumps(rows.iloc[keep:].reset_index(drop=True), protocol=pickle.HIGHEST_PROTOCOL),))
        yield new[list(self.names)]


def retained_from(spec: Spec, times) -> int:
    """The first row (of `times`, in order) a row still to come can have in its frame."""
    import numpy as np

    count = len(times)
    if spec.frame == "range":
        return int(np.searchsorted(times, times[-1] - spec.size, "left")) if count else 0
    if spec.frame == "rows":
        return max(0, count - spec.size)
    if spec.ignore_nulls:
        return 0
    if spec.function == "LAG":
        return max(0, count - spec.offset)
    if spec.function == "LAST_VALUE" or (spec.function == "NTH_VALUE" and spec.from_last):
        return max(0, count - spec.offset)
    return 0


def values(spec: Spec, times, argument, defaults, first: int) -> list:
    """The analytic's value for each row from `first` on, over the rows before it in its frame."""
    fast = vectorized(spec, times, argument, defaults, first)
    return fast if fast is not None else row_by_row(spec, times, argument, defaults, first)


_ROLLING = {"SUM": "sum", "AVG": "mean", "MIN": "min", "MAX": "max", "STDDEV_SAMP": "std", "STDDEV_POP": "std",
            "VAR_SAMP": "var", "VAR_POP": "var"}


def vectorized(spec: Spec, times, argument, defaults, first: int) -> list | None:
    """`values` for a frame that ends at its row, by numpy (positions, counts) and pandas' rolling
    windows (which end at the row too: a later row of its rowtime is not in it); None where only
    `row_by_row` computes it (IGNORE NULLS, a frame that ends before its row, a RANGE of 0, an
    aggregate of a non-numeric column)."""
    import numpy as np
    import pandas as pd

    if spec.ignore_nulls or (spec.frame == "range" and (spec.lag or not spec.size)):
        return None
    if spec.function in _ROLLING and not spec.numeric:
        return None
    rows = np.arange(first, len(times))
    if spec.frame == "range":
        starts = np.searchsorted(times, times[rows] - spec.size, "left")
    else:
        starts = np.maximum(0, rows - spec.size) if spec.frame == "rows" else np.zeros(len(rows), dtype=np.int64)
    f = spec.function
    if f in ("LAG", "FIRST_VALUE", "LAST_VALUE", "NTH_VALUE"):
        data = argument.to_numpy(dtype=object)
        if f == "LAG":
            picks = rows - spec.offset
        elif f == "FIRST_VALUE":
            picks = starts
        elif f == "LAST_VALUE":
            picks = rows
        else:
            picks = rows - spec.offset + 1 if spec.from_last else starts + spec.offset - 1
        held = (picks >= starts) & (picks <= rows)
        fallback = [defaults.iloc[i] if defaults is not None else None for i in rows] if f == "LAG" else [None] * len(rows)
        return [plain(data[j]) if ok else plain(d) for j, ok, d in zip(picks, held, fallback, strict=True)]
    if f == "COUNT":
        if spec.star:
            return (rows - starts + 1).tolist()
        present = np.concatenate([[0], np.cumsum(~argument.isna().to_numpy())])
        return (present[rows + 1] - present[starts]).tolist()
    numbers = pd.to_numeric(argument, errors="coerce").astype("float64")
    if spec.frame == "range":
        series = pd.Series(numbers.to_numpy(), index=pd.to_datetime(times, unit="us"))
        window = series.rolling(pd.Timedelta(microseconds=spec.size), closed="both", min_periods=1)
    elif spec.frame == "rows":
        window = pd.Series(numbers.to_numpy()).rolling(spec.size + 1, min_periods=1)
    else:
        window = pd.Series(numbers.to_numpy()).expanding(min_periods=1)
    method = _ROLLING[f]
    ddof = {"STDDEV_POP": 0, "VAR_POP": 0}.get(f, 1)
    result = (getattr(window, method)(ddof=ddof) if method in ("std", "var") else getattr(window, method)()).to_numpy()[first:]
    whole = spec.integral and f in ("SUM", "MIN", "MAX")
    return [None if v != v else (int(round(v)) if whole else float(v)) for v in result]


def row_by_row(spec: Spec, times, argument, defaults, first: int) -> list:
    """`values` one row at a time, each over its frame's rows (any frame, any column)."""
    import numpy as np

    data = argument.to_numpy(dtype=object)
    present = ~argument.isna().to_numpy()
    out = []
    for i in range(first, len(times)):
        if spec.frame == "range":
            start = int(np.searchsorted(times, times[i] - spec.size, "left"))
            end = i if spec.lag == 0 else min(i, int(np.searchsorted(times, times[i] - spec.lag, "right")) - 1)
        else:
            start, end = (max(0, i - spec.size) if spec.frame == "rows" else 0), i
        default = defaults.iloc[i] if defaults is not None else None
        out.append(frame_value(spec, data, present, start, end, i, default))
    return out


def frame_value(spec: Spec, data, present, start: int, end: int, i: int, default):
    f = spec.function
    if f == "LAG":
        if spec.ignore_nulls:
            earlier = [j for j in range(end - 1 if end == i else end, start - 1, -1) if present[j]]
            return plain(data[earlier[spec.offset - 1]]) if len(earlier) >= spec.offset else plain(default)
        j = i - spec.offset
        return plain(data[j]) if start <= j <= end else plain(default)
    if end < start:
        return 0 if f == "COUNT" else None
    window = range(start, end + 1)
    if f == "COUNT":
        return len(window) if spec.star else int(present[start : end + 1].sum())
    chosen = [j for j in window if present[j]] if spec.ignore_nulls or f not in _POSITIONAL else list(window)
    if f in _POSITIONAL:
        if f == "FIRST_VALUE":
            pick = 0
        elif f == "LAST_VALUE":
            pick = len(chosen) - 1
        else:
            pick = len(chosen) - spec.offset if spec.from_last else spec.offset - 1
        return plain(data[chosen[pick]]) if 0 <= pick < len(chosen) else None
    xs = [data[j] for j in chosen]
    if not xs:
        return None
    return _AGGREGATES[f](xs)


_POSITIONAL = ("FIRST_VALUE", "LAST_VALUE", "NTH_VALUE")


def plain(value):
    """A pandas scalar as a plain value (NaN / NaT as None)."""
    if value is None:
        return None
    try:
        if value != value:  # NaN, NaT
            return None
    except (TypeError, ValueError):
        pass
    return value.item() if hasattr(value, "item") and not hasattr(value, "to_pydatetime") else value


def total(values, start=None):
    """`start` plus every value (None: nothing yet), in Python's own arithmetic (exact for
    integers and DECIMALs)."""
    for v in values:
        start = v if start is None else start + v
    return start


def _variance(xs, ddof: int):
    values = [float(x) for x in xs]
    if len(values) <= ddof:
        return None
    mean = math.fsum(values) / len(values)
    return math.fsum((v - mean) ** 2 for v in values) / (len(values) - ddof)


def _root(value):
    return None if value is None else math.sqrt(value)


_AGGREGATES = {
    "SUM": lambda xs: plain(total(xs)),
    "AVG": lambda xs: math.fsum(float(x) for x in xs) / len(xs),
    "MIN": lambda xs: plain(min(xs)),
    "MAX": lambda xs: plain(max(xs)),
    "VAR_SAMP": lambda xs: _variance(xs, 1),
    "VAR_POP": lambda xs: _variance(xs, 0),
    "STDDEV_SAMP": lambda xs: _root(_variance(xs, 1)),
    "STDDEV_POP": lambda xs: _root(_variance(xs, 0)),
}
