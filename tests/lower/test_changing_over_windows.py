"""OVER windows ordered by a column that is not the rowtime (RisingWave's general OVER window over a
source read in arrival order, corpus risingwave/05): each row's value is over every row of its
partition read so far in that column's order, its peers included; a row that comes out of order
changes rows already written. The changelog, folded across micro-batches and a restart, must be the
SQL answer over every row read (computed here from the rows, as SQL defines the frame)."""

from __future__ import annotations

import datetime as dt
import math
import random
from collections import Counter

import pytest
from test_regular_joins import _run_in_three_parts, fold_by

START = dt.datetime(2026, 11, 29, 9, 0, 0)

ROLLING = """
CREATE SOURCE ticks (pair INT, ts TIMESTAMP, rate DOUBLE)
  WITH (connector = 'files', path = '{d}/ticks') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW rolling AS
SELECT pair, ts, rate,
  AVG(rate) OVER (PARTITION BY pair ORDER BY ts RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW) AS mean_rate,
  COUNT(*) OVER (PARTITION BY pair ORDER BY ts RANGE BETWEEN INTERVAL '3 seconds' PRECEDING AND CURRENT ROW) AS n,
  SUM(rate) OVER (PARTITION BY pair ORDER BY ts) AS running
FROM ticks;
"""

JOINED = ROLLING + """
CREATE SOURCE news (pair INT, ts TIMESTAMP, score INT)
  WITH (connector = 'files', path = '{d}/news') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW enriched AS
SELECT r.pair, r.ts, r.mean_rate, n.score
FROM rolling AS r
JOIN news AS n ON r.pair = n.pair AND r.ts BETWEEN n.ts - INTERVAL '2 seconds' AND n.ts + INTERVAL '2 seconds';
"""


def _stamp(t: dt.datetime) -> str:
    return t.isoformat(sep=" ")


def _shown(t: dt.datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M:%S}.000"


def _ticks(rng: random.Random, batches: int = 3, per_batch: int = 14) -> list[list[dict]]:
    """Rows whose ts goes back and forth (out of order within and across batches), with ties."""
    return [[{"pair": rng.choice([1, 2]), "ts": _stamp(START + dt.timedelta(seconds=rng.randint(0, 12))),
              "rate": rng.randint(10, 40) / 10} for _ in range(per_batch)] for _ in range(batches)]


def _rolling(ticks: list[dict]) -> list[dict]:
    """The view as SQL defines it: RANGE frames of the 3 s up to and including the row's peers;
    the default frame (ORDER BY only): every row up to the row's last peer."""
    out = []
    for t in ticks:
        at = dt.datetime.fromisoformat(t["ts"])
        mine = [u for u in ticks if u["pair"] == t["pair"]]
        frame = [u["rate"] for u in mine if at - dt.timedelta(seconds=3) <= dt.datetime.fromisoformat(u["ts"]) <= at]
        upto = [u["rate"] for u in mine if dt.datetime.fromisoformat(u["ts"]) <= at]
        running = None
        for r in upto:  # in the order the rows sort: the engine adds them so too (equal ts: arrival order)
            running = r if running is None else running + r
        out.append({"pair": t["pair"], "ts": at, "rate": t["rate"], "mean_rate": math.fsum(frame) / len(frame),
                    "n": len(frame), "running": running})
    return out


def test_an_over_window_in_another_columns_order_folds_to_the_sql_answer_as_rows_come_out_of_order(spark, tmp_path):
    rng = random.Random("rolling")
    batches = _ticks(rng)
    rows, status = _run_in_three_parts(spark, tmp_path, ROLLING.format(d=tmp_path), [{"ticks": b} for b in batches],
                                       "risingwave")
    ticks = [t for b in batches for t in b]
    want = Counter((r["pair"], _shown(r["ts"]), r["rate"], r["mean_rate"], r["n"]) for r in _rolling(ticks))
    assert status["rejected_rows"] == 0 and status["late_rows"] == 0, status
    assert {r["op"] for r in rows} == {"+I", "-D"}, "rows out of order must have changed rows already written"
    assert fold_by(rows, ("pair", "ts", "rate", "mean_rate", "n")) == want, rows
    # SUM over the default frame: compare as numbers (a sum of floats depends on its order of terms,
    # which is ts then arrival here and in the engine alike; equal rows sum alike)
    got = fold_by(rows, ("pair", "ts", "rate", "running"))
    assert sum(got.values()) == len(ticks)
    want_running = Counter((r["pair"], _shown(r["ts"]), r["rate"], round(r["running"], 9)) for r in _rolling(ticks))
    assert Counter({(p, t, rate, round(s, 9)): c for (p, t, rate, s), c in got.items()}) == want_running


