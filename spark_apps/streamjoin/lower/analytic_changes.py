"""OVER windows ordered by a column that is not the rowtime (`plan.model.Analytic.ordered_by`):
RisingWave's general OVER window, `AVG(rate) OVER (PARTITION BY pair ORDER BY ts RANGE BETWEEN
INTERVAL '3 seconds' PRECEDING AND CURRENT ROW)` over a source read in arrival order.

Each row's value is over every row of its partition read so far, in the column's order, its peers
(rows of an equal value) included, as SQL defines the frame. A row that comes out of that order
changes the values of rows already written, so the query writes a changelog (OP): `+I` for each
new row, and `-D` of the old row then `+I` of the new one for every row whose value changed;
folded, it is the SQL answer over every row read (docs/semantics-decisions.md, "OVER windows in
another column's order"). A NULL order value sorts last (its RANGE frame: the NULL rows).

Runs on `applyInPandasWithState`, grouped by the PARTITION BY: the state is every row of the
partition with its values (as RisingWave's, without a watermark it grows without bound). Each
micro-batch recomputes only the rows whose frame a new row entered, each by its frame's rows
(exact sums: a value never changes by a rounding of its history). The changes are stamped with
the latest rowtime of the partition's rows so far, as a running aggregate's are (lower.running).
"""

from __future__ import annotations

import pickle

from streamjoin.errors import Unsupported
from streamjoin.io.formats.columns import OP
from streamjoin.lower.analytic import SEQ, TIME, Spec, argument_of, default_of, frame_value, plain, prepared
from streamjoin.lower.columns import ROWTIME_COLUMN, et
from streamjoin.lower.expressions import spark_sql
from streamjoin.plan.model import Query

ORD = "__ac_ord"  # the order column's value as a float (timestamps in micros); NULL: +inf


def add_changing_analytics(frame, query: Query, alias: str):
    """`frame` (rows of the one stream input `alias`) as a changelog: OP, its columns, and a
    column `column_of(n)` per analytic of `query`; ROWTIME_COLUMN each change's stamp."""
    from pyspark.sql import functions as F
    from pyspark.sql.streaming.state import GroupStateTimeout
    from pyspark.sql.types import (
        BinaryType,
        DateType,
        NumericType,
        StringType,
        StructField,
        StructType,
        TimestampNTZType,
        TimestampType,
    )

    order = query.analytics[0].ordered_by
    column = F.expr(spark_sql(order))
    kind = frame.select(column.alias("o")).schema.fields[0].dataType
    if isinstance(kind, TimestampType | TimestampNTZType):
        value = F.unix_micros(column.cast("timestamp")).cast("double")
    elif isinstance(kind, DateType):
        value = (F.unix_date(column).cast("double") * 86_400_000_000)
    elif isinstance(kind, NumericType):
        if any(a.frame == "range" for a in query.analytics):  # an INTERVAL off a number: PostgreSQL refuses it too
            raise Unsupported(f"ORDER BY {order.sql(dialect='postgres')} in an OVER window with a RANGE of time: the "
                              "column is a number, not a time (order by a timestamp, or count ROWS)")
        value = column.cast("double")
    else:
        raise Unsupported(f"ORDER BY {order.sql(dialect='postgres')} in an OVER window: `run` orders a window by a time "
                          f"or a number, not a {kind.simpleString()}")
    frame, keys, kept, specs, fields = prepared(frame.withColumn(ORD, value), query, alias)
    kept = [*kept, ORD]
    out = StructType([StructField(OP, StringType()), *frame.schema.fields, *fields])
    compute = Changes(specs, tuple(kept), tuple(f.name for f in frame.schema.fields), tuple(f.name for f in fields),
                      et(alias))
    state = StructType([StructField("rows", BinaryType())])
    computed = frame.groupBy(*keys).applyInPandasWithState(compute, out, state, "append", GroupStateTimeout.NoTimeout)
    engine = et(alias)
    return (computed.withColumn(ROWTIME_COLUMN, F.timestamp_micros(F.col(TIME)))
            .drop(*kept, *keys).withColumn(engine, F.timestamp_micros(F.col(engine))))


