"""The custom join operator on Spark 4's `transformWithStateInPandas` (RocksDB state store,
event-time timers).

Both inputs arrive as one union (`sj_side`, `sj_t` in us, `sj_seq`, the columns of both sides), grouped
by the group key. Per group, one ValueState holds the pickled `GroupJoin`
(`streamjoin.operator.engine`). Rows are buffered when they arrive and processed when an
event-time timer fires at their instant, i.e. once the join clock has passed it: Spark's
watermark here is the clock less 1 ms (so a row at the clock is not late to Spark), and a timer
at T fires when that watermark reaches T, when every row of instant T has arrived.

Each call yields the group's output rows plus one meta row (`__meta`): the group's hold (the
lowest rowtime it may still emit) and the rows it holds, which the sink uses to release FINAL
output in order and the status to report the operator's state.

No TTL: Spark's state TTL counts processing time, and a row must stay as long as it is present
in event time (a stalled input must not silently empty the windows). State is dropped by the
event-time timers instead, when rows leave their windows.
"""

from __future__ import annotations

import datetime as dt
import math
import pickle

from pyspark.sql.streaming.stateful_processor import StatefulProcessor

from streamjoin.io.formats.instants import SHIFT_MS
from streamjoin.operator.asof_columns import AsofColumns
from streamjoin.operator.columns import BLOB, ColumnGroup, unpack
from streamjoin.operator.engine import new_condition, new_group
from streamjoin.operator.group import INF, Spec
from streamjoin.operator.regular_chain import ChainSpec
from streamjoin.operator.rows_columns import RowsColumns
from streamjoin.plan.model import JoinKind

META = "__meta"
OUT_META = ("__rowtime", "__op", META, "__group", "__state")
NULL_US = -(2**63)  # a NULL timestamp: timestamps arrive and leave as microseconds (lower.custom)
_EPOCH = dt.datetime(1970, 1, 1)


