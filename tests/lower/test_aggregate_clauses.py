"""HAVING in a streaming GROUP BY (it was dropped silently before 2026-11-27): a group's row is
written only where the condition holds, whether it reads an aggregate or only a key; a key-only
condition does not hold the clock back (Spark could push it below the watermark, where it would
drop the rowtime bounds that close the buckets). And aggregates' FILTER (WHERE ...) clauses (they
failed inside Spark before)."""

from __future__ import annotations

import pytest
from runtime_helpers import read_output, run_to_end, start, write_jsonl

ROWS = [("00:00:01", 1), ("00:00:02", 1), ("00:00:03", 2), ("00:01:03", 3), ("00:01:04", 3), ("00:01:05", 3)]


@pytest.mark.parametrize(("having", "kept"), [
    # a key-only condition is the one Spark could push below the watermark: in `make test`
    ("a.k > 1", [("00:00", 2, 1), ("00:01", 3, 3)]),
    pytest.param("COUNT(*) > 1", [("00:00", 1, 2), ("00:01", 3, 3)], marks=pytest.mark.long),
    pytest.param("a.k > 1 AND COUNT(*) < 3", [("00:00", 2, 1)], marks=pytest.mark.long),
])
def test_a_groups_row_is_written_only_where_having_holds_and_each_bucket_closes_with_the_clock(spark, tmp_path, having, kept):
    sql = f"""CREATE STREAM a (k INT) WITH (path = '{tmp_path}/a');
SELECT STREAM FLOOR(a.ROWTIME TO MINUTE) AS m, a.k, COUNT(*) AS n FROM a GROUP BY FLOOR(a.ROWTIME TO MINUTE), a.k HAVING {having};"""
    write_jsonl(tmp_path / "a" / "1.json", [{"k": k, "rowtime": f"2024-01-01 {t}"} for t, k in ROWS])
    runner = start(spark, sql, tmp_path)
    runner.process_available()
    runner.process_available()
    # live, before the end of input: minute 00 is closed by minute 01's rows (the clock), whatever HAVING reads
    live = sorted((r["m"][11:16], r["k"], r["n"]) for r in read_output(tmp_path / "out"))
    assert live == [row for row in kept if row[0] == "00:00"], live
    run_to_end(runner)
    assert sorted((r["m"][11:16], r["k"], r["n"]) for r in read_output(tmp_path / "out")) == kept


def test_an_aggregates_filter_clause_counts_only_the_rows_it_admits(spark, tmp_path):
    from runtime_helpers import run_until_idle

    sql = f"""CREATE STREAM a (k INT, v INT) WITH (path = '{tmp_path}/a');
SELECT STREAM a.k, COUNT(*) AS n, COUNT(*) FILTER (WHERE a.v > 1) AS big, COUNT(DISTINCT a.v) FILTER (WHERE a.v > 1) AS kinds,
  SUM(a.v) FILTER (WHERE a.v < 3) AS small FROM a GROUP BY FLOOR(a.ROWTIME TO MINUTE), a.k;"""
    rows = [(1, 1), (1, 2), (1, 2), (1, 5), (2, 0)]
    write_jsonl(tmp_path / "a" / "1.json", [{"k": k, "v": v, "rowtime": f"2024-01-01 00:00:0{i}"} for i, (k, v) in enumerate(rows)])
    out, _ = run_until_idle(spark, sql, tmp_path)
    assert sorted((r["k"], r["n"], r["big"], r["kinds"], r["small"]) for r in out) == [(1, 4, 3, 2, 5), (2, 1, 0, 0, 0)]


STEP_ROWS = [("00:00:01", 1), ("00:00:29", 1), ("00:00:30", 1), ("00:00:31", 2), ("00:01:05", 1), ("00:01:29", 1)]


@pytest.mark.parametrize("bucket", [
    "STEP(a.ROWTIME BY INTERVAL '30' SECOND)",  # KDA's and s-Server's tumbling window of any length
    "FLOOR((a.ROWTIME - TIMESTAMP '1970-01-01 00:00:00') SECOND / 30 TO SECOND)",  # s-Server's older spelling
])
def test_a_group_by_step_of_the_rowtime_is_a_time_bucket_of_that_length(spark, tmp_path, bucket):
    from runtime_helpers import run_until_idle

    sql = f"""CREATE STREAM a (k INT) WITH (path = '{tmp_path}/a');
SELECT STREAM ROWTIME AS bucket_start, a.k, COUNT(*) AS n FROM a GROUP BY a.k, {bucket};"""
    write_jsonl(tmp_path / "a" / "1.json", [{"k": k, "rowtime": f"2024-01-01 {t}"} for t, k in STEP_ROWS])
    out, _ = run_until_idle(spark, sql, tmp_path)
    got = sorted((r["bucket_start"][11:19], r["k"], r["n"]) for r in out)  # the output rowtime: the bucket's start
    assert got == [("00:00:00", 1, 2), ("00:00:30", 1, 1), ("00:00:30", 2, 1), ("00:01:00", 1, 2)]
    assert [r["bucket_start"] for r in out] == sorted(r["bucket_start"] for r in out)


def test_a_selected_step_is_the_start_of_its_bucket(spark, tmp_path):
    from runtime_helpers import run_until_idle

    sql = f"""CREATE STREAM a (k INT) WITH (path = '{tmp_path}/a');
SELECT STREAM STEP(a.ROWTIME BY INTERVAL '30' SECOND) AS b, COUNT(*) AS n FROM a GROUP BY STEP(a.ROWTIME BY INTERVAL '30' SECOND);"""
    write_jsonl(tmp_path / "a" / "1.json", [{"k": k, "rowtime": f"2024-01-01 {t}"} for t, k in STEP_ROWS])
    out, _ = run_until_idle(spark, sql, tmp_path)
    assert sorted((r["b"][11:19], r["n"]) for r in out) == [("00:00:00", 2), ("00:00:30", 2), ("00:01:00", 2)]