class Changes:
    """The function `applyInPandasWithState` calls with a partition's new rows."""

    def __init__(self, specs: tuple[Spec, ...], kept: tuple[str, ...], columns: tuple[str, ...], names: tuple[str, ...],
                 engine: str):
        self.specs, self.kept, self.columns, self.names, self.engine = specs, kept, columns, names, engine

    def __call__(self, _key, frames, state):
        import numpy as np
        import pandas as pd

        new = pd.concat(list(frames), ignore_index=True)
        if new.empty:
            return
        new[ORD] = new[ORD].fillna(np.inf)
        old, last_t, last_e = pickle.loads(state.get[0]) if state.exists else (None, None, None)
        new["__new"] = True
        if old is None:
            rows = new
        else:
            old["__new"] = False
            rows = pd.concat([old, new], ignore_index=True)
        rows = rows.sort_values([ORD, SEQ], kind="stable", ignore_index=True)
        times = rows[ORD].to_numpy(dtype="float64")
        fresh = np.flatnonzero(rows["__new"].to_numpy(dtype=bool))
        affected = np.union1d(fresh, np.concatenate([reached(spec, times, fresh) for spec in self.specs]))
        before = {i: tuple(plain(rows.at[i, name]) for name in self.names) for i in affected if not rows.at[i, "__new"]}
        for n, spec in enumerate(self.specs):
            computed = changed_values(spec, times, rows[argument_of(n)], rows.get(default_of(n)), affected)
            column = rows[self.names[n]].astype(object) if self.names[n] in rows else pd.Series([None] * len(rows), dtype=object)
            column.iloc[affected] = computed
            rows[self.names[n]] = column
        t = max(int(new[TIME].max()), last_t if last_t is not None else int(new[TIME].max()))
        e = max(int(new[self.engine].max()), last_e if last_e is not None else int(new[self.engine].max()))
        out = []
        for i in affected:
            after = tuple(plain(rows.at[i, name]) for name in self.names)
            if i in before and before[i] == after:
                continue
            if i in before:
                out.append(("-D", i, before[i]))
            out.append(("+I", i, after))
        state.update((pickle.dumps((rows.drop(columns="__new"), t, e), protocol=pickle.HIGHEST_PROTOCOL),))
        if not out:
            return
        emitted = rows.iloc[[i for _, i, _ in out]].reset_index(drop=True)
        for n, name in enumerate(self.names):
            emitted[name] = pd.Series([values[n] for _, _, values in out], dtype=object)
        emitted[OP] = [op for op, _, _ in out]
        emitted[TIME], emitted[self.engine] = t, e
        yield emitted[[OP, *self.columns, *self.names]]


def reached(spec: Spec, times, fresh):
    """The rows (positions in order) whose frame a new row (positions `fresh`) entered."""
    import numpy as np

    positions = np.arange(len(times))
    if spec.function == "LAG" and spec.ignore_nulls:  # the offset counts non-NULL rows: any later row may move
        hits = (positions >= fresh.min()).astype(int)
    elif spec.function == "LAG":
        hits = np.searchsorted(fresh, positions, "right") - np.searchsorted(fresh, positions - spec.offset, "left")
    elif spec.frame == "range":
        arrived = np.sort(times[fresh])
        hits = np.searchsorted(arrived, times - spec.lag, "right") - np.searchsorted(arrived, times - spec.size, "left")
    elif spec.frame == "rows":
        hits = np.searchsorted(fresh, positions, "right") - np.searchsorted(fresh, positions - spec.size, "left")
    else:  # every row up to the row's last peer
        hits = (times >= times[fresh].min()).astype(int)
    return positions[hits > 0]


def changed_values(spec: Spec, times, argument, defaults, rows) -> list:
    """The analytic's value for each row of `rows` (positions in order), over its frame: RANGE and
    the default frame end at the row's last peer (rows of an equal order value)."""
    import numpy as np

    data = argument.to_numpy(dtype=object)
    present = ~argument.isna().to_numpy()
    out = []
    for i in rows:
        i = int(i)
        if spec.function == "LAG":
            start, end = 0, i
        elif spec.frame == "range":
            start = int(np.searchsorted(times, times[i] - spec.size, "left"))
            end = int(np.searchsorted(times, times[i] - spec.lag, "right")) - 1
        elif spec.frame == "rows":
            start, end = max(0, i - spec.size), i
        else:
            start, end = 0, int(np.searchsorted(times, times[i], "right")) - 1
        default = defaults.iloc[i] if defaults is not None else None
        out.append(frame_value(spec, data, present, start, end, i, default))
    return out
