"""Instants the engine agrees on: the end of input, and the *engine time* Spark sees.

Spark's watermark starts at the epoch and never goes below it, and its stateful operators drop
(as late) and evict every row whose event time is at or below the watermark. A rowtime at the
epoch, or before it, would be lost without a word. So Spark never sees a rowtime: it sees the
engine time `rowtime + SHIFT`, which puts 0001-01-01 (the earliest TIMESTAMP) a day after the
epoch. Rowtimes stay what they are in every column a user reads; only the watermark, the join
bounds that drop state and the timers are in engine time, and they are turned back at the edge
(`rowtime_us`).

End of input (SEMANTICS §1: every clock to +infinity) is a far instant whose engine time Spark
still formats as an ordinary timestamp: rowtimes from 0001-01-01 up to (not including)
8000-01-01 are supported (docs/semantics-decisions.md).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

DAY_US = 86_400_000_000
# from 0001-01-01 to 1970-01-01 is 719,162 days; one more keeps the earliest rowtime off the epoch
SHIFT_US = 719_163 * DAY_US
SHIFT_MS = SHIFT_US // 1000

END_OF_INPUT = datetime(8000, 1, 1, tzinfo=UTC)
END_US = int(END_OF_INPUT.timestamp() * 1_000_000)
EARLIEST_US = int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1_000_000)


def engine_us(rowtime_us: int) -> int:
    return rowtime_us + SHIFT_US


def rowtime_us(engine: int) -> int:
    return engine - SHIFT_US


def parse_spark_time(text: str) -> int:
    """Microseconds of a timestamp as Spark's progress reports write it: `2024-01-01T10:00:00.000Z`."""
    match = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z?", text.strip())
    if not match:
        raise ValueError(f"not a Spark timestamp: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction = int((match.group(7) or "0").ljust(6, "0"))
    return int(datetime(year, month, day, hour, minute, second, tzinfo=UTC).timestamp()) * 1_000_000 + fraction


def spark_time(us: int) -> str:
    """Microseconds since the epoch as Spark's progress reports write a timestamp (`parse_spark_time`)."""
    return datetime.fromtimestamp(us // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{us % 1_000_000 // 1000:03d}Z"


def spark_watermark_rowtime_us(text: str | None) -> int | None:
    """The rowtime a watermark of a progress report stands for; None before the first one (Spark
    reports the epoch then: no engine time is that early)."""
    engine = parse_spark_time(text) if text else 0
    return rowtime_us(engine) if engine > 0 else None


def late_rows(rowtimes_us, is_bound, lateness_us: int, clock_us: int | None):
    """Which rows (not bounds) are late, in arrival order: row i is late when its rowtime is
    below the clock before it, max(clock_us, every earlier row's rowtime - lateness, every
    earlier bound). A late row cannot raise the clock (its rowtime - lateness is below it)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(rowtimes_us)
    if n == 0:
        return pa.array([], pa.bool_())
    lowest = np.iinfo(np.int64).min
    rt = rowtimes_us.to_numpy(zero_copy_only=False) if rowtimes_us.null_count == 0 else \
        pc.fill_null(rowtimes_us, lowest).to_numpy()
    bound = is_bound.to_numpy(zero_copy_only=False).astype(bool)
    # what each arrival moves the clock to: a row its rowtime - lateness, a bound its value
    moves = np.where(bound, rt, np.maximum(rt, lowest + lateness_us) - lateness_us)
    before = np.empty(n, dtype=np.int64)
    before[0] = lowest if clock_us is None else clock_us
    if n > 1:
        np.maximum.accumulate(moves[:-1], out=before[1:])
        np.maximum(before[1:], before[0], out=before[1:])
    return pa.array(~bound & (rt < before))