class JoinProcessor(StatefulProcessor):
    def __init__(self, spec: Spec | ChainSpec, columns: list[tuple[int, str, str, str]], end_ms: int):
        """columns: (side, flat name, column name, Spark type name) of each input column; a side is
        an input's position (two, or a chain's inputs: `operator.regular_chain`)."""
        self.spec, self.columns, self.end_ms = spec, columns, end_ms

    def init(self, handle) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        self.handle = handle
        self.state = handle.getValueState("group", StructType([StructField("blob", BinaryType())]))
        self.cond = new_condition(self.spec)
        self.by_side = [[c for c in self.columns if c[0] == side] for side in range(1 + max(c[0] for c in self.columns))]
        self.timestamps = {c[1] for c in self.columns if c[3].startswith("timestamp")}
        self.integral = {c[1] for c in self.columns if c[3] in ("bigint", "int", "smallint", "tinyint")}

    def handleInputRows(self, key, rows, timerValues):
        group = self._load()
        for pdf in rows:
            pdf = pdf[~pdf["sj_bound"].fillna(False).astype(bool)]
            if pdf.empty:
                continue
            sides = pdf["sj_side"].tolist()
            times = pdf["sj_t"].tolist()  # us
            seqs = pdf["sj_seq"].tolist()
            records = {side: pdf[[c[1] for c in columns]].to_dict("records") for side, columns in enumerate(self.by_side)}
            for n, side in enumerate(sides):
                row = records[side][n]
                values = {c[2]: _clean(row[c[1]], c[1] in self.timestamps, c[1] in self.integral) for c in self.by_side[side]}
                group.add(int(side), int(times[n]), int(seqs[n]), values)
        yield from self._step(key, group, timerValues)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        yield from self._step(key, self._load(), timerValues)

    def close(self) -> None:
        pass

    def _load(self):
        stored = self.state.get()
        if stored is not None:
            return pickle.loads(stored[0])
        group = new_group(self.spec)
        group.timer_ms, group.reported = None, None
        return group

    def _step(self, key, group, timerValues):
        engine_ms = timerValues.getCurrentWatermarkInMs()  # Spark's: engine time (io.formats.instants)
        watermark = engine_ms - SHIFT_MS
        limit = INF if watermark >= self.end_ms else (watermark * 1000 + 999 if engine_ms > 0 else -INF)
        out = self._advance(group, limit) if limit != -INF else None
        wake = group.wakeup()
        if wake == INF and group.size():
            wake = self.end_ms * 1000  # rows that leave only at end of input (ROWS windows)
        if wake != INF:
            ms = max(int(wake // 1000), watermark + 1) + SHIFT_MS
            if ms != group.timer_ms:
                self.handle.registerTimer(ms)
                group.timer_ms = ms
        hold = group.hold()
        report = (None if hold == INF else int(hold), group.size())
        changed = report != group.reported
        group.reported = report
        if group.size() == 0 and not group.buffer and wake == INF:
            self.state.clear()
        else:
            self.state.update((self._dump(group),))
        if out is None and not changed:
            return
        yield self._frame(key, out, report)

    def _advance(self, group, limit):
        """The group's output rows up to instant `limit` (None: none)."""
        return group.advance(limit, self.cond) or None

    def _dump(self, group) -> bytes:
        return pickle.dumps(group, protocol=pickle.HIGHEST_PROTOCOL)

    def _frame(self, key, out, report):
        """The output rows and, last, the meta row: hold and held rows of this group (the sink
        keeps the latest per group)."""
        import pandas as pd

        data = {c[1]: [] for c in self.columns}
        rowtimes, ops, meta = [], [], []
        for o in out or ():
            for side, values in enumerate((o.left, o.right) if o.sides is None else o.sides):
                for c in self.by_side[side]:
                    data[c[1]].append(None if values is None else values.get(c[2]))
            rowtimes.append(o.rowtime_us)
            ops.append(o.op)
            meta.append(False)
        for c in self.columns:
            data[c[1]].append(None)
        rowtimes.append(report[0])
        ops.append(None)
        meta.append(True)
        frame = {}
        for c in self.columns:
            values = data[c[1]]
            frame[c[1]] = pd.Series([_micros(v) for v in values] if c[1] in self.timestamps else values, dtype=object)
        frame["__rowtime"] = pd.Series([None if v is None else int(v) for v in rowtimes], dtype=object)
        frame["__op"] = pd.Series(ops, dtype=object)
        return _with_meta(frame, meta, key, report)


class ColumnarProcessor(JoinProcessor):
    """A join whose rows go through pandas by column: an ASOF join with `right.rowtime <= / <
    left.rowtime` (`operator.asof_columns`) or an inner join of ROWS windows partitioned by their
    keys (`operator.rows_columns`); the same answer as the row engine, without Python per row. Its
    input is packed (`columns.pack`): a few rows per group, each holding many rows."""

    def __init__(self, spec: Spec, columns: list[tuple[int, str, str, str]], end_ms: int, keys: list[str], carried: set[str]):
        """carried: the columns in the input (the others, which the query does not read after the
        join, leave as NULL)."""
        super().__init__(spec, columns, end_ms)
        self.keys, self.carried = keys, carried

    def init(self, handle) -> None:
        super().init(handle)
        self.by_side = [[c for c in side if c[1] in self.carried] for side in self.by_side]

    def handleInputRows(self, key, rows, timerValues):
        group = self._load()
        pdf = unpack([blob for chunk in rows for blob in chunk[BLOB]])
        pdf = pdf[~pdf["sj_bound"].fillna(False).astype(bool).to_numpy()]
        if len(pdf):
            group.add(pdf)
        yield from self._step(key, group, timerValues)

    def _new(self) -> ColumnGroup:
        engine = AsofColumns if self.spec.kind == JoinKind.ASOF else RowsColumns
        return engine.for_spec(self.spec, self.keys, tuple([c[1] for c in self.by_side[side]] for side in (0, 1)))

    def _load(self):
        group = self._new()
        stored = self.state.get()
        if stored is not None:
            state = pickle.loads(stored[0])
            if isinstance(state, dict):
                group.load_state(state)
            else:  # a checkpoint the row engine wrote (asof_join.AsofJoin, window_join.WindowJoin): its rows become columns
                self._from_rows(group, state)
        return group

    def _from_rows(self, group: ColumnGroup, old) -> None:
        import pandas as pd

        def frame(rows, side):  # rows: (t, seq, key, values)
            data = {"sj_t": [r[0] for r in rows], "sj_seq": [r[1] for r in rows]}
            for n, k in enumerate(self.keys):
                data[k] = [None if r[2] is None else r[2][n] for r in rows]
            for c in self.by_side[side]:
                data[c[1]] = [_micros(r[3].get(c[2])) if c[1] in self.timestamps else r[3].get(c[2]) for r in rows]
            return pd.DataFrame(data) if rows else group.empty(side)

        buffered = [(t, seq, self.cond.key_of(side, values), values, side) for t, side, seq, values in old.buffer]
        for side in (0, 1):
            rows = [r[:4] for r in buffered if r[4] == side]
            if rows:
                group.pending[side] = frame(rows, side)
        if isinstance(group, AsofColumns):
            if old.last:
                group.last = frame([(e.t, e.seq, e.key, e.values) for e in old.last.values()], 1)
        else:  # each side's present rows, in arrival order (ROWS windows: evicted rows are gone)
            for side, name in ((0, "kept_l"), (1, "kept_r")):
                present = sorted((e for members in old.rows[side].values() for e in members if e.key is not None),
                                 key=lambda e: (e.t, e.seq))
                setattr(group, name, frame([(e.t, e.seq, e.key, e.values) for e in present], side))
        group.timer_ms, group.reported = old.timer_ms, old.reported

    def _advance(self, group, limit):
        return group.advance(limit)

    def _dump(self, group) -> bytes:
        return pickle.dumps(group.to_state(), protocol=pickle.HIGHEST_PROTOCOL)

    def _frame(self, key, out, report):
        import numpy as np
        import pandas as pd

        n = 0 if out is None else len(out)
        frame = {}
        for c in self.columns:
            name = c[1]
            values = np.append(out[name].to_numpy(dtype=object), None) if n and name in self.carried else np.full(n + 1, None, dtype=object)
            if name in self.timestamps or name in self.integral:
                series = pd.Series(values)
                if name in self.timestamps:
                    series = series.where(series != NULL_US)
                frame[name] = pd.Series(pd.array(series.to_numpy(dtype=object), dtype="Int64"))
            else:
                frame[name] = pd.Series(values, dtype=object).where(pd.notna(values), None)
        rowtimes = np.append(out["sj_t"].to_numpy(dtype=object), report[0]) if n else np.array([report[0]], dtype=object)
        frame["__rowtime"] = pd.Series(pd.array(rowtimes, dtype="Int64"))
        frame["__op"] = pd.Series(["+I"] * n + [None], dtype=object)
        return _with_meta(frame, [False] * n + [True], key, report)


def _with_meta(frame: dict, meta: list, key, report):
    import pandas as pd

    frame[META] = pd.Series(meta, dtype=bool)
    frame["__group"] = pd.Series([repr(tuple(key))] * len(meta), dtype=object)
    frame["__state"] = pd.Series([report[1]] * len(meta), dtype="int64")
    return pd.DataFrame(frame)


def _micros(value) -> int | None:
    """A timestamp value of an output row as microseconds (None: NULL)."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return (value - _EPOCH) // dt.timedelta(microseconds=1)
    return int(value)


def _clean(value, timestamp: bool, integral: bool = False):
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if integral and isinstance(value, float):  # pandas widens an int column with NULLs to float
        return int(value)
    if timestamp:  # microseconds (NULL_US: NULL) -> a naive UTC datetime, as SQL sees it
        value = int(value)
        return None if value == NULL_US else _EPOCH + dt.timedelta(microseconds=value)
    if hasattr(value, "tolist") and getattr(value, "ndim", 0):  # arrays (numpy) -> lists
        return value.tolist()
    if hasattr(value, "item"):  # numpy scalars -> Python
        return value.item()
    return value