def test_an_over_window_view_in_another_columns_order_is_read_as_a_table_that_changes(spark, tmp_path):
    """Its reader (a regular join with a stream, as corpus risingwave/05's chain) withdraws the
    pairs of a row whose value changed and joins its new value."""
    rng = random.Random("rolling-joined")
    batches = _ticks(rng, per_batch=10)
    news = [[{"pair": rng.choice([1, 2]), "ts": _stamp(START + dt.timedelta(seconds=rng.randint(0, 12))),
              "score": rng.randint(1, 9)} for _ in range(3)] for _ in range(3)]
    rows, status = _run_in_three_parts(spark, tmp_path, JOINED.format(d=tmp_path),
                                       [{"ticks": b, "news": n} for b, n in zip(batches, news, strict=True)], "risingwave")
    view = _rolling([t for b in batches for t in b])
    want = Counter()
    for r in view:
        for n in (n for b in news for n in b):
            at = dt.datetime.fromisoformat(n["ts"])
            if r["pair"] == n["pair"] and at - dt.timedelta(seconds=2) <= r["ts"] <= at + dt.timedelta(seconds=2):
                want[(r["pair"], _shown(r["ts"]), r["mean_rate"], n["score"])] += 1
    assert status["rejected_rows"] == 0, status
    assert want, "the shape joins nothing: pick another seed"
    assert fold_by(rows, ("pair", "ts", "mean_rate", "score")) == want, rows


def test_rows_frames_count_rows_not_peers_and_lag_ignore_nulls_follows_a_row_that_comes_before(spark, tmp_path):
    """ROWS UNBOUNDED PRECEDING ends at the row itself (a peer after it is not in it); LAG(x) IGNORE
    NULLS of rows after NULLs changes when a non-NULL row comes out of order before them."""
    sql = f"""CREATE SOURCE s (k INT, o INT, x INT) WITH (connector = 'files', path = '{tmp_path}/s') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW v AS SELECT k, o, x,
  COUNT(*) OVER (PARTITION BY k ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n,
  LAG(x) IGNORE NULLS OVER (PARTITION BY k ORDER BY o) AS before_x
FROM s;"""
    first = [{"k": 1, "o": 1, "x": 10}, {"k": 1, "o": 3, "x": None}, {"k": 1, "o": 4, "x": None}, {"k": 1, "o": 5, "x": 50}]
    later = [{"k": 1, "o": 2, "x": 20}, {"k": 1, "o": 5, "x": 51}]
    rows, _ = _run_in_three_parts(spark, tmp_path, sql, [{"s": first}, {"s": later}, {"s": []}], "risingwave")
    got = fold_by(rows, ("o", "x", "n", "before_x"))
    # in o's order (equal o in arrival order): 1(10) 2(20) 3(NULL) 4(NULL) 5(50) 5(51)
    assert got == Counter({(1, 10, 1, None): 1, (2, 20, 2, 10): 1, (3, None, 3, 20): 1, (4, None, 4, 20): 1,
                           (5, 50, 5, 20): 1, (5, 51, 6, 50): 1}), rows


def test_a_changelog_of_over_windows_into_a_sink_that_appends_is_refused_and_emit_changes_keeps_one_op():
    from streamjoin.errors import Unsupported
    from streamjoin.runtime.pipeline import Pipeline

    source = "CREATE SOURCE s (k INT, o INT, x INT) WITH (connector = 'files', path = '/tmp/s') FORMAT PLAIN ENCODE JSON;\n"
    query = "SELECT k, SUM(x) OVER (PARTITION BY k ORDER BY o) AS total FROM s"
    sink = "CREATE SINK out WITH (connector = 's3', path = 's3://bucket/out', format = 'delta');\n"
    with pytest.raises(Unsupported, match="writes a changelog .* into sink 'out', which appends"):
        Pipeline.from_sql(source + sink + f"INSERT INTO out {query};", "s.sql", dialect="risingwave")
    changes = Pipeline.from_sql(source + f"{query} EMIT CHANGES;", "s.sql", dialect="risingwave")
    assert changes.query.changing_analytics()
