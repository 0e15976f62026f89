"""SELECT DISTINCT over a stream is a grouping by every output column (SQL's definition; Calcite's,
hence s-Server's and KDA's, streaming DISTINCT): with a time bucket among the columns, one row per
distinct row of each bucket when the bucket closes; over a RisingWave source without one, each
distinct row once, as it first comes, across micro-batches and a restart."""

from __future__ import annotations

import random

import pytest
from runtime_helpers import read_output, run_to_end, start, ts, write_jsonl
from test_regular_joins import _run_in_three_parts

pytestmark = [pytest.mark.spark]


def test_distinct_rows_of_each_minute_come_once_when_the_minute_closes(spark, tmp_path):
    rng = random.Random("distinct-minutes")
    rows = sorted(({"ticker": rng.choice("ABC"), "price": rng.randint(1, 3), "ms": rng.randint(0, 179_999)}
                   for _ in range(60)), key=lambda r: r["ms"])
    write_jsonl(tmp_path / "trades" / "0.json", [{"ticker": r["ticker"], "price": r["price"], "rowtime": ts(r["ms"])}
                                                for r in rows])
    sql = f"""CREATE STREAM trades (ticker VARCHAR, price INT) WITH (connector = 'files', path = '{tmp_path}/trades');
SELECT STREAM DISTINCT FLOOR(ROWTIME TO MINUTE) AS minute, ticker FROM trades WHERE price > 1;"""
    run_to_end(start(spark, sql, tmp_path, until_idle=True))
    got = [(r["minute"], r["ticker"]) for r in read_output(tmp_path / "out")]
    want = sorted({(ts(r["ms"] // 60_000 * 60_000), r["ticker"]) for r in rows if r["price"] > 1})
    assert sorted(got) == want and len(got) == len(set(got))


def test_distinct_over_a_risingwave_source_writes_each_distinct_row_once_as_it_first_comes(spark, tmp_path):
    rng = random.Random("distinct-source")
    batches = [[{"user_id": rng.randint(1, 4), "page": rng.choice(["home", "cart"])} for _ in range(8)] for _ in range(3)]
    sql = f"""CREATE SOURCE visits (user_id INT, page VARCHAR)
  WITH (connector = 'files', path = '{tmp_path}/visits') FORMAT PLAIN ENCODE JSON;
CREATE MATERIALIZED VIEW seen AS SELECT DISTINCT user_id, page FROM visits;"""
    rows, _ = _run_in_three_parts(spark, tmp_path, sql, [{"visits": b} for b in batches], "risingwave")
    assert {r["op"] for r in rows} == {"+I"}, "an append-only source's distinct rows are never withdrawn"
    got = [(r["user_id"], r["page"]) for r in rows]
    assert sorted(got) == sorted({(v["user_id"], v["page"]) for b in batches for v in b}), "each distinct row once"
