"""GROUP BY keys that bucket the rowtime by a fixed length other than one unit (KDA's and
s-Server's tumbling windows of any length): a time bucket of SEMANTICS §7, as FLOOR(ROWTIME TO
unit) is of one unit."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.expressions import SpanOf, StepBy
from streamjoin.plan.analyzer.names import is_rowtime
from streamjoin.plan.windows import UNIT_MS, interval_ms


def stepped(key: exp.Expression, outputs: list[exp.Expression]) -> tuple[int, str] | None:
    """The milliseconds of a GROUP BY key that buckets the rowtime by a fixed length other than one
    unit: KDA's and s-Server's `STEP(ROWTIME BY INTERVAL '30' SECOND)`, or s-Server's
    `FLOOR((ROWTIME - TIMESTAMP '1970-01-01 00:00:00') SECOND / 30 TO SECOND)` when the query does
    not select it (its value is a count of periods, not the bucket's start); and the rowtime
    column it buckets. None: another key."""
    if isinstance(key, StepBy) and is_rowtime(key.this) and isinstance(key.expression, exp.Interval):
        unit = key.expression.args.get("unit")
        try:
            size = interval_ms(key.expression.name, unit.name if isinstance(unit, exp.Var) else None)
        except ValueError:
            return None
        return (size, key.this.name) if size > 0 else None
    if not (isinstance(key, exp.Floor) and isinstance(key.this, exp.Div) and isinstance(key.this.this, SpanOf)):
        return None
    span, count = key.this.this, key.this.expression
    difference = span.this.this if isinstance(span.this, exp.Paren) else span.this
    unit = span.text("unit").upper()
    epoch = difference.expression if isinstance(difference, exp.Sub) else None
    if not (isinstance(difference, exp.Sub) and is_rowtime(difference.this) and isinstance(epoch, exp.Cast)
            and epoch.name.strip() in ("1970-01-01 00:00:00", "1970-01-01 00:00:00.000", "1970-01-01")
            and key.text("to").upper() == unit and unit in UNIT_MS and isinstance(count, exp.Literal)
            and count.is_number and float(count.name).is_integer() and int(float(count.name)) > 0):
        return None
    if any(o.find(exp.Floor) is not None and any(f == key for f in o.find_all(exp.Floor)) for o in outputs):
        return None
    return UNIT_MS[unit] * int(float(count.name)), difference.this.name


def window_end_bucket(keys, windows: dict) -> tuple[exp.Expression | None, object]:
    """(the bucket, its TUMBLE / HOP) of a GROUP BY whose keys hold a windowed input's window_end
    but not its window_start: that input's window_start (window_end follows from it); (None, None)
    without one. `windows`: the inputs' TUMBLE / HOP by alias."""
    end = next((k for k in keys if isinstance(k, exp.Column) and k.name == "window_end" and k.table in windows), None)
    if end is None:
        return None, None
    return exp.column("window_start", table=end.table), windows[end.table]


def clock_window(item) -> bool:
    """A TUMBLE / HOP on the input's rowtime: its windows close on the stream's clock, so a GROUP BY
    its window is a time bucket. One on another column (RisingWave's TUMBLE(src, ts, ...) over a
    source without a watermark, read in arrival order) never closes: grouped by it, the windows
    are keys of a running aggregate, a changelog (lower.running)."""
    return item.time_window is not None and item.time_window.column == item.relation.rowtime
